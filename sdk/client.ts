/**
 * A typed client of the v1 HTTP API: one method per route, for operators and for agents.
 *
 * Retries are safe by construction: a submit always carries an idempotency key, and the server answers a
 * repeated complete, fail or release with the outcome it already committed. Registering an agent and creating a
 * schedule are not idempotent, so they are retried only when the server says the request was not processed.
 */
import { randomUUID } from 'node:crypto';
import { HttpTransport, type RequestSpec, type TransportOptions } from './transport';
import type {
  Agent,
  ClaimedTask,
  ClaimInput,
  ClaimResult,
  CompleteInput,
  CreateAgentInput,
  CreatedAgent,
  FailInput,
  Health,
  HeartbeatInput,
  HeartbeatResult,
  ListTasksInput,
  Queue,
  ReleaseInput,
  Schedule,
  ScheduleSpec,
  Session,
  SubmitTaskInput,
  SubmitTaskResult,
  Task,
  TaskPage,
} from './types';

export type AgentSchedulerClientOptions = TransportOptions;

const segment = (value: string): string => encodeURIComponent(value);

export class AgentSchedulerClient {
  private readonly transport: HttpTransport;

  constructor(options: AgentSchedulerClientOptions) {
    this.transport = new HttpTransport(options);
  }

  // Operators

  /** Submits a task. The same idempotency key is sent on every attempt, so retries cannot create two tasks. */
  async submitTask(input: SubmitTaskInput): Promise<SubmitTaskResult> {
    const body = { ...input, idempotencyKey: input.idempotencyKey ?? randomUUID() };
    const response = await this.transport.request<{ task: Task }>({
      method: 'POST',
      path: '/v1/tasks',
      body,
    });
    return { task: response.body.task, created: response.status === 201 };
  }

  async getTask(taskId: string): Promise<Task> {
    return (await this.call<{ task: Task }>({ method: 'GET', path: `/v1/tasks/${segment(taskId)}` })).task;
  }

  async listTasks(filter: ListTasksInput = {}): Promise<TaskPage> {
    const { queue, status, limit, cursor } = filter;
    return this.call<TaskPage>({ method: 'GET', path: '/v1/tasks', query: { queue, status, limit, cursor } });
  }

  /** Cancels a queued or leased task; cancelling a cancelled task returns it unchanged. */
  async cancelTask(taskId: string): Promise<Task> {
    return (await this.call<{ task: Task }>({ method: 'POST', path: `/v1/tasks/${segment(taskId)}/cancel` }))
      .task;
  }

  /** Sends a dead task back to its queue. */
  async redriveTask(taskId: string): Promise<Task> {
    return (await this.call<{ task: Task }>({ method: 'POST', path: `/v1/tasks/${segment(taskId)}/redrive` }))
      .task;
  }

  async listQueues(): Promise<Queue[]> {
    return (await this.call<{ queues: Queue[] }>({ method: 'GET', path: '/v1/queues' })).queues;
  }

  /** Stops claims from the queue; submissions are still accepted. */
  async pauseQueue(name: string): Promise<Queue> {
    return (await this.call<{ queue: Queue }>({ method: 'POST', path: `/v1/queues/${segment(name)}/pause` }))
      .queue;
  }

  async resumeQueue(name: string): Promise<Queue> {
    return (await this.call<{ queue: Queue }>({ method: 'POST', path: `/v1/queues/${segment(name)}/resume` }))
      .queue;
  }

  /** Registers an agent and returns its bearer token, which is shown this once. */
  async createAgent(input: CreateAgentInput): Promise<CreatedAgent> {
    return this.call<CreatedAgent>({ method: 'POST', path: '/v1/agents', body: input, retry: 'unprocessed' });
  }

  async listAgents(): Promise<Agent[]> {
    return (await this.call<{ agents: Agent[] }>({ method: 'GET', path: '/v1/agents' })).agents;
  }

  /** Revokes an agent: its token stops working. Revoking twice is harmless. */
  async revokeAgent(agentId: string): Promise<void> {
    await this.call({ method: 'DELETE', path: `/v1/agents/${segment(agentId)}` });
  }

  async listSchedules(): Promise<Schedule[]> {
    return (await this.call<{ schedules: Schedule[] }>({ method: 'GET', path: '/v1/schedules' })).schedules;
  }

  async createSchedule(spec: ScheduleSpec): Promise<Schedule> {
    const body = await this.call<{ schedule: Schedule }>({
      method: 'POST',
      path: '/v1/schedules',
      body: spec,
      retry: 'unprocessed',
    });
    return body.schedule;
  }

  async deleteSchedule(name: string): Promise<void> {
    await this.call({ method: 'DELETE', path: `/v1/schedules/${segment(name)}` });
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

  /** Opens the agent's session; a session it had before ends, and the tasks it held are taken back. */
  async openSession(): Promise<Session> {
    return this.call<Session>({ method: 'POST', path: '/v1/agent/session', body: {} });
  }

  /** Keeps the session, and every lease it holds, alive; may carry a checkpoint per task. */
  async heartbeat(input: HeartbeatInput): Promise<HeartbeatResult> {
    return this.call<HeartbeatResult>({ method: 'POST', path: '/v1/agent/heartbeat', body: input });
  }

  async claim(input: ClaimInput): Promise<ClaimResult> {
    const body = await this.call<{ tasks: ClaimedTask[]; retryAfterMs?: number }>({
      method: 'POST',
      path: '/v1/agent/claim',
      body: input,
    });
    return {
      tasks: body.tasks,
      ...(typeof body.retryAfterMs === 'number' ? { retryAfterMs: body.retryAfterMs } : {}),
    };
  }

  async complete(taskId: string, input: CompleteInput): Promise<Task> {
    return (
      await this.call<{ task: Task }>({
        method: 'POST',
        path: `/v1/agent/tasks/${segment(taskId)}/complete`,
        body: input,
      })
    ).task;
  }

  async fail(taskId: string, input: FailInput): Promise<Task> {
    return (
      await this.call<{ task: Task }>({
        method: 'POST',
        path: `/v1/agent/tasks/${segment(taskId)}/fail`,
        body: input,
      })
    ).task;
  }

  /** Gives the task back without it counting as an attempt. */
  async release(taskId: string, input: ReleaseInput): Promise<Task> {
    return (
      await this.call<{ task: Task }>({
        method: 'POST',
        path: `/v1/agent/tasks/${segment(taskId)}/release`,
        body: input,
      })
    ).task;
  }

  private async call<T = unknown>(spec: RequestSpec): Promise<T> {
    return (await this.transport.request<T>(spec)).body;
  }
}
