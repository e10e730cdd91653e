/**
 * An operator cancels a task. A queued task is cancelled outright; a leased one too, and its owner is told on its
 * push connection at once, and at its next heartbeat (its later writes get `LeaseLost`). Cancelling a cancelled task returns it unchanged.
 */
import { InvalidTransitionError, ServiceUnavailableError, TaskNotFoundError } from '#domain/errors';
import type { Task } from '#domain/task';
import { assertTransition } from '#domain/task-status';
import type { SchedulerContext } from './context';
import { publishEnd } from './dependencies';
import { pushCancel } from './push';
import { ending } from './timing';
import { freeLeaseSlots } from './turns';
import { closeWaitpointOf } from './waitpoint-ends';

export async function cancelTask(ctx: SchedulerContext, taskId: string): Promise<Task> {
  return (await cancelled(ctx, taskId)).task;
}

/**
 * Cancels the task if it is open (queued, waiting, leased, suspended): `changed` says whether it was, `task` is the
 * task as it now is when this read it (not when it had ended already, or is gone).
 */
export async function cancelIfOpen(
  ctx: SchedulerContext,
  taskId: string,
): Promise<{ readonly changed: boolean; readonly task?: Task }> {
  try {
    return await cancelled(ctx, taskId);
  } catch (error) {
    if (error instanceof InvalidTransitionError || error instanceof TaskNotFoundError)
      return { changed: false };
    throw error;
  }
}

async function cancelled(ctx: SchedulerContext, taskId: string): Promise<{ task: Task; changed: boolean }> {
  // A claim or a finish may land between the read and the write; the fenced write then fails and we look again.
  for (let round = 0; round < 5; round++) {
    const task = await ctx.tasks.get(taskId);
    if (!task) throw new TaskNotFoundError(taskId);
    if (task.status === 'cancelled') return { task, changed: false };
    assertTransition(taskId, task.status, 'cancel');
    const now = ctx.now();
    const written = await ctx.tasks.cancel(task, ending(ctx, now, 'cancelled'), now);
    if (!written.ok) continue;
    if (task.status === 'leased') await freeLeaseSlots(ctx, task);
    if (task.status === 'suspended') await closeWaitpointOf(ctx, task, now);
    if (task.status === 'leased' && task.owner && task.sessionId) {
      await Promise.all([
        ctx.sessions
          .notify(task.owner, task.sessionId, { kind: 'cancelled', taskId, leaseEpoch: task.leaseEpoch })
          .catch(() => undefined),
        pushCancel(ctx, task.owner, taskId, task.leaseEpoch),
      ]);
    }
    await publishEnd(ctx, written.task, 'task.cancelled', {
      taskId,
      queue: task.queue,
      ...(task.owner ? { agentId: task.owner } : {}),
      data: { from: task.status },
    });
    return { task: written.task, changed: true };
  }
  throw new ServiceUnavailableError(`task ${taskId} kept changing while being cancelled; try again`);
}
