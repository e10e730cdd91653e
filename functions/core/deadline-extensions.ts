/**
 * An attempt's deadline pushed forward by its holder (`extend` on a heartbeat): a long model call, a plan that
 * grew. The attempt then ends no sooner than the asked time after the write, and never later than the task's
 * `maxTimeoutSeconds` from its grant (its `timeoutSeconds` when it declares none, so an extension moves nothing).
 * The deadline is the one every later write of the holder is fenced by, and the one the supervisor takes the lease
 * back at: nothing else needs telling.
 *
 * Cost, per extension: a consistent read of the task (a read unit up to 4 KB) for its grant time and longest
 * attempt, and one conditional write (a write unit) when the deadline moves; nothing is written when it would not.
 */
import { isHeldUnder } from '#domain/task';
import type { SchedulerContext } from './context';
import type { OwnerFence } from './ports/task-store';

/** The deadline now, and what is left of the attempt from `now`. */
export interface Extended {
  readonly seconds: number;
  readonly leaseDeadline: number;
}

const left = (deadline: number, now: number): Extended => ({
  seconds: Math.max(0, (deadline - now) / 1_000),
  leaseDeadline: deadline,
});

/**
 * Moves the deadline of the lease `lease` of `taskId` to `now + wantedMs`, capped at the task's longest attempt.
 * Undefined when the lease is over (taken back, ended, past its deadline): the holder has lost it.
 */
export async function extendDeadline(
  ctx: SchedulerContext,
  taskId: string,
  lease: OwnerFence,
  wantedMs: number,
  now: number,
): Promise<Extended | undefined> {
  const task = await ctx.tasks.get(taskId);
  if (!isHeldUnder(task, lease, now) || task.leasedAt === undefined || task.leaseDeadline === undefined)
    return;
  const longest = (task.maxTimeoutSeconds ?? task.timeoutSeconds) * 1_000;
  const deadline = Math.min(now + wantedMs, task.leasedAt + longest);
  if (deadline <= task.leaseDeadline) return left(task.leaseDeadline, now);
  const written = await ctx.tasks.extendDeadline(taskId, lease, task.leasedAt, deadline, now);
  if (written.ok) return left(deadline, now);
  // Refused: the lease ended since the read, or a beat sent at the same time moved the deadline further.
  const current = written.current;
  return isHeldUnder(current, lease, now) && current.leaseDeadline !== undefined
    ? left(current.leaseDeadline, now)
    : undefined;
}
