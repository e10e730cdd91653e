/**
 * Per-queue limits, enforced at claim time with conditional writes on the queue's control item, so they hold
 * exactly under parallel claims from many agents:
 * - concurrency: the item's `held` map lists the queue's tasks leased or about to be; a claim adds its tasks with
 *   a condition on the map's size (the same superset bookkeeping as an agent session's slots);
 * - rate: a token bucket (`tokens`, `tokensAt`) refilled at `ratePerSecond` up to `burst`, taken from with a
 *   condition on its version, so two claims cannot spend the same tokens.
 * Only queues with a limit pay for this: one read and one write per claim.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { conditionalUpdate } from '#adapters/expression';
import type { SchedulerContext } from './context';
import { type QueueControl, queueControlId } from './queue-controls';

export const hasLimits = (control: QueueControl): boolean =>
  control.limits.maxConcurrency !== undefined || control.limits.ratePerSecond !== undefined;

const numberMap = (value: unknown): Record<string, number> =>
  typeof value === 'object' && value !== null
    ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, Number(v)]))
    : {};

/**
 * Entries of the queue's `held` map that stand for no lease any more: the grant made for the reservation has
 * landed and ended (the task still carries that grant time), or the reservation is past the grace period.
 */
async function staleEntries(ctx: SchedulerContext, held: Record<string, number>, now: number) {
  const graceStart = now - ctx.settings.reservationGraceSeconds * 1_000;
  const tasks = await ctx.tasks.getMany(Object.keys(held), false);
  const stale = new Map<string, number>();
  for (const [taskId, reservedAt] of Object.entries(held)) {
    const task = tasks.get(taskId);
    const running = task?.status === 'leased' && task.leasedAt === reservedAt;
    if (running) continue;
    // A younger entry with no landed grant may belong to a claim still deciding: keep it.
    if (task?.leasedAt === reservedAt || reservedAt < graceStart) stale.set(taskId, reservedAt);
  }
  return stale;
}

/**
 * Admits as many of `taskIds` as the queue's limits allow now, reserving them (the reservation time is `now`,
 * the grant time the claim will write). Returns the admitted ids.
 */
export async function admit(
  ctx: SchedulerContext,
  control: QueueControl,
  taskIds: readonly string[],
  now: number,
): Promise<Set<string>> {
  const { maxConcurrency, ratePerSecond } = control.limits;
  if (!hasLimits(control) || taskIds.length === 0) return new Set(taskIds);
  const key = { leaseId: queueControlId(control.queue) };
  for (let round = 0; round < 4; round++) {
    const item =
      (
        await ctx.sessions.doc.send(
          new GetCommand({ TableName: ctx.sessions.tableName, Key: key, ConsistentRead: true }),
        )
      ).Item ?? {};
    const held = numberMap(item.held);
    const wanted = taskIds.filter((id) => !(id in held));
    const size = Object.keys(held).length;
    const stale =
      maxConcurrency !== undefined && size + wanted.length > maxConcurrency
        ? await staleEntries(ctx, held, now)
        : new Map<string, number>();
    let room = maxConcurrency === undefined ? wanted.length : maxConcurrency - size + stale.size;

    const lastTakenAt = typeof item.tokensAt === 'number' ? item.tokensAt : undefined;
    // The bucket's version, not its time, is what two claims compare: within one millisecond the time is equal.
    const version = typeof item.tokensVersion === 'number' ? item.tokensVersion : undefined;
    let tokens = 0;
    if (ratePerSecond !== undefined) {
      const burst = control.limits.burst ?? Math.max(1, Math.ceil(ratePerSecond));
      const previous = typeof item.tokens === 'number' ? item.tokens : burst;
      const elapsedMs = lastTakenAt === undefined ? 0 : Math.max(0, now - lastTakenAt);
      tokens = Math.min(burst, previous + (elapsedMs / 1_000) * ratePerSecond);
      room = Math.min(room, Math.floor(tokens));
    }
    const admitted = wanted.slice(0, Math.max(0, room));
    if (admitted.length === 0) return new Set();

    const written = await conditionalUpdate(
      ctx.sessions.doc,
      { TableName: ctx.sessions.tableName, Key: key },
      (e) => {
        const set: string[] = [`${e.n('kind')} = ${e.v('queue')}`, `${e.n('queue')} = ${e.v(control.queue)}`];
        const remove: string[] = [];
        const conditions: string[] = [];
        if (maxConcurrency !== undefined) {
          if (item.held === undefined) {
            set.push(`${e.n('held')} = ${e.v(Object.fromEntries(admitted.map((id) => [id, now])))}`);
            conditions.push(`attribute_not_exists(${e.n('held')})`);
          } else {
            set.push(...admitted.map((id) => `${e.n('held', id)} = ${e.v(now)}`));
            remove.push(...[...stale.keys()].map((id) => e.n('held', id)));
            conditions.push(`size(${e.n('held')}) <= ${e.v(maxConcurrency - admitted.length + stale.size)}`);
            conditions.push(...admitted.map((id) => `attribute_not_exists(${e.n('held', id)})`));
            conditions.push(...[...stale].map(([id, at]) => `${e.n('held', id)} = ${e.v(at)}`));
          }
        }
        if (ratePerSecond !== undefined) {
          set.push(`${e.n('tokens')} = ${e.v(tokens - admitted.length)}`);
          set.push(`${e.n('tokensAt')} = ${e.v(Math.max(now, lastTakenAt ?? now))}`);
          set.push(`${e.n('tokensVersion')} = ${e.v((version ?? 0) + 1)}`);
          conditions.push(
            version === undefined
              ? `attribute_not_exists(${e.n('tokensVersion')})`
              : `${e.n('tokensVersion')} = ${e.v(version)}`,
          );
        }
        return { set, remove, condition: conditions.join(' AND ') };
      },
      (value) => value,
    );
    if (written.ok) return new Set(admitted);
  }
  return new Set();
}

/** Gives back queue slots reserved by a claim whose grants did not happen. */
export async function releaseQueueSlots(
  ctx: SchedulerContext,
  queue: string,
  entries: ReadonlyMap<string, number>,
): Promise<void> {
  if (entries.size === 0) return;
  await conditionalUpdate(
    ctx.sessions.doc,
    { TableName: ctx.sessions.tableName, Key: { leaseId: queueControlId(queue) } },
    (e) => ({
      remove: [...entries.keys()].map((id) => e.n('held', id)),
      condition: [...entries].map(([id, at]) => `${e.n('held', id)} = ${e.v(at)}`).join(' AND '),
    }),
    (value) => value,
  );
}
