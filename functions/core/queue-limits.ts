/**
 * Per-queue limits, enforced at claim time with conditional writes on the queue's control record, so they hold
 * exactly under parallel claims from many agents:
 * - concurrency: the record lists the queue's tasks leased or about to be; a claim adds its tasks on condition
 *   that the list stays within the limit (the same superset bookkeeping as an agent session's slots);
 * - rate: a token bucket refilled at `ratePerSecond` up to `burst`, taken from on condition that no other claim
 *   took since it was read, so two claims cannot spend the same tokens.
 * Only queues with a limit pay for this: one read and one write per claim, and for a concurrency limit one write
 * at the end of each lease, which frees its slot (`freeQueueSlots`).
 */
import { errorName } from '#domain/errors';
import { enforcedLimits } from '#domain/queue-limits';
import type { Task } from '#domain/task';
import type { SchedulerContext } from './context';
import type { QueueControl } from './queue-controls';

export const hasLimits = (control: QueueControl): boolean =>
  control.limits.maxConcurrency !== undefined || control.limits.ratePerSecond !== undefined;

/**
 * How many of a full queue's entries a claim looks at for slots no lease holds any more: the oldest reservations,
 * where a slot whose freeing was lost sits once the leases reserved with it are over. The whole map, read task by
 * task, cost a claim of a full queue half a read unit per lease held (500 at 1,000 held), at every poll.
 */
export const STALE_LOOK = 25;

/** The `STALE_LOOK` oldest entries of the slots, by reservation time. */
const oldestEntries = (held: Readonly<Record<string, number>>): Record<string, number> =>
  Object.fromEntries(
    Object.entries(held)
      .sort((a, b) => a[1] - b[1])
      .slice(0, STALE_LOOK),
  );

/**
 * Entries of the queue's reserved slots that stand for no lease any more: the grant made for the reservation has
 * landed and ended (the task still carries that grant time), or the reservation is past the grace period.
 */
async function staleEntries(ctx: SchedulerContext, held: Readonly<Record<string, number>>, now: number) {
  const graceStart = now - ctx.settings.reservationGraceSeconds * 1_000;
  const stale = new Map<string, number>();
  if (Object.keys(held).length === 0) return stale;
  const tasks = await ctx.tasks.getMany(Object.keys(held), { consistent: false });
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
 * the grant time the claim will write). Returns the admitted ids. A task still named in the slots by an entry that
 * stands for no lease (its lease ended and the slot was not freed: a write lost, or a lease ended by a function
 * older than the freeing) is admitted in place of that entry.
 */
export async function admit(
  ctx: SchedulerContext,
  control: QueueControl,
  taskIds: readonly string[],
  now: number,
): Promise<Set<string>> {
  const { maxConcurrency, ratePerSecond } = enforcedLimits(control.limits);
  if (!hasLimits(control) || taskIds.length === 0) return new Set(taskIds);
  for (let round = 0; round < 4; round++) {
    const seen = await ctx.queueControls.readAdmission(control.queue);
    const held = seen.held ?? {};
    const size = Object.keys(held).length;
    // Entries of the very tasks wanted are looked at always (a few reads, only when there are such entries).
    const named = Object.fromEntries(taskIds.filter((id) => id in held).map((id) => [id, held[id] ?? 0]));
    const stale =
      maxConcurrency === undefined
        ? new Map<string, number>()
        : await staleEntries(
            ctx,
            size + taskIds.length > maxConcurrency ? { ...oldestEntries(held), ...named } : named,
            now,
          );
    const wanted =
      maxConcurrency === undefined ? [...taskIds] : taskIds.filter((id) => !(id in held) || stale.has(id));
    let room = maxConcurrency === undefined ? wanted.length : maxConcurrency - size + stale.size;

    const lastTakenAt = seen.tokensAt;
    let tokens = 0;
    if (ratePerSecond !== undefined) {
      const burst = control.limits.burst ?? Math.max(1, Math.ceil(ratePerSecond));
      const previous = seen.tokens ?? burst;
      const elapsedMs = lastTakenAt === undefined ? 0 : Math.max(0, now - lastTakenAt);
      tokens = Math.min(burst, previous + (elapsedMs / 1_000) * ratePerSecond);
      room = Math.min(room, Math.floor(tokens));
    }
    const admitted = wanted.slice(0, Math.max(0, room));
    if (admitted.length === 0) return new Set();

    const reserved = await ctx.queueControls.reserve(control.queue, seen, {
      taskIds: admitted,
      at: now,
      ...(maxConcurrency === undefined ? {} : { concurrency: { max: maxConcurrency, stale } }),
      ...(ratePerSecond === undefined
        ? {}
        : { tokens: { left: tokens - admitted.length, at: Math.max(now, lastTakenAt ?? now) } }),
    });
    if (reserved) return new Set(admitted);
    // Refused: another claim changed the slots or the bucket since they were read. Look again.
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
  await ctx.queueControls.release(queue, entries);
}

/**
 * Frees the slots a lease held in its queue's and its key's concurrency limits, once the lease is over: each is
 * removed only if it is still the one reserved for that lease (reserved at its grant time). Nothing for a task
 * whose grant reserved no slot. Best effort: a slot left behind is found stale by the next admission that looks.
 */
export async function freeQueueSlots(ctx: SchedulerContext, task: Task): Promise<void> {
  const { queueSlots, leasedAt } = task;
  if (!queueSlots || queueSlots.length === 0 || leasedAt === undefined) return;
  await Promise.all(
    queueSlots.map((control) =>
      ctx.queueControls.release(control, new Map([[task.taskId, leasedAt]])).catch((error: unknown) =>
        ctx.log.warn('freeing a queue slot failed; the next admission finds it stale', {
          taskId: task.taskId,
          error: errorName(error),
        }),
      ),
    ),
  );
}
