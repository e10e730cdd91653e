/**
 * A task as the scheduler sees it, and the lease rules that decide whether its holder may still act.
 *
 * Times are milliseconds since the epoch. The payload is not part of this record: it is written once, in an
 * item of its own, so that claims, heartbeats and completions never rewrite (and never pay for) it.
 */
import type * as Sdk from '#sdk/types';
import type { Labels, Requirements } from './labels';
import type { Priority } from './priority';
import type { RateTaken, TaskRateLimit } from './rate-limits';
import type { RetryPolicy } from './retry-policy';
import type { TaskStatus } from './task-status';

export type TaskError = Sdk.TaskError;

/** The last fenced write an owner made, kept so that a retried call can be answered with the same outcome. */
export interface FinishRecord {
  readonly kind: 'complete' | 'fail' | 'release' | 'wait';
  readonly leaseEpoch: number;
  readonly agentId: string;
  readonly status: TaskStatus;
}

/**
 * The fields the wire shows as they are stored (dependencies, the tree a child belongs to, its concurrency key) are
 * declared once, in the SDK's `Task`. A key's tasks share the key's lane (fair turns between keys) and its limit.
 */
type AsOnTheWire = Pick<
  Sdk.Task,
  | 'dependencyCount'
  | 'onDependencyFailure'
  | 'waitingOn'
  | 'failedDependency'
  | 'parentTaskId'
  | 'rootTaskId'
  | 'concurrencyKey'
>;

export interface Task extends AsOnTheWire {
  readonly taskId: string;
  readonly queue: string;
  /** The priority it was submitted with. */
  readonly priority: Priority;
  readonly status: TaskStatus;
  /** Grants so far; the attempt being run when leased. Releases give their attempt back. */
  readonly attempt: number;
  readonly retryPolicy: RetryPolicy;
  readonly timeoutSeconds: number;
  /** The waitpoint it was last suspended on: open while `suspended`, its outcome carried by the next claims. */
  readonly waitpointId?: string;
  /** How long an attempt may last in all when its agent extends its deadline; absent: `timeoutSeconds`. */
  readonly maxTimeoutSeconds?: number;
  /** Snoozes it may take (`Sdk.SubmitTaskInput.maxSnoozes`); absent: `DEFAULT_MAX_SNOOZES`. */
  readonly maxSnoozes?: number;
  /** Snoozes taken (releases with a delay); absent: none. */
  readonly snoozes?: number;
  /** The fencing token: incremented by every grant, presented by every write of the owner. */
  readonly leaseEpoch: number;
  readonly owner?: string;
  readonly sessionId?: string;
  readonly leasedAt?: number;
  /**
   * The queue controls (a queue's `maxConcurrency`, a key's `perKeyConcurrency`) in which the current or last
   * grant reserved a slot, at `leasedAt`: the end of the lease frees them. Absent when it reserved none.
   */
  readonly queueSlots?: readonly string[];
  /** The attempt's hard deadline (`leasedAt + timeoutSeconds`), whatever the heartbeats say. */
  readonly leaseDeadline?: number;
  /** Not claimable before this time (a delay or a retry's backoff). */
  readonly notBefore?: number;
  /** When the task was last sent to SQS (or when that send is due, for delayed sends). */
  readonly dispatchedAt?: number;
  readonly dispatchCount: number;
  readonly checkpoint?: unknown;
  readonly result?: unknown;
  readonly error?: TaskError;
  readonly lastFinish?: FinishRecord;
  /** The claim (client-chosen id) whose grant gave the current or last lease: a retried claim finds it by this. */
  readonly claimId?: string;
  /**
   * While queued: since when it has been claimable (or from when it will be), set by every transition that makes it
   * queued (submit, a requeue, a dependency's end, a redrive). Absent on records written before it was read: the
   * ladder then counts from `max(createdAt, notBefore)`.
   */
  readonly readyAt?: number;
  /** Steps of the starvation ladder taken: 1 promoted, 2 announced, 3 needs attention. Reset by every requeue. */
  readonly starvationLevel?: number;
  /**
   * Marked by the ladder's last step (the alarm's): kept through a lease and an end, dropped by every requeue and a
   * suspension, and cleared by an operator (`TaskStore.clearAttention`), which leaves the level as it is.
   */
  readonly needsAttention?: boolean;
  readonly idempotencyKey?: string;
  readonly specHash: string;
  readonly payloadBytes: number;
  /** The payload is an S3 object (a large one), which a success lets go of at once. */
  readonly payloadInObject?: boolean;
  /**
   * Its payload item is also its entry in its queue's list (`taskLayout` 2): keyed by the queue's list partition and
   * the task's creation, not by the task. Absent on tasks written by layout 1, listed through the `listed` index.
   */
  readonly payloadListed?: boolean;
  /** It has an entry in the due index: the supervisor will look at it (a layout 2 task gets one only when needed). */
  readonly inDueIndex?: boolean;
  /**
   * When the payload item (and the dependency inputs) may be purged, in epoch seconds, as last armed: set at
   * submit, pushed later only when the task is to live longer (see `core/lifetimes.ts`). Absent on tasks
   * submitted before it was kept.
   */
  readonly payloadPurgeAt?: number;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly finishedAt?: number;
  /** A push connection asked to hear when the task ends. */
  readonly watched?: boolean;
  /** Not claimed after this time: still queued then, it ends `expired`. */
  readonly expiresAt?: number;
  /** A task to submit when this one ends `dead` was given (kept with the payload). */
  readonly hasOnFailure?: boolean;
  /** Submitted as the `onFailure` of a task that died: which, and its last error. */
  readonly failureOf?: { readonly taskId: string; readonly error?: TaskError };
  /**
   * When the task ended and something still has to follow from its end (its `onFailure`), the end is also in the
   * due index: the follow-up is made at once, and by the supervisor if that was lost.
   */
  readonly followUpPending?: boolean;
  /**
   * How many times an operator redrove it; its death is then its `redrives + 1`-th, whose `onFailure` is a task of
   * its own (see `onFailureKeyOf`). Absent: never redriven (or redriven before redrives were counted).
   */
  readonly redrives?: number;
  /** Other tasks depend on this one: its end resolves them. */
  readonly hasDependents?: boolean;
  /** How many tasks were linked to it as dependents (records written before this count are not in it). */
  readonly dependentCount?: number;
  /**
   * Submitted with `debounce` (see `core/debounce.ts`): the key its window collects, the hash of the specification
   * its submissions share (all of it but the payload), the latest time it may become claimable (its first
   * submission plus `maxWaitSeconds`), how many later submissions joined it, and whether the next window was
   * opened after it (it takes no more submissions, whatever a late one's clock says).
   */
  readonly debounceKey?: string;
  readonly debounceSpec?: string;
  readonly debounceUntil?: number;
  readonly debounceJoins?: number;
  readonly debounceClosed?: boolean;
  /** The named rate limits its attempts take units of (`#domain/rate-limits`), units resolved. */
  readonly rateLimits?: readonly TaskRateLimit[];
  /** What the current (or last) grant took from each of them, by window: usage settles against these. */
  readonly rateTaken?: readonly RateTaken[];
  /** Labels the agent that runs it must have (`#domain/labels`), names sorted; absent when it requires none. */
  readonly require?: Requirements;
  /**
   * The W3C trace context it was submitted with (`#domain/trace-context`), handed to its agent with every claim.
   * Absent: submitted without one (or before it was kept). A function of an earlier release ignores it.
   */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

/** Which death of the task its latest (or next) end as `dead` is: the first, and one more after each redrive. */
export const deathOf = (task: Pick<Task, 'redrives'>): number => (task.redrives ?? 0) + 1;

/** How a dependency ended, as its dependents are handed it. */
export interface DependencyOutcome {
  readonly status: 'succeeded' | 'dead' | 'cancelled' | 'expired';
  readonly result?: unknown;
  /** The result did not fit the claim's answer (see `CARRIED_BYTES`); the dependency's record has it. */
  readonly resultOmitted?: true;
  readonly error?: TaskError;
}

/** An agent's session: one per agent at a time; its heartbeat keeps every lease of the session alive. */
export interface AgentSession {
  readonly agentId: string;
  readonly sessionId: string;
  readonly queues: readonly string[];
  readonly maxConcurrency: number;
  /** The labels it claims under: its agent's, or fewer (`#domain/labels`); absent when it has none. */
  readonly labels?: Labels;
  readonly startedAt: number;
  readonly heartbeatAt: number;
  readonly expiresAt: number;
  /** Task ids this session holds or is about to hold, with the time each was reserved. A superset of truth. */
  readonly held: Readonly<Record<string, number>>;
  /** Notices for the agent, reported by its heartbeat: task id → lease epoch. */
  readonly cancelled: Readonly<Record<string, number>>;
  readonly lost: Readonly<Record<string, number>>;
  /** Roles this session was granted: role → epoch. Valid while the session is live and the epoch current. */
  readonly roles: Readonly<Record<string, number>>;
  /** Notices for the agent's next heartbeat: roles granted to it since (role → epoch)… */
  readonly rolesPicked: Readonly<Record<string, number>>;
  /** …and roles taken from it (role → epoch). */
  readonly rolesLost: Readonly<Record<string, number>>;
  /**
   * The session's most recent claims that reserved something: claim id → reservation time. A claim sent again
   * with one of these ids (its answer was lost) is answered with what it granted instead of granting more.
   * Absent on a session opened before claims had ids.
   */
  readonly claims?: Readonly<Record<string, number>>;
  /**
   * The highest claim number (`claimSeq`) that reserved something in this session. A claim numbered at or below it
   * with an id the session does not remember is an attempt delivered after its agent had moved on: it grants
   * nothing, whatever the number of claims in between.
   */
  readonly claimSeq?: number;
  /**
   * When the session was ended by revoking its agent. Such a session keeps its roles until its lease runs out
   * (`expiresAt`): the agent hears of the revocation only at its next call, and its own reckoning aborts its role
   * handlers by then.
   */
  readonly revokedAt?: number;
  /**
   * When the supervisor ended the session, having found it expired. Set before anything the session held is
   * taken back, and no heartbeat or claim passes it: a write the agent decided on before its expiry but that
   * lands after this cannot revive the session (see `SessionStore.end`).
   */
  readonly endedAt?: number;
  /**
   * The id the agent gave the open that made this session, sent again on every retry of that open: a retry, or a
   * copy of the request delivered late, is answered with this session instead of replacing it. Absent when the
   * agent gave none (an SDK older than open ids) and on sessions opened before them.
   */
  readonly openId?: string;
  /**
   * The number the agent gave that open (see `OpenSessionOptions.openSeq`): while this session lives, an open
   * numbered below it is refused. Absent when the agent gave none and on sessions opened before open numbers.
   */
  readonly openSeq?: number;
  /**
   * The agent's most recent open ids, this session's included, each with the start of the session it made. An
   * open sent again with one of these ids once a later open has replaced its session is refused: it must not end
   * the session the agent now uses.
   */
  readonly opens?: Readonly<Record<string, number>>;
}

/** A session is live until its expiry or its end; after that nothing revives it. */
/**
 * What an operator is told of an agent: `online` while a session of it is live; `idle` when that session lapsed
 * holding nothing (no task, no role, no notice owed), as a Worker's does on purpose between polls (an idle agent
 * costs no heartbeats, and it claims again without a new session); `offline` when it never opened one, was revoked,
 * or its session ended holding work.
 */
export type AgentState = 'online' | 'idle' | 'offline';

export const agentState = (
  session: AgentSession | undefined,
  revokedAt: number | undefined,
  now: number,
): AgentState => {
  if (!session || revokedAt !== undefined) return 'offline';
  if (isSessionLive(session, now)) return 'online';
  return canClaimUnder(session, now) ? 'idle' : 'offline';
};

/** The task is leased to this agent at this epoch, and its attempt's deadline has not passed (whatever the session). */
export const isLeasedTo = (
  task: Task | undefined,
  lease: { readonly agentId: string; readonly leaseEpoch: number },
  now: number,
): task is Task =>
  task !== undefined &&
  task.status === 'leased' &&
  task.owner === lease.agentId &&
  task.leaseEpoch === lease.leaseEpoch &&
  (task.leaseDeadline ?? 0) > now;

/** The task is leased under exactly this lease (agent, session, epoch), and its attempt's deadline has not passed. */
export const isHeldUnder = (
  task: Task | undefined,
  lease: { readonly agentId: string; readonly sessionId: string; readonly leaseEpoch: number },
  now: number,
): task is Task => isLeasedTo(task, lease, now) && task.sessionId === lease.sessionId;

export const isSessionLive = (session: Pick<AgentSession, 'expiresAt' | 'endedAt'>, now: number): boolean =>
  session.expiresAt > now && session.endedAt === undefined;

/**
 * Whether a claim may use the session: a live one, or one that expired holding nothing and owing no notices.
 * Idle agents need not heartbeat; the claim that gives them work extends the session in the write it makes
 * anyway. A session that expired holding tasks or roles stays over: those were (or will be) taken back.
 */
export const canClaimUnder = (session: AgentSession, now: number): boolean =>
  isSessionLive(session, now) ||
  (session.endedAt === undefined &&
    Object.keys(session.held).length === 0 &&
    Object.keys(session.roles).length === 0 &&
    Object.keys(session.lost).length === 0);

/** Why a leased task must be taken back, or undefined while its lease is good. */
export function leaseExpiry(
  task: Task,
  session: AgentSession | undefined,
  now: number,
): 'deadline' | 'session' | undefined {
  if (task.status !== 'leased') return undefined;
  if ((task.leaseDeadline ?? 0) <= now) return 'deadline';
  if (!session || session.sessionId !== task.sessionId || !isSessionLive(session, now)) return 'session';
  return undefined;
}
