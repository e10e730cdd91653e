/**
 * The wake timer on SQS: one standard queue whose messages are timed wakes, each delayed until its time (whole
 * seconds, at most 15 minutes; a later wake is delivered early and armed again for the rest). The timer function
 * reads the queue through a Lambda event source mapping; locally a poller reads it on the emulator.
 *
 * A message is `{"v":1,"queue":…,"at":…,"count":…,"reason":…}`: a few dozen bytes. A malformed one (not ours) is
 * dropped by the reader.
 */
import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import type { TimedWake, WakeTimer } from '#core/ports/push-channel';
import { requirementsSchema, requiresAny } from '#domain/labels';
import type { WakeReason } from '#domain/push';
import { QUEUE_NAME_PATTERN } from '#domain/task-spec';

/** Parallel invocations of the timer function at most (its event source mapping's): a burst waits in the queue. */
export const WAKE_TIMER_MAX_CONCURRENCY = 20;

/** The longest delay SQS gives a message. */
const SQS_MAX_DELAY_SECONDS = 900;

const wakeSchema = z.strictObject({
  v: z.literal(1),
  queue: z.string().regex(QUEUE_NAME_PATTERN),
  at: z.number().int().nonnegative(),
  count: z.number().int().positive().max(10_000),
  reason: z.string().min(1).max(32),
  require: requirementsSchema.optional(),
});

/** The wake a timer message carries, or undefined for a message that is not one. */
export function decodeTimedWake(body: string): TimedWake | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  const checked = wakeSchema.safeParse(parsed);
  if (!checked.success) return undefined;
  const { queue, at, count, reason, require } = checked.data;
  return { queue, at, count, reason: reason as WakeReason, ...(requiresAny(require) ? { require } : {}) };
}

export const encodeTimedWake = (wake: TimedWake): string =>
  JSON.stringify({
    v: 1,
    queue: wake.queue,
    at: wake.at,
    count: wake.count,
    reason: wake.reason,
    ...(requiresAny(wake.require) ? { require: wake.require } : {}),
  });

export class WakeTimerQueue implements WakeTimer {
  constructor(
    private readonly sqs: SQSClient,
    readonly queueUrl: string,
    private readonly now: () => number = Date.now,
  ) {}

  async arm(wakes: readonly TimedWake[]): Promise<void> {
    const now = this.now();
    let failed = 0;
    for (let i = 0; i < wakes.length; i += 10) {
      const batch = wakes.slice(i, i + 10);
      const output = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: batch.map((wake, n) => ({
            Id: String(n),
            MessageBody: encodeTimedWake(wake),
            // Rounded up as a hint's delay is: a wake never comes before the hint armed with it is visible.
            DelaySeconds: Math.max(0, Math.min(SQS_MAX_DELAY_SECONDS, Math.ceil((wake.at - now) / 1_000))),
          })),
        }),
      );
      failed += output.Failed?.length ?? 0;
    }
    if (failed > 0) throw new Error(`${failed} of ${wakes.length} timed wakes were not armed`);
  }
}
