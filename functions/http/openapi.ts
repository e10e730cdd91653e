/**
 * The OpenAPI 3.1 description of the API, generated from the route table and the very zod schemas that validate
 * requests, so the document cannot drift from what the handlers accept.
 */
import { z } from 'zod';
import { BATCH_LIMITS } from '#core/batches';
import { queueLimitsSchema } from '#core/queue-controls';
import { scheduleSpecSchema } from '#core/schedules';
import { agentSpecSchema } from '#core/sessions';
import { taskSpecSchema } from '#domain/task-spec';
import {
  claimBody,
  completeBody,
  completeManyBody,
  failBody,
  heartbeatBody,
  releaseBody,
  releaseRoleBody,
  volunteerBody,
  withdrawBody,
} from './agent-operations';
import { ROUTES, type RouteDefinition } from './routes';

const REQUEST_BODIES: Readonly<Record<string, z.ZodType>> = {
  submitTask: taskSpecSchema,
  registerAgent: agentSpecSchema,
  createSchedule: scheduleSpecSchema,
  heartbeat: heartbeatBody,
  claimTasks: claimBody,
  completeTask: completeBody,
  completeTasks: completeManyBody,
  submitTasks: z.strictObject({ tasks: z.array(taskSpecSchema).min(1).max(BATCH_LIMITS.submit) }),
  failTask: failBody,
  releaseTask: releaseBody,
  volunteerForRole: volunteerBody,
  releaseRole: releaseRoleBody,
  withdrawFromRole: withdrawBody,
  setQueueLimits: queueLimitsSchema,
};

const SUCCESS_STATUS: Readonly<Record<string, string>> = {
  submitTask: '201',
  registerAgent: '201',
  createSchedule: '201',
};

const QUERY_PARAMETERS: Readonly<Record<string, { name: string; schema: object }[]>> = {
  listTasks: [
    { name: 'queue', schema: { type: 'string' } },
    {
      name: 'status',
      schema: { type: 'string', enum: ['queued', 'leased', 'succeeded', 'dead', 'cancelled'] },
    },
    { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 100 } },
    { name: 'cursor', schema: { type: 'string' } },
  ],
  listAgents: [
    { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 100 } },
    { name: 'cursor', schema: { type: 'string' } },
  ],
  listSchedules: [
    { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 100 } },
    { name: 'cursor', schema: { type: 'string' } },
  ],
};

const errorSchema = {
  type: 'object',
  required: ['error', 'requestId'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string', maxLength: 300 } },
    },
    requestId: { type: 'string' },
  },
};

const toSchema = (schema: z.ZodType) =>
  z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' });

function operation(route: RouteDefinition) {
  const pathParameters = [...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  const query = (QUERY_PARAMETERS[route.operation] ?? []).map((p) => ({
    ...p,
    in: 'query',
    required: false,
  }));
  const body = REQUEST_BODIES[route.operation];
  const errors = Object.fromEntries(
    ['400', '401', '403', '404', '409', '413', '415', '429', '503'].map((status) => [
      status,
      {
        description: 'error',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    ]),
  );
  return {
    operationId: route.operation,
    security:
      route.access === 'agent'
        ? [{ agentToken: [] }]
        : route.access === 'operator'
          ? [{ awsSigV4: [] }, { operatorToken: [] }]
          : [],
    ...(pathParameters.length + query.length > 0 ? { parameters: [...pathParameters, ...query] } : {}),
    ...(body
      ? { requestBody: { required: true, content: { 'application/json': { schema: toSchema(body) } } } }
      : {}),
    responses: {
      [SUCCESS_STATUS[route.operation] ?? '200']: {
        description: 'success',
        content: { 'application/json': {} },
      },
      ...errors,
    },
  };
}

export function openApiDocument(serverUrl?: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) {
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: operation(route) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'agent-scheduler',
      version: '1.0.0',
      description: 'Task scheduling for fleets of worker agents.',
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    paths,
    components: {
      schemas: { Error: errorSchema },
      securitySchemes: {
        agentToken: { type: 'http', scheme: 'bearer', description: 'an agent token from POST /v1/agents' },
        operatorToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'local mode: the operator token in local.json',
        },
        awsSigV4: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: 'AWS IAM (SigV4) in AWS',
        },
      },
    },
  };
}
