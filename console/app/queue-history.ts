/**
 * Each queue's last hour, minute by minute, without the DOM: its queued tasks at the end of each minute and the
 * claims it granted in each. For the local stack, worked out from its event feed: claims counted from
 * `task.claimed`; the queued count is the API's count now, worked back through the events that add a queued task
 * (a submission, a retry, a lost lease) or take one (a claim, a cancel or expiry of a queued task). A release, a
 * resumed wait, an unblocked dependent and a redrive publish no event, so the counts before them can be off by those.
 * For a deployed stack, from CloudWatch's points (`QueueDepth`, `Claims`).
 */
import type { FeedEvent } from '../../sdk/types';

/**
 * A deployed stack's last hour by queue, as the console server reads it from CloudWatch (`GET
 * /console/metrics/queues`): `[minute, value]` pairs, oldest first, a minute without a point left out.
 */
export interface QueueMetrics {
  readonly from: string;
  readonly to: string;
  readonly queues: readonly {
    readonly name: string;
    readonly depth: readonly (readonly [at: string, queued: number])[];
    readonly claims: readonly (readonly [at: string, claims: number])[];
  }[];
}

/** The minutes drawn: the last hour, the minute under way last. */
export const MINUTES = 60;
const MINUTE = 60_000;

export interface Minute {
  /** Its start, epoch milliseconds. */
  readonly at: number;
  /** Tasks queued at its end (for the minute under way: now); absent when not known. */
  readonly queued?: number;
  /** Claims granted in it; absent when not known. */
  readonly claims?: number;
}

export interface QueueHour {
  readonly name: string;
  /** `MINUTES` minutes, oldest first. */
  readonly minutes: readonly Minute[];
}

/** The starts of the last `MINUTES` minutes, oldest first, the one under way at `now` last. */
export function minuteStarts(now: number): number[] {
  const last = Math.floor(now / MINUTE) * MINUTE;
  return Array.from({ length: MINUTES }, (_, i) => last - (MINUTES - 1 - i) * MINUTE);
}

/** How an event changed its queue's queued count: +1, -1 or 0. */
export function queuedChange(event: FeedEvent): number {
  const data = event.data ?? {};
  switch (event.type) {
    case 'task.submitted':
      // With dependencies it waits, not queued.
      return data.dependsOn === undefined ? 1 : 0;
    case 'task.claimed':
      return -1;
    case 'task.failed':
      return data.status === 'queued' ? 1 : 0;
    case 'task.lost':
      return 1;
    case 'task.dead':
      // A lost lease with no attempt left: its task.lost counted it as queued again.
      return typeof data.reason === 'string' && data.reason.startsWith('lease expired') ? -1 : 0;
    case 'task.cancelled':
      return data.from === 'queued' ? -1 : 0;
    case 'task.expired':
      return -1;
    default:
      return 0;
  }
}

const timeOf = (event: FeedEvent) => Date.parse(event.time);

/**
 * The last hour of each queue from the feed's events (oldest first) and each queue's queued count now. `complete`:
 * the events go back to the stack's start (nothing happened before the first); otherwise a minute before the oldest
 * event kept is not known.
 */
export function hoursFromEvents(
  queues: readonly { readonly name: string; readonly queued: number }[],
  events: readonly FeedEvent[],
  now: number,
  complete: boolean,
): QueueHour[] {
  const oldest = events[0];
  const knownFrom = complete || !oldest ? Number.NEGATIVE_INFINITY : timeOf(oldest);
  const starts = minuteStarts(now);
  return queues.map(({ name, queued }) => {
    const mine = events.filter((event) => event.queue === name);
    // Walking back from now: the count at each minute's end is now's less what the events after it changed.
    let count = queued;
    let next = mine.length - 1;
    const minutes: Minute[] = [];
    for (let i = starts.length - 1; i >= 0; i--) {
      const at = starts[i] ?? 0;
      const end = Math.min(at + MINUTE, now);
      while (next >= 0 && timeOf(mine[next] as FeedEvent) >= end) {
        count -= queuedChange(mine[next] as FeedEvent);
        next--;
      }
      let claims = 0;
      for (let j = next; j >= 0 && timeOf(mine[j] as FeedEvent) >= at; j--)
        if (mine[j]?.type === 'task.claimed') claims++;
      minutes.unshift({
        at,
        ...(end >= knownFrom ? { queued: Math.max(0, count) } : {}),
        ...(at >= knownFrom ? { claims } : {}),
      });
    }
    return { name, minutes };
  });
}

/** The last hour of each queue from CloudWatch's points: a minute without a claims point had none. */
export function hoursFromMetrics(metrics: QueueMetrics, now: number): QueueHour[] {
  const starts = minuteStarts(now);
  return metrics.queues.map(({ name, depth, claims }) => {
    const byMinute = (points: readonly (readonly [string, number])[]) =>
      new Map(points.map(([at, value]) => [Math.floor(Date.parse(at) / MINUTE) * MINUTE, value]));
    const queued = byMinute(depth);
    const claimed = byMinute(claims);
    const from = Date.parse(metrics.from);
    return {
      name,
      minutes: starts.map((at) => ({
        at,
        ...(queued.has(at) ? { queued: queued.get(at) } : {}),
        ...(at >= from ? { claims: claimed.get(at) ?? 0 } : {}),
      })),
    };
  });
}
