/**
 * The rate-limited tasks of the in-process chaos run, and the check of their budget's ledger.
 *
 * The run declares one budget (`chaos.budget`, a billion units a day: no task ever waits for it) and submits tasks
 * naming it, each with an estimate of 10 to 100 units (seeded). Their agents report usage on every finish they send,
 * complete or fail, late ones included: a number from 0 to 200 that depends only on the task and the lease's epoch
 * (`usageOf`), so the checker knows what each attempt reported without being told.
 *
 * The ledger, once everything has stopped: **expected** is what the committed history owes the budget: for each
 * rate-limited task, the units of its estimate at each grant committed (a lease the task was given, whatever became
 * of it), and, at each finish committed that reported usage, that usage less the estimate; **actual** is the sum of
 * `used` over the budget's window items, read back from the table. Any difference is units lost or counted twice.
 * Beside it, each task's own transactions are looked at: the window changes recorded in the transactions of its
 * grants and settling finishes must be what those writes owe (a settlement made anywhere else shows there).
 */
import { createHash } from 'node:crypto';
import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { rateWindowKey } from '#adapters/tables';
import type { RateLimitTerms } from '#domain/rate-limits';
import { seededRandom } from '#local/seeded-random';
import type { History, TaskVersion } from './history';

export const BUDGET = 'chaos.budget';
/** A budget no task waits for: the run is about the count, not about holding tasks back. */
export const BUDGET_TERMS: RateLimitTerms = { limit: 1e9, per: 'day' };

/** A rate-limited task's payload: its number in the run. */
export interface RateLimitedPayload {
  readonly r: number;
}

/** The tasks of the run that name the budget, each with its seeded estimate. */
export function rateLimitedSpecs(
  seed: number,
  count: number,
  common: Readonly<Record<string, unknown>>,
): Record<string, unknown>[] {
  // A stream of its own, so the faults' draws are the same with or without these tasks' estimates.
  const random = seededRandom(seed + 2);
  return Array.from({ length: count }, (_, r) => ({
    ...common,
    payload: { r } satisfies RateLimitedPayload,
    rateLimits: [{ name: BUDGET, units: 10 + Math.floor(random() * 91) }],
    idempotencyKey: `chaos-${seed}-r${r}`,
  }));
}

/** The usage an attempt reports: 0 to 200 units, the same for every finish of one lease, whatever limit it is of. */
export function usageOf(taskId: string, leaseEpoch: number): number {
  const digest = createHash('sha256').update(`${taskId}#${leaseEpoch}`).digest();
  return digest.readUInt32BE(0) % 201;
}

/** The usage a finish of the lease reports, as `complete` and `fail` take it. */
export const usageReport = (taskId: string, leaseEpoch: number, limit = BUDGET): Record<string, number> => ({
  [limit]: usageOf(taskId, leaseEpoch),
});

/** A grant, a single update or the transaction that takes units. */
const GRANTS = new Set(['grant', 'rateGrant']);
/** An owner's finish, a single update or the transaction that settles usage. */
const FINISHES = new Set(['finish', 'rateSettle']);

/** What the committed history owes the budget, in all and task by task. */
export interface LedgerOwed {
  readonly expected: number;
  /** Grants committed to rate-limited tasks. */
  readonly grants: number;
  /** Finishes committed that reported usage (complete and fail). */
  readonly settledFinishes: number;
  readonly byTask: ReadonlyMap<string, number>;
}

/**
 * What the versions of the rate-limited tasks (`estimates`: each one's units) owe the budget: the estimate at each
 * grant, the usage less the estimate at each finish that reported usage. A version is one committed write.
 */
export function owedToBudget(
  versions: readonly TaskVersion[],
  estimates: ReadonlyMap<string, number>,
): LedgerOwed {
  let expected = 0;
  let grants = 0;
  let settledFinishes = 0;
  const byTask = new Map<string, number>();
  for (const version of versions) {
    const units = estimates.get(version.taskId);
    if (units === undefined || version.write === undefined) continue;
    let owed = 0;
    if (GRANTS.has(version.write) && version.status === 'leased') {
      grants++;
      owed = units;
    }
    const finish = version.lastFinish;
    if (FINISHES.has(version.write) && finish && (finish.kind === 'complete' || finish.kind === 'fail')) {
      settledFinishes++;
      owed = usageOf(version.taskId, finish.leaseEpoch) - units;
    }
    expected += owed;
    byTask.set(version.taskId, (byTask.get(version.taskId) ?? 0) + owed);
  }
  return { expected, grants, settledFinishes, byTask };
}

/** The sum of `used` over every window item of the limit, read consistently. */
export async function ledgerOf(
  doc: DynamoDBDocumentClient,
  tableName: string,
  limit: string,
): Promise<number> {
  let used = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: '#p = :p AND begins_with(#s, :w)',
        ExpressionAttributeNames: { '#p': 'taskId', '#s': 'part' },
        ExpressionAttributeValues: { ':p': rateWindowKey(limit, 0).taskId, ':w': 'w#' },
        ConsistentRead: true,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    for (const item of page.Items ?? []) used += Number(item.used ?? 0);
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return used;
}

/** The ledger's verdict and the figures that show it was exercised. */
export interface LedgerVerdict {
  /** Rate-limited tasks read back. */
  readonly tasks: number;
  readonly limit: string;
  readonly grants: number;
  readonly settledFinishes: number;
  /** Settling transactions committed (a finish whose usage differed from the estimate), each recorded once. */
  readonly settlements: number;
  /** Settling transactions whose answer was lost after they committed (injected), each then sent again by the SDK. */
  readonly settlementAnswersLost: number;
  /** Settling transactions answered again under their token: sent again, written once. */
  readonly settlementsResent: number;
  readonly grantAnswersLost: number;
  readonly grantsResent: number;
  readonly expected: number;
  readonly actual: number;
  /** `actual − expected`: positive, units counted twice (or never owed); negative, units lost. */
  readonly difference: number;
  /** Tasks whose own transactions changed the windows by other than their grants and finishes owe. */
  readonly tasksOffCount: number;
  /** The first of those: task, owed, changed in its transactions. */
  readonly tasksOff: readonly string[];
}

/**
 * The ledger of the run's budget (or of `limit`, which the tasks of `estimates` name): what the history owes it
 * against what its windows hold.
 */
export function checkLedger(
  history: Pick<History, 'tasks' | 'rateChanges' | 'resent'>,
  estimates: ReadonlyMap<string, number>,
  actual: number,
  lostAnswers: Readonly<Record<string, number>>,
  limit = BUDGET,
): LedgerVerdict {
  const owed = owedToBudget(history.tasks, estimates);
  const changed = new Map<string, number>();
  const changes = (history.rateChanges ?? []).filter((c) => c.limit === limit);
  for (const change of changes) changed.set(change.taskId, (changed.get(change.taskId) ?? 0) + change.delta);
  const off = [...estimates.keys()].filter(
    (taskId) => (owed.byTask.get(taskId) ?? 0) !== (changed.get(taskId) ?? 0),
  );
  return {
    tasks: estimates.size,
    limit,
    grants: owed.grants,
    settledFinishes: owed.settledFinishes,
    settlements: changes.filter((c) => c.write === 'rateSettle').length,
    settlementAnswersLost: lostAnswers.rateSettle ?? 0,
    settlementsResent: history.resent?.rateSettle ?? 0,
    grantAnswersLost: lostAnswers.rateGrant ?? 0,
    grantsResent: history.resent?.rateGrant ?? 0,
    expected: owed.expected,
    actual,
    difference: actual - owed.expected,
    tasksOffCount: off.length,
    tasksOff: off
      .slice(0, 5)
      .map(
        (taskId) => `${taskId}: owed ${owed.byTask.get(taskId) ?? 0}, changed ${changed.get(taskId) ?? 0}`,
      ),
  };
}

/** A run's violations of the ledger: one for a difference, one for each task whose transactions are off. */
export const ledgerViolations = (ledger: LedgerVerdict): number =>
  (ledger.difference === 0 ? 0 : 1) + ledger.tasksOffCount;
