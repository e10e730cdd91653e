/**
 * Lambda entry: a schedule fired. One task per occurrence, however many times EventBridge Scheduler delivers it
 * (see `fireSchedule`).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { fireSchedule } from '#core/fire-schedule';
import { schedulerFromEnvironment } from '#core/runtime';

const logger = new Logger();
const scheduler = schedulerFromEnvironment(logger);

export const handler = middy<unknown, { taskId: string; created: boolean }>()
  .use(injectLambdaContext(logger))
  .handler(async (event) => {
    const fired = await fireSchedule(scheduler, event);
    logger.info('schedule fired', { ...fired });
    return fired;
  });
