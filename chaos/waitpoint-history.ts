/**
 * The waitpoints of a chaos run and their checks. Three records are kept beside the tasks' versions:
 *
 * - every committed version of a waitpoint (`WaitpointVersion`): the one its suspension put, then each write that
 *   ended it, read from the transactions (`waitpoint-writes.ts`);
 * - every answer a caller sent (`WaitpointAnswer`): an operator's completion or rejection, a callback with the
 *   token, each with what the caller was told;
 * - the waitpoint each claim carried to a resumed attempt (`ResumedClaim`).
 *
 * The checks: a waitpoint is ended by exactly one write (the task resumed once, however many callers raced); every
 * answer told 200 is that one outcome, with its data or reason, and none told 409 is; a replaced callback token
 * names no waitpoint; every resumed claim carries that outcome; no lease is granted and no owner is held while the
 * task is suspended; a timeout lands no earlier than its time, and by the end of the first supervisor pass that
 * started after it (and some slack), resuming the task or, for `onTimeout: 'fail'`, ending it dead with a
 * `WaitpointTimeout`.
 */
import { isDeepStrictEqual } from 'node:util';
import { percentile } from '#local/percentile';
import { explain } from './violation-details';

export type WaitpointStatus = 'open' | 'completed' | 'rejected' | 'timedOut' | 'cancelled';

/** A version of a waitpoint's item, as a transaction committed it. */
export interface WaitpointVersion {
  /** When the write was decided: the suspension's time for the open waitpoint, its `resolvedAt` for its end. */
  readonly at: number;
  readonly waitpointId: string;
  readonly taskId: string;
  /** The transaction that wrote it (its `ClientRequestToken`): each transaction is recorded once. */
  readonly write: string;
  /** The epoch of the lease its task was suspended from. */
  readonly leaseEpoch: number;
  readonly status: WaitpointStatus;
  readonly onTimeout: 'resume' | 'fail';
  readonly timeoutAt: number;
  readonly dataJson?: string;
  readonly reason?: string;
  /** The status the same transaction gave the task (`suspended`; `queued`, or `dead` for a timeout that fails it). */
  readonly taskStatus?: string;
  /** The error the same transaction wrote on the task, if any. */
  readonly taskError?: string;
}

/** One answer a caller sent to a waitpoint, and what it was told. */
export interface WaitpointAnswer {
  readonly waitpointId: string;
  readonly by: 'operator' | 'callback';
  readonly outcome: 'completed' | 'rejected';
  readonly data?: unknown;
  readonly reason?: string;
  /** A callback sent again by its sender once its first send was answered, with the same body. */
  readonly again?: boolean;
  /** Sent with the token of a suspension whose answer was lost: replaced since, it must name no waitpoint. */
  readonly staleToken?: boolean;
  readonly at: number;
  /**
   * `accepted`: 200, this answer ended the waitpoint; `replayed`: 200, the same answer had; `refused`: 409
   * `WaitpointResolved`; `notFound`: 404; `unknown`: no answer (a 5xx, a timeout).
   */
  readonly result: 'accepted' | 'replayed' | 'refused' | 'notFound' | 'unknown';
  readonly code?: string;
}

/** The waitpoint a claim carried to a resumed attempt. */
export interface ResumedClaim {
  readonly taskId: string;
  readonly leaseEpoch: number;
  readonly waitpoint: {
    readonly id: string;
    readonly outcome: string;
    readonly data?: unknown;
    readonly reason?: string;
  };
}

/** What the waitpoint checks read: the waitpoints' records and the tasks' versions. */
export interface WaitpointRecords {
  readonly waitpoints: readonly WaitpointVersion[];
  readonly answers: readonly WaitpointAnswer[];
  readonly resumedClaims: readonly ResumedClaim[];
  readonly tasks: readonly {
    readonly at: number;
    /** When the write's answer came back: no earlier than its commit. */
    readonly answeredAt?: number;
    readonly taskId: string;
    readonly status: string;
    readonly leaseEpoch: number;
    readonly owner?: string;
    readonly leaseDeadline?: number;
  }[];
  /** What the store holds for each task at the end; empty while the run goes on. */
  readonly finalStatus: ReadonlyMap<string, string | undefined>;
}

/** The supervisor's passes, and how long after the end of the first that started after its time a timeout may land. */
export interface SupervisorTiming {
  readonly passes: readonly { readonly start: number; readonly end?: number }[];
  readonly slackMs: number;
}

/** No passes known (a run under way): the timeouts' lateness is measured, not judged. */
export const UNTIMED: SupervisorTiming = { passes: [], slackMs: Number.POSITIVE_INFINITY };

const spread = (values: readonly number[]) => ({
  p50: Math.round(percentile(values, 0.5)),
  max: Math.round(values.length === 0 ? 0 : Math.max(...values)),
});

/** The time from the start of one pass to the start of the next (a doubled tick's second is not another), and each one's length. */
export function supervisorTimes(passes: SupervisorTiming['passes']) {
  const starts = [...new Set(passes.map((pass) => pass.start))].sort((a, b) => a - b);
  const periods = starts.slice(1).map((start, i) => start - (starts[i] ?? start));
  const lengths = passes.flatMap((pass) => (pass.end === undefined ? [] : [pass.end - pass.start]));
  return { supervisorPeriodMs: spread(periods), supervisorPassMs: spread(lengths) };
}

export interface WaitpointVerdict {
  /** Waitpoints opened (suspensions committed); those ended by exactly one write, and of them those resumed. */
  readonly suspended: number;
  readonly endedOnce: number;
  readonly resumed: number;
  /** Who ended each waitpoint: the caller whose answer it holds, or its timeout. */
  readonly answeredBy: { readonly operator: number; readonly callback: number; readonly timeout: number };
  /** Answers sent, by what their callers were told. */
  readonly answers: Readonly<Record<WaitpointAnswer['result'], number>>;
  /** Callbacks sent again with the same body, told 200. */
  readonly duplicateCallbacksOk: number;
  /** Callbacks with another body than the one that ended the waitpoint, told 409. */
  readonly otherBodyRefused: number;
  /** Callbacks with a replaced token, told 404. */
  readonly staleTokensRefused: number;
  /**
   * How late each timeout landed after its `timeoutAt`: the wait for the supervisor pass that ended it to start (none
   * if it had started already), then the time that pass took to come to it.
   */
  readonly timeoutLatenessMs: { readonly p50: number; readonly max: number };
  readonly timeoutPassWaitMs: { readonly p50: number; readonly max: number };
  readonly timeoutInPassMs: { readonly p50: number; readonly max: number };
  /** Waitpoints ended by more than one write: the task resumed (or ended) more than once. */
  readonly resolvedTwiceCount: number;
  /** Waitpoints never ended whose task nonetheless ended. */
  readonly notResumedCount: number;
  /** Waitpoints more than one caller was told it had ended. */
  readonly acceptedTwiceCount: number;
  /** Answers told 200 that are not the outcome the waitpoint holds. */
  readonly answerDisagreementCount: number;
  /** Answers told 409 that are the very outcome the waitpoint holds (the same answer again must be told 200). */
  readonly sameAnswerRefusedCount: number;
  /** Replaced tokens that were told 200. */
  readonly staleTokenAcceptedCount: number;
  /** Claims that carried another outcome, data or reason than the waitpoint holds. */
  readonly resumedDataMismatchCount: number;
  /** Versions of a suspended task with an owner or a lease deadline. */
  readonly ownerWhileSuspendedCount: number;
  /**
   * Grants of a task at a later epoch than its suspension's that committed before its waitpoint ended (the end was
   * decided after the grant's answer came back), or whose waitpoint never ended.
   */
  readonly grantedWhileSuspendedCount: number;
  /**
   * Timeouts that landed later after their time than the longest supervisor period and the slack: not a violation
   * (each pass comes to its due tasks shard by shard, a timeout after the looks at the queued tasks before it), but
   * a measure of how far a busy pass delays one.
   */
  readonly timeoutsPastPeriodCount: number;
  /** Timeouts that landed before their time, or after the end of the first pass that started after it (and the slack). */
  readonly timeoutEarlyCount: number;
  readonly timeoutLateCount: number;
  /** Timeouts that did not move the task as `onTimeout` says (queued; dead with `WaitpointTimeout`). */
  readonly timeoutEndMismatchCount: number;
}

/** The violations a verdict counts. */
export const waitpointViolations = (verdict: WaitpointVerdict): number =>
  verdict.resolvedTwiceCount +
  verdict.notResumedCount +
  verdict.acceptedTwiceCount +
  verdict.answerDisagreementCount +
  verdict.sameAnswerRefusedCount +
  verdict.staleTokenAcceptedCount +
  verdict.resumedDataMismatchCount +
  verdict.ownerWhileSuspendedCount +
  verdict.grantedWhileSuspendedCount +
  verdict.timeoutEarlyCount +
  verdict.timeoutLateCount +
  verdict.timeoutEndMismatchCount;

/** A waitpoint's life as committed: the version its suspension put, and the writes that ended it. */
interface Life {
  readonly opened?: WaitpointVersion;
  readonly ends: WaitpointVersion[];
}

/** Each waitpoint's versions, a transaction recorded once. */
function livesOf(versions: readonly WaitpointVersion[]): Map<string, Life> {
  const lives = new Map<string, { opened?: WaitpointVersion; ends: WaitpointVersion[] }>();
  const writes = new Set<string>();
  for (const version of versions) {
    if (writes.has(version.write)) continue;
    writes.add(version.write);
    const life = lives.get(version.waitpointId) ?? { ends: [] };
    if (version.status === 'open') life.opened ??= version;
    else life.ends.push(version);
    lives.set(version.waitpointId, life);
  }
  return lives;
}

/** Whether an answer (or a claim's carried waitpoint) is the outcome a waitpoint's end holds. */
function sameOutcome(
  answer: { readonly outcome: string; readonly data?: unknown; readonly reason?: string },
  end: WaitpointVersion,
): boolean {
  if (answer.outcome !== end.status) return false;
  if (end.status === 'rejected') return answer.reason === end.reason;
  const data = end.dataJson === undefined ? undefined : (JSON.parse(end.dataJson) as unknown);
  return isDeepStrictEqual(answer.data ?? null, data ?? null);
}

const told200 = (answer: WaitpointAnswer) => answer.result === 'accepted' || answer.result === 'replayed';

export function checkWaitpoints(records: WaitpointRecords, supervisor: SupervisorTiming): WaitpointVerdict {
  const lives = livesOf(records.waitpoints);
  const ended = (waitpointId: string) => lives.get(waitpointId)?.ends[0];
  return {
    suspended: [...lives.values()].filter((life) => life.opened).length,
    endedOnce: [...lives.values()].filter((life) => life.ends.length === 1).length,
    resumed: [...lives.values()].filter(
      (life) => life.ends.length === 1 && life.ends[0]?.taskStatus === 'queued',
    ).length,
    resolvedTwiceCount: resolvedTwice(lives),
    notResumedCount: notResumed(lives, records.finalStatus),
    ...answerChecks(records.answers, ended),
    answeredBy: answeredBy(lives, records.answers),
    resumedDataMismatchCount: resumedDataMismatches(records.resumedClaims, ended),
    ownerWhileSuspendedCount: ownerWhileSuspended(records.tasks),
    grantedWhileSuspendedCount: grantedWhileSuspended(lives, records.tasks),
    ...timeoutChecks(lives, records.finalStatus, supervisor),
  };
}

/** Waitpoints ended by more than one write. */
function resolvedTwice(lives: ReadonlyMap<string, Life>): number {
  let count = 0;
  for (const [waitpointId, life] of lives) {
    if (life.ends.length <= 1) continue;
    count++;
    explain('waitpoint ended twice', { waitpointId, ends: life.ends });
  }
  return count;
}

/** Waitpoints opened and never ended, whose task ended (read back at the end of the run). */
function notResumed(
  lives: ReadonlyMap<string, Life>,
  finalStatus: ReadonlyMap<string, string | undefined>,
): number {
  let count = 0;
  for (const [waitpointId, life] of lives) {
    const status = life.opened && finalStatus.get(life.opened.taskId);
    if (!life.opened || life.ends.length > 0 || status === undefined || status === 'suspended') continue;
    count++;
    explain('waitpoint never ended, its task did', { waitpointId, taskId: life.opened.taskId, status });
  }
  return count;
}

/** What the callers were told, against the outcome each waitpoint holds. */
function answerChecks(
  answers: readonly WaitpointAnswer[],
  ended: (waitpointId: string) => WaitpointVersion | undefined,
) {
  const counts: Record<WaitpointAnswer['result'], number> = {
    accepted: 0,
    replayed: 0,
    refused: 0,
    notFound: 0,
    unknown: 0,
  };
  let answerDisagreementCount = 0;
  let sameAnswerRefusedCount = 0;
  let staleTokenAcceptedCount = 0;
  let duplicateCallbacksOk = 0;
  let otherBodyRefused = 0;
  let staleTokensRefused = 0;
  const acceptedBy = new Map<string, number>();
  for (const answer of answers) {
    counts[answer.result]++;
    const end = ended(answer.waitpointId);
    if (answer.staleToken) {
      if (answer.result === 'notFound') staleTokensRefused++;
      if (told200(answer)) {
        staleTokenAcceptedCount++;
        explain('replaced callback token accepted', answer);
      }
      continue;
    }
    if (answer.result === 'accepted')
      acceptedBy.set(answer.waitpointId, (acceptedBy.get(answer.waitpointId) ?? 0) + 1);
    const same = end !== undefined && sameOutcome(answer, end);
    if (told200(answer) && !same) {
      answerDisagreementCount++;
      explain('answer told 200 is not the waitpoint’s outcome', { answer, end });
    }
    if (answer.result === 'refused' && same) {
      sameAnswerRefusedCount++;
      explain('the waitpoint’s own outcome told 409', { answer, end });
    }
    if (answer.by === 'callback' && answer.again && told200(answer)) duplicateCallbacksOk++;
    if (answer.by === 'callback' && answer.result === 'refused' && !same) otherBodyRefused++;
  }
  const acceptedTwiceCount = [...acceptedBy.values()].filter((n) => n > 1).length;
  if (acceptedTwiceCount > 0) explain('waitpoints more than one caller ended', acceptedTwiceCount);
  return {
    answers: counts,
    acceptedTwiceCount,
    answerDisagreementCount,
    sameAnswerRefusedCount,
    staleTokenAcceptedCount,
    duplicateCallbacksOk,
    otherBodyRefused,
    staleTokensRefused,
  };
}

/** Who ended each waitpoint: its timeout, or the caller whose answer its end holds. */
function answeredBy(lives: ReadonlyMap<string, Life>, answers: readonly WaitpointAnswer[]) {
  const byWaitpoint = new Map<string, WaitpointAnswer[]>();
  for (const answer of answers) {
    if (answer.staleToken) continue;
    byWaitpoint.set(answer.waitpointId, [...(byWaitpoint.get(answer.waitpointId) ?? []), answer]);
  }
  const counts = { operator: 0, callback: 0, timeout: 0 };
  for (const [waitpointId, life] of lives) {
    const end = life.ends[0];
    if (!end) continue;
    if (end.status === 'timedOut') counts.timeout++;
    const caller = (byWaitpoint.get(waitpointId) ?? []).find((answer) => sameOutcome(answer, end));
    if (caller) counts[caller.by]++;
  }
  return counts;
}

/** Claims whose carried waitpoint is not the outcome the waitpoint holds. */
function resumedDataMismatches(
  claims: readonly ResumedClaim[],
  ended: (waitpointId: string) => WaitpointVersion | undefined,
): number {
  let count = 0;
  for (const claim of claims) {
    const end = ended(claim.waitpoint.id);
    if (end && sameOutcome(claim.waitpoint, end)) continue;
    count++;
    explain('resumed claim carries another outcome', { claim, end });
  }
  return count;
}

/** Versions of a suspended task that hold a lease: an owner, or a lease deadline. */
function ownerWhileSuspended(tasks: WaitpointRecords['tasks']): number {
  let count = 0;
  for (const version of tasks) {
    if (
      version.status !== 'suspended' ||
      (version.owner === undefined && version.leaseDeadline === undefined)
    )
      continue;
    count++;
    explain('owner while suspended', version);
  }
  return count;
}

/**
 * Grants of a suspended task that came before its waitpoint ended. A grant is decided before it lands (a claim
 * takes its time), so times of decision do not order it with the end; but the end, decided after the grant's
 * answer came back, certainly landed after the grant. A grant after an end that never came is one too.
 */
function grantedWhileSuspended(lives: ReadonlyMap<string, Life>, tasks: WaitpointRecords['tasks']): number {
  const suspensions = new Map<string, { leaseEpoch: number; endedAt: number }[]>();
  for (const life of lives.values()) {
    if (!life.opened) continue;
    const { taskId, leaseEpoch } = life.opened;
    const endedAt = life.ends[0]?.at ?? Number.POSITIVE_INFINITY;
    suspensions.set(taskId, [...(suspensions.get(taskId) ?? []), { leaseEpoch, endedAt }]);
  }
  let count = 0;
  for (const version of tasks) {
    if (version.status !== 'leased') continue;
    const before = (suspensions.get(version.taskId) ?? []).filter(
      (s) => version.leaseEpoch > s.leaseEpoch && s.endedAt > (version.answeredAt ?? version.at),
    );
    if (before.length === 0) continue;
    count++;
    explain('granted while suspended', { version, suspensions: before });
  }
  return count;
}

/**
 * The first pass to start at or after a time (of two at once, the longer), and the last to start at or before one:
 * the pass that was to come to a timeout, and the one that did.
 */
function passesAround(passes: SupervisorTiming['passes']) {
  const sorted = [...passes].sort((a, b) => a.start - b.start || (b.end ?? 0) - (a.end ?? 0));
  return {
    firstFrom: (t: number) => sorted.find((pass) => pass.start >= t),
    lastBy: (t: number) => sorted.findLast((pass) => pass.start <= t),
  };
}

/** How late each timeout landed, and whether it moved its task as its `onTimeout` says. */
function timeoutChecks(
  lives: ReadonlyMap<string, Life>,
  finalStatus: ReadonlyMap<string, string | undefined>,
  supervisor: SupervisorTiming,
) {
  const around = passesAround(supervisor.passes);
  const longestPeriod = supervisorTimes(supervisor.passes).supervisorPeriodMs.max;
  let timeoutsPastPeriodCount = 0;
  const lateness: number[] = [];
  const waits: number[] = [];
  const inPass: number[] = [];
  let timeoutEarlyCount = 0;
  let timeoutLateCount = 0;
  let timeoutEndMismatchCount = 0;
  for (const life of lives.values()) {
    const end = life.ends[0];
    if (!life.opened || end?.status !== 'timedOut') continue;
    const { timeoutAt } = life.opened;
    lateness.push(end.at - timeoutAt);
    if (end.at - timeoutAt > longestPeriod + supervisor.slackMs) timeoutsPastPeriodCount++;
    // The wait for the pass that ended it (none if it had started already), then its time to come to it.
    const ending = around.lastBy(end.at);
    if (ending) {
      const from = Math.max(ending.start, timeoutAt);
      waits.push(from - timeoutAt);
      inPass.push(end.at - from);
    }
    const pass = around.firstFrom(timeoutAt);
    const early = end.at < timeoutAt;
    // Its pass ended, and the slack passed: landed later than that pass (one that ran no pass since is late too).
    const late = end.at > (pass?.end ?? timeoutAt) + supervisor.slackMs;
    if (early) timeoutEarlyCount++;
    if (late) timeoutLateCount++;
    if (early || late) explain('timeout out of its bounds', { end, timeoutAt, pass });
    const fails = life.opened.onTimeout === 'fail';
    const final = finalStatus.get(end.taskId);
    const moved = fails
      ? end.taskStatus === 'dead' &&
        (end.taskError ?? '').startsWith('WaitpointTimeout') &&
        (final === undefined || final === 'dead')
      : end.taskStatus === 'queued';
    if (!moved) {
      timeoutEndMismatchCount++;
      explain('timeout did not move its task as onTimeout says', { end, final });
    }
  }
  return {
    timeoutLatenessMs: spread(lateness),
    timeoutPassWaitMs: spread(waits),
    timeoutInPassMs: spread(inPass),
    timeoutsPastPeriodCount,
    timeoutEarlyCount,
    timeoutLateCount,
    timeoutEndMismatchCount,
  };
}
