/**
 * The agent API's claim counts as EMF: one document per queue a claim granted from, with the `queue` dimension beside
 * the function's `service`, so CloudWatch keeps one `Claims` metric per queue.
 */
import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { claimCounters } from '#wiring/queue-metrics';

afterEach(() => vi.restoreAllMocks());

describe('claim counts as metrics', () => {
  it('publishes each queue’s grants at once, in a document of its own', () => {
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const metrics = new Metrics({ namespace: 'AgentScheduler', serviceName: 'agent-scheduler-agent-api' });
    const counters = claimCounters(metrics);

    counters.claimed('emails', 3);
    counters.claimed('reports', 1);

    const documents = stdout.mock.calls
      .map(([line]) => String(line))
      .join('')
      .split('\n')
      .filter((line) => line.includes('"_aws"'))
      .map(
        (line) =>
          JSON.parse(line) as Record<string, unknown> & {
            _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][] }[] };
          },
      );
    expect(documents.map(({ queue, Claims, service }) => ({ queue, Claims, service }))).toEqual([
      { queue: 'emails', Claims: 3, service: 'agent-scheduler-agent-api' },
      { queue: 'reports', Claims: 1, service: 'agent-scheduler-agent-api' },
    ]);
    for (const document of documents)
      expect(document._aws.CloudWatchMetrics).toEqual([
        expect.objectContaining({ Namespace: 'AgentScheduler', Dimensions: [['service', 'queue']] }),
      ]);
  });
});
