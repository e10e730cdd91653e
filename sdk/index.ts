/**
 * The agent-scheduler SDK: a typed client of the v1 HTTP API, a Worker that runs tasks for an agent, role
 * subscriptions for duties that must have exactly one holder, and the push channel both listen on.
 */
export { AgentSchedulerClient, type AgentSchedulerClientOptions, type PushTicketFor } from './client.js';
export {
  AgentSchedulerError,
  type AgentSchedulerErrorInit,
  isAgentSchedulerError,
  LeaseLostError,
  NetworkError,
  NonRetryableError,
  SessionLostError,
} from './errors.js';
export { SERVER_LIMITS } from './limits.js';
export type { PollInterval } from './poll-backoff.js';
export {
  type ClientFrame,
  PushChannel,
  type PushChannelEvents,
  type PushChannelOptions,
  type PushChannelState,
  type PushErrorFrame,
  type PushFrame,
  type PushOptions,
  type PushSocket,
  type PushSocketEvent,
  type RoleFrame,
  type SubscribedFrame,
  type TaskFrame,
  type WakeFrame,
  type WakeReason,
  type WebSocketConstructor,
} from './push-channel.js';
export type { RetryOptions } from './retry.js';
export {
  RoleSubscription,
  type RoleSubscriptionEvents,
  type RoleSubscriptionOptions,
} from './role-subscription.js';
export { awsSigV4, type RequestSigner, type SignableRequest } from './sigv4.js';
export { TaskWaitTimeoutError, type WaitOptions } from './task-waiter.js';
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
  Snooze,
  Suspend,
  type SuspendOptions,
  TaskAbortedError,
  type TaskContext,
  type TaskHandler,
  type WorkerEvents,
  type WorkerLog,
} from './worker-events.js';
