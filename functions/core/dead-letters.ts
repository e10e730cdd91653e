/**
 * A task that died (attempts used up, a permanent error, or no payload) leaves a record in its queue's
 * dead-letter queue beside the `task.dead` event, so the DLQ alarm calls a person and the record can be
 * redriven, and its `onFailure`, if it has one, is submitted. Best effort: the task's own record already says it
 * is dead, and stays in the due index until its `onFailure` is submitted.
 */
import { errorName } from '#domain/errors';
import type { Task } from '#domain/task';
import type { SchedulerContext } from './context';
import { releaseDependents } from './dependencies';
import { emit } from './events';
import { followUpEnd } from './follow-ups';
import { announceEnd } from './push';

export async function recordDeath(
  ctx: SchedulerContext,
  task: Task,
  reason: string,
  agentId?: string,
): Promise<void> {
  const record = {
    taskId: task.taskId,
    queue: task.queue,
    attempt: task.attempt,
    leaseEpoch: task.leaseEpoch,
    reason,
    diedAt: new Date(ctx.now()).toISOString(),
  };
  await Promise.all([
    announceEnd(ctx, task),
    ctx.queues.sendDeadLetter(task.queue, record).catch((error: unknown) =>
      ctx.log.warn('could not record a dead task in its dead-letter queue', {
        taskId: task.taskId,
        error: errorName(error),
      }),
    ),
    emit(ctx, [
      {
        type: 'task.dead',
        fields: {
          taskId: task.taskId,
          queue: task.queue,
          ...(agentId ? { agentId } : {}),
          data: { attempt: task.attempt, leaseEpoch: task.leaseEpoch, reason },
        },
      },
    ]),
  ]);
  await releaseDependents(ctx, task);
  await followUpEnd(ctx, task).catch((error: unknown) =>
    ctx.log.warn('following up a death failed; the supervisor does it', {
      taskId: task.taskId,
      error: errorName(error),
    }),
  );
}
