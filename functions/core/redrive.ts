/**
 * An operator sends a dead task back to the queue, with a fresh set of attempts. Conditional on the task still
 * being dead, so a redrive retried after it committed does nothing more.
 */
import { InvalidTransitionError, TaskNotFoundError } from '#domain/errors';
import type { Task } from '#domain/task';
import type { SchedulerContext } from './context';
import { dispatch } from './dispatch';
import { followUpEnd } from './follow-ups';
import { keepPayloadFor } from './lifetimes';
import { requeueAfter } from './timing';

export async function redriveTask(ctx: SchedulerContext, taskId: string): Promise<Task> {
  const task = await ctx.tasks.get(taskId);
  if (!task) throw new TaskNotFoundError(taskId);
  if (task.status !== 'dead') {
    throw new InvalidTransitionError(`task ${taskId} is ${task.status}; only a dead task can be redriven`);
  }
  // What follows from the death it comes back from is made first, for that death: once redriven, the task may run
  // again, and the supervisor must not find a follow-up to make on it then.
  if (task.followUpPending) await followUpEnd(ctx, task);
  const now = ctx.now();
  await keepPayloadFor(ctx, task, now);
  const written = await ctx.tasks.redrive(task, requeueAfter(ctx, now, 0), now);
  if (!written.ok) {
    if (written.current?.status === 'queued') return written.current;
    throw new InvalidTransitionError(`task ${taskId} changed while being redriven; look again`);
  }
  await dispatch(ctx, written.task, 0, 'redriven');
  return written.task;
}
