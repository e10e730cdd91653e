/**
 * The wake timer on this machine: what Lambda's event source mapping does in AWS, on the SQS emulator. It long-polls
 * the timer's queue, hands each batch to the same operation the timer function runs (`fireTimedWakes`), as that
 * function, and deletes the batch once handled.
 */
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { decodeTimedWake } from '#adapters/wake-timer-queue';
import type { SchedulerContext } from '#core/context';
import { fireTimedWakes } from '#core/push';
import { runApart } from './function-scope';

export interface WakeTimerPoller {
  /** Stops after the receive in flight (at most `waitSeconds`). Idempotent. */
  stop(): Promise<void>;
}

export function pollWakeTimer(
  sqs: SQSClient,
  queueUrl: string,
  ctx: SchedulerContext,
  // Short long polls: a stop is never kept waiting long. A message that becomes visible ends a poll at once.
  { waitSeconds = 2 }: { readonly waitSeconds?: number } = {},
): WakeTimerPoller {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        // Received with the timer function's role, as the event source mapping receives in AWS.
        const received = await runApart('wakeTimer', () =>
          sqs.send(
            new ReceiveMessageCommand({
              QueueUrl: queueUrl,
              MaxNumberOfMessages: 10,
              WaitTimeSeconds: waitSeconds,
            }),
          ),
        );
        const messages = received.Messages ?? [];
        if (messages.length === 0) continue;
        await runApart('wakeTimer', async () => {
          const wakes = messages.map((m) => decodeTimedWake(m.Body ?? '')).filter((w) => w !== undefined);
          await fireTimedWakes(ctx, wakes);
          await sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: messages.map((m, n) => ({ Id: String(n), ReceiptHandle: m.ReceiptHandle ?? '' })),
            }),
          );
        });
      } catch (error) {
        if (stopped) break;
        ctx.log.warn('the wake timer could not read its queue; trying again', {
          error: error instanceof Error ? error.message : String(error),
        });
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}
