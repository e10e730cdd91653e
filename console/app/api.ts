/**
 * The console's calls and the shapes of their answers: the records are the SDK's types (`sdk/types.ts`, imported
 * as types only), which the API's views and response schemas are held to; the priorities and statuses are the
 * SDK's too (`sdk/vocabulary.ts`, a few constants: all the page bundles of the SDK).
 */
import type {
  AgentPage,
  AttentionInput,
  CompleteWaitpointInput,
  EventPage,
  ListTasksInput,
  Occurrence,
  Priority,
  QueueControl,
  QueueLimits,
  QueueStats,
  RateLimit,
  RateLimitTerms,
  RejectWaitpointInput,
  Role,
  Schedule,
  SchedulePage,
  SchedulerControl,
  SchedulerStats,
  SubmitTaskInput as SdkSubmitTaskInput,
  Task,
  TaskLinks,
  TaskPage,
  Waitpoint,
  WaitpointPage,
} from '../../sdk/types';
import { PRIORITIES, TASK_STATUSES, TERMINAL_STATUSES } from '../../sdk/vocabulary';
import { apiRequest, keepSessionKey, query, request } from './http';
import type { QueueMetrics } from './queue-history';

export type * from '../../sdk/types';
export { PRIORITIES, TASK_STATUSES, TERMINAL_STATUSES };

/** The only status a redrive accepts. */
export const REDRIVABLE_STATUS = 'dead';

/** What the console server says of itself and of the browser's session (`GET /console/session`). */
export interface Session {
  readonly authenticated: boolean;
  readonly mode: 'local' | 'deployed';
  readonly endpoint: string;
  readonly events: 'poll' | 'none';
  /** How often a shown view reads again, as the console server chose it. */
  readonly refreshSeconds?: number;
  /** `cloudwatch`: the server reads a deployed stack's queue metrics (`queueMetrics`); older servers say nothing. */
  readonly metrics?: 'cloudwatch' | 'none';
}

/** A task read with `include=payload`. */
export type TaskWithPayload = Task;

/** The filters `GET /v1/tasks` takes; the times are ISO-8601 with an offset. */
export type TaskFilter = Omit<ListTasksInput, 'status'> & { readonly status?: string };

/** What the submit form sends: a queue, a priority and a payload; the rest takes its defaults. */
export type SubmitTaskInput = Pick<SdkSubmitTaskInput, 'queue' | 'payload'> & { readonly priority: Priority };

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

  /** The whole scheduler: paused or running (no grants and no wakes in any queue while paused). */
  getSchedulerControl: (signal?: Signal) =>
    apiRequest<{ scheduler: SchedulerControl }>('GET', '/v1/scheduler', { signal }).then((r) => r.scheduler),
  pauseScheduler: () =>
    apiRequest<{ scheduler: SchedulerControl }>('POST', '/v1/scheduler/pause').then((r) => r.scheduler),
  resumeScheduler: () =>
    apiRequest<{ scheduler: SchedulerControl }>('POST', '/v1/scheduler/resume').then((r) => r.scheduler),
  /** The supervisor's figures: added up over every pass, the last pass's with its tasks, the last errors. */
  getSchedulerStats: (signal?: Signal) =>
    apiRequest<SchedulerStats>('GET', '/v1/scheduler/stats', { signal }),

  /** The limits in force, by name, each with the use of its window open now (a per-key limit's by key). */
  listRateLimits: (signal?: Signal) =>
    apiRequest<{ rateLimits: RateLimit[] }>('GET', '/v1/rate-limits', { signal }).then((r) => r.rateLimits),
  /** One limit; a per-key one with the keys that used its window open now, most used first (up to 100). */
  getRateLimit: (name: string, signal?: Signal) =>
    apiRequest<{ rateLimit: RateLimit }>('GET', `/v1/rate-limits/${path(name)}`, { signal }).then(
      (r) => r.rateLimit,
    ),
  setRateLimit: (name: string, terms: RateLimitTerms) =>
    apiRequest<{ rateLimit: RateLimit }>('POST', `/v1/rate-limits/${path(name)}`, { body: terms }).then(
      (r) => r.rateLimit,
    ),

  listTasks: (filter: TaskFilter, signal?: Signal) =>
    apiRequest<TaskPage>(
      'GET',
      `/v1/tasks${query({ ...filter, attention: filter.attention ? 'true' : undefined })}`,
      { signal },
    ),
  getTask: (taskId: string, signal?: Signal) =>
    apiRequest<{ task: Task }>('GET', `/v1/tasks/${path(taskId)}`, { signal }).then((r) => r.task),
  /** The task with its payload (up to 256 KB, perhaps read from S3): only when asked for. */
  getTaskWithPayload: (taskId: string, signal?: Signal) =>
    apiRequest<{ task: TaskWithPayload }>(
      'GET',
      `/v1/tasks/${path(taskId)}${query({ include: 'payload' })}`,
      { signal },
    ).then((r) => r.task),
  /** The tasks linked to it (parent, root, children, dependencies, dependents, failure hook), each with its status. */
  getTaskLinks: (taskId: string, signal?: Signal) =>
    apiRequest<{ links: TaskLinks }>('GET', `/v1/tasks/${path(taskId)}/links`, { signal }).then(
      (r) => r.links,
    ),
  submitTask: (input: SubmitTaskInput) =>
    apiRequest<{ task: Task }>('POST', '/v1/tasks', { body: input }).then((r) => r.task),
  cancelTask: (taskId: string, cascade = false) =>
    apiRequest<{ task: Task }>(
      'POST',
      `/v1/tasks/${path(taskId)}/cancel`,
      cascade ? { body: { cascade } } : {},
    ).then((r) => r.task),
  redriveTask: (taskId: string) =>
    apiRequest<{ task: Task }>('POST', `/v1/tasks/${path(taskId)}/redrive`).then((r) => r.task),
  /** Clears the starvation ladder's mark; a task not marked is answered as it is. */
  clearAttention: (taskId: string) =>
    apiRequest<{ task: Task }>('POST', `/v1/tasks/${path(taskId)}/attention`, {
      body: { needsAttention: false } satisfies AttentionInput,
    }).then((r) => r.task),

  /** Open waitpoints, oldest first: the only ones the API lists. */
  listWaitpoints: (filter: { cursor?: string; limit?: number }, signal?: Signal) =>
    apiRequest<WaitpointPage>('GET', `/v1/waitpoints${query({ status: 'open', ...filter })}`, { signal }),
  getWaitpoint: (waitpointId: string, signal?: Signal) =>
    apiRequest<{ waitpoint: Waitpoint }>('GET', `/v1/waitpoints/${path(waitpointId)}`, { signal }).then(
      (r) => r.waitpoint,
    ),
  completeWaitpoint: (waitpointId: string, input: CompleteWaitpointInput) =>
    apiRequest<{ waitpoint: Waitpoint }>('POST', `/v1/waitpoints/${path(waitpointId)}/complete`, {
      body: input,
    }).then((r) => r.waitpoint),
  rejectWaitpoint: (waitpointId: string, input: RejectWaitpointInput) =>
    apiRequest<{ waitpoint: Waitpoint }>('POST', `/v1/waitpoints/${path(waitpointId)}/reject`, {
      body: input,
    }).then((r) => r.waitpoint),

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

  /** The last hour of these queues from CloudWatch, through the console server (a deployed stack's only). */
  queueMetrics: (queues: readonly string[], signal?: Signal) =>
    request<QueueMetrics>(
      'GET',
      `/console/metrics/queues?${queues.map((q) => `queue=${encodeURIComponent(q)}`).join('&')}`,
      { signal },
    ),

  listEvents: (since: number, limit: number, signal?: Signal) =>
    apiRequest<EventPage>('GET', `/v1/events${query({ since, limit })}`, { signal }),
};
