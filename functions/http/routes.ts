/**
 * The HTTP API's routes, in one table that the CDK construct, the local server and the handlers all read, so a
 * route cannot exist in one place and not the other.
 *
 * - `public`: no authentication (health only).
 * - `agent`: a bearer token of a registered agent, checked by the Lambda authorizer; the agent's identity comes
 *   from the authorizer, never from the request.
 * - `operator`: AWS IAM (SigV4) in AWS; an operator token in local mode.
 */
export type RouteAccess = 'public' | 'agent' | 'operator';
export type HttpMethod = 'GET' | 'POST' | 'DELETE';

export interface RouteDefinition {
  readonly method: HttpMethod;
  /** API Gateway syntax: `/v1/tasks/{taskId}`. */
  readonly path: string;
  readonly access: RouteAccess;
  /** Stable name of the operation, used as the OpenAPI operationId and in logs and metrics. */
  readonly operation: string;
  /** Served by the local server only (in AWS, lifecycle events go to the EventBridge bus instead). */
  readonly localOnly?: boolean;
}

/** A table row: `operator('GET', '/v1/tasks', 'listTasks')`; `true` last marks a route of the local server only. */
const routeOf =
  (access: RouteAccess) =>
  (method: HttpMethod, path: string, operation: string, localOnly?: true): RouteDefinition => ({
    method,
    path,
    access,
    operation,
    ...(localOnly ? { localOnly } : {}),
  });
const unauthenticated = routeOf('public');
const operator = routeOf('operator');
const agent = routeOf('agent');

export const ROUTES: readonly RouteDefinition[] = [
  unauthenticated('GET', '/v1/health', 'health'),
  // A waitpoint's callback: the token in the path is the only credential (`core/waitpoints.ts`).
  unauthenticated('POST', '/v1/callbacks/{token}', 'answerCallback'),
  operator('GET', '/v1/openapi.json', 'openApi'),

  operator('POST', '/v1/tasks', 'submitTask'),
  operator('POST', '/v1/tasks/batch', 'submitTasks'),
  operator('GET', '/v1/tasks', 'listTasks'),
  operator('GET', '/v1/tasks/{taskId}', 'getTask'),
  operator('GET', '/v1/tasks/{taskId}/links', 'getTaskLinks'),
  operator('POST', '/v1/tasks/{taskId}/cancel', 'cancelTask'),
  operator('POST', '/v1/tasks/{taskId}/redrive', 'redriveTask'),
  operator('POST', '/v1/tasks/{taskId}/attention', 'clearAttention'),
  operator('GET', '/v1/queues', 'listQueues'),
  operator('POST', '/v1/queues/{name}/pause', 'pauseQueue'),
  operator('POST', '/v1/queues/{name}/resume', 'resumeQueue'),
  operator('POST', '/v1/queues/{name}/limits', 'setQueueLimits'),
  // The whole scheduler: no grants and no wakes in any queue while paused.
  operator('GET', '/v1/scheduler', 'getSchedulerControl'),
  operator('POST', '/v1/scheduler/pause', 'pauseScheduler'),
  operator('POST', '/v1/scheduler/resume', 'resumeScheduler'),
  // Every queued task's hint sent again from the task records, a page of calls at a time (`core/rebuild.ts`).
  operator('POST', '/v1/scheduler/rebuild', 'rebuildScheduler'),
  operator('GET', '/v1/scheduler/stats', 'getSchedulerStats'),
  operator('GET', '/v1/rate-limits', 'listRateLimits'),
  operator('GET', '/v1/rate-limits/{name}', 'getRateLimit'),
  operator('POST', '/v1/rate-limits/{name}', 'setRateLimit'),
  operator('POST', '/v1/agents', 'registerAgent'),
  operator('GET', '/v1/agents', 'listAgents'),
  operator('DELETE', '/v1/agents/{agentId}', 'revokeAgent'),
  operator('GET', '/v1/schedules', 'listSchedules'),
  operator('GET', '/v1/schedules/{name}', 'getSchedule'),
  operator('POST', '/v1/schedules', 'createSchedule'),
  operator('DELETE', '/v1/schedules/{name}', 'deleteSchedule'),
  operator('GET', '/v1/schedules/{name}/occurrences', 'listOccurrences'),

  operator('GET', '/v1/waitpoints', 'listWaitpoints'),
  operator('GET', '/v1/waitpoints/{waitpointId}', 'getWaitpoint'),
  operator('POST', '/v1/waitpoints/{waitpointId}/complete', 'completeWaitpoint'),
  operator('POST', '/v1/waitpoints/{waitpointId}/reject', 'rejectWaitpoint'),

  operator('GET', '/v1/roles', 'listRoles'),
  operator('POST', '/v1/push-ticket', 'createPushTicket'),

  operator('GET', '/v1/events', 'listEvents', true),

  agent('POST', '/v1/agent/session', 'openSession'),
  agent('GET', '/v1/agent/session', 'readSession'),
  agent('POST', '/v1/agent/heartbeat', 'heartbeat'),
  agent('POST', '/v1/agent/claim', 'claimTasks'),
  agent('POST', '/v1/agent/push-ticket', 'createAgentPushTicket'),
  agent('POST', '/v1/agent/tasks', 'submitChildTask'),
  agent('POST', '/v1/agent/tasks/batch', 'submitChildTasks'),
  agent('POST', '/v1/agent/tasks/complete', 'completeTasks'),
  agent('POST', '/v1/agent/tasks/progress', 'reportProgressBatch'),
  agent('POST', '/v1/agent/tasks/{taskId}/complete', 'completeTask'),
  agent('POST', '/v1/agent/tasks/{taskId}/fail', 'failTask'),
  agent('POST', '/v1/agent/tasks/{taskId}/release', 'releaseTask'),
  agent('POST', '/v1/agent/tasks/{taskId}/wait', 'waitTask'),
  agent('POST', '/v1/agent/tasks/{taskId}/progress', 'reportProgress'),
  agent('POST', '/v1/agent/roles/{role}/register', 'registerRole'),
  agent('POST', '/v1/agent/roles/{role}/volunteer', 'volunteerForRole'),
  agent('POST', '/v1/agent/roles/{role}/release', 'releaseRole'),
  agent('POST', '/v1/agent/roles/{role}/withdraw', 'withdrawFromRole'),
];

/** The routes one function serves: agent routes by the agent API, the others by the operator API. */
export const routesServedBy = (api: 'agent' | 'operator', local = false): RouteDefinition[] =>
  ROUTES.filter(
    (route) =>
      (api === 'agent' ? route.access === 'agent' : route.access !== 'agent') && (local || !route.localOnly),
  );

/** The routes API Gateway serves in AWS. */
export const DEPLOYED_ROUTES: readonly RouteDefinition[] = ROUTES.filter((route) => !route.localOnly);
