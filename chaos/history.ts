/**
 * The history of a chaos run and its checker. Two records are kept:
 *
 * - every committed write, as DynamoDB answered it (`Committed`): recorded under the SDK's retries, closest to
 *   the wire, so a write whose answer is then lost to an injected timeout is still in the history;
 * - every client call, with its outcome as the caller saw it: ok, fail (a definite refusal) or unknown.
 *
 * The checks are Jepsen-style: properties of the whole history, not of one call. Waitpoints (their versions, the
 * answers their callers sent, the outcomes resumed claims carried) are checked in `waitpoint-history.ts`.
 */

import { percentile } from '#local/percentile';
import { explain } from './violation-details';
import type { ResumedClaim, WaitpointAnswer, WaitpointVersion } from './waitpoint-history';

export { violationDetails } from './violation-details';

/** A version of a task's state item, as a write committed it. */
export interface TaskVersion {
  readonly at: number;
  /** When the write's answer came back to the recorder: no earlier than its commit. */
  readonly answeredAt?: number;
  readonly taskId: string;
  readonly status: string;
  readonly leaseEpoch: number;
  readonly owner?: string;
  readonly sessionId?: string;
  readonly leaseDeadline?: number;
  readonly lastFinish?: { readonly kind: string; readonly leaseEpoch: number; readonly agentId: string };
  /** The operator's redrives so far (each brings a terminal task back to the queue). */
  readonly redrives?: number;
  /** For an `onFailure` hook, the task whose death it follows. */
  readonly failureOf?: string;
  /**
   * The kind of write that made it, where the recorder tells (`writeKind` of `committed-writes.ts`): `grant` and
   * `finish` for single updates, `rateGrant` and `rateSettle` for the transactions of a task naming rate limits.
   */
  readonly write?: string;
  /** What the task requires of the agent that runs it (`#domain/labels`); absent when it requires nothing. */
  readonly require?: Readonly<Record<string, string>>;
}

/** A change of a rate limit's window, committed in one transaction with its task's grant or finish. */
export interface RateChange {
  readonly taskId: string;
  /** The transaction: `rateGrant` (units taken) or `rateSettle` (usage settled). */
  readonly write: string;
  readonly limit: string;
  /** The window item's sort key (`w#<start>#<key>`). */
  readonly part: string;
  /** Units added to the window's `used` (negative: given back). */
  readonly delta: number;
}

/** A version of an agent's session item. */
export interface SessionVersion {
  readonly at: number;
  readonly agentId: string;
  readonly sessionId: string;
  readonly expiresAt: number;
  readonly held: number;
  /** Holding no task and no role, and owing no notice: a claim may extend it past its expiry. */
  readonly idle: boolean;
  /** Ended (by a sweep, a revocation, a new session): nothing extends it again. */
  readonly ended: boolean;
  /** The labels the session claims under, as its open wrote them; absent when it has none. */
  readonly labels?: Readonly<Record<string, readonly string[]>>;
}

export interface ClientCall {
  readonly op:
    | 'submit'
    | 'claim'
    | 'heartbeat'
    | 'complete'
    | 'fail'
    | 'release'
    | 'open'
    | 'wait'
    | 'answer';
  readonly agentId?: string;
  readonly taskId?: string;
  readonly leaseEpoch?: number;
  readonly at: number;
  readonly outcome: 'ok' | 'fail' | 'unknown';
  readonly code?: string;
}

export interface Crash {
  readonly taskId: string;
  readonly leaseEpoch: number;
  readonly at: number;
}

export interface History {
  readonly tasks: TaskVersion[];
  /** In the order their writes were answered: for one agent's item, the order they were committed. */
  readonly sessions: SessionVersion[];
  readonly calls: ClientCall[];
  readonly crashes: Crash[];
  /** Task ids whose submission was acknowledged, and what the store holds for each at the end. */
  readonly acknowledged: Set<string>;
  readonly finalStatus: Map<string, string | undefined>;
  /** The tasks created for each occurrence of the chaos schedule, by its tick. */
  readonly occurrenceTasks: Map<number, Set<string>>;
  /** Every committed version of a waitpoint (`waitpoint-history.ts`), in the order their writes were answered. */
  readonly waitpoints: WaitpointVersion[];
  /** Every answer a caller sent to a waitpoint, with what it was told. */
  readonly answers: WaitpointAnswer[];
  /** The waitpoint each claim of a resumed task carried. */
  readonly resumedClaims: ResumedClaim[];
  /**
   * Every lease (`taskId#leaseEpoch`) a claim answer carried, whether or not it reached the agent; absent when
   * the run does not record them. A grant no answer carried (the claim found its session no longer held the slot
   * and took it back) was never an agent's: its lease ends when it is taken back.
   */
  readonly answered?: ReadonlySet<string>;
  /**
   * Which of the scheduler's functions took each lease (`taskId#leaseEpoch`) back, and why, for the explanation of
   * a violation; absent when the run does not record them.
   */
  readonly takenBackBy?: Map<string, string>;
  /** Every window change of a rate limit that a transaction committed with its task's write. */
  readonly rateChanges?: RateChange[];
  /**
   * Transactions answered again under the `ClientRequestToken` of one already recorded (the AWS SDK sent them again
   * after a lost answer, and DynamoDB wrote nothing more), by kind of write: each is recorded once.
   */
  readonly resent?: Record<string, number>;
}

export interface Verdict {
  readonly overlapCount: number;
  readonly nonMonotonicEpochCount: number;
  readonly staleAcceptedCount: number;
  readonly staleRejectedCount: number;
  readonly duplicateTerminalCount: number;
  /** Tasks that left a terminal status other than by an operator's redrive (a terminal state is for ever). */
  readonly terminalLeftCount: number;
  readonly phantomOkCount: number;
  /** Schedule occurrences that created more than one task. */
  readonly duplicateFireCount: number;
  readonly lostCount: number;
  readonly neverTerminalCount: number;
  readonly reclaimLatencyMs: { readonly p50: number; readonly p99: number };
}

const TERMINAL = new Set(['succeeded', 'dead', 'cancelled', 'expired']);

function groupBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const group = groups.get(key(item));
    if (group) group.push(item);
    else groups.set(key(item), [item]);
  }
  return groups;
}

/**
 * Whether a lease is good at `t` as its holder may believe: granted, not past its deadline, not finished by the
 * holder, and its session's latest committed version (at or before `t`) is that session, unexpired.
 */
function validAt(
  lease: TaskVersion,
  t: number,
  sessions: readonly SessionVersion[],
  finishedAt: number | undefined,
): boolean {
  if (t < lease.at || t >= (lease.leaseDeadline ?? Number.POSITIVE_INFINITY)) return false;
  if (finishedAt !== undefined && t >= finishedAt) return false;
  const latest = sessions[lastAtOrBefore(sessions, t)];
  // A grant extends its session (the claim's write): good until the session's expiry as of then, or until it is
  // ended: by the agent's own next open (a Worker opens anew once its own reckoning of the session ran out, before
  // the server's expiry), by a revocation, or by the sweep.
  return (
    latest !== undefined && latest.sessionId === lease.sessionId && latest.expiresAt > t && !latest.ended
  );
}

/** Index of the last version at or before `t` in versions sorted by time, or -1. */
function lastAtOrBefore(versions: readonly { at: number }[], t: number): number {
  let low = 0;
  let high = versions.length - 1;
  let found = -1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if ((versions[middle]?.at ?? Number.POSITIVE_INFINITY) <= t) {
      found = middle;
      low = middle + 1;
    } else high = middle - 1;
  }
  return found;
}

/**
 * An agent's session versions in the order they were committed, each dated no earlier than the one it follows.
 * They are recorded as their writes are answered, which is mostly the order they were committed; a version
 * can be dated before the one it follows (a new session's unconditional put, decided before a claim's conditional
 * update of the old session but landing after it), and it takes effect when it lands, not before.
 */
function inCommitOrder(answered: readonly SessionVersion[]): SessionVersion[] {
  // Within one session, every write keeps `expiresAt` or raises it (each is conditional on it), so the versions
  // of one session are committed in the order of their `expiresAt`. Two writes of one item can be answered in
  // the other order under load (answers came back swapped when the emulator took 600 ms a request); each
  // session's versions are put back in `expiresAt` order, in the places that session's versions took.
  const bySession = groupBy(answered, (version) => version.sessionId);
  const sorted = new Map(
    [...bySession].map(([sessionId, list]) => [
      sessionId,
      [...list].sort((a, b) => a.expiresAt - b.expiresAt),
    ]),
  );
  const taken = new Map<string, number>();
  const versions = answered.map((version) => {
    const index = taken.get(version.sessionId) ?? 0;
    taken.set(version.sessionId, index + 1);
    return sorted.get(version.sessionId)?.[index] ?? version;
  });
  let latest = Number.NEGATIVE_INFINITY;
  return versions.map((version) => {
    latest = Math.max(latest, version.at);
    return { ...version, at: latest };
  });
}

/**
 * The order of a task's writes: by epoch, a lease's own writes before the one that ends it, then by time; and its
 * grants, the first version of each epoch leased.
 */
function taskOrder(versions: readonly TaskVersion[]): { ordered: TaskVersion[]; grants: TaskVersion[] } {
  const ordered = [...versions].sort(
    (a, b) =>
      a.leaseEpoch - b.leaseEpoch ||
      Number(a.status !== 'leased') - Number(b.status !== 'leased') ||
      a.at - b.at,
  );
  const grants = ordered.filter(
    (v, i) => v.status === 'leased' && ordered[i - 1]?.leaseEpoch !== v.leaseEpoch,
  );
  return { ordered, grants };
}

/**
 * One holder per epoch, and each later epoch granted later: the versions that break either. A grant is dated by its
 * claim's decision, which a slow claim makes long before its write: a task suspended and resumed in a moment (a
 * waitpoint) may be granted its next epoch by a claim decided before the previous grant. The write of a later epoch
 * must land after the earlier one's decision, so a later grant whose write was answered before the earlier grant was
 * even decided is the break.
 */
function nonMonotonicEpochs(ordered: readonly TaskVersion[], grants: readonly TaskVersion[]): number {
  let count = 0;
  for (const version of ordered) {
    const grant = grants.find((g) => g.leaseEpoch === version.leaseEpoch);
    const sameHolder = grant && version.owner === grant.owner && version.sessionId === grant.sessionId;
    if (version.status === 'leased' && !sameHolder) {
      count++;
      explain('a lease held by another than its grant', { grant, version });
    }
  }
  grants.forEach((grant, i) => {
    const previous = grants[i - 1];
    if (previous && (grant.answeredAt ?? grant.at) < previous.at) {
      count++;
      explain('an epoch granted before the one it follows', { previous, grant });
    }
  });
  return count;
}

/** The version enters a terminal status from one that was not. */
const becomesTerminal = (previous: TaskVersion | undefined, version: TaskVersion): boolean =>
  TERMINAL.has(version.status) && !TERMINAL.has(previous?.status ?? '');

/** Out of a terminal status only through a redrive, which counts itself on the record. */
const leavesTerminalWithoutRedrive = (previous: TaskVersion | undefined, version: TaskVersion): boolean =>
  previous !== undefined &&
  TERMINAL.has(previous.status) &&
  !TERMINAL.has(version.status) &&
  (version.redrives ?? 0) <= (previous.redrives ?? 0);

/** A finish must name the lease it ends: the epoch and owner of the version before it. */
function acceptsStaleFinish(previous: TaskVersion | undefined, version: TaskVersion): boolean {
  const finish = version.lastFinish;
  if (!finish || !previous || finish === previous.lastFinish || previous.status !== 'leased') return false;
  const changedByFinish =
    previous.lastFinish === undefined ||
    previous.lastFinish.leaseEpoch !== finish.leaseEpoch ||
    previous.lastFinish.kind !== finish.kind;
  return changedByFinish && (finish.leaseEpoch !== previous.leaseEpoch || finish.agentId !== previous.owner);
}

/** A task's terminal writes beyond its first, its terminal states left, and the stale finishes it accepted. */
function endings(ordered: readonly TaskVersion[]) {
  let terminals = 0;
  let terminalLeft = 0;
  let staleAccepted = 0;
  ordered.forEach((version, i) => {
    const previous = ordered[i - 1];
    if (becomesTerminal(previous, version)) terminals++;
    if (leavesTerminalWithoutRedrive(previous, version)) {
      terminalLeft++;
      explain('terminal state left without a redrive', { previous, version });
    }
    if (acceptsStaleFinish(previous, version)) {
      staleAccepted++;
      explain('stale finish accepted', { previous, version });
    }
  });
  return { duplicateTerminals: Math.max(0, terminals - 1), terminalLeft, staleAccepted };
}

/** No two leases good at once: when a lease is granted, every earlier one must be over, and stay over. */
function overlappingLeases(
  taskId: string,
  ordered: readonly TaskVersion[],
  grants: readonly TaskVersion[],
  sessionsByAgent: ReadonlyMap<string, readonly SessionVersion[]>,
  history: History,
): number {
  let count = 0;
  const finishOf = (lease: TaskVersion) =>
    ordered.find(
      (v) =>
        v.at >= lease.at &&
        v.lastFinish?.leaseEpoch === lease.leaseEpoch &&
        v.lastFinish.agentId === lease.owner,
    )?.at;
  const takenBackUnseen = (lease: TaskVersion) =>
    history.answered === undefined || history.answered.has(`${taskId}#${lease.leaseEpoch}`)
      ? undefined
      : ordered.find((v) => v.at >= lease.at && v.leaseEpoch === lease.leaseEpoch && v.status !== 'leased')
          ?.at;
  // The write that ended a lease (the first of its epoch not leased): every later grant is conditional on it, so it
  // landed first. Ended by its holder's own finish, the lease was over in the holder's eyes before any later grant
  // existed, whatever time that grant's claim had taken before it (a claim takes its time before its writes).
  const endedByHolder = (lease: TaskVersion) => {
    const end = ordered.find((v) => v.leaseEpoch === lease.leaseEpoch && v.status !== 'leased');
    return end?.lastFinish?.leaseEpoch === lease.leaseEpoch && end.lastFinish.agentId === lease.owner;
  };
  grants.forEach((grant, i) => {
    if (endedByHolder(grant)) return;
    const sessions = sessionsByAgent.get(grant.owner ?? '') ?? [];
    const finishedAt = finishOf(grant) ?? takenBackUnseen(grant);
    for (const later of grants.slice(i + 1)) {
      const until = grants[grants.indexOf(later) + 1]?.at ?? Number.POSITIVE_INFINITY;
      // The later grant's time, and every write of the earlier lease's session while the later one holds.
      const probes = [
        later.at,
        ...sessions
          .slice(lastAtOrBefore(sessions, later.at) + 1, lastAtOrBefore(sessions, until) + 1)
          .filter((s) => s.sessionId === grant.sessionId && s.at < until)
          .map((s) => s.at),
      ];
      const overlapAt = probes.find((t) => validAt(grant, t, sessions, finishedAt));
      if (overlapAt !== undefined) {
        count++;
        const latest = sessions[lastAtOrBefore(sessions, overlapAt)];
        explain('lease overlap', {
          grant,
          later,
          overlapAt,
          finishedAt,
          sessionAtOverlap: latest,
          // When the agent opened the session granted the earlier lease: a sweep's read of the agent's session
          // made before then knows only the session it replaced.
          sessionOpenedAt: sessions.find((s) => s.sessionId === grant.sessionId)?.at,
          takenBackBy: history.takenBackBy?.get(`${taskId}#${grant.leaseEpoch}`),
          versions: ordered,
        });
        break;
      }
    }
  });
  return count;
}

/** How long after each crash of an agent holding the task its lease was taken back. */
function reclaimLatencies(
  taskId: string,
  ordered: readonly TaskVersion[],
  crashes: readonly Crash[],
): number[] {
  const latencies: number[] = [];
  for (const crash of crashes.filter((c) => c.taskId === taskId)) {
    const takenBack = ordered.find(
      (v) => v.at > crash.at && v.leaseEpoch === crash.leaseEpoch && v.status !== 'leased',
    );
    if (takenBack) latencies.push(takenBack.at - crash.at);
  }
  return latencies;
}

/**
 * A session is extended past an expiry it had reached only while idle there (holding nothing, owing nothing:
 * the claim that gives an idle agent work extends it), and never once it was ended (a sweep ends a session
 * before it takes anything back). Writes that keep the expiry (a release, a notice) tie with the version before
 * them, and their answers may come back in either order: a tie is read as a set, not a sequence.
 */
function revivedSessions(sessions: readonly SessionVersion[]): number {
  let count = 0;
  for (const versions of groupBy(sessions, (v) => v.sessionId).values()) {
    const endedAt = Math.min(...versions.filter((v) => v.ended).map((v) => v.expiresAt));
    const expiries = [...new Set(versions.map((v) => v.expiresAt))].sort((a, b) => a - b);
    for (const version of versions) {
      if (version.expiresAt > endedAt) {
        count++;
        explain('ended session revived', { endedAt, version });
        continue;
      }
      const before = expiries[expiries.indexOf(version.expiresAt) - 1];
      if (before === undefined || version.at <= before) continue;
      const idleThere = versions.some((v) => v.expiresAt === before && v.idle && !v.ended);
      if (!idleThere) {
        count++;
        explain('expired session revived', {
          expiredAt: before,
          version,
          there: versions.filter((v) => v.expiresAt === before),
        });
      }
    }
  }
  return count;
}

/** Every "ok" the clients saw of a finish is a committed transition: the oks no committed write shows. */
function phantomOks(history: History): number {
  const committed = new Set(
    history.tasks
      .filter((v) => v.lastFinish)
      .map((v) => `${v.taskId}:${v.lastFinish?.kind}:${v.lastFinish?.leaseEpoch}:${v.lastFinish?.agentId}`),
  );
  return history.calls.filter(
    (call) =>
      call.outcome === 'ok' &&
      (call.op === 'complete' || call.op === 'fail' || call.op === 'release') &&
      !committed.has(`${call.taskId}:${call.op}:${call.leaseEpoch}:${call.agentId}`),
  ).length;
}

/** An owner write on a task since given to another agent is answered as if the task did not exist. */
const staleRejected = (calls: readonly ClientCall[]): number =>
  calls.filter(
    (call) =>
      call.outcome === 'fail' &&
      (call.code === 'LeaseLost' || call.code === 'SessionLost' || call.code === 'TaskNotFound'),
  ).length;

/** Acknowledged submissions the store no longer holds, and those it holds in a status that is not terminal. */
function unfinished(history: History): { lostCount: number; neverTerminalCount: number } {
  let lostCount = 0;
  let neverTerminalCount = 0;
  for (const taskId of history.acknowledged) {
    const status = history.finalStatus.get(taskId);
    if (status === undefined) lostCount++;
    else if (!TERMINAL.has(status)) neverTerminalCount++;
  }
  return { lostCount, neverTerminalCount };
}

/** Schedule occurrences that created more than one task. */
const duplicateFires = (history: History): number =>
  [...history.occurrenceTasks.values()].filter((tasks) => tasks.size > 1).length;

export function checkHistory(history: History): Verdict {
  let overlapCount = 0;
  let nonMonotonicEpochCount = 0;
  let staleAcceptedCount = 0;
  let duplicateTerminalCount = 0;
  let terminalLeftCount = 0;
  const latencies: number[] = [];
  const sessionsByAgent = new Map(
    [...groupBy(history.sessions, (s) => s.agentId)].map(([agentId, versions]) => [
      agentId,
      inCommitOrder(versions),
    ]),
  );
  for (const [taskId, versions] of groupBy(history.tasks, (v) => v.taskId)) {
    const { ordered, grants } = taskOrder(versions);
    nonMonotonicEpochCount += nonMonotonicEpochs(ordered, grants);
    const ended = endings(ordered);
    duplicateTerminalCount += ended.duplicateTerminals;
    terminalLeftCount += ended.terminalLeft;
    staleAcceptedCount += ended.staleAccepted;
    overlapCount += overlappingLeases(taskId, ordered, grants, sessionsByAgent, history);
    latencies.push(...reclaimLatencies(taskId, ordered, history.crashes));
  }
  staleAcceptedCount += revivedSessions(history.sessions);
  return {
    overlapCount,
    duplicateFireCount: duplicateFires(history),
    nonMonotonicEpochCount,
    staleAcceptedCount,
    staleRejectedCount: staleRejected(history.calls),
    duplicateTerminalCount,
    terminalLeftCount,
    phantomOkCount: phantomOks(history),
    ...unfinished(history),
    reclaimLatencyMs: {
      p50: Math.round(percentile(latencies, 0.5)),
      p99: Math.round(percentile(latencies, 0.99)),
    },
  };
}

/** One run of a task's handler on an agent: from its start to its return or its abort. */
export interface Execution {
  readonly taskId: string;
  readonly leaseEpoch: number;
  readonly agent: string;
  readonly start: number;
  /** When the handler returned or its signal aborted, whichever came first; unset while it runs. */
  end?: number;
  /** The handler's result was recorded by the server (the Worker's `completed` event). */
  succeededAt?: number;
}

/** One holding of a role, as its handler saw it: from its start to its abort or return. */
export interface RoleHolding {
  readonly role: string;
  readonly agent: string;
  readonly leaseEpoch: number;
  readonly start: number;
  end?: number;
}

/** What the server answered to one claim request, whether or not the answer reached the agent. */
export interface ClaimAnswer {
  readonly claimId: string;
  /** The leases granted, as `taskId#leaseEpoch`. */
  readonly granted: readonly string[];
}

/** A checkpoint the tasks table took: the epoch of the lease its handler ran under, and when it was sent. */
export interface CheckpointWrite {
  readonly taskId: string;
  /** The epoch of the lease whose handler took the checkpoint. */
  readonly writerEpoch: number;
  readonly sentAt: number;
  /** The epoch of the lease the task was under when the checkpoint landed. */
  readonly landedOnEpoch: number;
}

export interface AgentSideVerdict {
  /** Pairs of executions of one task that overlap in time. */
  readonly executionOverlapCount: number;
  /** Executions that started after a recorded success of the same task. */
  readonly runAfterSuccessCount: number;
  /** Pairs of holdings of one role that overlap in time. */
  readonly roleOverlapCount: number;
  /** Claim ids whose attempts were answered with different grants: a retried claim granted a second time. */
  readonly claimGrantedTwiceCount: number;
  /**
   * Checkpoints the table took from a superseded lease: sent after a handler of a later epoch of the task had
   * started (so after that epoch's grant had committed).
   */
  readonly staleCheckpointCount: number;
}

/**
 * The intervals of one key that begin while an earlier one of the same key is still on, each with those it
 * overlaps; an interval not ended lasts until `until`.
 */
export function overlaps<T extends { start: number; end?: number }>(
  items: readonly T[],
  key: (item: T) => string,
  until: number,
): T[][] {
  const found: T[][] = [];
  for (const group of groupBy(items, key).values()) {
    const sorted = [...group].sort((a, b) => a.start - b.start);
    let reach = Number.NEGATIVE_INFINITY;
    for (const item of sorted) {
      if (item.start < reach)
        found.push(sorted.filter((o) => o.start <= item.start && (o.end ?? until) > item.start));
      reach = Math.max(reach, item.end ?? until);
    }
  }
  return found;
}

/** How many intervals of one key begin while another is on, each explained. */
function overlappingPairs<T extends { start: number; end?: number }>(
  items: readonly T[],
  key: (item: T) => string,
  until: number,
): number {
  const found = overlaps(items, key, until);
  for (const overlapping of found) explain('overlap', overlapping);
  return found.length;
}

/** The agents' side: what handlers actually ran, whatever the server believed. */
export function checkAgentSide(
  executions: readonly Execution[],
  holdings: readonly RoleHolding[],
  until: number,
  wire: { readonly claims?: readonly ClaimAnswer[]; readonly checkpoints?: readonly CheckpointWrite[] } = {},
): AgentSideVerdict {
  let runAfterSuccessCount = 0;
  const byTask = groupBy(executions, (e) => e.taskId);
  for (const group of byTask.values()) {
    const succeeded = Math.min(...group.map((e) => e.succeededAt ?? Number.POSITIVE_INFINITY));
    runAfterSuccessCount += group.filter((e) => e.start > succeeded).length;
  }
  // A replay answers with what the first attempt granted and still holds, so the answers to one claim id, from
  // smallest to largest, each contain the one before (a replay racing the first attempt sees part of it).
  let claimGrantedTwiceCount = 0;
  for (const answers of groupBy(wire.claims ?? [], (c) => c.claimId).values()) {
    const sorted = answers.map((a) => new Set(a.granted)).sort((a, b) => a.size - b.size);
    if (sorted.some((set, i) => i > 0 && [...(sorted[i - 1] ?? [])].some((lease) => !set.has(lease)))) {
      claimGrantedTwiceCount++;
      explain('claim granted twice', answers);
    }
  }
  // A checkpoint landed on a later lease than the one it was taken under, or after a later lease's handler began.
  const staleCheckpointCount = (wire.checkpoints ?? []).filter(
    (write) =>
      write.landedOnEpoch > write.writerEpoch ||
      (byTask.get(write.taskId) ?? []).some(
        (e) => e.leaseEpoch > write.writerEpoch && e.start < write.sentAt,
      ),
  ).length;
  return {
    executionOverlapCount: overlappingPairs(executions, (e) => e.taskId, until),
    runAfterSuccessCount,
    roleOverlapCount: overlappingPairs(holdings, (h) => h.role, until),
    claimGrantedTwiceCount,
    staleCheckpointCount,
  };
}
