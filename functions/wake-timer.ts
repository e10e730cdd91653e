/**
 * Lambda entry: the wake timer. SQS delivers each timed wake when its delay ends (an event source mapping, up to
 * ten at a time); the due ones wake idle agents of their queues, one delivered early is armed again. A wake is a
 * hint: nothing here is retried, and a message that is not a wake is dropped.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { decodeTimedWake } from '#adapters/wake-timer-queue';
import { fireTimedWakes, type TimedWakesOutcome } from '#core/push';
import { schedulerFromEnvironment } from '#wiring/runtime';

interface SqsEvent {
  readonly Records: readonly { readonly messageId: string; readonly body: string }[];
}

const logger = new Logger();
const scheduler = schedulerFromEnvironment(logger);

export const handler = middy<SqsEvent, TimedWakesOutcome & { readonly dropped: number }>()
  .use(injectLambdaContext(logger))
  .handler(async (event) => {
    const wakes = event.Records.map((record) => decodeTimedWake(record.body));
    const dropped = wakes.filter((wake) => wake === undefined).length;
    if (dropped > 0) logger.warn('dropped messages that are not timed wakes', { dropped });
    const outcome = await fireTimedWakes(
      scheduler.ctx,
      wakes.filter((wake) => wake !== undefined),
    );
    logger.info('timed wakes', { ...outcome, dropped });
    return { ...outcome, dropped };
  });
