/**
 * Lambda entry: one supervisor pass (see `runSupervisorPass`), on EventBridge Scheduler's `rate(1 minute)`,
 * reported as one EMF document of metrics (every figure of the pass, `cycle-figures.ts`) and one log line; then each
 * queue's depth, a document each (`queue-metrics.ts`).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { CYCLE_FIGURES, type CycleFigureName } from '#core/cycle-figures';
import { type CycleResult, figuresOf } from '#core/supervisor';
import { publishQueueDepths } from '#wiring/queue-metrics';
import { schedulerFromEnvironment } from '#wiring/runtime';
import { inRootSpan, spanExporterFromEnvironment } from '#wiring/tracing';

const logger = new Logger();
const metrics = new Metrics();
const scheduler = schedulerFromEnvironment(logger);
const spans = spanExporterFromEnvironment(logger);

/** The pass's span: its figures, and the first ids of the tasks it counted (`CYCLE_IDS_KEPT` a figure at most). */
const passAttributes = (cycle: CycleResult) => ({
  ...Object.fromEntries(
    Object.entries(figuresOf(cycle)).map(([figure, count]) => [`agent_scheduler.pass.${figure}`, count]),
  ),
  ...Object.fromEntries(
    Object.entries(cycle.ids)
      .filter(([, ids]) => ids.length > 0)
      .map(([figure, ids]) => [`agent_scheduler.pass.${figure}.task_ids`, ids.join(',')]),
  ),
});

/** A figure's metric: its name capitalised, but for two that had metrics of their own before the figures did. */
const metricOf = (figure: CycleFigureName) =>
  figure === 'leasesRecovered'
    ? 'RecoveredLeases'
    : figure === 'errors'
      ? 'SweepErrors'
      : figure[0]?.toUpperCase() + figure.slice(1);

export const handler = middy<{ scheduledTime?: string }, Record<string, unknown>>()
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics, { captureColdStartMetric: true }))
  .handler(async (event) => {
    const cycle = await inRootSpan(spans, 'supervisorPass', () => scheduler.supervise(), passAttributes);
    const figures = figuresOf(cycle);
    for (const figure of CYCLE_FIGURES)
      metrics.addMetric(metricOf(figure), MetricUnit.Count, figures[figure]);
    metrics.addMetric('Requeued', MetricUnit.Count, cycle.requeued);
    metrics.addMetric('DeadLettered', MetricUnit.Count, cycle.deadLettered);
    metrics.addMetric('AgentsOffline', MetricUnit.Count, cycle.agentsOffline);
    metrics.addMetric('Reconciled', MetricUnit.Count, cycle.reconciled);
    metrics.addMetric('Promoted', MetricUnit.Count, cycle.promoted);
    metrics.addMetric('CascadesAdvanced', MetricUnit.Count, cycle.cascadesAdvanced);
    metrics.addMetric('PassDuration', MetricUnit.Milliseconds, cycle.durationMs);
    await publishQueueDepths(metrics, scheduler, logger);
    logger.info('supervisor pass', { scheduledTime: event.scheduledTime, cycle });
    return { scheduledTime: event.scheduledTime, ...cycle };
  });
