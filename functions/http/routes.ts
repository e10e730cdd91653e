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

export const ROUTES: readonly RouteDefinition[] = [
  { method: 'GET', path: '/v1/health', access: 'public', operation: 'health' },
  { method: 'GET', path: '/v1/openapi.json', access: 'operator', operation: 'openApi' },

  { method: 'POST', path: '/v1/tasks', access: 'operator', operation: 'submitTask' },
  { method: 'POST', path: '/v1/tasks/batch', access: 'operator', operation: 'submitTasks' },
  { method: 'GET', path: '/v1/tasks', access: 'operator', operation: 'listTasks' },
  { method: 'GET', path: '/v1/tasks/{taskId}', access: 'operator', operation: 'getTask' },
  { method: 'POST', path: '/v1/tasks/{taskId}/cancel', access: 'operator', operation: 'cancelTask' },
  { method: 'POST', path: '/v1/tasks/{taskId}/redrive', access: 'operator', operation: 'redriveTask' },
  { method: 'GET', path: '/v1/queues', access: 'operator', operation: 'listQueues' },
  { method: 'POST', path: '/v1/queues/{name}/pause', access: 'operator', operation: 'pauseQueue' },
  { method: 'POST', path: '/v1/queues/{name}/resume', access: 'operator', operation: 'resumeQueue' },
  { method: 'POST', path: '/v1/queues/{name}/limits', access: 'operator', operation: 'setQueueLimits' },
  { method: 'POST', path: '/v1/agents', access: 'operator', operation: 'registerAgent' },
  { method: 'GET', path: '/v1/agents', access: 'operator', operation: 'listAgents' },
  { method: 'DELETE', path: '/v1/agents/{agentId}', access: 'operator', operation: 'revokeAgent' },
  { method: 'GET', path: '/v1/schedules', access: 'operator', operation: 'listSchedules' },
  { method: 'GET', path: '/v1/schedules/{name}', access: 'operator', operation: 'getSchedule' },
  { method: 'POST', path: '/v1/schedules', access: 'operator', operation: 'createSchedule' },
  { method: 'DELETE', path: '/v1/schedules/{name}', access: 'operator', operation: 'deleteSchedule' },
  {
    method: 'GET',
    path: '/v1/schedules/{name}/occurrences',
    access: 'operator',
    operation: 'listOccurrences',
  },

  { method: 'GET', path: '/v1/roles', access: 'operator', operation: 'listRoles' },
  { method: 'POST', path: '/v1/push-ticket', access: 'operator', operation: 'createPushTicket' },

  { method: 'GET', path: '/v1/events', access: 'operator', operation: 'listEvents', localOnly: true },

  { method: 'POST', path: '/v1/agent/session', access: 'agent', operation: 'openSession' },
  { method: 'GET', path: '/v1/agent/session', access: 'agent', operation: 'readSession' },
  { method: 'POST', path: '/v1/agent/heartbeat', access: 'agent', operation: 'heartbeat' },
  { method: 'POST', path: '/v1/agent/claim', access: 'agent', operation: 'claimTasks' },
  { method: 'POST', path: '/v1/agent/push-ticket', access: 'agent', operation: 'createAgentPushTicket' },
  { method: 'POST', path: '/v1/agent/tasks', access: 'agent', operation: 'submitChildTask' },
  { method: 'POST', path: '/v1/agent/tasks/batch', access: 'agent', operation: 'submitChildTasks' },
  { method: 'POST', path: '/v1/agent/tasks/complete', access: 'agent', operation: 'completeTasks' },
  { method: 'POST', path: '/v1/agent/tasks/{taskId}/complete', access: 'agent', operation: 'completeTask' },
  { method: 'POST', path: '/v1/agent/tasks/{taskId}/fail', access: 'agent', operation: 'failTask' },
  { method: 'POST', path: '/v1/agent/tasks/{taskId}/release', access: 'agent', operation: 'releaseTask' },
  { method: 'POST', path: '/v1/agent/roles/{role}/register', access: 'agent', operation: 'registerRole' },
  {
    method: 'POST',
    path: '/v1/agent/roles/{role}/volunteer',
    access: 'agent',
    operation: 'volunteerForRole',
  },
  { method: 'POST', path: '/v1/agent/roles/{role}/release', access: 'agent', operation: 'releaseRole' },
  {
    method: 'POST',
    path: '/v1/agent/roles/{role}/withdraw',
    access: 'agent',
    operation: 'withdrawFromRole',
  },
];

/** The routes one function serves: agent routes by the agent API, the others by the operator API. */
export const routesServedBy = (api: 'agent' | 'operator', local = false): RouteDefinition[] =>
  ROUTES.filter(
    (route) =>
      (api === 'agent' ? route.access === 'agent' : route.access !== 'agent') && (local || !route.localOnly),
  );

/** The routes API Gateway serves in AWS. */
export const DEPLOYED_ROUTES: readonly RouteDefinition[] = ROUTES.filter((route) => !route.localOnly);
