/**
 * A task's attempts, pieced together without the DOM from its lifecycle events (a claim opens one, a completion, a
 * failure, a lost lease or a cancel ends it) and its record (a suspension's waitpoint, the last progress report, the
 * lease open now). A release and a wait publish no event: an attempt followed by a claim of the same attempt number
 * was given back (snoozed or suspended), and ended at the latest when that claim came.
 */
import type { FeedEvent, Task, Waitpoint } from '../../sdk/types';

export type AttemptEnd =
  | 'running'
  | 'succeeded'
  | 'failed, retried'
  | 'failed, dead'
  | 'lease lost'
  | 'cancelled'
  | 'suspended'
  | 'snoozed or suspended';

export interface Attempt {
  /** The attempt's number, as the claim gave it (a given-back attempt's number comes again). */
  readonly attempt: number;
  readonly leaseEpoch: number;
  readonly agentId?: string;
  /** Epoch milliseconds. */
  readonly claimedAt: number;
  /** When it ended; for a running one, now. */
  readonly endedAt: number;
  readonly end: AttemptEnd;
  /** The end was not recorded: `endedAt` is the latest it can have been (the next claim). */
  readonly endUnknown?: true;
  /** What its end said: a lost lease's reason, a failure's status. */
  readonly detail?: string;
  /** The last progress report, when this attempt made it. */
  readonly progressAt?: number;
}

export interface AttemptHistory {
  readonly attempts: readonly Attempt[];
  /** When the task was submitted. */
  readonly submittedAt: number;
  /** The span to draw: from the submission to the last end (or now). */
  readonly from: number;
  readonly to: number;
}

const at = (iso: string | undefined) => (iso === undefined ? Number.NaN : Date.parse(iso));
const numberOf = (value: unknown) => (typeof value === 'number' ? value : undefined);

/** What ends the lease of `epoch`, among the task's events after its claim. */
function endOf(
  events: readonly FeedEvent[],
  epoch: number,
): { end: AttemptEnd; at: number; detail?: string } | undefined {
  for (const event of events) {
    const sameLease = numberOf(event.data?.leaseEpoch) === epoch;
    switch (event.type) {
      case 'task.completed':
        if (sameLease) return { end: 'succeeded', at: at(event.time) };
        break;
      case 'task.failed':
        if (sameLease)
          return {
            end: event.data?.status === 'dead' ? 'failed, dead' : 'failed, retried',
            at: at(event.time),
          };
        break;
      case 'task.lost':
        if (sameLease)
          return {
            end: 'lease lost',
            at: at(event.time),
            ...(typeof event.data?.reason === 'string' ? { detail: event.data.reason } : {}),
          };
        break;
      case 'task.cancelled':
        // A cancel names no epoch: it ends the lease only when it took the task from its holder.
        if (event.data?.from === 'leased') return { end: 'cancelled', at: at(event.time) };
        break;
      default:
        break;
    }
  }
  return undefined;
}

/**
 * The attempts of `task` from its events (the feed's, of any task: those of others are left out), oldest first.
 * `waitpoint` is the one it is (or was last) suspended on, when read; `now` closes a running attempt.
 */
export function attemptsOf(
  task: Task,
  feed: readonly FeedEvent[],
  waitpoint: Waitpoint | undefined,
  now: number,
): AttemptHistory {
  const events = feed.filter((event) => event.taskId === task.taskId);
  const claims = events.filter((event) => event.type === 'task.claimed');
  const attempts: Attempt[] = claims.map((claim, i) => {
    const leaseEpoch = numberOf(claim.data?.leaseEpoch) ?? 0;
    const attempt = numberOf(claim.data?.attempt) ?? 0;
    const claimedAt = at(claim.time);
    const later = events.filter((event) => event.sequence > claim.sequence);
    const next = claims[i + 1];
    const ended = endOf(next ? later.filter((event) => event.sequence < next.sequence) : later, leaseEpoch);
    const progressAt =
      task.progress &&
      task.progress.attempt === attempt &&
      (next === undefined || at(task.progress.at) < at(next.time))
        ? at(task.progress.at)
        : undefined;
    const common = {
      attempt,
      leaseEpoch,
      ...(claim.agentId === undefined ? {} : { agentId: claim.agentId }),
      claimedAt,
      ...(progressAt === undefined ? {} : { progressAt }),
    };
    if (ended)
      return {
        ...common,
        endedAt: ended.at,
        end: ended.end,
        ...(ended.detail ? { detail: ended.detail } : {}),
      };
    if (next === undefined) return { ...common, ...openEnd(task, leaseEpoch, waitpoint, now) };
    // Given back: a suspension whose waitpoint was made within it, else a snooze or a suspension not read.
    const suspendedAt = at(waitpoint?.createdAt);
    if (suspendedAt >= claimedAt && suspendedAt <= at(next.time))
      return { ...common, endedAt: suspendedAt, end: 'suspended' };
    return { ...common, endedAt: at(next.time), end: 'snoozed or suspended', endUnknown: true };
  });
  const submitted = events.find((event) => event.type === 'task.submitted');
  const submittedAt = submitted ? at(submitted.time) : at(task.createdAt);
  const ends = attempts.map((a) => a.endedAt);
  const finishedAt = at(task.finishedAt);
  const to = Math.max(submittedAt + 1_000, ...ends, Number.isNaN(finishedAt) ? submittedAt : finishedAt);
  return { attempts, submittedAt, from: submittedAt, to };
}

/** The last attempt, with no end event after it: running, suspended, or given back before the task changed last. */
function openEnd(
  task: Task,
  leaseEpoch: number,
  waitpoint: Waitpoint | undefined,
  now: number,
): Pick<Attempt, 'endedAt' | 'end' | 'endUnknown'> {
  if (task.status === 'leased' && task.leaseEpoch === leaseEpoch) return { endedAt: now, end: 'running' };
  if (task.status === 'suspended') {
    const suspendedAt = at(waitpoint?.createdAt);
    return Number.isNaN(suspendedAt)
      ? { endedAt: at(task.updatedAt), end: 'suspended', endUnknown: true }
      : { endedAt: suspendedAt, end: 'suspended' };
  }
  // Its record changed last when it was given back, or later: it ended then at the latest.
  return { endedAt: at(task.updatedAt), end: 'snoozed or suspended', endUnknown: true };
}

/** Ticks for a time axis from `from` to `to`: about `count`, at round steps of seconds, minutes or hours. */
export function timeTicks(from: number, to: number, count: number): number[] {
  const span = Math.max(1, to - from);
  const steps = [
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 21_600, 43_200, 86_400,
  ].map((s) => s * 1_000);
  const step = steps.find((s) => span / s <= count) ?? 86_400_000 * Math.ceil(span / count / 86_400_000);
  const ticks: number[] = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) ticks.push(t);
  return ticks;
}
