/**
 * A typed client of the v1 HTTP API: one method per route, for operators and for agents.
 *
 * Retries are safe by construction: a submit always carries an idempotency key, and the server answers a
 * repeated complete, fail or release with the outcome it already committed. Registering an agent and creating a
 * schedule are not idempotent, so they are retried only when the server says the request was not processed.
 */
import { AgentSchedulerError, isAgentSchedulerError } from './errors.js';
import { inBodies, SERVER_LIMITS } from './limits.js';
import type { PushOptions } from './push-channel.js';
import { newClaimId, newOpenId, nextOpenSeq } from './request-ids.js';
import { TaskWaiter, type WaitOptions } from './task-waiter.js';
import { withActiveTraceContext } from './tracing.js';
import { HttpTransport, type RequestSpec, type TransportOptions } from './transport.js';
import type {
  Agent,
  AttentionInput,
  BatchItemResult,
  CancelTaskInput,
  ChildTaskInput,
  ClaimAfter,
  ClaimedTask,
  ClaimInput,
  ClaimResult,
  CompletedAndClaimed,
  CompletedManyAndClaimed,
  CompleteInput,
  CompleteItem,
  CompleteWaitpointInput,
  CreateAgentInput,
  CreatedAgent,
  FailInput,
  Health,
  HeartbeatInput,
  HeartbeatResult,
  ListTasksInput,
  Occurrence,
  OpenSessionOptions,
  ProgressItem,
  ProgressItemResult,
  PushTicket,
  QueueControl,
  QueueLimits,
  QueueStats,
  RateLimit,
  RateLimitTerms,
  RebuildInput,
  RebuildResult,
  RebuildTotals,
  RejectWaitpointInput,
  ReleaseInput,
  ReleaseRoleInput,
  ReleaseRoleResult,
  ReportProgressInput,
  Role,
  Schedule,
  SchedulerControl,
  SchedulerStats,
  ScheduleSpec,
  Session,
  SessionHoldings,
  SubmitTaskInput,
  SubmitTaskResult,
  Task,
  TaskLinks,
  TaskPage,
  TaskProgress,
  VolunteerInput,
  VolunteerResult,
  WaitInput,
  Waitpoint,
  WaitpointPage,
  WaitResult,
  WithdrawRoleInput,
  WithdrawRoleResult,
} from './types.js';

export interface AgentSchedulerClientOptions extends TransportOptions {
  /**
   * The push channel `waitForTask` listens on (one operator connection per client, open while waits are): `false`
   * reads the task with backoff instead. @default on when a WebSocket constructor is available (the global one,
   * or the optional peer `ws` on Node.js 20)
   */
  readonly push?: false | PushOptions;
}

/** Who a push ticket is for: the agent whose token the client holds, or an operator. */
export type PushTicketFor = 'agent' | 'operator';

/** An agent's bearer token: `<agentId>.<secret>`. */
const AGENT_TOKEN = /^a_[a-z2-7]{26}\.[A-Za-z0-9_-]{43}$/;

/** Per call: a timeout for each attempt, and a signal that abandons the call (see `RequestSpec`). */
export interface CallOptions {
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /**
   * The W3C trace context of the span the call is made in (a Worker's handler span, for its task's outcome), sent
   * as the `traceparent` header: the server's span of the call is that span's child.
   */
  readonly traceparent?: string;
}

const segment = (value: string): string => encodeURIComponent(value);

/** The `nextError` of a completion whose claim was not carried: the server is older than carried claims. */
const CLAIM_NOT_CARRIED = {
  code: 'ClaimNotCarried',
  message: 'the server takes no claim with a completion; send it with claim()',
} as const;

/** A claim's answer as the server's body gives it: `retryAfterMs` only when it is a number. */
function claimResultOf({ tasks, retryAfterMs }: ClaimResult): ClaimResult {
  return { tasks, ...(typeof retryAfterMs === 'number' ? { retryAfterMs } : {}) };
}

/** The carried claim's answer, or why it was not made, as a completion's body gives them. */
function claimAfterOf(body: ClaimAfter): ClaimAfter {
  if (body.next) return { next: claimResultOf(body.next) };
  return body.nextError ? { nextError: body.nextError } : {};
}

/**
 * ISO strings for the named timestamps, whether they came as ISO or as epoch milliseconds (as some records still
 * do), so that every record of the SDK reads the same way.
 */
function withIsoTimes<T extends object>(record: object, ...keys: (keyof T & string)[]): T {
  const copy: Record<string, unknown> = { ...record };
  for (const key of keys) {
    const value = copy[key];
    if (typeof value === 'number') copy[key] = new Date(value).toISOString();
  }
  return copy as T;
}

export class AgentSchedulerClient {
  private readonly transport: HttpTransport;
  private readonly token: string | undefined;
  private readonly push: false | PushOptions;
  private waiter: TaskWaiter | undefined;
  /** The server refused a claim carried by a completion as an unknown field: it is older than them. */
  private claimsNotCarried = false;

  constructor(options: AgentSchedulerClientOptions) {
    this.transport = new HttpTransport(options);
    this.token = options.token;
    this.push = options.push ?? {};
  }

  // Operators

  /**
   * Submits a task. The same idempotency key is sent on every attempt, so retries cannot create two tasks; with
   * `debounce` the key names the submission, so a retry neither joins the window twice nor opens another.
   */
  async submitTask(input: SubmitTaskInput): Promise<SubmitTaskResult> {
    const [traced = input] = await withActiveTraceContext([input]);
    const body = { ...traced, idempotencyKey: input.idempotencyKey ?? globalThis.crypto.randomUUID() };
    const response = await this.transport.request<{ task: Task; debounced?: boolean }>({
      method: 'POST',
      path: '/v1/tasks',
      body,
    });
    const { debounced } = response.body;
    return {
      task: response.body.task,
      created: response.status === 201,
      ...(typeof debounced === 'boolean' ? { debounced } : {}),
    };
  }

  /**
   * Submits up to 25 tasks in one call; each item has its own outcome, in order. Every item carries an idempotency
   * key (one is added where missing), so retrying the whole batch creates nothing twice. Tasks whose payloads
   * together pass the server's body limit go in as many calls as they need; one refused on its own (a payload over
   * its limit) has that refusal as its outcome.
   */
  async submitTasks(inputs: readonly SubmitTaskInput[]): Promise<BatchItemResult[]> {
    const tasks = (await withActiveTraceContext(inputs)).map((input) => ({
      ...input,
      idempotencyKey: input.idempotencyKey ?? globalThis.crypto.randomUUID(),
    }));
    return inBodies(tasks, SERVER_LIMITS.tasksPerSubmit, async (chunk) => {
      const response = await this.call<{ results: BatchItemResult[] }>({
        method: 'POST',
        path: '/v1/tasks/batch',
        body: { tasks: chunk },
      });
      return response.results;
    });
  }

  /** A task; with `includePayload`, its payload too (a large one is read from S3 by the API). */
  async getTask(taskId: string, options: { includePayload?: boolean } = {}): Promise<Task> {
    return (
      await this.call<{ task: Task }>({
        method: 'GET',
        path: `/v1/tasks/${segment(taskId)}`,
        ...(options.includePayload ? { query: { include: 'payload' } } : {}),
      })
    ).task;
  }

  /**
   * The tasks linked to a task, each with its status: its parent and root, the children its agent submitted and the
   * tasks that depend on it (up to 50 each), the tasks it depends on, and its failure hook.
   */
  async getTaskLinks(taskId: string): Promise<TaskLinks> {
    return (
      await this.call<{ links: TaskLinks }>({ method: 'GET', path: `/v1/tasks/${segment(taskId)}/links` })
    ).links;
  }

  /** One page of tasks, newest first; pass `nextCursor` back as `cursor` for the next (older) page. */
  async listTasks(filter: ListTasksInput = {}): Promise<TaskPage> {
    const { queue, status, limit, cursor, createdAfter, createdBefore, concurrencyKey, attention } = filter;
    const page = await this.call<{ tasks: Task[]; nextCursor?: string | null }>({
      method: 'GET',
      path: '/v1/tasks',
      query: {
        queue,
        status,
        limit,
        cursor,
        createdAfter,
        createdBefore,
        concurrencyKey,
        attention: attention ? 'true' : undefined,
      },
    });
    // The last page says `null`; absent is what the type promises.
    return {
      tasks: page.tasks,
      ...(typeof page.nextCursor === 'string' ? { nextCursor: page.nextCursor } : {}),
    };
  }

  /** Cancels a queued or leased task; cancelling a cancelled task returns it unchanged. */
  /**
   * Cancels an open task. With `cascade: true`, every open descendant too (its children, theirs, …), ended ones left
   * as they ended: the call cancels what it can in a few seconds and the supervisor the rest; the task's `cascade`
   * says how far it has come (`getTask` shows it later).
   */
  async cancelTask(taskId: string, input: CancelTaskInput = {}): Promise<Task> {
    return (
      await this.call<{ task: Task }>({
        method: 'POST',
        path: `/v1/tasks/${segment(taskId)}/cancel`,
        ...(input.cascade === undefined ? {} : { body: input }),
      })
    ).task;
  }

  /** Open waitpoints, oldest first, a page at a time. */
  async listWaitpoints(
    filter: { readonly limit?: number; readonly cursor?: string } = {},
  ): Promise<WaitpointPage> {
    const page = await this.call<{ waitpoints: Waitpoint[]; nextCursor?: string | null }>({
      method: 'GET',
      path: '/v1/waitpoints',
      query: { status: 'open', limit: filter.limit, cursor: filter.cursor },
    });
    return {
      waitpoints: page.waitpoints,
      ...(typeof page.nextCursor === 'string' ? { nextCursor: page.nextCursor } : {}),
    };
  }

  /** A waitpoint: open, or how it ended and when. */
  async getWaitpoint(waitpointId: string): Promise<Waitpoint> {
    return (
      await this.call<{ waitpoint: Waitpoint }>({
        method: 'GET',
        path: `/v1/waitpoints/${segment(waitpointId)}`,
      })
    ).waitpoint;
  }

  /** Completes a waitpoint: its task resumes, its claim carrying `data`. The same answer again is answered as it was. */
  async completeWaitpoint(waitpointId: string, input: CompleteWaitpointInput = {}): Promise<Waitpoint> {
    return (
      await this.call<{ waitpoint: Waitpoint }>({
        method: 'POST',
        path: `/v1/waitpoints/${segment(waitpointId)}/complete`,
        body: input,
      })
    ).waitpoint;
  }

  /** Rejects a waitpoint: its task resumes, its claim carrying `reason`. */
  async rejectWaitpoint(waitpointId: string, input: RejectWaitpointInput): Promise<Waitpoint> {
    return (
      await this.call<{ waitpoint: Waitpoint }>({
        method: 'POST',
        path: `/v1/waitpoints/${segment(waitpointId)}/reject`,
        body: input,
      })
    ).waitpoint;
  }

  /**
   * Clears the mark the starvation ladder left on a task that waited too long (`needsAttention`): it leaves the
   * `attention: true` list. Nothing else of the task changes; clearing a task not marked answers it as it is.
   */
  async clearAttention(taskId: string): Promise<Task> {
    const body: AttentionInput = { needsAttention: false };
    return (
      await this.call<{ task: Task }>({
        method: 'POST',
        path: `/v1/tasks/${segment(taskId)}/attention`,
        body,
      })
    ).task;
  }

  /** Sends a dead task back to its queue. */
  async redriveTask(taskId: string): Promise<Task> {
    return (await this.call<{ task: Task }>({ method: 'POST', path: `/v1/tasks/${segment(taskId)}/redrive` }))
      .task;
  }

  /**
   * Resolves with the task (as `getTask` returns it) once it has ended: `succeeded`, `dead` or `cancelled`.
   * Listens on the push channel while it is up (the task is watched, its end pushed, then read once); reads the task
   * with backoff (250 ms doubling to 5 s) while the channel is down or unavailable. Rejects with a
   * `TaskWaitTimeoutError` after `timeoutMs`, with the server's error for a task that does not exist.
   */
  waitForTask(taskId: string, options: WaitOptions = {}): Promise<Task> {
    this.waiter ??= new TaskWaiter(
      { getTask: (id) => this.getTask(id), pushTicket: () => this.pushTicket('operator') },
      this.push,
    );
    return this.waiter.wait(taskId, options);
  }

  /**
   * Follows a task until it ends, as `waitForTask`, calling `onProgress` with each progress report its holder makes:
   * pushed on the channel the moment the server takes it, or seen on a read while the channel is down (then only the
   * latest of those made between two reads). The first call brings the report made before the watch, if any.
   */
  watchTask(
    taskId: string,
    options: WaitOptions & { readonly onProgress: (progress: TaskProgress) => void },
  ) {
    return this.waitForTask(taskId, options);
  }

  /** Submits a task, then waits for it to end (`timeoutMs` counts from the call). */
  async submitAndWait(input: SubmitTaskInput, options: WaitOptions = {}): Promise<Task> {
    const started = Date.now();
    const { task } = await this.submitTask(input);
    const { timeoutMs } = options;
    return this.waitForTask(task.taskId, {
      ...options,
      ...(timeoutMs === undefined ? {} : { timeoutMs: Math.max(0, timeoutMs - (Date.now() - started)) }),
    });
  }

  /**
   * A ticket to open one push connection, good once within 60 seconds: an agent's (it hears wakes for its queues
   * and its role grants) or an operator's (it can watch tasks). @param as default: `agent` when the client holds an
   * agent token, `operator` otherwise
   */
  async pushTicket(as?: PushTicketFor, options: CallOptions = {}): Promise<PushTicket> {
    const agent =
      as === undefined ? this.token !== undefined && AGENT_TOKEN.test(this.token) : as === 'agent';
    return this.call<PushTicket>({
      method: 'POST',
      path: agent ? '/v1/agent/push-ticket' : '/v1/push-ticket',
      ...options,
    });
  }

  async listQueues(): Promise<QueueStats[]> {
    return (await this.call<{ queues: QueueStats[] }>({ method: 'GET', path: '/v1/queues' })).queues;
  }

  /** Claims get nothing from a paused queue; submissions, sweeps and retries go on. */
  async pauseQueue(name: string): Promise<QueueControl> {
    return this.setPaused(name, 'pause');
  }

  async resumeQueue(name: string): Promise<QueueControl> {
    return this.setPaused(name, 'resume');
  }

  /**
   * Pauses the whole scheduler: from at most 2 s after the answer no claim is granted anything and no agent is woken,
   * in any queue; submissions, sweeps, take-backs and schedule fires go on, and their tasks queue up.
   */
  async pauseScheduler(): Promise<SchedulerControl> {
    return this.setSchedulerPaused('pause');
  }

  /** Resumes the whole scheduler; the idle agents of every queue not paused on its own are woken. */
  async resumeScheduler(): Promise<SchedulerControl> {
    return this.setSchedulerPaused('resume');
  }

  /** Whether the whole scheduler is paused, and since when. */
  async getSchedulerControl(): Promise<SchedulerControl> {
    const body = await this.call<{ scheduler: object }>({ method: 'GET', path: '/v1/scheduler' });
    return withIsoTimes<SchedulerControl>(body.scheduler, 'updatedAt');
  }

  /**
   * One call of a rebuild: every queued task's hint (a keyed task's lane turn) sent again from the task records, for
   * after the queues were purged or the tables restored from a backup. A call does what about 6 s allow and answers
   * a `cursor` while more is left: pass it back to go on (`rebuildSchedulerFully` does). Safe to repeat.
   */
  async rebuildScheduler(input: RebuildInput = {}): Promise<RebuildResult> {
    return this.call<RebuildResult>({ method: 'POST', path: '/v1/scheduler/rebuild', body: input });
  }

  /**
   * A whole rebuild: `rebuildScheduler` from the start, then from each answer's cursor until none comes, its counts
   * summed. `onCall` hears each answer (to show progress). A failed call throws: calling again starts a new rebuild,
   * which only sends hints again.
   */
  async rebuildSchedulerFully(
    options: { readonly limit?: number; readonly onCall?: (result: RebuildResult) => void } = {},
  ): Promise<RebuildTotals> {
    const totals = {
      calls: 0,
      pendingRuns: 0,
      activeRuns: 0,
      sessionsScanned: 0,
      wakeKeysCleared: 0,
      hintsSent: 0,
      turnsReplaced: 0,
    };
    let cursor: string | undefined;
    do {
      const result = await this.rebuildScheduler({
        ...(cursor === undefined ? {} : { cursor }),
        ...(options.limit === undefined ? {} : { limit: options.limit }),
      });
      options.onCall?.(result);
      totals.calls++;
      totals.pendingRuns += result.pendingRuns;
      totals.activeRuns += result.activeRuns;
      totals.sessionsScanned += result.sessionsScanned;
      totals.wakeKeysCleared += result.wakeKeysCleared;
      totals.hintsSent += result.hintsSent;
      totals.turnsReplaced += result.turnsReplaced;
      cursor = result.cursor;
    } while (cursor !== undefined);
    return totals;
  }

  /**
   * The supervisor's figures: each added up over every pass, the last pass's (with the tasks its figures name, 20 at
   * most each), and the errors the last pass that met any went on from. Before the first pass: zeros, no `lastPass`.
   */
  async getSchedulerStats(): Promise<SchedulerStats> {
    return this.call<SchedulerStats>({ method: 'GET', path: '/v1/scheduler/stats' });
  }

  /**
   * Sets a queue's limits across all agents; `{}` removes them. A concurrency limit above 5,000 is refused
   * (`ValidationError`, 400).
   */
  async setQueueLimits(name: string, limits: QueueLimits): Promise<QueueControl> {
    const body = await this.call<{ queue: object }>({
      method: 'POST',
      path: `/v1/queues/${segment(name)}/limits`,
      body: limits,
    });
    return withIsoTimes<QueueControl>(body.queue, 'updatedAt');
  }

  /** The named rate limits in force (set, or as the construct declares them), each with its window open now. */
  async listRateLimits(): Promise<RateLimit[]> {
    return (await this.call<{ rateLimits: RateLimit[] }>({ method: 'GET', path: '/v1/rate-limits' }))
      .rateLimits;
  }

  /** One named rate limit and its window open now; for a `perKey` limit, the keys that used it most. */
  async getRateLimit(name: string): Promise<RateLimit> {
    return (
      await this.call<{ rateLimit: RateLimit }>({ method: 'GET', path: `/v1/rate-limits/${segment(name)}` })
    ).rateLimit;
  }

  /**
   * Sets a named rate limit's terms: a new limit, or new terms for one in force (a declared one's included, which
   * these then replace). Raising a budget lets its waiting tasks run within the window; lowering it stops grants
   * once the window's use reaches it.
   */
  async setRateLimit(name: string, terms: RateLimitTerms): Promise<RateLimit> {
    return (
      await this.call<{ rateLimit: RateLimit }>({
        method: 'POST',
        path: `/v1/rate-limits/${segment(name)}`,
        body: terms,
      })
    ).rateLimit;
  }

  /** Registers an agent and returns its bearer token, which is shown this once. */
  async createAgent(input: CreateAgentInput): Promise<CreatedAgent> {
    return this.call<CreatedAgent>({ method: 'POST', path: '/v1/agents', body: input, retry: 'unprocessed' });
  }

  /** Every registered agent, read a page at a time. */
  async listAgents(): Promise<Agent[]> {
    return this.everyPage<Agent>('/v1/agents', 'agents');
  }

  /** Revokes an agent: its token stops working. Revoking twice is harmless. */
  async revokeAgent(agentId: string): Promise<void> {
    await this.call({ method: 'DELETE', path: `/v1/agents/${segment(agentId)}` });
  }

  /**
   * Schedules created through the API and those declared in the infrastructure, by name, read a page at a time.
   * Their task templates come without the payload; `getSchedule` has it.
   */
  async listSchedules(): Promise<Schedule[]> {
    const schedules = await this.everyPage<object>('/v1/schedules', 'schedules');
    return schedules.map((schedule) => withIsoTimes<Schedule>(schedule, 'createdAt'));
  }

  /** The items of every page of a list route, following `nextCursor`. */
  private async everyPage<T>(path: string, field: string): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | undefined;
    do {
      const page: Record<string, unknown> = await this.call({ method: 'GET', path, query: { cursor } });
      items.push(...((page[field] ?? []) as T[]));
      cursor = typeof page.nextCursor === 'string' ? page.nextCursor : undefined;
    } while (cursor !== undefined);
    return items;
  }

  /** One schedule with its whole task template; an unknown name is a `ScheduleNotFound`. */
  async getSchedule(name: string): Promise<Schedule> {
    const body = await this.call<{ schedule: object }>({
      method: 'GET',
      path: `/v1/schedules/${segment(name)}`,
    });
    return withIsoTimes<Schedule>(body.schedule, 'createdAt');
  }

  /** Creates a schedule; a name already taken is a `Conflict`. */
  async createSchedule(spec: ScheduleSpec): Promise<Schedule> {
    const body = await this.call<{ schedule: object }>({
      method: 'POST',
      path: '/v1/schedules',
      body: spec,
      retry: 'unprocessed',
    });
    return withIsoTimes<Schedule>(body.schedule, 'createdAt');
  }

  /** Recent occurrences of a schedule, newest first. */
  async listOccurrences(name: string): Promise<Occurrence[]> {
    const body = await this.call<{ occurrences: Occurrence[] }>({
      method: 'GET',
      path: `/v1/schedules/${segment(name)}/occurrences`,
    });
    return body.occurrences;
  }

  async deleteSchedule(name: string): Promise<void> {
    await this.call({ method: 'DELETE', path: `/v1/schedules/${segment(name)}` });
  }

  /** Every role: holder, epoch, live volunteers. */
  async listRoles(): Promise<Role[]> {
    return (await this.call<{ roles: Role[] }>({ method: 'GET', path: '/v1/roles' })).roles;
  }

  /** The OpenAPI document of the API. */
  async openApi(): Promise<Record<string, unknown>> {
    return this.call<Record<string, unknown>>({ method: 'GET', path: '/v1/openapi.json' });
  }

  /** Open to anyone: whether the API answers. */
  async health(): Promise<Health> {
    return this.call<Health>({ method: 'GET', path: '/v1/health' });
  }

  // Agents

  /**
   * Opens the agent's session; a session it had before ends, and the tasks it held are taken back. Every attempt
   * carries one open id (a new one unless given), so a retry after a lost answer, or a copy delivered late, gets
   * the session the first attempt opened instead of ending it; and a number, so that an open the agent gave up on,
   * delivered after a later one, cannot end the later one's session. A server older than either refuses the
   * field (400): the open is then sent without it. `labels` narrows the agent's labels for the session; it is
   * never dropped (a server that refuses it opens nothing).
   */
  async openSession(options: OpenSessionOptions = {}): Promise<Session> {
    const labels = options.labels === undefined ? {} : { labels: options.labels };
    const open = (body: object) =>
      this.call<Session>({ method: 'POST', path: '/v1/agent/session', body: { ...body, ...labels } });
    const openId = options.openId ?? newOpenId();
    const refuses = (error: unknown, field: string) =>
      error instanceof AgentSchedulerError && error.status === 400 && error.message.includes(`"${field}"`);
    try {
      return await open({ openId, openSeq: options.openSeq ?? nextOpenSeq() });
    } catch (error) {
      if (refuses(error, 'openId')) return open({});
      if (!refuses(error, 'openSeq')) throw error;
    }
    return open({ openId });
  }

  /** What the agent's live session holds: its tasks with their epochs, and its roles. */
  async getSession(options: CallOptions = {}): Promise<SessionHoldings> {
    return (
      await this.call<{ session: SessionHoldings }>({ method: 'GET', path: '/v1/agent/session', ...options })
    ).session;
  }

  /** Keeps the session, and every lease it holds, alive; may carry a checkpoint per task. */
  async heartbeat(input: HeartbeatInput, options: CallOptions = {}): Promise<HeartbeatResult> {
    const body = await this.call<HeartbeatResult>({
      method: 'POST',
      path: '/v1/agent/heartbeat',
      body: input,
      ...options,
    });
    // A server older than `held` says nothing of it: nothing unknown is held, as far as the agent can tell.
    return { ...body, held: body.held ?? [] };
  }

  /**
   * Claims tasks. Every attempt of the call carries one claim id (a new one unless given), so a retry after a lost
   * answer gets what the first attempt granted instead of leasing more the agent would never hear of.
   */
  async claim(input: ClaimInput, options: CallOptions = {}): Promise<ClaimResult> {
    const body = await this.call<{ tasks: ClaimedTask[]; retryAfterMs?: number }>({
      method: 'POST',
      path: '/v1/agent/claim',
      body: { ...input, claimId: input.claimId ?? newClaimId() },
      ...options,
    });
    return claimResultOf(body);
  }

  async complete(taskId: string, input: CompleteInput, options: CallOptions = {}): Promise<Task> {
    return (
      await this.call<{ task: Task }>({
        method: 'POST',
        path: `/v1/agent/tasks/${segment(taskId)}/complete`,
        body: input,
        ...options,
      })
    ).task;
  }

  /**
   * Completes a task and, in the same call, claims (`claim`, as `claim()` takes it): a busy agent's next task
   * comes with the answer to its last, one request instead of two. The claim carries one id on every attempt
   * (a new one unless given). `next` is its answer; without it, `nextError` says why it was not made (as
   * `claim()` would have thrown it), or the server is older than carried claims: the completion stands either
   * way, and the claim can be sent with `claim()` under the same id.
   */
  async completeAndClaim(
    taskId: string,
    input: CompleteInput,
    claim: ClaimInput,
    options: CallOptions = {},
  ): Promise<CompletedAndClaimed> {
    return this.carrying(
      claim,
      async (claimNext) => {
        const body = await this.call<CompletedAndClaimed>({
          method: 'POST',
          path: `/v1/agent/tasks/${segment(taskId)}/complete`,
          body: { ...input, claimNext },
          ...options,
        });
        return { task: body.task, ...claimAfterOf(body) };
      },
      async () => ({ task: await this.complete(taskId, input, options) }),
    );
  }

  /** As `completeAndClaim`, for up to 10 completions in one call (`completeTasks`). */
  async completeTasksAndClaim(
    items: readonly CompleteItem[],
    claim: ClaimInput,
    options: CallOptions = {},
  ): Promise<CompletedManyAndClaimed> {
    return this.carrying(
      claim,
      async (claimNext) => {
        const body = await this.call<CompletedManyAndClaimed>({
          method: 'POST',
          path: '/v1/agent/tasks/complete',
          body: { tasks: items, claimNext },
          ...options,
        });
        return { results: body.results, ...claimAfterOf(body) };
      },
      async () => ({ results: await this.completeTasks(items, options) }),
    );
  }

  /**
   * A completion call that carries `claim` (with an id, the same on every attempt), or, to a server older than
   * carried claims (it refuses the unknown field, having changed nothing; remembered, so later calls go without),
   * the completion alone, answered with `nextError` `ClaimNotCarried`.
   */
  private async carrying<T extends ClaimAfter>(
    claim: ClaimInput,
    send: (claimNext: ClaimInput) => Promise<T>,
    alone: () => Promise<Omit<T, keyof ClaimAfter>>,
  ): Promise<T> {
    if (!this.claimsNotCarried) {
      try {
        return await send({ ...claim, claimId: claim.claimId ?? newClaimId() });
      } catch (error) {
        if (!isAgentSchedulerError(error, 'ValidationError') || !error.message.includes('"claimNext"'))
          throw error;
        this.claimsNotCarried = true;
      }
    }
    return { ...(await alone()), nextError: CLAIM_NOT_CARRIED } as T;
  }

  /** Completes up to 10 leases in one call; each item has its own outcome (a stale lease is a `LeaseLost` item). */
  async completeTasks(items: readonly CompleteItem[], options: CallOptions = {}): Promise<BatchItemResult[]> {
    return (
      await this.call<{ results: BatchItemResult[] }>({
        method: 'POST',
        path: '/v1/agent/tasks/complete',
        body: { tasks: items },
        ...options,
      })
    ).results;
  }

  /** Reports the progress of a held task, fenced by its lease; answers the report as kept. */
  async reportProgress(
    taskId: string,
    input: ReportProgressInput,
    options: CallOptions = {},
  ): Promise<TaskProgress> {
    return (
      await this.call<{ progress: TaskProgress }>({
        method: 'POST',
        path: `/v1/agent/tasks/${segment(taskId)}/progress`,
        body: input,
        ...options,
      })
    ).progress;
  }

  /** Reports the progress of up to 100 held tasks in one call; each report has its own outcome. */
  async reportProgressBatch(
    items: readonly ProgressItem[],
    options: CallOptions = {},
  ): Promise<ProgressItemResult[]> {
    return (
      await this.call<{ results: ProgressItemResult[] }>({
        method: 'POST',
        path: '/v1/agent/tasks/progress',
        body: { tasks: items },
        ...options,
      })
    ).results;
  }

  async fail(taskId: string, input: FailInput, options: CallOptions = {}): Promise<Task> {
    return (
      await this.call<{ task: Task }>({
        method: 'POST',
        path: `/v1/agent/tasks/${segment(taskId)}/fail`,
        body: input,
        ...options,
      })
    ).task;
  }

  /**
   * Submits follow-up tasks of a task this agent holds (its parent), fenced by the lease: refused (`LeaseLost`)
   * once it is gone. Each child is named by its key among the parent's, so a retry, or the parent run again,
   * gets the same tasks back. Up to 25 at once; each item has its own outcome. Children whose payloads together
   * pass the server's body limit go in as many calls as they need, in order.
   */
  async submitChildren(
    parentTaskId: string,
    input: { readonly leaseEpoch: number; readonly tasks: readonly ChildTaskInput[] },
    options: CallOptions = {},
  ): Promise<BatchItemResult[]> {
    const tasks = await withActiveTraceContext(input.tasks);
    return inBodies(tasks, SERVER_LIMITS.tasksPerSubmit, async (chunk) => {
      const response = await this.call<{ results: BatchItemResult[] }>({
        method: 'POST',
        path: '/v1/agent/tasks/batch',
        body: { parentTaskId, leaseEpoch: input.leaseEpoch, tasks: chunk },
        ...options,
      });
      return response.results;
    });
  }

  /**
   * Suspends a held task on a waitpoint: the lease ends (no heartbeats held), no attempt is used, and the task
   * resumes when the waitpoint is completed, rejected or times out. The answer's `callbackUrl` completes it (shown
   * once: a retry of this call after a lost answer gets a new one, and the first stops working).
   */
  async wait(taskId: string, input: WaitInput, options: CallOptions = {}): Promise<WaitResult> {
    return this.call<WaitResult>({
      method: 'POST',
      path: `/v1/agent/tasks/${segment(taskId)}/wait`,
      body: input,
      ...options,
    });
  }

  /** Gives the task back without it counting as an attempt. */
  async release(taskId: string, input: ReleaseInput, options: CallOptions = {}): Promise<Task> {
    return (
      await this.call<{ task: Task }>({
        method: 'POST',
        path: `/v1/agent/tasks/${segment(taskId)}/release`,
        body: input,
        ...options,
      })
    ).task;
  }

  /** Declares a role without volunteering for it; a second registration by the same agent is a 409. */
  async registerRole(role: string): Promise<Role> {
    return (
      await this.call<{ role: Role }>({
        method: 'POST',
        path: `/v1/agent/roles/${segment(role)}/register`,
        body: {},
        retry: 'unprocessed',
      })
    ).role;
  }

  /**
   * Joins the role's candidates under the session; granted at once if the role is free. Volunteering twice under
   * one session is a 409 (`RoleAlreadyVolunteered`), so a retried call whose first answer was lost says so; a grant
   * it made is reported again by the next heartbeat.
   */
  async volunteerForRole(role: string, input: VolunteerInput): Promise<VolunteerResult> {
    return this.call<VolunteerResult>({
      method: 'POST',
      path: `/v1/agent/roles/${segment(role)}/volunteer`,
      body: input,
    });
  }

  /**
   * Leaves the role's candidates: a volunteer that no longer wants the role is not granted it later. If the agent
   * holds the role under that session, it is given up in the same move and the next volunteer gets it.
   */
  async withdrawFromRole(role: string, input: WithdrawRoleInput): Promise<WithdrawRoleResult> {
    return this.call<WithdrawRoleResult>({
      method: 'POST',
      path: `/v1/agent/roles/${segment(role)}/withdraw`,
      body: input,
    });
  }

  /** Gives a held role up; the next live volunteer is granted it at once. */
  async releaseRole(role: string, input: ReleaseRoleInput): Promise<ReleaseRoleResult> {
    return this.call<ReleaseRoleResult>({
      method: 'POST',
      path: `/v1/agent/roles/${segment(role)}/release`,
      body: input,
    });
  }

  private async setPaused(name: string, action: 'pause' | 'resume'): Promise<QueueControl> {
    const body = await this.call<{ queue: object }>({
      method: 'POST',
      path: `/v1/queues/${segment(name)}/${action}`,
    });
    return withIsoTimes<QueueControl>(body.queue, 'updatedAt');
  }

  private async setSchedulerPaused(action: 'pause' | 'resume'): Promise<SchedulerControl> {
    const body = await this.call<{ scheduler: object }>({ method: 'POST', path: `/v1/scheduler/${action}` });
    return withIsoTimes<SchedulerControl>(body.scheduler, 'updatedAt');
  }

  private async call<T = unknown>(spec: RequestSpec): Promise<T> {
    return (await this.transport.request<T>(spec)).body;
  }
}
