/**
 * How long a task's payload is kept. DynamoDB's TTL purges the payload item (its `onFailure` with it) and the
 * inputs its dependencies left, and the bucket's lifecycle rule its S3 object, at a time set at submit: when the
 * task may first be claimed, plus the longest queue age, plus the retention (21 days by default). A task can live
 * longer: retries with long backoffs (up to 100 attempts 7 days apart), a long wait on its dependencies, a queue
 * paused for weeks, a redrive of a task that died late.
 *
 * So the time is pushed later, but only on the events that make a task live long, and only when it is getting
 * close: an update of the payload item bills the whole item. Whenever a task is to become claimable at some time
 * (a retry's backoff, a redrive, a dependency's end) or is looked at while it waits (the supervisor's look at a
 * queued or waiting task, at most 34 hours apart, at a suspended one, at most a week apart), its payload must be
 * kept past that time plus the retention plus `GUARD`; if it is not, it is kept as a new submission at that time would be. A dead task counts as one
 * that may become claimable now (a redrive), so its `onFailure` and payload outlive its own record.
 *
 * A task that lives less than 10.5 days (the 21 days set at submit less the retention and the guard) never costs
 * a write more. One that lives longer costs one extension per 10.5 days of life: an update of its payload item
 * (1 to 11 write units), of each input (the size of the result it keeps), of its state item (1 or 2 units), a
 * query of its inputs if it has any, and an S3 copy ($0.005 per thousand) if its payload is an object.
 */
import type { Task } from '#domain/task';
import { LIMITS } from '#domain/task-spec';
import type { SchedulerContext } from './context';

type LifetimeSettings = Pick<SchedulerContext['settings'], 'maxQueueAgeSeconds' | 'taskRetentionSeconds'>;

/**
 * How close a payload's purge may come before it is kept longer: longer than any stretch in which nothing looks
 * at a live task (a queued task's supervisor look is at most 16 × 64 × 120 s ≈ 34 hours away, a lease at most
 * 12 hours), a quarter of the queue age (3.5 days by default).
 */
const guardSeconds = (settings: LifetimeSettings): number => settings.maxQueueAgeSeconds / 4;

/** When a payload written for a task first claimable at `claimableAt` may be purged (epoch seconds). */
export const payloadPurgeAtFor = (settings: LifetimeSettings, claimableAt: number): number =>
  Math.ceil(claimableAt / 1_000) + settings.maxQueueAgeSeconds + settings.taskRetentionSeconds;

/**
 * Until when the task's payload is kept for sure (epoch seconds). A task submitted before the time was recorded
 * on its state item had its payload kept from its first claimable time, which is never before its creation,
 * plus the queue age and the retention then in force: its creation plus the queue age is a time its payload
 * reaches whatever the retention was.
 */
export const payloadKeptUntil = (
  settings: LifetimeSettings,
  task: Pick<Task, 'payloadPurgeAt' | 'createdAt'>,
): number => task.payloadPurgeAt ?? Math.ceil(task.createdAt / 1_000) + settings.maxQueueAgeSeconds;

/**
 * Keeps the payload of `task` (and what else is kept with it) for a task claimable at `claimableAt`, if the time
 * it is kept until is getting close. Answers the task as it then is. Called before the write that sets the new
 * claimable time, so that no record says a task is claimable later than its payload lasts.
 */
export async function keepPayloadFor(ctx: SchedulerContext, task: Task, claimableAt: number): Promise<Task> {
  const { settings } = ctx;
  const needed = Math.ceil(claimableAt / 1_000) + settings.taskRetentionSeconds + guardSeconds(settings);
  if (payloadKeptUntil(settings, task) >= needed) return task;
  const payloadPurgeAt = payloadPurgeAtFor(settings, claimableAt);
  await ctx.payloads.keepPayload(task, payloadPurgeAt);
  return { ...task, payloadPurgeAt };
}

/**
 * How far ahead of now one keep may reach: a payload object re-armed now lives the bucket rule's days, which count
 * the longest delay (`payloadObjectDays`), so it outlives its item only for a claimable time at most this far off.
 */
const KEEP_AHEAD_MS = LIMITS.delaySeconds * 1_000;

/**
 * Keeps the payload of a task suspended until `timeoutAt` (up to 30 days, past what one keep of its object can
 * cover) for an answer that may come any time until the next look at it, which this answers: the timeout, or a
 * week from now, whichever is first. A wait of 30 days costs its task four looks, and a keep every 10.5 days.
 */
export async function keepSuspendedPayload(
  ctx: SchedulerContext,
  task: Task,
  timeoutAt: number,
): Promise<{ readonly task: Task; readonly lookAt: number }> {
  const lookAt = Math.min(timeoutAt, ctx.now() + KEEP_AHEAD_MS);
  return { task: await keepPayloadFor(ctx, task, lookAt), lookAt };
}
