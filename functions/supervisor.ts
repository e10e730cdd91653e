/**
 * Lambda entry: one supervisor pass (see `runSupervisorPass`), on EventBridge Scheduler's `rate(1 minute)`,
 * reported as EMF metrics and one log line.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { schedulerFromEnvironment } from '#wiring/runtime';

const logger = new Logger();
const metrics = new Metrics();
const scheduler = schedulerFromEnvironment(logger);

export const handler = middy<{ scheduledTime?: string }, Record<string, unknown>>()
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics, { captureColdStartMetric: true }))
  .handler(async (event) => {
    const cycle = await scheduler.supervise();
    metrics.addMetric('RecoveredLeases', MetricUnit.Count, cycle.recoveredLeases);
    metrics.addMetric('Requeued', MetricUnit.Count, cycle.requeued);
    metrics.addMetric('DeadLettered', MetricUnit.Count, cycle.deadLettered);
    metrics.addMetric('AgentsOffline', MetricUnit.Count, cycle.agentsOffline);
    metrics.addMetric('Reconciled', MetricUnit.Count, cycle.reconciled);
    metrics.addMetric('Promoted', MetricUnit.Count, cycle.promoted);
    metrics.addMetric('Starved', MetricUnit.Count, cycle.starved);
    metrics.addMetric('NeedsAttention', MetricUnit.Count, cycle.escalated);
    metrics.addMetric('CascadesAdvanced', MetricUnit.Count, cycle.cascadesAdvanced);
    metrics.addMetric('SweepErrors', MetricUnit.Count, cycle.errors);
    logger.info('supervisor pass', { scheduledTime: event.scheduledTime, cycle });
    return { scheduledTime: event.scheduledTime, ...cycle };
  });
