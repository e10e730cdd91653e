/** What a suspended task's other ends (cancel, expiry) do to its waitpoint. */
import type { Task } from '#domain/task';
import type { SchedulerContext } from './context';

/** Closes the open waitpoint of a suspended task that ended otherwise (cancelled, expired). Best effort. */
export async function closeWaitpointOf(ctx: SchedulerContext, task: Task, now: number): Promise<void> {
  if (task.waitpointId === undefined) return;
  try {
    const waitpoint = await ctx.waitpoints.get(task.waitpointId);
    if (waitpoint?.status === 'open') await ctx.waitpoints.close(waitpoint, now);
  } catch {
    ctx.log.warn('closing a waitpoint failed; its callback finds its task no longer waits', {
      taskId: task.taskId,
    });
  }
}
