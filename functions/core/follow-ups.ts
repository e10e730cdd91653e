/**
 * What follows from a task's end, and the end that comes from waiting too long:
 * - `expireTask`: a task not claimed by its deadline to start ends `expired` (a conditional write: a claim that
 *   got in first wins, and no grant can land after the deadline, the grant's own condition says so);
 * - `followUpEnd`: a task that died with an `onFailure` has it submitted, once per death: the submission's
 *   idempotency key names the dead task and which of its deaths it follows (a redrive lets it die again), so the
 *   caller's attempt and the supervisor's, should both run, make one task, and a death after a redrive makes its own.
 */
import { errorName, IdempotencyConflictError, ValidationError } from '#domain/errors';
import { onFailureKeyOf } from '#domain/ids';
import { deathOf, type Task } from '#domain/task';
import type { SchedulerContext } from './context';
import { publishEnd } from './dependencies';
import { emit } from './events';
import { submitTask } from './submit';
import { ending } from './timing';
import { closeWaitpointOf } from './waitpoint-ends';

/** Ends a task whose deadline to start passed while it waited. True if this call ended it. */
export async function expireTask(ctx: SchedulerContext, task: Task): Promise<boolean> {
  const now = ctx.now();
  if (task.expiresAt === undefined || task.expiresAt > now) return false;
  if (task.status !== 'queued' && task.status !== 'waiting' && task.status !== 'suspended') return false;
  const written = await ctx.tasks.expire(task, ending(ctx, now, 'expired'), now);
  if (!written.ok) return false;
  if (task.status === 'suspended') await closeWaitpointOf(ctx, task, now);
  await publishEnd(ctx, written.task, 'task.expired', {
    taskId: task.taskId,
    queue: task.queue,
    data: { expiresAt: new Date(task.expiresAt).toISOString(), from: task.status },
  });
  return true;
}

/**
 * Makes what follows from the task's end, if anything is pending (its `onFailure`), then takes the task out of the
 * due index. A failure throws and leaves the task due: the supervisor's next pass tries again.
 */
export async function followUpEnd(ctx: SchedulerContext, task: Task): Promise<void> {
  if (!task.followUpPending) return;
  if (task.hasOnFailure) await submitOnFailure(ctx, task);
  await ctx.tasks.settleEnd(task);
}

async function submitOnFailure(ctx: SchedulerContext, task: Task): Promise<void> {
  const json = await ctx.payloads.getOnFailure(task);
  if (json === undefined) {
    // Kept as long as the task (`keepPayloadFor`): only a payload lost before that rule, or deleted by hand, is.
    const reason = 'the onFailure is no longer kept; nothing submitted';
    ctx.log.error(`the ${reason}`, { taskId: task.taskId });
    await emit(ctx, [
      { type: 'task.onFailureLost', fields: { taskId: task.taskId, queue: task.queue, data: { reason } } },
    ]);
    return;
  }
  const spec = JSON.parse(json) as Record<string, unknown>;
  try {
    const submitted = await submitTask(
      ctx,
      {
        ...spec,
        idempotencyKey: onFailureKeyOf(task.taskId, deathOf(task)),
        // The follow-up is part of the dead task's life: it joins the same trace.
        ...(task.traceparent === undefined ? {} : { traceparent: task.traceparent }),
        ...(task.tracestate === undefined ? {} : { tracestate: task.tracestate }),
      },
      { failureOf: { taskId: task.taskId, ...(task.error ? { error: task.error } : {}) } },
    );
    if (submitted.created) {
      ctx.log.info('submitted the onFailure of a dead task', {
        taskId: task.taskId,
        onFailureTaskId: submitted.task.taskId,
      });
    }
  } catch (error) {
    // What can never be submitted (its queue was removed since; its deadline passed) is given up, loudly.
    if (error instanceof ValidationError || error instanceof IdempotencyConflictError) {
      ctx.log.error('the onFailure of a dead task cannot be submitted', {
        taskId: task.taskId,
        error: errorName(error),
        reason: error.message,
      });
      return;
    }
    throw error;
  }
}
