/**
 * Queue controls in the leases table, one item per queue (`queue#<name>`): `paused`, `limits`, and the state that
 * enforces the limits exactly under parallel claims from many agents:
 * - `held` lists the queue's tasks leased or about to be; a reservation adds its tasks with a condition on the
 *   map's size (the same superset bookkeeping as an agent session's slots);
 * - the token bucket (`tokens`, `tokensAt`) is taken from with a condition on its version (`tokensVersion`), so
 *   two claims cannot spend the same tokens.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type {
  QueueAdmissionState,
  QueueControlStore,
  QueueReservation,
  StoredQueueControl,
} from '#core/ports/queue-control-store';
import type { ReadOptions } from '#core/ports/task-store';
import { type QueueLimits, storedQueueLimitsSchema } from '#domain/queue-limits';
import { conditionalUpdate, Expression, updateExpression } from './expression';
import { scanKind } from './session-table';

type Item = Record<string, unknown>;

const controlKey = (queue: string) => ({ leaseId: `queue#${queue}` });
/** The list walk's places in a queue's list partitions: apart from the control, which claims read. */
const walkKey = (queue: string) => ({ leaseId: `walk#${queue}` });

const numberMap = (value: unknown): Record<string, number> =>
  typeof value === 'object' && value !== null
    ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, Number(v)]))
    : {};

function controlFromItem(queue: string, item: Item): StoredQueueControl {
  const limits = item.limits ?? undefined;
  const parsed = limits === undefined ? undefined : storedQueueLimitsSchema.safeParse(limits);
  return {
    queue,
    paused: item.paused === true,
    ...(parsed ? { limits: parsed.success ? parsed.data : {} } : {}),
    ...(typeof item.updatedAt === 'number' ? { updatedAt: item.updatedAt } : {}),
  };
}

export class QueueControlTable implements QueueControlStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  async get(queue: string, { consistent = true }: ReadOptions = {}): Promise<StoredQueueControl | undefined> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: controlKey(queue), ConsistentRead: consistent }),
    );
    return output.Item ? controlFromItem(queue, output.Item) : undefined;
  }

  async readWalk(queue: string): Promise<Readonly<Record<string, string>>> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: walkKey(queue), ConsistentRead: true }),
    );
    const places = output.Item?.places;
    if (typeof places !== 'object' || places === null) return {};
    return Object.fromEntries(
      Object.entries(places as Record<string, unknown>).filter(
        (e): e is [string, string] => typeof e[1] === 'string',
      ),
    );
  }

  /**
   * One write a pass for a queue with new tasks. Two walks at once may each save their own places: the later save
   * wins, and a place saved too early only makes a walk look at some tasks again (giving a task an entry in the due
   * index is conditional on it having none).
   */
  async saveWalk(queue: string, places: Readonly<Record<string, string>>, now: number): Promise<void> {
    const e = new Expression();
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: walkKey(queue),
        UpdateExpression: `SET ${e.n('kind')} = ${e.v('walk')}, ${e.n('queue')} = ${e.v(queue)}, ${e.n('places')} = ${e.v(places)}, ${e.n('updatedAt')} = ${e.v(now)}`,
        ...e.attributes(),
      }),
    );
  }

  async list(): Promise<StoredQueueControl[]> {
    const items = await scanKind(this.doc, this.tableName, 'queue');
    return items.map((item) => controlFromItem(String(item.queue), item));
  }

  setPaused(queue: string, paused: boolean, now: number): Promise<StoredQueueControl> {
    return this.update(queue, { paused }, now);
  }

  setLimits(queue: string, limits: QueueLimits, now: number): Promise<StoredQueueControl> {
    return this.update(queue, { limits }, now);
  }

  /** Sets fields of the control item, creating it if needed, and leaves its other fields alone. */
  private async update(queue: string, fields: Item, now: number): Promise<StoredQueueControl> {
    const e = new Expression();
    const output = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: controlKey(queue),
        UpdateExpression: updateExpression({
          set: Object.entries({ kind: 'queue', queue, ...fields, updatedAt: now }).map(
            ([name, value]) => `${e.n(name)} = ${e.v(value)}`,
          ),
        }),
        ReturnValues: 'ALL_NEW',
        ...e.attributes(),
      }),
    );
    return controlFromItem(queue, output.Attributes ?? {});
  }

  async readAdmission(queue: string): Promise<QueueAdmissionState> {
    const item =
      (
        await this.doc.send(
          new GetCommand({ TableName: this.tableName, Key: controlKey(queue), ConsistentRead: true }),
        )
      ).Item ?? {};
    return {
      ...(item.held === undefined ? {} : { held: numberMap(item.held) }),
      ...(typeof item.tokens === 'number' ? { tokens: item.tokens } : {}),
      ...(typeof item.tokensAt === 'number' ? { tokensAt: item.tokensAt } : {}),
      ...(typeof item.tokensVersion === 'number' ? { tokensVersion: item.tokensVersion } : {}),
    };
  }

  async reserve(queue: string, seen: QueueAdmissionState, reservation: QueueReservation): Promise<boolean> {
    const { taskIds, at, concurrency, tokens } = reservation;
    const written = await conditionalUpdate(
      this.doc,
      { TableName: this.tableName, Key: controlKey(queue) },
      (e) => {
        const set: string[] = [`${e.n('kind')} = ${e.v('queue')}`, `${e.n('queue')} = ${e.v(queue)}`];
        const remove: string[] = [];
        const conditions: string[] = [];
        if (concurrency) {
          if (seen.held === undefined) {
            set.push(`${e.n('held')} = ${e.v(Object.fromEntries(taskIds.map((id) => [id, at])))}`);
            conditions.push(`attribute_not_exists(${e.n('held')})`);
          } else {
            const { max, stale } = concurrency;
            set.push(...taskIds.map((id) => `${e.n('held', id)} = ${e.v(at)}`));
            // A stale entry of a task admitted again is overwritten (one path cannot be both set and removed).
            remove.push(
              ...[...stale.keys()].filter((id) => !taskIds.includes(id)).map((id) => e.n('held', id)),
            );
            // Before the write, so that after it (the new entries in, the stale ones out) the map is within max.
            conditions.push(`size(${e.n('held')}) <= ${e.v(max - taskIds.length + stale.size)}`);
            conditions.push(
              ...taskIds
                .filter((id) => !stale.has(id))
                .map((id) => `attribute_not_exists(${e.n('held', id)})`),
            );
            conditions.push(
              ...[...stale].map(([id, reservedAt]) => `${e.n('held', id)} = ${e.v(reservedAt)}`),
            );
          }
        }
        if (tokens) {
          set.push(`${e.n('tokens')} = ${e.v(tokens.left)}`);
          set.push(`${e.n('tokensAt')} = ${e.v(tokens.at)}`);
          set.push(`${e.n('tokensVersion')} = ${e.v((seen.tokensVersion ?? 0) + 1)}`);
          // The bucket's version, not its time, is what two claims compare: within one millisecond the time is equal.
          conditions.push(
            seen.tokensVersion === undefined
              ? `attribute_not_exists(${e.n('tokensVersion')})`
              : `${e.n('tokensVersion')} = ${e.v(seen.tokensVersion)}`,
          );
        }
        return { set, remove, condition: conditions.join(' AND ') };
      },
      (value) => value,
    );
    return written.ok;
  }

  async release(queue: string, slots: ReadonlyMap<string, number>): Promise<void> {
    // Nothing comes back: the item may be large (the whole map), and a refusal needs no reason.
    const e = new Expression();
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: controlKey(queue),
          UpdateExpression: updateExpression({ remove: [...slots.keys()].map((id) => e.n('held', id)) }),
          ConditionExpression: [...slots].map(([id, at]) => `${e.n('held', id)} = ${e.v(at)}`).join(' AND '),
          ...e.attributes(),
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}
