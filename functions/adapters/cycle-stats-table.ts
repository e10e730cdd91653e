/**
 * The supervisor's cumulative figures, one item of the leases table beside the scheduler's control
 * (`stats#supervisor`, kind `cycleStats`): a counter per figure and `passes`, each a top-level number that every pass
 * adds to with `ADD`, and the last pass (`lastPass`: its time, duration, figures and ids) and the last errors
 * (`lastErrors`, `lastErrorsAt`), set.
 *
 * Cost: one `UpdateItem` a pass, unconditional, so passes that overlap never refuse each other and neither loses its
 * counts (each `ADD` is applied to the item as it is then). DynamoDB bills an update by the larger of the item before
 * and after, a write unit per started KB: about 1 KB with counters and a quiet last pass (1 WCU, 43,200 a month at
 * one pass a minute: $0.03 at $0.625 per million), up to some 7 KB when every list of ids is full (8 × 20 ids) and
 * five errors are kept (7 WCU). A read is one eventually consistent `GetItem`: half a read unit, one at most 7 KB.
 */
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { CYCLE_FIGURES, type CycleFigures, type CycleIds, cycleIds } from '#core/cycle-figures';
import type { PassError } from '#core/pass-errors';
import type { CycleStatsStore, PassRecord, StoredCycleStats } from '#core/ports/cycle-stats-store';
import { Expression, updateExpression } from './expression';

type Item = Record<string, unknown>;

/** Like the scheduler's control (`scheduler`), a key no other kind's `<kind>#…` keys can name. */
const STATS_KEY = { leaseId: 'stats#supervisor' };

const numberOf = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : 0);

const figuresOf = (source: unknown): CycleFigures => {
  const item = (typeof source === 'object' && source !== null ? source : {}) as Item;
  return Object.fromEntries(CYCLE_FIGURES.map((name) => [name, numberOf(item[name])])) as CycleFigures;
};

const idsOf = (source: unknown): CycleIds => {
  const item = (typeof source === 'object' && source !== null ? source : {}) as Item;
  return cycleIds((name) => {
    const ids = item[name];
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
  });
};

const errorsOf = (source: unknown): PassError[] =>
  Array.isArray(source)
    ? source.flatMap((entry) => {
        const e = (typeof entry === 'object' && entry !== null ? entry : {}) as Item;
        return typeof e.name === 'string' && typeof e.message === 'string'
          ? [{ step: typeof e.step === 'string' ? e.step : '', name: e.name, message: e.message }]
          : [];
      })
    : [];

function statsFromItem(item: Item): StoredCycleStats {
  const last = item.lastPass as Item | undefined;
  return {
    passes: numberOf(item.passes),
    totals: figuresOf(item),
    ...(last && typeof last.at === 'number'
      ? {
          lastPass: {
            at: last.at,
            durationMs: numberOf(last.durationMs),
            figures: figuresOf(last.figures),
            ids: idsOf(last.ids),
          },
        }
      : {}),
    ...(typeof item.lastErrorsAt === 'number'
      ? { lastErrors: { at: item.lastErrorsAt, errors: errorsOf(item.lastErrors) } }
      : {}),
  };
}

export class CycleStatsTable implements CycleStatsStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  async add(pass: PassRecord): Promise<void> {
    const e = new Expression();
    const set = [
      `${e.n('kind')} = ${e.v('cycleStats')}`,
      `${e.n('lastPass')} = ${e.v({ at: pass.at, durationMs: pass.durationMs, figures: pass.figures, ids: pass.ids })}`,
    ];
    // A pass without errors leaves the last ones standing: they say what went wrong, and when.
    if (pass.errors.length > 0)
      set.push(`${e.n('lastErrors')} = ${e.v(pass.errors)}`, `${e.n('lastErrorsAt')} = ${e.v(pass.at)}`);
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: STATS_KEY,
        UpdateExpression: updateExpression({
          set,
          add: [
            `${e.n('passes')} ${e.v(1)}`,
            ...CYCLE_FIGURES.map((name) => `${e.n(name)} ${e.v(pass.figures[name])}`),
          ],
        }),
        ...e.attributes(),
      }),
    );
  }

  async get(): Promise<StoredCycleStats | undefined> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: STATS_KEY, ConsistentRead: false }),
    );
    return output.Item ? statsFromItem(output.Item) : undefined;
  }
}
