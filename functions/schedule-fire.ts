/**
 * Lambda entry: a schedule fired. One occurrence recorded and at most one task per scheduled time, however many
 * times EventBridge Scheduler delivers it (see `fireSchedule`).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { type FireOutcome, fireSchedule, withFireTrace } from '#core/fire-schedule';
import { schedulerFromEnvironment } from '#wiring/runtime';
import { inRootSpan, spanExporterFromEnvironment } from '#wiring/tracing';

const logger = new Logger();
// With the schedules backend: each fire arms the early fire of the schedule's next occurrence, which targets this
// very function (its ARN comes from the invocation: the environment cannot name the function it belongs to).
let ownArn = '';
const scheduler = schedulerFromEnvironment(logger, process.env, { schedules: true, targetArn: () => ownArn });
const spans = spanExporterFromEnvironment(logger);

export const handler = middy<unknown, FireOutcome>()
  .use(injectLambdaContext(logger))
  .handler(async (event, context) => {
    ownArn = context.invokedFunctionArn;
    const schedule = (event as { schedule?: unknown } | null)?.schedule;
    const fired = await inRootSpan(
      spans,
      'scheduleFire',
      // The fired task joins the fire's trace.
      (traceparent) => fireSchedule(scheduler.ctx, withFireTrace(event, traceparent)),
      (outcome) => ({
        ...(typeof schedule === 'string' ? { 'agent_scheduler.schedule': schedule } : {}),
        'agent_scheduler.schedule.scheduled_time': outcome.scheduledTime,
        'agent_scheduler.schedule.status': outcome.status,
        ...(outcome.taskId === undefined ? {} : { 'agent_scheduler.task.id': outcome.taskId }),
      }),
    );
    logger.info('schedule fired', { ...fired });
    return fired;
  });
