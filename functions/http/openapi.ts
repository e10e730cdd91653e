/**
 * The OpenAPI 3.1 description of the API, generated from the route table, the very zod schemas that validate
 * requests and the response schemas of `response-schemas.ts`, so the document cannot drift from what the
 * handlers accept and answer.
 */
import { z } from 'zod';
import { agentSpecSchema } from '#core/sessions';
import { queueLimitsSchema } from '#domain/queue-limits';
import { rateLimitTermsSchema } from '#domain/rate-limits';
import { scheduleSpecSchema } from '#domain/schedule';
import { taskSpecSchema } from '#domain/task-spec';
import { TASK_STATUSES } from '#domain/task-status';
import {
  attentionBody,
  cancelBody,
  claimBody,
  completeBody,
  completeManyBody,
  completeWaitpointBody,
  failBody,
  heartbeatBody,
  openSessionBody,
  progressBody,
  progressManyBody,
  rebuildBody,
  rejectWaitpointBody,
  releaseBody,
  releaseRoleBody,
  submitChildBody,
  submitChildrenBody,
  submitTasksBody,
  volunteerBody,
  waitBody,
  withdrawBody,
} from './request-bodies';
import {
  agentPageSchema,
  batchResultsSchema,
  claimResultSchema,
  completedManySchema,
  completedSchema,
  createdAgentSchema,
  deletedSchema,
  eventPageSchema,
  healthSchema,
  heartbeatResultSchema,
  occurrenceListSchema,
  openApiDocumentSchema,
  progressResponseSchema,
  progressResultsSchema,
  pushTicketSchema,
  queueListSchema,
  queueResponseSchema,
  rateLimitListSchema,
  rateLimitResponseSchema,
  rebuildResultSchema,
  releaseRoleResultSchema,
  responseRegistry,
  revokedSchema,
  roleListSchema,
  roleResponseSchema,
  schedulePageSchema,
  scheduleResponseSchema,
  schedulerResponseSchema,
  schedulerStatsSchema,
  sessionResponseSchema,
  sessionSchema,
  submitResponseSchema,
  taskLinksResponseSchema,
  taskPageSchema,
  taskResponseSchema,
  volunteerResultSchema,
  waitpointPageSchema,
  waitpointResponseSchema,
  waitResultSchema,
  withdrawRoleResultSchema,
} from './response-schemas';
import { ROUTES, type RouteDefinition } from './routes';

export type JsonSchema = Record<string, unknown>;

const COMPONENTS = '#/components/schemas/';

interface QueryParameter {
  readonly name: string;
  readonly description: string;
  readonly schema: JsonSchema;
}

interface OperationDoc {
  readonly summary: string;
  /** The body it takes, published under `components/schemas` as `id`. */
  readonly request?: { readonly id: string; readonly schema: z.ZodType };
  readonly query?: readonly QueryParameter[];
  readonly headers?: readonly QueryParameter[];
  /** Each success status it answers with, and the body that comes with it. */
  readonly responses: Readonly<Record<string, { readonly description: string; readonly schema: z.ZodType }>>;
}

const ok = (schema: z.ZodType, description = 'Done') => ({ '200': { description, schema } });

/** An operation that takes a JSON body, published under `components/schemas` as `id`. */
const withBody = (
  summary: string,
  id: string,
  schema: z.ZodType,
  responses: OperationDoc['responses'],
): OperationDoc => ({ summary, request: { id, schema }, responses });

/** W3C trace context headers: a `traceparent` whose description says what it is taken for, and its `tracestate`. */
const traceHeaders = (traceparent: string): readonly QueryParameter[] => [
  { name: 'traceparent', description: `W3C trace context: ${traceparent}`, schema: { type: 'string' } },
  {
    name: 'tracestate',
    description: 'W3C trace context: taken with the `traceparent` header.',
    schema: { type: 'string', maxLength: 512 },
  },
];

/** What a submission takes when its specification names no trace context. */
const TRACE_HEADERS = traceHeaders(
  'taken as the `traceparent` of each task of the body that has none (nor a `tracestate`); checked as the field is.',
);

/**
 * The same headers on every other operation: where the stack exports spans, the operation's span is a child of the
 * context they carry (on the agent's outcome calls, the Worker's span of the handler that ran the task).
 */
const SPAN_PARENT_HEADERS = traceHeaders(
  'the span of this operation, where the stack exports spans, is a child of it; one not of the W3C form is ignored.',
);

const limit: QueryParameter = {
  name: 'limit',
  description: 'Items on the page (50 when absent).',
  schema: { type: 'integer', minimum: 1, maximum: 100 },
};
const cursor: QueryParameter = {
  name: 'cursor',
  description: 'The `nextCursor` of the previous page.',
  schema: { type: 'string' },
};

/** What each operation of the route table takes and answers. */
const OPERATIONS: Readonly<Record<string, OperationDoc>> = {
  health: { summary: 'Check that the API answers', responses: ok(healthSchema) },
  openApi: { summary: 'Get this OpenAPI document', responses: ok(openApiDocumentSchema) },

  submitTask: {
    summary: 'Submit a task',
    request: { id: 'TaskSpec', schema: taskSpecSchema },
    headers: TRACE_HEADERS,
    responses: {
      '201': {
        description: 'Created and queued (with `debounce`: a window opened, its task held back by it)',
        schema: submitResponseSchema,
      },
      '200': {
        description:
          'The idempotency key already named this task (with `debounce`: this submission), or the submission joined the open window of its debounce key',
        schema: submitResponseSchema,
      },
    },
  },
  submitTasks: {
    ...withBody(
      'Submit tasks in a batch',
      'SubmitTasksRequest',
      submitTasksBody,
      ok(batchResultsSchema, 'One result per task, in order'),
    ),
    headers: TRACE_HEADERS,
  },
  listTasks: {
    summary: 'List tasks',
    query: [
      { name: 'queue', description: 'Only the tasks of this queue.', schema: { type: 'string' } },
      {
        name: 'status',
        description: 'Only the tasks in this status.',
        schema: { type: 'string', enum: [...TASK_STATUSES] },
      },
      limit,
      cursor,
      {
        name: 'concurrencyKey',
        description: 'Only the tasks of this concurrency key (a filter on the tasks read, as a status is).',
        schema: { type: 'string' },
      },
      {
        name: 'attention',
        description:
          '`true`: only the tasks the starvation ladder marked as needing attention. A filter on the tasks read, as a status is (no index): a page reads at most ten rounds of `limit` tasks, so it may be short, or empty with a `nextCursor`.',
        schema: { type: 'string', enum: ['true'] },
      },
      {
        name: 'createdAfter',
        description: 'Only the tasks created at or after this time (ISO 8601 with its offset).',
        schema: { type: 'string', format: 'date-time' },
      },
      {
        name: 'createdBefore',
        description: 'Only the tasks created before this time (ISO 8601 with its offset).',
        schema: { type: 'string', format: 'date-time' },
      },
    ],
    responses: ok(taskPageSchema, 'A page of tasks, without results and checkpoints'),
  },
  getTask: {
    summary: 'Get a task',
    query: [
      {
        name: 'include',
        description: '`payload`: with the payload as submitted (read from S3 for a large one).',
        schema: { type: 'string', enum: ['payload'] },
      },
    ],
    responses: ok(taskResponseSchema),
  },
  getTaskLinks: {
    summary: 'Get the tasks linked to a task, each with its status',
    responses: ok(
      taskLinksResponseSchema,
      'Its parent and root, its children and dependents (up to 50 each, `…Truncated` when there are more), its dependencies and its failure hook. Read on request: a few queries and one batch read of the linked tasks',
    ),
  },
  cancelTask: withBody(
    'Cancel an open task, and with `cascade` its open descendants',
    'CancelRequest',
    cancelBody,
    ok(taskResponseSchema, 'The task; with `cascade`, how far the cancellation of its descendants has come'),
  ),
  redriveTask: { summary: 'Queue a dead task again', responses: ok(taskResponseSchema) },
  clearAttention: withBody(
    'Clear the starvation ladder’s attention mark on a task',
    'AttentionRequest',
    attentionBody,
    ok(taskResponseSchema, 'The task, its mark cleared (a task not marked, as it is)'),
  ),
  listQueues: { summary: 'List queues with their depth', responses: ok(queueListSchema) },
  pauseQueue: { summary: 'Pause a queue', responses: ok(queueResponseSchema) },
  resumeQueue: { summary: 'Resume a queue', responses: ok(queueResponseSchema) },
  setQueueLimits: withBody(
    'Set the limits of a queue',
    'QueueLimits',
    queueLimitsSchema,
    ok(queueResponseSchema),
  ),
  getSchedulerControl: {
    summary: 'Read whether the whole scheduler is paused',
    responses: ok(schedulerResponseSchema, 'The scheduler’s control, read as it is now'),
  },
  pauseScheduler: {
    summary: 'Pause the whole scheduler: no grants, no wakes',
    responses: ok(
      schedulerResponseSchema,
      'Paused: from at most 2 s after this answer no claim is granted anything and no agent is woken, in any queue; submissions, sweeps, take-backs and schedule fires go on, and their tasks queue up',
    ),
  },
  resumeScheduler: {
    summary: 'Resume the whole scheduler',
    responses: ok(
      schedulerResponseSchema,
      'Resumed: claims are granted again, and the idle agents of every queue not paused on its own are woken',
    ),
  },
  rebuildScheduler: withBody(
    'Send every queued task’s hint again from the task records',
    'RebuildRequest',
    rebuildBody,
    ok(
      rebuildResultSchema,
      'What this call did, its counts its own; with `cursor` while more is left: send it back to go on. Each call ends within about 6 s. Safe to repeat from any cursor, or from the start: it only sends hints again',
    ),
  ),
  getSchedulerStats: {
    summary: 'Read the supervisor’s figures and last errors',
    responses: ok(
      schedulerStatsSchema,
      'Every pass’s figures added up, the last pass’s with the tasks they name, and the errors the last pass that met any went on from. A stack with no pass yet answers zeros, no `lastPass` and no errors',
    ),
  },
  listRateLimits: {
    summary: 'List the named rate limits, each with its use now',
    responses: ok(rateLimitListSchema),
  },
  getRateLimit: {
    summary: 'Read a named rate limit and its use now, by key',
    responses: ok(rateLimitResponseSchema),
  },
  setRateLimit: withBody(
    'Set the terms of a named rate limit',
    'RateLimitTerms',
    rateLimitTermsSchema,
    ok(rateLimitResponseSchema),
  ),
  registerAgent: {
    summary: 'Register an agent',
    request: { id: 'AgentSpec', schema: agentSpecSchema },
    responses: { '201': { description: 'Registered, with its token', schema: createdAgentSchema } },
  },
  listAgents: { summary: 'List agents', query: [limit, cursor], responses: ok(agentPageSchema) },
  revokeAgent: { summary: 'Revoke an agent', responses: ok(revokedSchema) },
  listSchedules: {
    summary: 'List schedules',
    query: [limit, cursor],
    responses: ok(schedulePageSchema, 'A page of schedules, without task payloads'),
  },
  getSchedule: { summary: 'Get a schedule', responses: ok(scheduleResponseSchema) },
  createSchedule: {
    summary: 'Create a schedule',
    request: { id: 'ScheduleSpec', schema: scheduleSpecSchema },
    responses: { '201': { description: 'Created', schema: scheduleResponseSchema } },
  },
  deleteSchedule: { summary: 'Delete a schedule', responses: ok(deletedSchema) },
  listOccurrences: {
    summary: "List a schedule's recent occurrences",
    responses: ok(occurrenceListSchema, 'Newest first'),
  },
  listRoles: { summary: 'List roles and their holders', responses: ok(roleListSchema) },
  createPushTicket: {
    summary: 'Get a ticket to open a push connection (task results)',
    responses: {
      '201': { description: 'A single-use ticket and the URL to open', schema: pushTicketSchema },
    },
  },
  listEvents: {
    summary: 'Read lifecycle events (local mode; in AWS they go to the EventBridge bus)',
    query: [
      {
        name: 'since',
        description: 'Events after this sequence number (0 when absent).',
        schema: { type: 'integer', minimum: 0 },
      },
      {
        name: 'limit',
        description: 'Events on the page (100 when absent).',
        schema: { type: 'integer', minimum: 1, maximum: 1000 },
      },
    ],
    responses: ok(eventPageSchema, 'Events, oldest first'),
  },

  openSession: withBody('Open a session', 'OpenSessionRequest', openSessionBody, ok(sessionSchema)),
  readSession: { summary: 'Read what the session holds', responses: ok(sessionResponseSchema) },
  heartbeat: withBody('Keep the session alive', 'HeartbeatRequest', heartbeatBody, ok(heartbeatResultSchema)),
  createAgentPushTicket: {
    summary: 'Get a ticket to open a push connection (wakes, role grants)',
    responses: {
      '201': { description: 'A single-use ticket and the URL to open', schema: pushTicketSchema },
    },
  },
  claimTasks: withBody(
    'Claim tasks',
    'ClaimRequest',
    claimBody,
    ok(claimResultSchema, 'The tasks granted, possibly none'),
  ),
  submitChildTask: {
    summary: 'Submit a follow-up task of the task the agent runs',
    request: { id: 'SubmitChildRequest', schema: submitChildBody },
    headers: TRACE_HEADERS,
    responses: {
      '201': { description: 'Created', schema: taskResponseSchema },
      '200': {
        description: 'The parent already submitted a child with this key',
        schema: taskResponseSchema,
      },
    },
  },
  submitChildTasks: {
    ...withBody(
      'Submit follow-up tasks of the task the agent runs, in a batch',
      'SubmitChildrenRequest',
      submitChildrenBody,
      ok(batchResultsSchema, 'One result per task, in order'),
    ),
    headers: TRACE_HEADERS,
  },
  completeTasks: withBody(
    'Complete tasks in a batch',
    'CompleteTasksRequest',
    completeManyBody,
    ok(completedManySchema, 'One result per task, in order, and the answer of the claim the call carried'),
  ),
  completeTask: withBody(
    'Complete a task (and claim the next, with `claimNext`)',
    'CompleteRequest',
    completeBody,
    ok(completedSchema, 'The completed task, and the answer of the claim the call carried'),
  ),
  failTask: withBody('Fail a task', 'FailRequest', failBody, ok(taskResponseSchema)),
  releaseTask: withBody('Give a task back unfinished', 'ReleaseRequest', releaseBody, ok(taskResponseSchema)),
  waitTask: withBody('Suspend a held task on a waitpoint', 'WaitRequest', waitBody, ok(waitResultSchema)),
  reportProgress: withBody(
    'Report the progress of a held task',
    'ProgressRequest',
    progressBody,
    ok(progressResponseSchema, 'The report as kept'),
  ),
  reportProgressBatch: withBody(
    'Report the progress of held tasks in a batch',
    'ProgressBatchRequest',
    progressManyBody,
    ok(progressResultsSchema, 'One outcome per report, in order'),
  ),
  listWaitpoints: {
    summary: 'List open waitpoints, oldest first',
    query: [
      {
        name: 'status',
        description: 'Only `open` (the default).',
        schema: { type: 'string', enum: ['open'] },
      },
      limit,
      cursor,
    ],
    responses: ok(waitpointPageSchema),
  },
  getWaitpoint: { summary: 'Get a waitpoint', responses: ok(waitpointResponseSchema) },
  completeWaitpoint: withBody(
    'Complete a waitpoint: its task resumes with the data',
    'CompleteWaitpointRequest',
    completeWaitpointBody,
    ok(waitpointResponseSchema),
  ),
  rejectWaitpoint: withBody(
    'Reject a waitpoint: its task resumes with the reason',
    'RejectWaitpointRequest',
    rejectWaitpointBody,
    ok(waitpointResponseSchema),
  ),
  answerCallback: {
    summary: 'Complete a waitpoint through its callback URL',
    responses: ok(waitpointResponseSchema),
  },
  registerRole: { summary: 'Register for a role', responses: ok(roleResponseSchema) },
  volunteerForRole: withBody(
    'Volunteer to hold a role',
    'VolunteerRequest',
    volunteerBody,
    ok(volunteerResultSchema),
  ),
  releaseRole: withBody(
    'Release a held role',
    'ReleaseRoleRequest',
    releaseRoleBody,
    ok(releaseRoleResultSchema),
  ),
  withdrawFromRole: withBody(
    "Withdraw from a role's candidates",
    'WithdrawRequest',
    withdrawBody,
    ok(withdrawRoleResultSchema),
  ),
};

const PATH_PARAMETERS: Readonly<Record<string, string>> = {
  taskId: 'A task id; one that cannot exist is not found.',
  name: 'The name of the queue or the schedule.',
  agentId: 'An agent id.',
  role: 'A role name.',
};

/**
 * The schemas of a registry as JSON Schema for `components/schemas`. References between them point there. What
 * zod pulls out on its own (a cycle, a schema given an id elsewhere) comes back in `__shared`'s `$defs`; each is
 * hoisted to a component of its own, under a name no other component has, since a `#/$defs/…` pointer would be
 * resolved against the document's root.
 */
export function componentSchemas(
  registry: z.core.$ZodRegistry<{ readonly id: string }>,
  io: 'input' | 'output',
  taken: ReadonlySet<string> = new Set(),
): Record<string, JsonSchema> {
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
    uri: (id) => `${COMPONENTS}${id}`,
  });
  const { __shared, ...named } = schemas as Record<string, JsonSchema>;
  const shared = (__shared?.$defs ?? {}) as Record<string, JsonSchema>;
  const clash = Object.keys(named).find((id) => taken.has(id));
  if (clash) throw new Error(`two component schemas are named ${clash}`);
  const used = new Set([...taken, ...Object.keys(named)]);
  const hoisted = new Map<string, string>();
  for (const id of Object.keys(shared)) {
    const base = `Shared${io === 'input' ? 'Input' : 'Output'}${id.charAt(0).toUpperCase()}${id.slice(1)}`;
    let name = base;
    for (let n = 2; used.has(name); n++) name = `${base}${n}`;
    used.add(name);
    hoisted.set(id, name);
  }
  const sharedRef = `${COMPONENTS}__shared#/$defs/`;
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => {
        if (key === '$ref' && typeof inner === 'string' && inner.startsWith(sharedRef)) {
          const id = inner.slice(sharedRef.length).replaceAll('~1', '/').replaceAll('~0', '~');
          return [key, `${COMPONENTS}${hoisted.get(id) ?? id}`];
        }
        return [key, rewrite(inner)];
      }),
    );
  };
  const components: Record<string, JsonSchema> = {};
  for (const [id, schema] of Object.entries(named)) {
    // `$id` would be a fragment-only URI (not allowed), `$schema` is the document's dialect already.
    const { $id: _id, $schema: _schema, ...rest } = schema;
    components[id] = rewrite(rest) as JsonSchema;
  }
  for (const [id, schema] of Object.entries(shared))
    components[hoisted.get(id) ?? id] = rewrite(schema) as JsonSchema;
  return components;
}

const refTo = (registry: z.core.$ZodRegistry<{ readonly id: string }>, schema: z.ZodType) => {
  const id = registry.get(schema)?.id;
  if (!id) throw new Error('a schema of the document is not published in components/schemas');
  return { $ref: `${COMPONENTS}${id}` };
};

/** Errors the handlers answer: `{ error: { code, message }, requestId }`. */
const ERROR = { $ref: '#/components/responses/Error' };
/** Refusals API Gateway may answer itself in AWS, with its own `{ message }`. */
const REFUSED = { $ref: '#/components/responses/Refused' };

function operation(route: RouteDefinition, requests: z.core.$ZodRegistry<{ readonly id: string }>) {
  const doc = OPERATIONS[route.operation];
  if (!doc) throw new Error(`the OpenAPI document does not describe ${route.operation}`);
  const pathParameters = [...route.path.matchAll(/\{([^}]+)\}/g)].map(([, name = '']) => ({
    name,
    in: 'path',
    required: true,
    description: PATH_PARAMETERS[name] ?? name,
    schema: { type: 'string' },
  }));
  const query = (doc.query ?? []).map((p) => ({ ...p, in: 'query', required: false }));
  const headers = (doc.headers ?? SPAN_PARENT_HEADERS).map((p) => ({ ...p, in: 'header', required: false }));
  const parameters = [...pathParameters, ...query, ...headers];
  return {
    operationId: route.operation,
    summary: doc.summary,
    security:
      route.access === 'agent'
        ? [{ agentToken: [] }]
        : route.access === 'operator'
          ? [{ awsSigV4: [] }, { operatorToken: [] }]
          : [],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(doc.request
      ? {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: refTo(requests, doc.request.schema) } },
          },
        }
      : {}),
    responses: {
      ...Object.fromEntries(
        Object.entries(doc.responses).map(([status, response]) => [
          status,
          {
            description: response.description,
            content: { 'application/json': { schema: refTo(responseRegistry, response.schema) } },
          },
        ]),
      ),
      '400': ERROR,
      ...(route.access === 'public' ? {} : { '401': REFUSED, '403': REFUSED }),
      '404': ERROR,
      '409': ERROR,
      '413': ERROR,
      '415': ERROR,
      '429': REFUSED,
      '500': REFUSED,
      '503': REFUSED,
    },
  };
}

export interface OpenApiOptions {
  /**
   * The API's base URL. @default '/': the root of the host that serves the document, which is the API's own in
   * AWS (its stage is `$default`) and the local server's.
   */
  readonly serverUrl?: string;
  /** The local server's document: its local-only routes too. @default false */
  readonly local?: boolean;
}

/**
 * The paths and schemas, converted once: some 40 ms of zod's conversion on a busy machine, for every request
 * otherwise.
 */
let converted:
  | {
      paths: Record<string, Record<string, unknown>>;
      localPaths: Record<string, Record<string, unknown>>;
      schemas: Record<string, JsonSchema>;
    }
  | undefined;

function convert() {
  const requests = z.registry<{ readonly id: string }>();
  for (const doc of Object.values(OPERATIONS)) {
    if (doc.request && !requests.has(doc.request.schema)) {
      doc.request.schema.register(requests, { id: doc.request.id });
    }
  }
  const responseComponents = componentSchemas(responseRegistry, 'output');
  const schemas = {
    ...componentSchemas(requests, 'input', new Set(Object.keys(responseComponents))),
    ...responseComponents,
  };
  const paths: Record<string, Record<string, unknown>> = {};
  const localPaths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) {
    const into = route.localOnly ? localPaths : paths;
    into[route.path] = { ...into[route.path], [route.method.toLowerCase()]: operation(route, requests) };
  }
  converted = { paths, localPaths, schemas };
  return converted;
}

/**
 * The document, a copy of its own for each caller. It lists the routes served in AWS; the local server's
 * (`local: true`) lists its local-only routes too (`GET /v1/events`).
 */
export function openApiDocument(options: OpenApiOptions = {}) {
  const { paths: deployed, localPaths, schemas } = structuredClone(converted ?? convert());
  const paths = options.local ? { ...deployed, ...localPaths } : deployed;
  return {
    openapi: '3.1.0',
    info: {
      title: 'agent-scheduler',
      version: '1.0.0',
      description: 'Task scheduling for fleets of worker agents.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [
      {
        url: options.serverUrl ?? '/',
        description: options.serverUrl ? 'the API' : 'the host that serves this document',
      },
    ],
    paths,
    components: {
      schemas,
      responses: {
        Error: {
          description: 'Refused: `error.code` says why (ValidationError, TaskNotFound, LeaseLost…)',
          content: { 'application/json': { schema: { $ref: `${COMPONENTS}Error` } } },
        },
        Refused: {
          description:
            'Refused or failed. In AWS, API Gateway answers its own refusals (IAM, the authorizer, throttling, a function that failed) with `{ message }`; the handlers and the local server with the Error body.',
          content: {
            'application/json': {
              schema: { anyOf: [{ $ref: `${COMPONENTS}Error` }, { $ref: `${COMPONENTS}GatewayError` }] },
            },
          },
        },
      },
      securitySchemes: {
        agentToken: { type: 'http', scheme: 'bearer', description: 'An agent token from POST /v1/agents.' },
        operatorToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'Local mode: the operator token in .agent-scheduler/local.json.',
        },
        awsSigV4: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: 'In AWS: IAM, a request signed with Signature Version 4.',
          'x-amazon-apigateway-authtype': 'awsSigv4',
        },
      },
    },
  };
}
