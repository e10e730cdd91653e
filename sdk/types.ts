/**
 * The records of the v1 HTTP API as a client sees them: JSON with ISO-8601 timestamps. With `schedule-types.ts`
 * (re-exported here), `vocabulary.ts` (the priorities and statuses) and `lifecycle-events.ts`, the one declaration
 * of the wire: the server's schemas and views are held to these types by the compiler, and the console's page
 * reads the records through them. They import nothing else, so the SDK can be used on its own.
 */

import type { Priority, TaskStatus } from './vocabulary.js';

export type { EventPage, EventType, FeedEvent, SchedulerEvent } from './lifecycle-events.js';
export type {
  MissedRunPolicy,
  Occurrence,
  OverlapPolicy,
  Schedule,
  SchedulePage,
  ScheduleSpec,
  ScheduleSummary,
  TaskTemplate,
} from './schedule-types.js';
export type { Priority, TaskStatus } from './vocabulary.js';

export interface TaskError {
  readonly message: string;
  readonly retryable: boolean;
}

export interface Task {
  readonly taskId: string;
  readonly queue: string;
  readonly priority: Priority;
  readonly status: TaskStatus;
  /** Grants so far; the attempt being run while leased. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly timeoutSeconds: number;
  /** How long an attempt may last in all when its agent extends its deadline; absent: `timeoutSeconds`. */
  readonly maxTimeoutSeconds?: number;
  /** Snoozes taken (releases with a delay), which used no attempt; absent: none. */
  readonly snoozes?: number;
  /** Snoozes it may take (its `maxSnoozes`, or the default of 100). */
  readonly maxSnoozes: number;
  /** The fencing token of the current (or last) lease. */
  readonly leaseEpoch: number;
  readonly owner?: string;
  readonly result?: unknown;
  readonly error?: TaskError;
  readonly checkpoint?: unknown;
  readonly idempotencyKey?: string;
  readonly payloadBytes: number;
  readonly notBefore?: string;
  /** Only while leased: the attempt's hard deadline. */
  readonly leaseDeadline?: string;
  /** Not claimed after this: still waiting then, the task ends `expired`. */
  readonly expiresAt?: string;
  /** This task is the `onFailure` of that dead task. */
  readonly failureOf?: FailureOf;
  /**
   * It has an `onFailure`: the id that task has once submitted (when this one ends `dead`). Each death after a
   * redrive has its own; this names the one of the latest death, or of the next while the task runs again.
   */
  readonly onFailureTaskId?: string;
  /** The waitpoint it was last suspended on: open while the task is `suspended`. */
  readonly waitpointId?: string;
  /** The last progress its holder reported (`getTask` only), and when. */
  readonly progress?: TaskProgress;
  /** It was cancelled with its descendants (`cancelTask(id, { cascade: true })`): how far that has come. */
  readonly cascade?: CascadeProgress;
  /** Submitted with `dependsOn`: how many tasks it depends on, and what a failed one does to it. */
  readonly dependencyCount?: number;
  readonly onDependencyFailure?: 'cancel' | 'run';
  /** While `waiting`: the dependencies not ended yet. */
  readonly waitingOn?: readonly string[];
  /** Cancelled because this dependency did not succeed. */
  readonly failedDependency?: string;
  /** Submitted by the agent running `parentTaskId`, in the tree `rootTaskId` began. */
  readonly parentTaskId?: string;
  readonly rootTaskId?: string;
  /** Its key: keys of one queue take turns, and `perKeyConcurrency` bounds each. */
  readonly concurrencyKey?: string;
  /** Submitted with `debounce`: its key, and how many submissions went into it so far. */
  readonly debounce?: DebounceSummary;
  /** The named rate limits its attempts take units of (`SubmitTaskInput.rateLimits`), units resolved. */
  readonly rateLimits?: readonly (TaskRateLimit & { readonly units: number })[];
  /** What its current (or last) attempt's grant took from each limit, and the window it took from. */
  readonly rateTaken?: readonly RateTaken[];
  /** Labels the agent that runs it must have (`SubmitTaskInput.require`), names sorted. */
  readonly require?: Readonly<Record<string, string>>;
  /** The W3C trace context it was submitted with (`SubmitTaskInput.traceparent`); absent: none. */
  readonly traceparent?: string;
  readonly tracestate?: string;
  /**
   * The starvation ladder marked it: it waited claimable past the last threshold (`starvation.attentionAfter`) and
   * raised the alarm. Stays until an operator clears it (`clearAttention`) or the task is queued again. Absent: not
   * marked.
   */
  readonly needsAttention?: true;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly finishedAt?: string;
  /** Read with `getTask(id, { includePayload: true })`: the payload as submitted. */
  readonly payload?: unknown;
  /** Read with `includePayload`: the payload is no longer kept (one in S3 is deleted when its task succeeds; any past its retention). */
  readonly payloadGone?: true;
}

/** A task linked to another, as `getTaskLinks` names it: with its status, or none when it is not there. */
export interface LinkedTask {
  readonly taskId: string;
  /** Absent: no such task (an `onFailure` task not submitted yet, or a task purged past its retention). */
  readonly status?: TaskStatus;
  readonly queue?: string;
}

/**
 * The tasks linked to a task (`GET /v1/tasks/{taskId}/links`): its parent and root, the children its agent submitted,
 * the tasks it depends on and those that depend on it, its failure hook, each with its status.
 */
export interface TaskLinks {
  readonly taskId: string;
  /** The task whose agent submitted it, and the first task of that tree. */
  readonly parent?: LinkedTask;
  readonly root?: LinkedTask;
  /** The tasks its agent submitted while running it, oldest first (up to 50). */
  readonly children: readonly LinkedTask[];
  /** It was submitted with `dependsOn`: the tasks it still waits on and those whose end it was told of. */
  readonly dependencies: readonly LinkedTask[];
  /** The tasks submitted to wait for it (up to 50). */
  readonly dependents: readonly LinkedTask[];
  /** It is the `onFailure` of this dead task. */
  readonly failureOf?: LinkedTask;
  /** Its `onFailure` task: submitted when it dies (`status` absent before). */
  readonly onFailure?: LinkedTask;
  /** More children, or more dependents, than listed. */
  readonly childrenTruncated?: true;
  readonly dependentsTruncated?: true;
}

/** What a debounced task shows of its window: its key, and how many submissions it took (its own first). */
export interface DebounceSummary {
  readonly key: string;
  readonly submissions: number;
}

/** A task in a list: no result, checkpoint, progress or payload (`getTask` has them). */
export type TaskSummary = Omit<
  Task,
  'result' | 'checkpoint' | 'progress' | 'cascade' | 'payload' | 'payloadGone'
>;

/** The body of `POST /v1/tasks/{taskId}/attention`: the mark is cleared; an operator cannot set it. */
export interface AttentionInput {
  readonly needsAttention: false;
}

/** The body of `POST /v1/tasks/{taskId}/cancel`. */
export interface CancelTaskInput {
  /** Cancel every open descendant too (children by `parentTaskId`, theirs, …). @default false */
  readonly cascade?: boolean;
}

/** A cancellation of a task's descendants, as far as it has come. */
export interface CascadeProgress {
  /** Descendants it cancelled (ended ones are left as they ended). */
  readonly cancelled: number;
  /** Tasks whose children are still to be looked at (about): the supervisor finishes them. */
  readonly pending: number;
  readonly done: boolean;
  readonly startedAt: string;
  readonly finishedAt?: string;
}

/** What a running task's holder reports of its progress: at least one of the three. */
export interface ProgressInput {
  /** 0 to 100. */
  readonly percent?: number;
  /** A line for people (1 to 1,024 characters). */
  readonly message?: string;
  /** Up to 16 KB of JSON. */
  readonly data?: unknown;
}

/** A task's last progress report, as the server kept it. */
export interface TaskProgress extends ProgressInput {
  /** When the server took it. */
  readonly at: string;
  /** The attempt that reported it. */
  readonly attempt: number;
}

/** A task as a claim hands it to its new owner, payload included. */
export interface ClaimedTask {
  readonly taskId: string;
  readonly queue: string;
  readonly priority: Priority;
  readonly payload: unknown;
  readonly attempt: number;
  /** Present it on every write about this task: complete, fail, release. */
  readonly leaseEpoch: number;
  /** The attempt's hard deadline on the server's clock, whatever the heartbeats say. */
  readonly leaseDeadline: string;
  /**
   * The attempt's length from its grant (`leaseDeadline` is the grant time plus this). A Worker reckons the
   * deadline on its own clock from it: the time it sent the claim plus this, less a margin.
   */
  readonly timeoutSeconds: number;
  /** The last checkpoint a previous holder saved, if any. */
  readonly checkpoint?: unknown;
  /** This task is the `onFailure` of that dead task: which, and its last error. */
  readonly failureOf?: FailureOf;
  /** Submitted with `dependsOn`: how each dependency ended, by task id, results included. */
  readonly dependencies?: Readonly<Record<string, DependencyOutcome>>;
  /** Submitted by the agent running `parentTaskId`, in the tree `rootTaskId` began. */
  readonly parentTaskId?: string;
  readonly rootTaskId?: string;
  /** The task was suspended on a waitpoint and resumed: how the wait ended, with its data or reason. */
  readonly waitpoint?: WaitpointResult;
  /** The W3C trace context it was submitted with: a Worker runs its handler in a span linked to it. */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

/** How a waitpoint ended, as the resumed task's claim hands it over. */
export interface WaitpointResult {
  readonly id: string;
  readonly outcome: 'completed' | 'rejected' | 'timedOut';
  /** A completion's data (up to 64 KB of JSON). */
  readonly data?: unknown;
  /** A rejection's reason. */
  readonly reason?: string;
}

/** The body of a wait (`POST /v1/agent/tasks/{taskId}/wait`): the task is suspended until its waitpoint ends. */
export interface WaitInput {
  readonly leaseEpoch: number;
  /** 1 to 2,592,000 (30 days). */
  readonly timeoutSeconds: number;
  /** When the wait times out: `resume` the task (outcome `timedOut`), or `fail` it (dead, `WaitpointTimeout`). @default 'resume' */
  readonly onTimeout?: 'resume' | 'fail';
  /** Saved on the task (up to 16 KB), handed to the resumed attempt. */
  readonly checkpoint?: unknown;
}

/** A waitpoint, as its suspension and the operator routes show it. */
export interface Waitpoint {
  readonly waitpointId: string;
  readonly taskId: string;
  readonly status: 'open' | 'completed' | 'rejected' | 'timedOut' | 'cancelled';
  readonly onTimeout: 'resume' | 'fail';
  readonly timeoutAt: string;
  readonly createdAt: string;
  readonly resolvedAt?: string;
}

export interface CompleteWaitpointInput {
  /** Handed to the resumed attempt (up to 64 KB of JSON). */
  readonly data?: unknown;
}

export interface RejectWaitpointInput {
  /** Handed to the resumed attempt (1 to 2,048 characters). */
  readonly reason: string;
}

/** A page of open waitpoints, oldest first. */
export interface WaitpointPage {
  readonly waitpoints: readonly Waitpoint[];
  /** Absent on the last page. */
  readonly nextCursor?: string;
}

/** What a wait answers: the suspended task, its waitpoint, and the one URL that completes it (shown this once). */
export interface WaitResult {
  readonly task: Task;
  readonly waitpoint: Waitpoint;
  /** `POST` JSON data here to complete the waitpoint; no other credential is needed, so keep it secret. */
  readonly callbackUrl: string;
}

/** How a dependency ended, as its dependent's claim hands it over. */
export interface DependencyOutcome {
  readonly status: 'succeeded' | 'dead' | 'cancelled' | 'expired';
  readonly result?: unknown;
  /** The result did not fit the claim's answer (2 MB of results and waitpoint data per claim): an operator can read the dependency. */
  readonly resultOmitted?: true;
  readonly error?: TaskError;
}

/** The dead task an `onFailure` task was submitted for, and its last error. */
export interface FailureOf {
  readonly taskId: string;
  readonly error?: TaskError;
}

/** A registered agent: what it was registered with, every default filled in, and what the server gave it. */
export interface Agent extends Required<Omit<CreateAgentInput, 'labels'>> {
  readonly agentId: string;
  /** Its labels, each a list of values (`{}`: none). */
  readonly labels: Readonly<Record<string, readonly string[]>>;
  readonly createdAt: string;
  readonly revokedAt?: string;
  /** In a list: whether the agent has a live session. */
  readonly online?: boolean;
  /**
   * In a list: `online` (a live session), `idle` (its session lapsed holding nothing, as a Worker lets it between
   * polls; it claims again without a new session) or `offline` (never connected, revoked, or its session ended
   * holding work). Absent from a server older than it: read `online` then.
   */
  readonly state?: 'online' | 'idle' | 'offline';
  /** In a list: the last heartbeat (or claim) of its latest session; absent if it never opened one. */
  readonly lastHeartbeatAt?: string;
  /** In a list: tasks its live session holds (or is being granted) now. */
  readonly tasksHeld?: number;
}

export interface SubmitTaskInput {
  readonly queue: string;
  readonly payload: unknown;
  /** @default 'normal' */
  readonly priority?: Priority;
  /** @default 3 */
  readonly maxAttempts?: number;
  /** @default 900 */
  readonly timeoutSeconds?: number;
  /**
   * How long an attempt may last in all (up to 43,200 seconds, at least `timeoutSeconds`) when its agent pushes its
   * deadline forward (`extend` on a heartbeat, `ctx.extendDeadline`). Absent: an attempt keeps `timeoutSeconds`.
   */
  readonly maxTimeoutSeconds?: number;
  /** @default 0 */
  readonly delaySeconds?: number;
  readonly backoffBaseSeconds?: number;
  readonly backoffMaxSeconds?: number;
  /** Names the task: submitting the same key again returns the same task. Generated when omitted. */
  readonly idempotencyKey?: string;
  /** Seconds from when it may first be claimed (the submit, or the end of its delay) to start, or it expires. */
  readonly ttlSeconds?: number;
  /** The moment by which it must start, or it expires (ISO 8601 with offset). Not with `ttlSeconds`. */
  readonly expiresAt?: string;
  /**
   * Whose task it is (a tenant, a user; up to 128 printable characters). Keys of one queue take turns, so one
   * key's backlog does not hold up the others; the queue's `perKeyConcurrency` bounds how many of a key run at once.
   */
  readonly concurrencyKey?: string;
  /**
   * Releases with a delay (snoozes: a provider's 429, a resource not ready) the task may take, 0 to 1,000; they use
   * no attempt. Past them a snooze is refused (`409 SnoozeLimitReached`) and the agent fails the task instead.
   * @default 100
   */
  readonly maxSnoozes?: number;
  /** Submitted once when this task ends `dead`; its claim carries `failureOf` (this task's id and last error). */
  readonly onFailure?: FollowUpTaskInput;
  /**
   * Tasks (1 to 100, submitted before this one) that must all succeed first: until then it is `waiting`, and its
   * claim carries how each ended. A task takes at most 100 dependents (`409 Conflict` beyond). A child may name only
   * tasks of its parent's tree; any other is answered as a task that does not exist (`400`).
   */
  readonly dependsOn?: readonly string[];
  /** When a dependency ends dead, cancelled or expired: `cancel` this task (the default), or `run` it anyway. */
  readonly onDependencyFailure?: 'cancel' | 'run';
  /**
   * Collapses a burst: submissions of one queue, key and specification (all but the payload) that come within
   * `windowSeconds` of each other make one task, claimable once no submission came for `windowSeconds` (or
   * `maxWaitSeconds` after the first), carrying the latest payload. Each answer names that task (`debounced: true`
   * when the submission joined it). An `idempotencyKey` names the submission: sent again, it is answered with the
   * task it went to and changes nothing. Not with `delaySeconds`, `expiresAt` or `dependsOn`.
   */
  readonly debounce?: Debounce;
  /**
   * Named rate limits (up to 4, each once) its attempts take units of: a claim grants the task only when every one
   * has the units, and it waits queued meanwhile (no attempt used). Each must be defined (`setRateLimit`, or the
   * construct's `rateLimits`); a `perKey` limit needs `key`.
   */
  readonly rateLimits?: readonly TaskRateLimit[];
  /**
   * Labels the agent that runs it must have: for each label name (up to 8), a value the agent has among the label's
   * values, or `'*'` for any value. Only agents that meet every one are given it, or woken for it. Needs `taskLayout` 5.
   */
  readonly require?: Readonly<Record<string, string>>;
  /**
   * The W3C trace context of the span that submits it (`00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`): kept
   * with the task and handed to the agent that claims it, whose work joins the trace. Not part of what names the
   * task: a retry from another span is the same submission. The client fills it from the active span when
   * `@opentelemetry/api` is installed; absent, the request's `traceparent` header is taken, if any.
   */
  readonly traceparent?: string;
  /** The W3C `tracestate` beside `traceparent` (up to 512 printable ASCII characters); only with it. */
  readonly tracestate?: string;
}

/** A named rate limit a task takes units of (`SubmitTaskInput.rateLimits`). */
export interface TaskRateLimit {
  /** The limit's name. */
  readonly name: string;
  /** What an attempt is expected to use, more than 0; settled by the `usage` it reports. @default 1 */
  readonly units?: number;
  /** For a `perKey` limit: whose units (a tenant, an API key; up to 128 printable characters, no `#`). */
  readonly key?: string;
}

/** What a grant took from one limit (`Task.rateTaken`). */
export interface RateTaken {
  readonly name: string;
  readonly units: number;
  /** The start of the window the units came from (ISO 8601). */
  readonly window: string;
  readonly key?: string;
}

/** Units used, by rate limit name, as an agent reports them when it ends an attempt (`usage`). */
export type RateUsage = Readonly<Record<string, number>>;

/** How a named rate limit counts (`setRateLimit`, the construct's `rateLimits`). */
export interface RateLimitTerms {
  /** Units a period, more than 0: a rate's average (per second or minute), a budget's whole window (per hour or day). */
  readonly limit: number;
  /** A rate: `second` or `minute`; a budget, over windows aligned to UTC: `hour` or `day`. */
  readonly per: 'second' | 'minute' | 'hour' | 'day';
  /** A rate's units at once: it counts in windows of `per × burst / limit` holding `burst`. @default limit */
  readonly burst?: number;
  /** Each key a task names (`TaskRateLimit.key`) has its own windows. @default false */
  readonly perKey?: boolean;
}

/** A named rate limit, and its use in the window open now. */
export interface RateLimit extends RateLimitTerms {
  readonly name: string;
  /** Set by an operator (`setRateLimit`), or as the construct declares it. */
  readonly source: 'set' | 'declared';
  readonly updatedAt?: string;
  /** The window open now: its span, the units it holds, and (for a limit not per key) their use. */
  readonly window: RateWindowUse;
  /** `getRateLimit` of a `perKey` limit: the keys that took units in the window open now, most used first. */
  readonly keys?: readonly RateKeyUse[];
}

export interface RateWindowUse {
  readonly start: string;
  readonly end: string;
  /** Units the window holds. */
  readonly capacity: number;
  /** Units taken and settled in it (absent for a `perKey` limit: see `keys`). */
  readonly used?: number;
}

export interface RateKeyUse {
  readonly key: string;
  readonly used: number;
}

/** How submissions are collapsed (`SubmitTaskInput.debounce`). */
export interface Debounce {
  /** 1 to 128 letters, digits and `. _ : / @ + = -`: what the submissions are about (a document, a thread). */
  readonly key: string;
  /** 1 to 3,600: the task is claimable once no submission of the key came for this long. */
  readonly windowSeconds: number;
  /** `windowSeconds` to 86,400: claimable this long after the window's first submission at the latest. @default 86400 */
  readonly maxWaitSeconds?: number;
}

/**
 * A follow-up task an agent submits while it runs its parent: named by `key` among the parent's children (the
 * same key again gives back the same task), to a queue the deployment lets agents submit to (its `onFailure` too).
 */
export interface ChildTaskInput extends Omit<SubmitTaskInput, 'idempotencyKey' | 'debounce'> {
  readonly key: string;
}

/** A task submitted on another's behalf: the scheduler names it; its deadline, if any, is `ttlSeconds`. */
export type FollowUpTaskInput = Omit<
  SubmitTaskInput,
  | 'idempotencyKey'
  | 'onFailure'
  | 'dependsOn'
  | 'onDependencyFailure'
  | 'expiresAt'
  | 'debounce'
  // It joins the trace of the task that names it.
  | 'traceparent'
  | 'tracestate'
>;

export interface SubmitTaskResult {
  readonly task: Task;
  /**
   * False when the key already named a task, which includes the case where an earlier attempt of this very
   * call created it and its response was lost.
   */
  readonly created: boolean;
  /**
   * Submitted with `debounce`: true when the submission joined the open window of a task already there (which now
   * carries its payload), false when it opened a window with a new task. Absent otherwise, and from servers before
   * debounce.
   */
  readonly debounced?: boolean;
}

export interface ListTasksInput {
  readonly queue?: string;
  readonly status?: TaskStatus;
  readonly limit?: number;
  /** The `nextCursor` of the previous page. */
  readonly cursor?: string;
  /** Only tasks created at or after this time (ISO 8601 with its offset). */
  readonly createdAfter?: string;
  /** Only tasks created before this time (ISO 8601 with its offset). */
  readonly createdBefore?: string;
  /** Only the tasks of this concurrency key. */
  readonly concurrencyKey?: string;
  /**
   * `true`: only the tasks marked as needing attention (`Task.needsAttention`). A filter on the tasks read, as a
   * status is: a page may be short, or empty with a `nextCursor`. `false` or absent: no filter.
   */
  readonly attention?: boolean;
}

export interface TaskPage {
  readonly tasks: readonly TaskSummary[];
  /** Absent on the last page. */
  readonly nextCursor?: string;
}

/** A task queue as `listQueues` reports it. */
export interface QueueStats {
  readonly name: string;
  readonly paused: boolean;
  /** Empty when the queue has none. */
  readonly limits: QueueLimits;
  /**
   * Present when a concurrency limit set before the bound of 5,000 is above it: the limits as claims enforce them
   * (capped at 5,000). Set the limit again, at most 5,000, to clear it.
   */
  readonly enforcedLimits?: QueueLimits;
  /** Claimable tasks waiting, by priority. */
  readonly depth: Readonly<Record<Priority, number>>;
  /** Tasks leased now. */
  readonly running: number;
  /** Age of the oldest queued task; 0 when none. */
  readonly oldestAgeSeconds: number;
  /** True when the server stopped counting at its bound: the figures are lower bounds. */
  readonly truncated: boolean;
}

/** Limits of a queue across all agents. */
export interface QueueLimits {
  /**
   * Tasks of the queue leased at once: 1 to 5,000 (the slots one queue's control record holds; a higher value is
   * refused with a 400).
   */
  readonly maxConcurrency?: number;
  /** Claims per second (a token bucket). */
  readonly ratePerSecond?: number;
  /** Claims the bucket takes at once. @default the rate, at least 1 */
  readonly burst?: number;
  /** Tasks of one `concurrencyKey` leased at once: 1 to 5,000, as `maxConcurrency`. */
  readonly perKeyConcurrency?: number;
}

/** A queue's control, as a pause, a resume or new limits leave it. */
export interface QueueControl {
  readonly name: string;
  readonly paused: boolean;
  /** Empty when the queue has none. */
  readonly limits: QueueLimits;
  /** As in `QueueStats`: the limits as enforced, when one set before the bound is above it. */
  readonly enforcedLimits?: QueueLimits;
  readonly updatedAt?: string;
}

/**
 * The whole scheduler's control. While `paused`, no claim is granted anything and no agent is woken, in any queue
 * (from at most 2 s after the pause's answer); submissions, sweeps, take-backs and schedule fires go on, and their
 * tasks queue up until the resume.
 */
export interface SchedulerControl {
  readonly paused: boolean;
  /** When it was last paused or resumed; absent when it never was. */
  readonly updatedAt?: string;
}

/** The body of `POST /v1/scheduler/rebuild`: where the last call stopped, and how far one call reads. */
export interface RebuildInput {
  /** The `cursor` the last call answered; none to start a rebuild. */
  readonly cursor?: string;
  /** Open tasks one call reads at most, 1 to 5,000. @default 2000 */
  readonly limit?: number;
}

/**
 * What one call of a rebuild did: each count is this call's, so a whole rebuild's are the sums over its calls (the
 * first call alone scans the sessions and clears the wake marks).
 */
export interface RebuildResult {
  /** Queued tasks found, in a paused queue too: each got its hint (a keyed one, its lane's turn) again. */
  readonly pendingRuns: number;
  /** Leased tasks found: their holders run them, and they get no hint. */
  readonly activeRuns: number;
  /** Live sessions the first call found (one scan of the session items). */
  readonly sessionsScanned: number;
  /** Listeners whose "recently woken" cooldown the first call set back. */
  readonly wakeKeysCleared: number;
  /** Hints sent to SQS again (a delayed task's hidden until its time). */
  readonly hintsSent: number;
  /** Lanes whose turn was put in line anew. */
  readonly turnsReplaced: number;
  /** Present while the rebuild is not done: send it back as `cursor` to go on. */
  readonly cursor?: string;
}

/** A whole rebuild: the sums of its calls' counts, and how many calls it took. */
export type RebuildTotals = { readonly [K in keyof Omit<RebuildResult, 'cursor'>]: number } & {
  readonly calls: number;
};

/**
 * The figures of a supervisor pass (`docs/concepts.md`, The supervisor: Cycle figures). Counted where the work happens:
 * `pendingRuns` queued tasks looked at, `activeRuns` leased ones, `sessionsScanned` agent sessions the pass's scans
 * returned, `leasesRecovered` leases taken back, `wakeAttempts` the tasks it tried to bring to an agent (a hint sent
 * again or a turn put in line, with its push wake; or a push wake for a hint that just became visible), of them
 * `wakesSucceeded` and `wakesFailed`, `noMatchingSession` starving tasks no live session serves,
 * `recentlyNotified` queued tasks left alone because their hint went out recently, `unclaimable` queued tasks of a
 * paused queue (or of any while the scheduler is paused), `starved` and `needsAttention` the ladder's
 * announcements and marks, `spawnRequested` workers asked for, `errors` errors the pass went on from.
 */
export interface CycleFigures {
  readonly pendingRuns: number;
  readonly activeRuns: number;
  readonly sessionsScanned: number;
  readonly leasesRecovered: number;
  readonly wakeAttempts: number;
  readonly wakesSucceeded: number;
  readonly wakesFailed: number;
  readonly noMatchingSession: number;
  readonly recentlyNotified: number;
  readonly unclaimable: number;
  readonly starved: number;
  readonly spawnRequested: number;
  readonly needsAttention: number;
  readonly errors: number;
}

/**
 * The tasks the figures that name them counted, at most 20 each (for `spawnRequested`, the task each request named:
 * its queue's starving task that has waited longest).
 */
export interface CycleIds {
  readonly leasesRecovered: readonly string[];
  readonly wakesFailed: readonly string[];
  readonly noMatchingSession: readonly string[];
  readonly recentlyNotified: readonly string[];
  readonly unclaimable: readonly string[];
  readonly starved: readonly string[];
  readonly spawnRequested: readonly string[];
  readonly needsAttention: readonly string[];
}

/** An error a supervisor pass met and went on from: its step, the error's name, a short message. */
export interface SupervisorPassError {
  /** When the pass that met it started. */
  readonly at: string;
  readonly step: string;
  readonly name: string;
  readonly message: string;
}

/** The supervisor's figures: added up over every pass, the last pass's, and the last errors a pass met. */
export interface SchedulerStats {
  readonly cumulative: CycleFigures & { readonly passes: number };
  /** Absent before the first pass. */
  readonly lastPass?: CycleFigures & {
    /** When it started. */
    readonly at: string;
    readonly durationMs: number;
    readonly ids: CycleIds;
  };
  /** The errors the last pass that met any kept (at most 5); empty when none ever did. */
  readonly lastErrors: readonly SupervisorPassError[];
}

export interface CreateAgentInput {
  readonly name: string;
  /** The task queues the agent serves. */
  readonly queues: readonly string[];
  /** @default 1 */
  readonly maxConcurrency?: number;
  /** @default true */
  readonly interactive?: boolean;
  /**
   * What the agent offers beyond its queues (up to 16 names, each a value or up to 16 values): it is given only tasks
   * whose `require` its labels meet. A session may narrow them, never add to them. @default {}
   */
  readonly labels?: Readonly<Record<string, string | readonly string[]>>;
}

export interface CreatedAgent {
  readonly agent: Agent;
  /** The agent's bearer token: shown once, stored by the server only as a hash. */
  readonly token: string;
}

export interface AgentPage {
  readonly agents: readonly Agent[];
  /** Absent on the last page. */
  readonly nextCursor?: string;
}

export interface Health {
  readonly status: 'ok';
}

export interface Session {
  readonly sessionId: string;
  /** A session not heard from for this long is over, and its leases with it. */
  readonly leaseTtlSeconds: number;
  readonly heartbeatIntervalSeconds: number;
  /** When the session ends unless a heartbeat or a claim extends it (the server's clock). */
  readonly expiresAt: string;
}

export interface HeartbeatInput {
  readonly sessionId: string;
  /**
   * Small JSON values saved on tasks and handed to their next holders, each under the lease it was taken in: a
   * checkpoint of an earlier attempt never overwrites a later one's.
   */
  readonly checkpoints?: readonly Checkpoint[];
  /**
   * Deadlines to push forward: each held task's attempt then ends no sooner than `seconds` (1 to 43,200) after the
   * server has the beat, and never past the task's `maxTimeoutSeconds` from the attempt's start. At most 100, one a
   * task.
   */
  readonly extend?: readonly DeadlineExtension[];
}

export interface DeadlineExtension {
  readonly taskId: string;
  readonly leaseEpoch: number;
  readonly seconds: number;
}

/** A held task's deadline after an extension: `seconds` from when the server wrote it, and the moment. */
export interface ExtendedLease {
  readonly taskId: string;
  readonly leaseEpoch: number;
  /** What is left of the attempt, from the server's write: the asked seconds, or less at `maxTimeoutSeconds`. */
  readonly seconds: number;
  readonly leaseDeadline: string;
}

export interface Checkpoint {
  readonly taskId: string;
  readonly leaseEpoch: number;
  readonly checkpoint: unknown;
}

/** A task and the epoch of the lease a notice is about. */
export interface TaskLease {
  readonly taskId: string;
  readonly leaseEpoch: number;
}

export interface HeartbeatResult {
  /** Tasks of this session an operator cancelled: stop working on them. */
  readonly cancelled: readonly string[];
  /** Tasks this session held and no longer does. */
  readonly lost: readonly string[];
  /**
   * The same, each with the epoch of the lease lost: a run of the task at a later epoch (the session claimed it
   * again since) is not lost. Absent from a server older than it, which names task ids only.
   */
  readonly lostLeases?: readonly TaskLease[];
  /** Roles granted to this session, and taken from it, since the last heartbeat. */
  readonly roles: { readonly picked: readonly RoleLease[]; readonly lost: readonly RoleLease[] };
  /**
   * Task ids the session holds or is reserving (a superset of its leases). One the agent does not know of is a
   * grant whose answer it never got: `getSession` gives its epoch.
   */
  readonly held: readonly string[];
  /** When the session now ends unless extended again (the server's clock). */
  readonly expiresAt: string;
  /** The deadlines the beat's `extend` asked for, as they now are; a task whose lease is over is in `lostLeases`. */
  readonly extended?: readonly ExtendedLease[];
}

/** What the agent's live session holds, read from the tasks and roles themselves. */
export interface SessionHoldings {
  readonly sessionId: string;
  readonly expiresAt: string;
  readonly tasks: readonly HeldTask[];
  readonly roles: readonly RoleLease[];
}

export interface HeldTask {
  readonly taskId: string;
  readonly queue: string;
  readonly leaseEpoch: number;
  readonly attempt: number;
  readonly leaseDeadline: string;
}

/** A grant of a role: the epoch fences the holder's release, and can fence what it does downstream. */
export interface RoleLease {
  readonly role: string;
  readonly leaseEpoch: number;
}

/** A role as the scheduler sees it: only live holders and volunteers are listed. */
export interface Role {
  readonly role: string;
  readonly holder: string | null;
  /** The epoch of the latest grant. */
  readonly leaseEpoch: number;
  /** When the holder was granted it (ISO). */
  readonly since: string | null;
  /** Live candidates, earliest first, the holder included. */
  readonly volunteers: readonly string[];
  /** Agents that registered the role. */
  readonly registered: readonly string[];
}

export interface VolunteerInput {
  readonly sessionId: string;
}

export interface VolunteerResult {
  /** Whether the role was granted to this agent now; if not, it waits in line. */
  readonly picked: boolean;
  readonly leaseEpoch?: number;
  readonly role: Role;
}

export interface ReleaseRoleInput {
  readonly leaseEpoch: number;
}

export interface WithdrawRoleInput {
  readonly sessionId: string;
  /**
   * Give the role up too if this session holds it at this epoch. A holding at another epoch is kept (the answer's
   * `role` shows it): a withdraw that lands late must not release a grant made since.
   */
  readonly leaseEpoch?: number;
}

export interface WithdrawRoleResult {
  /** Whether the agent was among the role's candidates. */
  readonly withdrawn: boolean;
  /** Whether it held the role under that session at the epoch named, and gave it up in the same move. */
  readonly released: boolean;
  readonly nextHolder?: string;
  readonly role: Role;
}

export interface ReleaseRoleResult {
  readonly released: true;
  /** The live volunteer that was granted the role in the same write. */
  readonly nextHolder?: string;
  readonly role: Role;
}

export interface OpenSessionOptions {
  /**
   * The same on every attempt of one open (8 to 64 letters, digits, `-`, `_`): an open sent again after its answer
   * was lost returns the session the first attempt opened. @default a new id per call
   */
  readonly openId?: string;
  /**
   * Grows with each new open of the agent: while the session an open made lives, an open numbered below it (sent
   * before it and delivered late, e.g. by a start given up on) is refused with a `SessionLost` 409 instead of
   * ending it. @default the clock in ms, above every earlier open of this process
   */
  readonly openSeq?: number;
  /**
   * Narrows the agent's labels for this session (fewer names, fewer values): it is given only tasks these meet. A
   * name or value the agent was not registered with is refused (403). @default the agent's labels
   */
  readonly labels?: Readonly<Record<string, string | readonly string[]>>;
}

export interface ClaimInput {
  readonly sessionId: string;
  /** 1 to 10. @default 1 */
  readonly max?: number;
  /** A subset of the agent's queues. @default all of them */
  readonly queues?: readonly string[];
  /** Claims in a row that found nothing before this one; the server's suggested wait grows with it. */
  readonly idleClaims?: number;
  /**
   * The same on every attempt of one claim (8 to 64 letters, digits, `-`, `_`): a claim sent again after its
   * answer was lost returns what the first attempt granted. @default a new id per call
   */
  readonly claimId?: string;
  /**
   * The claim's number in its session: 1, 2, 3… for each new claim, the same on every attempt of one. An attempt
   * that reaches the server after a later claim has reserved grants nothing (it was held in the network while the
   * agent moved on). The `Worker` numbers its claims.
   */
  readonly claimSeq?: number;
  /**
   * The agent listens on the push channel: when the claim finds nothing, the server marks it idle (a `wake` frame
   * comes when work arrives) and answers with its slow safety poll as `retryAfterMs`. Without a live connection
   * the answer is the usual idle backoff. The `Worker` sets it while its socket is up.
   */
  readonly listening?: boolean;
}

export interface ClaimResult {
  readonly tasks: readonly ClaimedTask[];
  /** The server's suggestion of when to claim next, if it makes one. */
  readonly retryAfterMs?: number;
}

export interface CompleteInput {
  readonly leaseEpoch: number;
  readonly result?: unknown;
  /**
   * Units the attempt used, by the name of a rate limit the task takes: settles what its grant took (a budget in
   * the window of the grant, a rate in the window open now). Names the task does not take are ignored.
   */
  readonly usage?: RateUsage;
}

/**
 * The body of `POST /v1/agent/tasks/{taskId}/complete`: a completion, and the claim it may carry
 * (`client.completeAndClaim`).
 */
export interface CompleteRequest extends CompleteInput {
  /**
   * A claim the server makes once the completion is answered, answered in the same call (`next`): a busy agent
   * finishes a task and takes its next in one request instead of two. Its `claimId` makes it one claim however
   * often the call is sent.
   */
  readonly claimNext?: ClaimInput;
}

/** What a completion that carried a claim answers besides the completion itself. */
export interface ClaimAfter {
  /** The carried claim's answer, as `POST /v1/agent/claim` would give it. */
  readonly next?: ClaimResult;
  /**
   * Why the carried claim was not made, as the claim route would have refused it (a lost session, a queue not the
   * agent's); the completion stands. Absent with `next`, and when no claim was carried.
   */
  readonly nextError?: { readonly code: string; readonly message: string };
}

/** What `client.completeAndClaim` answers: the completed task, and the carried claim's answer or refusal. */
export interface CompletedAndClaimed extends ClaimAfter {
  readonly task: Task;
}

/** What `client.completeTasksAndClaim` answers: one result per completion, and the carried claim's. */
export interface CompletedManyAndClaimed extends ClaimAfter {
  readonly results: readonly BatchItemResult[];
}

export interface FailInput {
  readonly leaseEpoch: number;
  readonly error: { readonly message: string; readonly retryable?: boolean };
  /**
   * When the task is retried, retry it after this long (0 to 43,200 seconds) in place of its backoff: the attempt is
   * used as by any failure. Nothing when the failure is not retried.
   */
  readonly retryAfterSeconds?: number;
  /** As `CompleteInput.usage`: units the failed attempt used, by rate limit. */
  readonly usage?: RateUsage;
}

export interface ReleaseInput {
  readonly leaseEpoch: number;
  /**
   * Not claimable again for this long (0 to 43,200 seconds): a snooze. Like every release it uses no attempt; a task
   * takes at most its `maxSnoozes` of them (`409 SnoozeLimitReached` beyond, and nothing changes).
   * @default 0
   */
  readonly delaySeconds?: number;
}

/** One item of a batch answer: its task, or the error the single call would have answered. */
export type BatchItemResult =
  | { readonly ok: true; readonly task: Task; readonly created?: boolean; readonly debounced?: boolean }
  | {
      readonly ok: false;
      readonly status: number;
      readonly error: { readonly code: string; readonly message: string };
    };

export interface CompleteItem {
  readonly taskId: string;
  readonly leaseEpoch: number;
  readonly result?: unknown;
  /** As `CompleteInput.usage`. */
  readonly usage?: RateUsage;
}

/** `POST /v1/agent/tasks/complete`: up to 10 completions in one call. */
export interface CompleteTasksInput {
  readonly tasks: readonly CompleteItem[];
}

/** The body of `POST /v1/agent/tasks/complete`: the completions, and the claim they may carry. */
export interface CompleteTasksRequest extends CompleteTasksInput {
  /** As `CompleteRequest.claimNext`: made once every completion of the call is answered. */
  readonly claimNext?: ClaimInput;
}

/** The body of `POST /v1/agent/tasks/{taskId}/progress`: a report, under the task's lease. */
export interface ReportProgressInput extends ProgressInput {
  readonly leaseEpoch: number;
}

/** One report of `POST /v1/agent/tasks/progress`. */
export interface ProgressItem extends ReportProgressInput {
  readonly taskId: string;
}

/** `POST /v1/agent/tasks/progress`: up to 100 reports in one call. */
export interface ReportProgressBatchInput {
  readonly tasks: readonly ProgressItem[];
}

/** One report's outcome in a batch: kept, or refused as a single call would have been. */
export type ProgressItemResult =
  | { readonly ok: true; readonly progress: TaskProgress }
  | {
      readonly ok: false;
      readonly status: number;
      readonly error: { readonly code: string; readonly message: string };
    };

/** The lease of the task an agent runs, which fences the follow-up tasks it submits. */
export interface ParentLease {
  readonly parentTaskId: string;
  readonly leaseEpoch: number;
}

/** `POST /v1/agent/tasks`: one follow-up task, under its parent's lease. */
export type SubmitChildInput = ChildTaskInput & ParentLease;

/** `POST /v1/agent/tasks/batch`: follow-up tasks (up to 25), under their parent's lease. */
export interface SubmitChildrenInput extends ParentLease {
  readonly tasks: readonly ChildTaskInput[];
}

/** A ticket to open one push connection: `url` is the WebSocket URL to open (ticket included), good once. */
export interface PushTicket {
  readonly ticket: string;
  readonly url: string;
  /** The ticket is no good after this (60 seconds after it was issued). */
  readonly expiresAt: string;
}
