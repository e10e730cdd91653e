/**
 * Lambda entry: a schedule fired. One occurrence recorded and at most one task per scheduled time, however many
 * times EventBridge Scheduler delivers it (see `fireSchedule`).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { type FireOutcome, fireSchedule } from '#core/fire-schedule';
import { schedulerFromEnvironment } from '#core/runtime';

const logger = new Logger();
const scheduler = schedulerFromEnvironment(logger);

export const handler = middy<unknown, FireOutcome>()
  .use(injectLambdaContext(logger))
  .handler(async (event) => {
    const fired = await fireSchedule(scheduler, event);
    logger.info('schedule fired', { ...fired });
    return fired;
  });
