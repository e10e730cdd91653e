/**
 * The per-queue metrics the console's Queues view charts for a deployed stack, published as EMF by the functions
 * where the figure is at hand: `Claims` by the agent API, from the tasks each claim granted (one document per queue a
 * granting claim took from, nothing for an empty claim), and `QueueDepth` by the supervisor, once a pass, counted as
 * `GET /v1/queues` counts it. Each has the dimensions `service` (the function's) and `queue`: one custom metric per
 * queue each.
 */
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SchedulerCounters, SchedulerLog } from '#core/context';
import type { Scheduler } from '#core/scheduler';
import { errorName } from '#domain/errors';
import { PRIORITIES } from '#domain/priority';

/** Publishes one metric of one queue at once, in a document of its own (its `queue` dimension is its alone). */
function publish(metrics: Metrics, name: string, queue: string, value: number): void {
  const single = metrics.singleMetric();
  single.addDimension('queue', queue);
  single.addMetric(name, MetricUnit.Count, value);
}

/** The agent API's counters: each claim's grants, by queue, as `Claims`. */
export const claimCounters = (metrics: Metrics): SchedulerCounters => ({
  claimed: (queue, tasks) => publish(metrics, 'Claims', queue, tasks),
});

/**
 * Each queue's queued tasks (every priority), as `QueueDepth`. Best effort: a failed count is logged and the pass's
 * own metrics go out all the same.
 */
export async function publishQueueDepths(
  metrics: Metrics,
  scheduler: Scheduler,
  log: SchedulerLog,
): Promise<void> {
  try {
    for (const queue of await scheduler.queueStats()) {
      const queued = PRIORITIES.reduce((sum, priority) => sum + queue.depth[priority], 0);
      publish(metrics, 'QueueDepth', queue.name, queued);
    }
  } catch (error) {
    log.warn('could not count the queues for their depth metric', { error: errorName(error) });
  }
}
