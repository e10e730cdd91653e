/**
 * The agent-scheduler SDK: a typed client of the v1 HTTP API, a Worker that runs tasks for an agent, and role
 * subscriptions for duties that must have exactly one holder.
 */
export { AgentSchedulerClient, type AgentSchedulerClientOptions } from './client.js';
export {
  AgentSchedulerError,
  type AgentSchedulerErrorInit,
  isAgentSchedulerError,
  LeaseLostError,
  NetworkError,
  NonRetryableError,
  SessionLostError,
} from './errors.js';
export type { PollInterval } from './poll-backoff.js';
export type { RetryOptions } from './retry.js';
export {
  RoleSubscription,
  type RoleSubscriptionEvents,
  type RoleSubscriptionOptions,
} from './role-subscription.js';
export { awsSigV4, type RequestSigner, type SignableRequest } from './sigv4.js';
export type { HttpMethod, TransportOptions } from './transport.js';
export type * from './types.js';
export { type StopOptions, Worker, type WorkerOptions } from './worker.js';
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
} from './worker-events.js';
