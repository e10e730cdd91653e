/**
 * The records of the v1 HTTP API as a client sees them: JSON with ISO-8601 timestamps. Written against the wire
 * contract rather than imported from the server, so the SDK can be used on its own.
 */

export type Priority = 'critical' | 'high' | 'normal' | 'low';

export type TaskStatus = 'queued' | 'leased' | 'succeeded' | 'dead' | 'cancelled';

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
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly finishedAt?: string;
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
  /** The attempt's hard deadline, whatever the heartbeats say. */
  readonly leaseDeadline: string;
  /** The last checkpoint a previous holder saved, if any. */
  readonly checkpoint?: unknown;
}

export interface Agent {
  readonly agentId: string;
  readonly name: string;
  readonly queues: readonly string[];
  readonly maxConcurrency: number;
  readonly interactive: boolean;
  readonly createdAt: string;
  readonly revokedAt?: string;
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
  /** @default 0 */
  readonly delaySeconds?: number;
  readonly backoffBaseSeconds?: number;
  readonly backoffMaxSeconds?: number;
  /** Names the task: submitting the same key again returns the same task. Generated when omitted. */
  readonly idempotencyKey?: string;
}

export interface SubmitTaskResult {
  readonly task: Task;
  /**
   * False when the key already named a task, which includes the case where an earlier attempt of this very
   * call created it and its response was lost.
   */
  readonly created: boolean;
}

export interface ListTasksInput {
  readonly queue?: string;
  readonly status?: TaskStatus;
  readonly limit?: number;
  /** The `nextCursor` of the previous page. */
  readonly cursor?: string;
}

export interface TaskPage {
  readonly tasks: readonly Task[];
  /** Absent on the last page. */
  readonly nextCursor?: string;
}

/** A task queue as `listQueues` reports it. */
export interface QueueStats {
  readonly name: string;
  readonly paused: boolean;
  readonly limits?: QueueLimits;
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
  /** Tasks of the queue leased at once. */
  readonly maxConcurrency?: number;
  /** Claims per second (a token bucket). */
  readonly ratePerSecond?: number;
  /** Claims the bucket takes at once. @default the rate, at least 1 */
  readonly burst?: number;
}

/** A queue's control, as a pause, a resume or new limits leave it. */
export interface QueueControl {
  readonly name: string;
  readonly paused: boolean;
  readonly limits?: QueueLimits;
  readonly updatedAt?: string;
}

export interface CreateAgentInput {
  readonly name: string;
  /** The task queues the agent serves. */
  readonly queues: readonly string[];
  /** @default 1 */
  readonly maxConcurrency?: number;
  /** @default true */
  readonly interactive?: boolean;
}

export interface CreatedAgent {
  readonly agent: Agent;
  /** The agent's bearer token: shown once, stored by the server only as a hash. */
  readonly token: string;
}

export type OverlapPolicy = 'skip' | 'bufferOne' | 'allowAll' | 'cancelOther';
export type MissedRunPolicy = 'skip' | 'runOnce' | 'runAll';

export interface TaskTemplate {
  readonly queue: string;
  readonly priority?: Priority;
  readonly payload?: unknown;
  readonly maxAttempts?: number;
  readonly timeoutSeconds?: number;
}

export interface ScheduleSpec {
  readonly name: string;
  /** EventBridge Scheduler syntax: `cron(...)`, `rate(...)` or `at(...)`. */
  readonly expression: string;
  /** IANA time zone. @default 'UTC' */
  readonly timeZone?: string;
  readonly task: TaskTemplate;
  readonly overlap?: OverlapPolicy;
  readonly missedRuns?: MissedRunPolicy;
  readonly enabled?: boolean;
  readonly description?: string;
}

export interface Schedule extends ScheduleSpec {
  /** `api`: created through the API; `declared`: part of the deployed infrastructure, never deleted here. */
  readonly source?: 'api' | 'declared';
  readonly createdAt?: string;
}

export interface Health {
  readonly status: string;
}

export interface Session {
  readonly sessionId: string;
  /** A session not heard from for this long is over, and its leases with it. */
  readonly leaseTtlSeconds: number;
  readonly heartbeatIntervalSeconds: number;
}

export interface HeartbeatInput {
  readonly sessionId: string;
  /** Task id → small JSON value, saved on the task and handed to its next holder. */
  readonly checkpoints?: Readonly<Record<string, unknown>>;
}

export interface HeartbeatResult {
  /** Tasks of this session an operator cancelled: stop working on them. */
  readonly cancelled: readonly string[];
  /** Tasks this session held and no longer does. */
  readonly lost: readonly string[];
  /** Roles granted to this session, and taken from it, since the last heartbeat. */
  readonly roles: { readonly picked: readonly RoleLease[]; readonly lost: readonly RoleLease[] };
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

export interface ReleaseRoleResult {
  readonly released: true;
  /** The live volunteer that was granted the role in the same write. */
  readonly nextHolder?: string;
  readonly role: Role;
}

export interface WithdrawInput {
  readonly sessionId: string;
}

export interface WithdrawResult {
  /** Whether this session's candidacy was removed (false if it had none). */
  readonly withdrawn: boolean;
  /** Whether the session held the role and gave it up. */
  readonly released: boolean;
  /** The live volunteer that was granted the role in the same write, when it was released. */
  readonly nextHolder?: string;
  readonly role: Role;
}

export interface ClaimInput {
  readonly sessionId: string;
  /** 1 to 10. @default 1 */
  readonly max?: number;
  /** A subset of the agent's queues. @default all of them */
  readonly queues?: readonly string[];
  /** Claims in a row that found nothing before this one; the server's suggested wait grows with it. */
  readonly idleClaims?: number;
}

export interface ClaimResult {
  readonly tasks: readonly ClaimedTask[];
  /** The server's suggestion of when to claim next, if it makes one. */
  readonly retryAfterMs?: number;
}

export interface CompleteInput {
  readonly leaseEpoch: number;
  readonly result?: unknown;
}

export interface FailInput {
  readonly leaseEpoch: number;
  readonly error: { readonly message: string; readonly retryable?: boolean };
}

export interface ReleaseInput {
  readonly leaseEpoch: number;
}

/** One scheduled time of a schedule and what happened at it. */
export interface Occurrence {
  readonly scheduledTime: string;
  readonly status: 'fired' | 'skipped';
  readonly taskId?: string;
  /** Why it was skipped: `overlap`. */
  readonly reason?: string;
  readonly recordedAt: string;
}

/** One item of a batch answer: its task, or the error the single call would have answered. */
export type BatchItemResult =
  | { readonly ok: true; readonly task: Task; readonly created?: boolean }
  | {
      readonly ok: false;
      readonly status: number;
      readonly error: { readonly code: string; readonly message: string };
    };

export interface CompleteItem {
  readonly taskId: string;
  readonly leaseEpoch: number;
  readonly result?: unknown;
}
