/**
 * Where a transition leaves a task, in time: when a requeued task may be claimed and looked at again, and when
 * a finished one may be purged. The store turns these into the record's attributes.
 */
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
  // of an SQS delay wakes nobody, so that look wakes an idle agent of its queue.
  if (ctx.push && notBefore > now) return notBefore;
  return notBefore + ctx.settings.reconcileAfterSeconds * 1_000;
}

/**
 * Back to `queued`, claimable after `delayMs`. The due time is when `reconcile` should look again: a little
 * after the hint should have been claimed, or, for a delay longer than SQS can hold, when it is time to send.
 */
export function requeueAfter(ctx: SchedulerContext, now: number, delayMs: number): Requeue {
  const claimableAt = now + delayMs;
  return {
    status: 'queued',
    claimableAt,
    dueAt: dueAtAfterDispatch(ctx, claimableAt, now),
    sentNow: sendsNow(delayMs),
  };
}

/** A terminal status, purged by DynamoDB's TTL once the retention period is over. */
export function ending<Status extends Ending['status']>(
  ctx: SchedulerContext,
  now: number,
  status: Status,
): Ending & { status: Status } {
  return { status, purgeAt: Math.ceil(now / 1_000) + ctx.settings.retentionSeconds };
}
