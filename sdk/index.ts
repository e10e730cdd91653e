/**
 * The agent-scheduler SDK: a typed client of the v1 HTTP API, a Worker that runs tasks for an agent, and role
 * subscriptions for duties that must have exactly one holder.
 */
export { AgentSchedulerClient, type AgentSchedulerClientOptions } from './client';
export {
  AgentSchedulerError,
  type AgentSchedulerErrorInit,
  isAgentSchedulerError,
  LeaseLostError,
  NetworkError,
  NonRetryableError,
  SessionLostError,
} from './errors';
export type { PollInterval } from './poll-backoff';
export type { RetryOptions } from './retry';
export {
  RoleSubscription,
  type RoleSubscriptionEvents,
  type RoleSubscriptionOptions,
} from './role-subscription';
export type { HttpMethod, TransportOptions } from './transport';
export type * from './types';
export { type StopOptions, Worker, type WorkerOptions } from './worker';
export {
  type AbortReason,
  type LostReason,
  RoleAbortedError,
  type RoleContext,
  type RoleHandler,
  type RoleLostReason,
  TaskAbortedError,
  type TaskContext,
  type TaskHandler,
  type WorkerEvents,
  type WorkerLog,
} from './worker-events';
