/**
 * Where a transition leaves a task, in time: when a requeued task may be claimed and looked at again, and when
 * a finished one may be purged. The store turns these into the record's attributes. Which transitions there are
 * is `TRANSITIONS`, in `functions/domain/task-status.ts`.
 */
import type { RetryDecision } from '#domain/retry-policy';
import type { Task } from '#domain/task';
import { LIMITS } from '#domain/task-spec';
import type { SchedulerContext } from './context';
import type { Ending, Requeue } from './ports/task-store';

/** Whether a hint for a task claimable after `delayMs` can ride on an SQS message now. */
export const sendsNow = (delayMs: number): boolean => delayMs <= LIMITS.sqsMaxDelaySeconds * 1_000;

/**
 * When `reconcile` should first look at a task claimable at `notBefore`: shortly after its hint should have
 * been claimed or, when SQS cannot carry the delay, when the longest delay SQS can carry will end at `notBefore`.
 */
export function dueAtAfterDispatch(ctx: SchedulerContext, notBefore: number, now = 0): number {
  const sqsMaxDelayMs = LIMITS.sqsMaxDelaySeconds * 1_000;
  if (!sendsNow(notBefore - now)) return notBefore - sqsMaxDelayMs;
  // With a push channel, a task held back (a delay, a retry's backoff) is looked at once it is claimable: the end
  // of an SQS delay wakes nobody by itself. The timed wake armed with its hint (`wakeLater`) comes first; this look
  // is its backstop, and costs nothing for a task claimed by then (its grant moves its due time to its lease's end).
  if (ctx.push && notBefore > now) return notBefore;
  return notBefore + ctx.settings.reconcileAfterSeconds * 1_000;
}

/**
 * Back to `queued`, claimable after `delayMs`. The due time is when `reconcile` should look again: a little
 * after the hint should have been claimed, or, for a delay longer than SQS can hold, when it is time to send.
 */
export function requeueAfter(
  ctx: SchedulerContext,
  now: number,
  delayMs: number,
  task?: Pick<Task, 'expiresAt'>,
): Requeue {
  const claimableAt = now + delayMs;
  return {
    status: 'queued',
    claimableAt,
    dueAt: dueNoLaterThanExpiry(dueAtAfterDispatch(ctx, claimableAt, now), task),
    sentNow: sendsNow(delayMs),
  };
}

/** A task with a deadline to start is looked at by then at the latest, so that it expires on time. */
export const dueNoLaterThanExpiry = (dueAt: number, task?: Pick<Task, 'expiresAt'>): number =>
  task?.expiresAt === undefined ? dueAt : Math.min(dueAt, task.expiresAt);

/** A terminal status, purged by DynamoDB's TTL once the retention period is over. */
export function ending<Status extends Ending['status']>(
  ctx: SchedulerContext,
  now: number,
  status: Status,
  task?: Pick<Task, 'hasOnFailure'>,
): Ending & { status: Status } {
  const purgeAt = Math.ceil(now / 1_000) + ctx.settings.taskRetentionSeconds;
  // A death with an `onFailure` to submit stays due: the supervisor submits it if this caller's attempt is lost.
  return status === 'dead' && task?.hasOnFailure
    ? { status, purgeAt, followUpAt: now + ctx.settings.reconcileAfterSeconds * 1_000 }
    : { status, purgeAt };
}

/**
 * A retry that could not start before the task's deadline to start is no retry: the task dies now (its `onFailure`
 * runs) rather than wait in line to expire.
 */
export function retryInTime(
  decision: RetryDecision,
  now: number,
  task: Pick<Task, 'expiresAt'>,
): RetryDecision {
  if (!decision.retry || task.expiresAt === undefined) return decision;
  return now + decision.delayMs < task.expiresAt ? decision : { retry: false, reason: 'deadlinePassed' };
}
