/**
 * The Queues view's last hour for a deployed stack, from CloudWatch: each queue's `QueueDepth` (the supervisor's, at
 * most one a minute) and `Claims` (the agent API's, summed by minute), for the last 60 minutes, in one GetMetricData
 * request (AWS JSON 1.0 protocol, nothing but `fetch`) signed with the operator's credentials.
 *
 * Cost: GetMetricData is billed by metric asked for, $0.01 per 1,000: two a queue a read. The page reads once a
 * minute while the view is shown (the metrics are by minute): 120 a queue an hour, $0.0012.
 */

/** What the console needs to read the metrics of a deployed stack. */
export interface QueueMetricsSource {
  /** CloudWatch's endpoint: `https://monitoring.<region>.amazonaws.com` (a fake one in tests). */
  readonly endpoint: string;
  /** The namespace the functions publish to (the construct's `metricsNamespace`). */
  readonly namespace: string;
  /** Sends one request to CloudWatch, signed with the operator's credentials. */
  readonly send: (request: Request) => Promise<Response>;
}

/** The namespace the construct publishes to unless told otherwise. */
export const DEFAULT_METRICS_NAMESPACE = 'AgentScheduler';
/** The minutes the chart covers. */
export const METRICS_MINUTES = 60;
/** Queues read at once: two metrics each, well within GetMetricData's 500. */
export const METRICS_QUEUES_MAX = 50;
/** The functions' `service` dimension, as the construct names them (`agent-scheduler-<entry>`). */
const SERVICE = { depth: 'agent-scheduler-supervisor', claims: 'agent-scheduler-agent-api' } as const;
const TARGET = 'GraniteServiceVersion20100801.GetMetricData';
/** Pages of an answer followed at most (one is the rule: 50 queues of 2 × 60 points are far below a page). */
const MAX_PAGES = 5;

/** One queue's last hour: `[minute, value]` pairs, oldest first; a minute without a point is left out. */
export interface QueueSeries {
  readonly name: string;
  readonly depth: readonly (readonly [at: string, queued: number])[];
  readonly claims: readonly (readonly [at: string, claims: number])[];
}

export interface QueueMetrics {
  /** The span read: `METRICS_MINUTES` whole minutes, ending with the minute under way. */
  readonly from: string;
  readonly to: string;
  readonly queues: readonly QueueSeries[];
}

/** CloudWatch refused or could not be reached: its message, for the page. */
export class MetricsUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'MetricsUnavailableError';
  }
}

interface MetricDataResult {
  readonly Id?: string;
  readonly Timestamps?: readonly (number | string)[];
  readonly Values?: readonly number[];
}

const metric = (namespace: string, name: string, service: string, queue: string) => ({
  Namespace: namespace,
  MetricName: name,
  Dimensions: [
    { Name: 'service', Value: service },
    { Name: 'queue', Value: queue },
  ],
});

/** The request's body: per queue `d<i>` its depth's maximum and `c<i>` its claims' sum, by minute. */
export function metricDataRequest(namespace: string, queues: readonly string[], now: number) {
  const end = Math.floor(now / 60_000) * 60_000 + 60_000;
  const start = end - METRICS_MINUTES * 60_000;
  return {
    MetricDataQueries: queues.flatMap((queue, i) => [
      {
        Id: `d${i}`,
        MetricStat: {
          Metric: metric(namespace, 'QueueDepth', SERVICE.depth, queue),
          Period: 60,
          Stat: 'Maximum',
        },
        ReturnData: true,
      },
      {
        Id: `c${i}`,
        MetricStat: { Metric: metric(namespace, 'Claims', SERVICE.claims, queue), Period: 60, Stat: 'Sum' },
        ReturnData: true,
      },
    ]),
    StartTime: start / 1_000,
    EndTime: end / 1_000,
    ScanBy: 'TimestampAscending',
  };
}

/** A timestamp as the JSON protocol sends it: epoch seconds (or, from some endpoints, ISO text). */
const msOf = (value: number | string) => (typeof value === 'number' ? value * 1_000 : Date.parse(value));

function pointsOf(result: MetricDataResult | undefined): [string, number][] {
  const times = result?.Timestamps ?? [];
  const values = result?.Values ?? [];
  return times
    .map((t, i): [number, number] => [msOf(t), Number(values[i])])
    .filter(([t, v]) => Number.isFinite(t) && Number.isFinite(v))
    .sort(([a], [b]) => a - b)
    .map(([t, v]) => [new Date(t).toISOString(), v]);
}

/** Reads the last hour of `queues` from CloudWatch. */
export async function readQueueMetrics(
  source: QueueMetricsSource,
  queues: readonly string[],
  now: number,
  signal?: AbortSignal,
): Promise<QueueMetrics> {
  const body = metricDataRequest(source.namespace, queues, now);
  const results = new Map<string, MetricDataResult>();
  let nextToken: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    let answer: Response;
    try {
      answer = await source.send(
        new Request(`${source.endpoint.replace(/\/+$/, '')}/`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': TARGET },
          body: JSON.stringify(nextToken ? { ...body, NextToken: nextToken } : body),
          ...(signal ? { signal } : {}),
        }),
      );
    } catch (error) {
      throw new MetricsUnavailableError('CloudWatch could not be reached (the terminal says why)', {
        cause: error,
      });
    }
    const text = await answer.text();
    let parsed: {
      MetricDataResults?: MetricDataResult[];
      NextToken?: string;
      message?: string;
      Message?: string;
    };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      parsed = {};
    }
    if (!answer.ok) {
      const said = parsed.message ?? parsed.Message ?? `HTTP ${answer.status}`;
      throw new MetricsUnavailableError(
        `CloudWatch refused to read the metrics: ${String(said).slice(0, 200)}`,
      );
    }
    for (const result of parsed.MetricDataResults ?? []) {
      if (!result.Id) continue;
      const seen = results.get(result.Id);
      results.set(
        result.Id,
        seen
          ? {
              Id: result.Id,
              Timestamps: [...(seen.Timestamps ?? []), ...(result.Timestamps ?? [])],
              Values: [...(seen.Values ?? []), ...(result.Values ?? [])],
            }
          : result,
      );
    }
    nextToken = parsed.NextToken;
    if (!nextToken) break;
  }
  return {
    from: new Date(body.StartTime * 1_000).toISOString(),
    to: new Date(body.EndTime * 1_000).toISOString(),
    queues: queues.map((name, i) => ({
      name,
      depth: pointsOf(results.get(`d${i}`)),
      claims: pointsOf(results.get(`c${i}`)),
    })),
  };
}
