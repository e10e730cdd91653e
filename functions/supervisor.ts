/**
 * Lambda entry: one supervisor pass, on EventBridge Scheduler's `rate(1 minute)`. Takes back expired leases and
 * sends again the tasks whose hints were lost, then logs one line with what it did.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { schedulerFromEnvironment } from '#core/runtime';

const logger = new Logger();
const scheduler = schedulerFromEnvironment(logger);

export const handler = middy<{ scheduledTime?: string }, Record<string, unknown>>()
  .use(injectLambdaContext(logger))
  .handler(async (event) => {
    const reclaimed = await scheduler.reclaim();
    const reconciled = await scheduler.reconcile();
    const cycle = {
      scheduledTime: event.scheduledTime,
      expiredSessions: reclaimed.expiredSessions,
      requeued: reclaimed.requeued.length,
      deadLettered: reclaimed.dead.length,
      reconciled: reconciled.redispatched.length,
      errors: reclaimed.errors + reconciled.errors,
    };
    logger.info('supervisor pass', { cycle });
    return cycle;
  });
