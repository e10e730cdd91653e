/**
 * Lambda entry: one supervisor pass, on EventBridge Scheduler's `rate(1 minute)`. Takes back expired leases and
 * sends again the tasks whose hints were lost, then reports the cycle as EMF metrics and one log line.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { schedulerFromEnvironment } from '#core/runtime';

const logger = new Logger();
const metrics = new Metrics();
const scheduler = schedulerFromEnvironment(logger);

export const handler = middy<{ scheduledTime?: string }, Record<string, unknown>>()
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics, { captureColdStartMetric: true }))
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
    metrics.addMetric('ExpiredSessions', MetricUnit.Count, cycle.expiredSessions);
    metrics.addMetric('Requeued', MetricUnit.Count, cycle.requeued);
    metrics.addMetric('DeadLettered', MetricUnit.Count, cycle.deadLettered);
    metrics.addMetric('Reconciled', MetricUnit.Count, cycle.reconciled);
    metrics.addMetric('SweepErrors', MetricUnit.Count, cycle.errors);
    logger.info('supervisor pass', { cycle });
    return cycle;
  });
