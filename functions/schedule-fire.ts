/**
 * Lambda entry: a schedule fired. The task is submitted with an idempotency key made of the schedule's name and
 * the scheduled time, so a fire delivered twice (EventBridge Scheduler delivers at least once, and a retry has a
 * new execution id) creates one task.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { z } from 'zod';
import { schedulerFromEnvironment } from '#core/runtime';
import { ValidationError } from '#domain/errors';
import { describeIssues } from '#domain/task-spec';

const logger = new Logger();
const scheduler = schedulerFromEnvironment(logger);

const fireEvent = z.object({
  schedule: z.string().min(1).max(64),
  scheduledTime: z.iso.datetime({ offset: true }),
  executionId: z.string().optional(),
  attempt: z.union([z.string(), z.number()]).optional(),
  task: z.object({ queue: z.string() }).passthrough(),
});

export const handler = middy<unknown, { taskId: string; created: boolean }>()
  .use(injectLambdaContext(logger))
  .handler(async (event) => {
    const parsed = fireEvent.safeParse(event);
    if (!parsed.success) throw new ValidationError(describeIssues(parsed.error));
    const fire = parsed.data;
    const { task, created } = await scheduler.submit({
      payload: {},
      ...fire.task,
      idempotencyKey: `schedule:${fire.schedule}:${new Date(fire.scheduledTime).toISOString()}`,
    });
    logger.info('schedule fired', {
      schedule: fire.schedule,
      scheduledTime: fire.scheduledTime,
      taskId: task.taskId,
      created,
    });
    return { taskId: task.taskId, created };
  });
