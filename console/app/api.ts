/**
 * The console's calls and the shapes of their answers, as the API documents them (`GET /v1/openapi.json`).
 * Only the fields the console reads are typed; the API may send more.
 */
import { apiRequest, keepSessionKey, query, request } from './http';

export const PRIORITIES = ['critical', 'high', 'normal', 'low'] as const;
export type Priority = (typeof PRIORITIES)[number];

export const TASK_STATUSES = [
  'waiting',
  'queued',
  'leased',
  'succeeded',
  'dead',
  'cancelled',
  'expired',
] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Statuses a task never leaves, but `dead`, which a redrive leaves. */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['succeeded', 'dead', 'cancelled', 'expired']);
/** The only status a redrive accepts. */
export const REDRIVABLE_STATUS = 'dead';

export interface Session {
  readonly authenticated: boolean;
  readonly mode: 'local' | 'deployed';
  readonly endpoint: string;
  readonly events: 'poll' | 'none';
  /** How often a shown view reads again, as the console server chose it. */
  readonly refreshSeconds?: number;
}

export interface QueueLimits {
  readonly maxConcurrency?: number;
  readonly ratePerSecond?: number;
  readonly burst?: number;
  readonly perKeyConcurrency?: number;
}

export interface QueueStats {
  readonly name: string;
  readonly paused: boolean;
  readonly limits: QueueLimits;
  readonly depth: Readonly<Record<Priority, number>>;
  /** Tasks leased now. */
  readonly running: number;
  readonly oldestAgeSeconds: number;
  /** The counts stopped at a bound: they are lower bounds. */
  readonly truncated: boolean;
}

export interface QueueControl {
  readonly name: string;
  readonly paused: boolean;
  readonly limits: QueueLimits;
  readonly updatedAt?: string;
}

export interface TaskError {
  readonly message: string;
  readonly retryable: boolean;
}

export interface TaskSummary {
  readonly taskId: string;
  readonly queue: string;
  readonly priority: Priority;
  readonly status: TaskStatus;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly timeoutSeconds: number;
  readonly leaseEpoch: number;
  readonly owner?: string;
  readonly error?: TaskError;
  readonly idempotencyKey?: string;
  readonly payloadBytes: number;
  readonly notBefore?: string;
  readonly leaseDeadline?: string;
  readonly expiresAt?: string;
  readonly failureOf?: { readonly taskId: string; readonly error?: TaskError };
  readonly onFailureTaskId?: string;
  readonly dependencyCount?: number;
  readonly onDependencyFailure?: 'cancel' | 'run';
  readonly waitingOn?: readonly string[];
  readonly failedDependency?: string;
  readonly parentTaskId?: string;
  readonly rootTaskId?: string;
  readonly concurrencyKey?: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly finishedAt?: string;
}

export interface Task extends TaskSummary {
  readonly result?: unknown;
  readonly checkpoint?: unknown;
}

/**
 * A task read with `?include=payload`: its payload too, or `payloadGone` once its retention has passed (neither
 * from a server that does not know `include`).
 */
export interface TaskWithPayload extends Task {
  readonly payload?: unknown;
  readonly payloadGone?: true;
}

/** The filters `GET /v1/tasks` takes; the times are ISO-8601 with an offset. */
export interface TaskFilter {
  readonly queue?: string;
  readonly status?: string;
  readonly concurrencyKey?: string;
  readonly createdAfter?: string;
  readonly createdBefore?: string;
  readonly cursor?: string;
  readonly limit?: number;
}

export interface TaskPage {
  readonly tasks: readonly TaskSummary[];
  readonly nextCursor?: string;
}

export interface Agent {
  readonly agentId: string;
  readonly name: string;
  readonly queues: readonly string[];
  readonly maxConcurrency: number;
  readonly interactive: boolean;
  readonly createdAt: string;
  readonly revokedAt?: string;
  readonly online?: boolean;
  readonly lastHeartbeatAt?: string;
  readonly tasksHeld?: number;
}

export interface AgentPage {
  readonly agents: readonly Agent[];
  readonly nextCursor?: string;
}

export interface Role {
  readonly role: string;
  readonly holder: string | null;
  readonly leaseEpoch: number;
  readonly since: string | null;
  readonly volunteers: readonly string[];
  readonly registered: readonly string[];
}

export interface Schedule {
  readonly name: string;
  readonly expression: string;
  readonly timeZone: string;
  readonly task: Readonly<Record<string, unknown>> & { readonly queue: string };
  readonly overlap: string;
  readonly missedRuns: string;
  readonly enabled: boolean;
  readonly description?: string;
  readonly source: 'api' | 'declared';
  readonly createdAt?: string;
  /** Up to 5 upcoming fire times, ISO-8601 UTC; empty when disabled or done. Absent from an older server. */
  readonly nextFires?: readonly string[];
}

export interface SchedulePage {
  readonly schedules: readonly Schedule[];
  readonly nextCursor?: string;
}

export interface Occurrence {
  readonly scheduledTime: string;
  readonly status: string;
  readonly taskId?: string;
  readonly reason?: string;
  readonly recordedAt: string;
}

export interface SchedulerEvent {
  readonly sequence: number;
  readonly type: string;
  readonly time: string;
  readonly taskId?: string;
  readonly agentId?: string;
  readonly queue?: string;
  readonly schedule?: string;
  readonly role?: string;
  readonly data?: Readonly<Record<string, unknown>>;
}

export interface EventPage {
  readonly events: readonly SchedulerEvent[];
  /** The sequence of the last event on the page: `since` for the next read. */
  readonly next: number;
}

export interface SubmitTaskInput {
  readonly queue: string;
  readonly priority: Priority;
  readonly payload: unknown;
}

type Signal = AbortSignal | undefined;
const path = (...parts: string[]) => parts.map(encodeURIComponent).join('/');

export const api = {
  session: () => request<Session>('GET', '/console/session'),
  login: async (code: string) => {
    const { key } = await request<{ key: string }>('POST', '/console/login', { body: { code } });
    keepSessionKey(key);
  },
  logout: async () => {
    try {
      await request<undefined>('POST', '/console/logout');
    } finally {
      keepSessionKey(undefined);
    }
  },

  listQueues: (signal?: Signal) =>
    apiRequest<{ queues: QueueStats[] }>('GET', '/v1/queues', { signal }).then((r) => r.queues),
  pauseQueue: (name: string) =>
    apiRequest<{ queue: QueueControl }>('POST', `/v1/queues/${path(name)}/pause`).then((r) => r.queue),
  resumeQueue: (name: string) =>
    apiRequest<{ queue: QueueControl }>('POST', `/v1/queues/${path(name)}/resume`).then((r) => r.queue),
  setQueueLimits: (name: string, limits: QueueLimits) =>
    apiRequest<{ queue: QueueControl }>('POST', `/v1/queues/${path(name)}/limits`, { body: limits }).then(
      (r) => r.queue,
    ),

  listTasks: (filter: TaskFilter, signal?: Signal) =>
    apiRequest<TaskPage>('GET', `/v1/tasks${query({ ...filter })}`, { signal }),
  getTask: (taskId: string, signal?: Signal) =>
    apiRequest<{ task: Task }>('GET', `/v1/tasks/${path(taskId)}`, { signal }).then((r) => r.task),
  /** The task with its payload (up to 256 KB, perhaps read from S3): only when asked for. */
  getTaskWithPayload: (taskId: string, signal?: Signal) =>
    apiRequest<{ task: TaskWithPayload }>(
      'GET',
      `/v1/tasks/${path(taskId)}${query({ include: 'payload' })}`,
      { signal },
    ).then((r) => r.task),
  submitTask: (input: SubmitTaskInput) =>
    apiRequest<{ task: Task }>('POST', '/v1/tasks', { body: input }).then((r) => r.task),
  cancelTask: (taskId: string) =>
    apiRequest<{ task: Task }>('POST', `/v1/tasks/${path(taskId)}/cancel`).then((r) => r.task),
  redriveTask: (taskId: string) =>
    apiRequest<{ task: Task }>('POST', `/v1/tasks/${path(taskId)}/redrive`).then((r) => r.task),

  listAgents: (filter: { cursor?: string; limit?: number }, signal?: Signal) =>
    apiRequest<AgentPage>('GET', `/v1/agents${query(filter)}`, { signal }),
  revokeAgent: (agentId: string) => apiRequest<{ revoked: true }>('DELETE', `/v1/agents/${path(agentId)}`),

  listRoles: (signal?: Signal) =>
    apiRequest<{ roles: Role[] }>('GET', '/v1/roles', { signal }).then((r) => r.roles),

  listSchedules: (filter: { cursor?: string; limit?: number }, signal?: Signal) =>
    apiRequest<SchedulePage>('GET', `/v1/schedules${query(filter)}`, { signal }),
  getSchedule: (name: string, signal?: Signal) =>
    apiRequest<{ schedule: Schedule }>('GET', `/v1/schedules/${path(name)}`, { signal }).then(
      (r) => r.schedule,
    ),
  listOccurrences: (name: string, signal?: Signal) =>
    apiRequest<{ occurrences: Occurrence[] }>('GET', `/v1/schedules/${path(name)}/occurrences`, {
      signal,
    }).then((r) => r.occurrences),

  listEvents: (since: number, limit: number, signal?: Signal) =>
    apiRequest<EventPage>('GET', `/v1/events${query({ since, limit })}`, { signal }),
};
