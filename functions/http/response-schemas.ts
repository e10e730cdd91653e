/**
 * What the API answers, as zod schemas: one per view of `views.ts`, and one per response body built from them.
 * The OpenAPI document publishes them under `components/schemas` by their ids, converted the same way as the
 * request bodies; the contract test checks real answers against them.
 *
 * Objects are open (`looseObject`): a client generated from the document keeps working when a field is added.
 * Timestamps are ISO-8601 strings; a field a view may leave out is optional, one it sends as `null` is nullable.
 * Each record the SDK reads is held to its type in `sdk/types.ts` (`answers`): a field changed on one side and
 * not on the other fails to compile here.
 */
import { z } from 'zod';
import { ROLE_NAME_PATTERN } from '#core/roles';
import { EVENT_TYPES } from '#domain/events';
import { AGENT_ID_PATTERN, TASK_ID_PATTERN } from '#domain/ids';
import { PRIORITIES } from '#domain/priority';
import { QUEUE_SLOTS_MAX, storedQueueLimitsSchema } from '#domain/queue-limits';
import { RATE_PERIODS } from '#domain/rate-limits';
import { scheduleSpecSchema, taskTemplateSchema } from '#domain/schedule';
import { jsonValueSchema, queueNameSchema } from '#domain/task-spec';
import { TASK_STATUSES } from '#domain/task-status';
import { answers } from '#domain/wire-match';
import type * as Sdk from '#sdk/types';

/** Every schema published in `components/schemas`, by id. */
export const responseRegistry = z.registry<{ readonly id: string }>();

const published = <T extends z.ZodType>(id: string, schema: T): T => {
  responseRegistry.add(schema, { id });
  return schema;
};

const timestamp = z.iso.datetime();
const count = z.int().nonnegative();
const taskId = z.string().regex(TASK_ID_PATTERN);
const agentId = z.string().regex(AGENT_ID_PATTERN);
const roleName = z.string().regex(ROLE_NAME_PATTERN);
const nextCursor = z
  .string()
  .min(1)
  .optional()
  .describe('Absent on the last page; otherwise pass it as `cursor` to read the next one.');

const taskError = z.looseObject({ message: z.string(), retryable: z.boolean() });
const failureOf = z.looseObject({ taskId, error: taskError.optional() });
const dependencyOutcome = z.looseObject({
  status: z.enum(['succeeded', 'dead', 'cancelled', 'expired']),
  result: jsonValueSchema.optional(),
  resultOmitted: z.literal(true).optional().describe('The result did not fit the claim’s answer.'),
  error: taskError.optional(),
});

export const errorSchema = published(
  'Error',
  z.looseObject({
    error: z.looseObject({
      code: z.string().describe('Stable, for programs: ValidationError, TaskNotFound, LeaseLost…'),
      message: z.string().max(300),
    }),
    requestId: z.string(),
  }),
);

/** API Gateway's own refusals (IAM, the authorizer, throttling, a function that failed) carry only a message. */
export const gatewayErrorSchema = published('GatewayError', z.looseObject({ message: z.string() }));

// --- views (views.ts) ---------------------------------------------------------------------------------------

/** progressView */
export const taskProgressSchema = published(
  'TaskProgress',
  answers<Sdk.TaskProgress>()(
    z.looseObject({
      percent: z.number().min(0).max(100).optional(),
      message: z.string().optional(),
      data: jsonValueSchema.optional(),
      at: timestamp.describe('When the server took the report.'),
      attempt: z.int().min(1).describe('The attempt that reported it.'),
    }),
  ),
);

/** taskView */
export const taskSchema = published(
  'Task',
  answers<Sdk.Task>()(
    z.looseObject({
      taskId,
      queue: queueNameSchema,
      priority: z.enum(PRIORITIES),
      status: z.enum(TASK_STATUSES),
      attempt: count,
      maxAttempts: z.int().min(1),
      timeoutSeconds: z.int().min(1),
      maxTimeoutSeconds: z
        .int()
        .min(1)
        .optional()
        .describe('How long an attempt may last in all when its agent extends its deadline.'),
      snoozes: count.optional().describe('Snoozes taken (releases with a delay), which used no attempt.'),
      maxSnoozes: count.describe('Snoozes it may take; past them a snooze is refused.'),
      leaseEpoch: count,
      owner: agentId.optional(),
      result: jsonValueSchema.optional(),
      error: taskError.optional(),
      checkpoint: jsonValueSchema.optional(),
      idempotencyKey: z.string().optional(),
      payloadBytes: count,
      notBefore: timestamp.optional(),
      leaseDeadline: timestamp.optional().describe("Only while leased: the attempt's hard deadline."),
      expiresAt: timestamp
        .optional()
        .describe('Not claimed after this: still waiting then, the task ends `expired`.'),
      failureOf: failureOf.optional().describe('This task is the `onFailure` of that dead task.'),
      onFailureTaskId: taskId
        .optional()
        .describe(
          'It has an `onFailure`: the id that task has once submitted (when this one ends `dead`). Each death after a redrive has its own; this names the one of the latest death, or of the next while the task runs again.',
        ),
      dependencyCount: count.optional().describe('Submitted with `dependsOn`: how many tasks it depends on.'),
      onDependencyFailure: z.enum(['cancel', 'run']).optional(),
      waitingOn: z.array(taskId).optional().describe('While `waiting`: the dependencies not ended yet.'),
      failedDependency: taskId.optional().describe('Cancelled because this dependency did not succeed.'),
      parentTaskId: taskId.optional().describe('Submitted by the agent running this task.'),
      rootTaskId: taskId.optional().describe('The task that began the tree it belongs to.'),
      concurrencyKey: z
        .string()
        .optional()
        .describe('Its key: keys of a queue take turns, and share no limit.'),
      debounce: z
        .looseObject({ key: z.string(), submissions: z.int().min(1) })
        .optional()
        .describe('Submitted with `debounce`: its key, and how many submissions went into it so far.'),
      waitpointId: z
        .string()
        .optional()
        .describe('The waitpoint it was last suspended on: open while the task is `suspended`.'),
      rateLimits: z
        .array(z.looseObject({ name: z.string(), units: z.number(), key: z.string().optional() }))
        .optional()
        .describe('The named rate limits its attempts take units of, units resolved.'),
      require: z
        .record(z.string(), z.string())
        .optional()
        .describe('Labels the agent that runs it must have: a value for each, or `*` for any.'),
      traceparent: z
        .string()
        .optional()
        .describe('The W3C trace context it was submitted with (`traceparent`); absent: none.'),
      tracestate: z.string().optional().describe('The W3C `tracestate` it was submitted with.'),
      rateTaken: z
        .array(
          z.looseObject({
            name: z.string(),
            units: z.number(),
            window: timestamp,
            key: z.string().optional(),
          }),
        )
        .optional()
        .describe(
          'What its current (or last) grant took from each limit, and the start of the window it took from.',
        ),
      progress: taskProgressSchema
        .optional()
        .describe('The last progress its holder reported (`GET /v1/tasks/{taskId}` only).'),
      cascade: z
        .looseObject({
          cancelled: count.describe('Descendants it cancelled (ended ones are left as they ended).'),
          pending: count.describe('Tasks whose children are still to be looked at, about.'),
          done: z.boolean(),
          startedAt: timestamp,
          finishedAt: timestamp.optional(),
        })
        .optional()
        .describe('It was cancelled with its descendants (`cascade: true`): how far that has come.'),
      needsAttention: z
        .literal(true)
        .optional()
        .describe(
          'The starvation ladder marked it: it waited claimable past the last threshold and raised the alarm. Stays until an operator clears it (`POST /v1/tasks/{taskId}/attention`) or the task is queued again.',
        ),
      createdAt: timestamp,
      updatedAt: timestamp,
      finishedAt: timestamp.optional(),
      payload: jsonValueSchema
        .optional()
        .describe('With `include=payload`: the payload as submitted, from its item or its S3 object.'),
      payloadGone: z
        .literal(true)
        .optional()
        .describe(
          'With `include=payload`: the payload is no longer kept (one in S3 is deleted when its task succeeds; any past its retention).',
        ),
    }),
  ),
);

/** taskListView: a task in a list, without its result and checkpoint. */
export const taskSummarySchema = published(
  'TaskSummary',
  answers<Sdk.TaskSummary>()(
    taskSchema.omit({
      result: true,
      checkpoint: true,
      progress: true,
      cascade: true,
      payload: true,
      payloadGone: true,
    }),
  ),
);

/** claimedTaskView */
export const claimedTaskSchema = published(
  'ClaimedTask',
  answers<Sdk.ClaimedTask>()(
    z.looseObject({
      taskId,
      queue: queueNameSchema,
      priority: z.enum(PRIORITIES),
      payload: jsonValueSchema,
      attempt: z.int().min(1),
      leaseEpoch: z.int().min(1),
      leaseDeadline: timestamp,
      timeoutSeconds: z.int().min(1),
      checkpoint: jsonValueSchema.optional(),
      failureOf: failureOf.optional().describe('This task is the `onFailure` of that dead task.'),
      dependencies: z
        .record(z.string(), dependencyOutcome)
        .optional()
        .describe('Submitted with `dependsOn`: how each dependency ended, by task id, results included.'),
      parentTaskId: taskId.optional(),
      rootTaskId: taskId.optional(),
      waitpoint: z
        .looseObject({
          id: z.string(),
          outcome: z.enum(['completed', 'rejected', 'timedOut']),
          data: jsonValueSchema.optional(),
          reason: z.string().optional(),
        })
        .optional()
        .describe('Resumed from a waitpoint: how the wait ended, with its data or reason.'),
      traceparent: z
        .string()
        .optional()
        .describe('The W3C trace context it was submitted with: its work joins that trace.'),
      tracestate: z.string().optional().describe('The W3C `tracestate` it was submitted with.'),
    }),
  ),
);

/** agentView */
export const agentSchema = published(
  'Agent',
  answers<Sdk.Agent>()(
    z.looseObject({
      agentId,
      name: z.string(),
      queues: z.array(queueNameSchema),
      maxConcurrency: z.int().min(1),
      interactive: z.boolean(),
      labels: z
        .record(z.string(), z.array(z.string()))
        .describe('What it offers beyond its queues: each label with its values (`{}`: none).'),
      createdAt: timestamp,
      revokedAt: timestamp.optional(),
      // In a list only: the agent's presence.
      online: z.boolean().optional().describe('A session of the agent is live (lists only)'),
      state: z
        .enum(['online', 'idle', 'offline'])
        .optional()
        .describe(
          'online: a session is live; idle: its session lapsed holding nothing, as a Worker lets it between polls (it claims again without a new session); offline: never connected, revoked, or its session ended holding work (lists only)',
        ),
      lastHeartbeatAt: timestamp.optional().describe('When the agent was last heard from (lists only)'),
      tasksHeld: count.optional().describe('Tasks its session holds (lists only)'),
    }),
  ),
);

const taskTemplate = z.looseObject(taskTemplateSchema.shape);

/** scheduleView: the specification with its defaults filled in; `createdAt` is absent on a declared schedule. */
export const scheduleSchema = published(
  'Schedule',
  answers<Sdk.Schedule>()(
    z.looseObject({
      ...scheduleSpecSchema.shape,
      task: taskTemplate,
      source: z.enum(['api', 'declared']),
      createdAt: timestamp.optional(),
      nextFires: z
        .array(timestamp)
        .max(5)
        .describe(
          'The next fire times, in UTC (up to 5); none while it is disabled, nor for a declared rate(), whose count starts at the deploy.',
        ),
    }),
  ),
);

/** scheduleListView: a schedule in a list, its task template without the payload. */
export const scheduleSummarySchema = published(
  'ScheduleSummary',
  answers<Sdk.ScheduleSummary>()(scheduleSchema.extend({ task: taskTemplate.omit({ payload: true }) })),
);

const queueLimits = z.looseObject(storedQueueLimitsSchema.shape);
const enforcedLimits = queueLimits
  .optional()
  .describe(
    `Present when a concurrency limit set before the bound of ${QUEUE_SLOTS_MAX.toLocaleString('en-US')} is above it: the limits as claims enforce them (capped at the bound).`,
  );

/** queueControlView */
export const queueControlSchema = published(
  'QueueControl',
  answers<Sdk.QueueControl>()(
    z.looseObject({
      name: queueNameSchema,
      paused: z.boolean(),
      limits: queueLimits,
      enforcedLimits,
      updatedAt: timestamp.optional(),
    }),
  ),
);

/** schedulerControlView */
export const schedulerControlSchema = published(
  'SchedulerControl',
  answers<Sdk.SchedulerControl>()(
    z.looseObject({
      paused: z
        .boolean()
        .describe('No claim is granted anything and no agent is woken, in any queue, while it is paused.'),
      updatedAt: timestamp
        .optional()
        .describe('When it was last paused or resumed; absent when it never was.'),
    }),
  ),
);

/** A rebuild's call, as `core/rebuild.ts` answers it. */
export const rebuildResultSchema = published(
  'RebuildResult',
  answers<Sdk.RebuildResult>()(
    z.looseObject({
      pendingRuns: count.describe('Queued tasks found (in a paused queue too), each sent again.'),
      activeRuns: count.describe('Leased tasks found; they get no hint.'),
      sessionsScanned: count.describe('Live sessions found by the first call’s scan.'),
      wakeKeysCleared: count.describe('Listeners whose wake cooldown the first call set back.'),
      hintsSent: count.describe('Hints sent to SQS again.'),
      turnsReplaced: count.describe('Lanes whose turn was put in line anew.'),
      cursor: z
        .string()
        .min(1)
        .optional()
        .describe('Absent once the rebuild is done; otherwise pass it as `cursor` to go on.'),
    }),
  ),
);

const cycleFigures = {
  pendingRuns: count.describe('Queued tasks the pass looked at.'),
  activeRuns: count.describe('Leased tasks the pass looked at.'),
  sessionsScanned: count.describe(
    'Agent sessions the pass’s scans returned: live ones, and ones found over holding tasks.',
  ),
  leasesRecovered: count.describe('Leases taken back: requeued, or dead.'),
  wakeAttempts: count.describe(
    'Queued tasks the pass tried to bring to an agent: a hint sent again (a turn put in line), with its push wake; or a push wake for a hint that just became visible.',
  ),
  wakesSucceeded: count.describe('Wake attempts that met no error.'),
  wakesFailed: count.describe('Wake attempts whose send or push wake met an error.'),
  noMatchingSession: count.describe('Starving tasks whose queue no live session serves.'),
  recentlyNotified: count.describe(
    'Queued tasks left alone: their hint went out recently, or waits behind a backlog.',
  ),
  unclaimable: count.describe('Queued tasks of a paused queue, or of any while the scheduler is paused.'),
  starved: count.describe('Tasks announced as starved (`task.starved`).'),
  spawnRequested: count.describe('Workers asked for (`agent.spawnRequested`).'),
  needsAttention: count.describe('Tasks marked as needing attention.'),
  errors: count.describe('Errors the pass met and went on from.'),
};
const cycleIds = z
  .looseObject({
    leasesRecovered: z.array(taskId),
    wakesFailed: z.array(taskId),
    noMatchingSession: z.array(taskId),
    recentlyNotified: z.array(taskId),
    unclaimable: z.array(taskId),
    starved: z.array(taskId),
    spawnRequested: z.array(taskId),
    needsAttention: z.array(taskId),
  })
  .describe(
    'The tasks each figure that names them counted, the first 20 each (`spawnRequested`: the starving task each request named).',
  );

/** schedulerStatsView */
export const schedulerStatsSchema = published(
  'SchedulerStats',
  answers<Sdk.SchedulerStats>()(
    z.looseObject({
      cumulative: z
        .looseObject({ passes: count.describe('Passes recorded.'), ...cycleFigures })
        .describe('Each figure added up over every pass recorded; zeros before the first.'),
      lastPass: z
        .looseObject({
          at: timestamp.describe('When the pass started.'),
          durationMs: count,
          ...cycleFigures,
          ids: cycleIds,
        })
        .optional()
        .describe('The pass recorded last; absent before the first.'),
      lastErrors: z
        .array(
          z.looseObject({
            at: timestamp.describe('When the pass that met it started.'),
            step: z.string(),
            name: z.string().max(64),
            message: z.string().max(160),
          }),
        )
        .max(5)
        .describe('The errors the last pass that met any kept: names and short messages, no stacks.'),
    }),
  ),
);

/** rateLimitView */
export const rateLimitSchema = published(
  'RateLimit',
  answers<Sdk.RateLimit>()(
    z.looseObject({
      name: z.string(),
      limit: z.number().positive(),
      per: z.enum(RATE_PERIODS),
      burst: z.number().positive().optional(),
      perKey: z.boolean().optional(),
      source: z.enum(['set', 'declared']).describe('Set by an operator, or as the construct declares it.'),
      updatedAt: timestamp.optional(),
      window: z
        .looseObject({
          start: timestamp,
          end: timestamp,
          capacity: z.number().positive(),
          used: z.number().optional(),
        })
        .describe('The window open now: its span, the units it holds, and (not per key) their use.'),
      keys: z
        .array(z.looseObject({ key: z.string(), used: z.number() }))
        .optional()
        .describe(
          '`GET /v1/rate-limits/{name}` of a per-key limit: the keys that used the window, most first.',
        ),
    }),
  ),
);

/** A queue as `GET /v1/queues` counts it. */
export const queueStatsSchema = published(
  'QueueStats',
  answers<Sdk.QueueStats>()(
    z.looseObject({
      name: queueNameSchema,
      paused: z.boolean(),
      limits: queueLimits,
      enforcedLimits,
      depth: z.looseObject(
        Object.fromEntries(PRIORITIES.map((p) => [p, count])) as Record<
          (typeof PRIORITIES)[number],
          typeof count
        >,
      ),
      running: count,
      oldestAgeSeconds: z.number().nonnegative(),
      truncated: z.boolean().describe('The count stopped at its bound: the figures are lower bounds.'),
    }),
  ),
);

/** occurrenceView */
export const occurrenceSchema = published(
  'Occurrence',
  answers<Sdk.Occurrence>()(
    z.looseObject({
      scheduledTime: timestamp,
      status: z.enum(['fired', 'skipped']),
      taskId: taskId.optional(),
      reason: z.string().optional(),
      recordedAt: timestamp,
    }),
  ),
);

/** roleView: `holder` and `since` are null while nobody holds the role. */
export const roleSchema = published(
  'Role',
  answers<Sdk.Role>()(
    z.looseObject({
      role: roleName,
      holder: agentId.nullable(),
      leaseEpoch: count,
      since: timestamp.nullable(),
      volunteers: z.array(agentId),
      registered: z.array(agentId),
    }),
  ),
);

export const roleLeaseSchema = published(
  'RoleLease',
  answers<Sdk.RoleLease>()(z.looseObject({ role: roleName, leaseEpoch: z.int().min(1) })),
);

/** sessionHoldingsView */
export const sessionHoldingsSchema = published(
  'SessionHoldings',
  answers<Sdk.SessionHoldings>()(
    z.looseObject({
      sessionId: z.string(),
      expiresAt: timestamp,
      tasks: z.array(
        z.looseObject({
          taskId,
          queue: queueNameSchema,
          leaseEpoch: z.int().min(1),
          attempt: z.int().min(1),
          leaseDeadline: timestamp,
        }),
      ),
      roles: z.array(roleLeaseSchema),
    }),
  ),
);

const debouncedSchema = z
  .boolean()
  .describe(
    'Submitted with `debounce`: true when the submission joined an open window (its task, already there, now carries this payload), false when it opened one with a new task.',
  );

/** itemView: one item of a batch, its task or the error the single call would have answered. */
export const batchItemResultSchema = published(
  'BatchItemResult',
  answers<Sdk.BatchItemResult>()(
    z.discriminatedUnion('ok', [
      z.looseObject({
        ok: z.literal(true),
        task: taskSchema,
        created: z
          .boolean()
          .optional()
          .describe('Submissions only: false when the idempotency key already named a task.'),
        debounced: debouncedSchema.optional(),
      }),
      z.looseObject({
        ok: z.literal(false),
        error: z.looseObject({ code: z.string(), message: z.string() }),
        status: z.int().min(400).max(599),
      }),
    ]),
  ),
);

// --- response bodies ----------------------------------------------------------------------------------------

export const healthSchema = published(
  'Health',
  answers<Sdk.Health>()(z.looseObject({ status: z.literal('ok') })),
);

/** Only what a client needs to recognise the document; its shape is OpenAPI 3.1's own. */
export const openApiDocumentSchema = published(
  'OpenApiDocument',
  z.looseObject({
    openapi: z.string().regex(/^3\.1\.\d+$/),
    info: z.looseObject({
      title: z.string(),
      version: z.string(),
      description: z.string().optional(),
      license: z.looseObject({ name: z.string(), identifier: z.string().optional() }).optional(),
    }),
    servers: z.array(z.looseObject({ url: z.string(), description: z.string().optional() })).optional(),
    paths: z.record(z.string(), z.record(z.string(), z.unknown())),
    components: z.record(z.string(), z.unknown()).optional(),
  }),
);

export const taskResponseSchema = published('TaskResponse', z.looseObject({ task: taskSchema }));

/** What a submission answers: its task, and for a debounced one whether it joined a window or opened it. */
export const submitResponseSchema = published(
  'SubmitResponse',
  z.looseObject({ task: taskSchema, debounced: debouncedSchema.optional() }),
);

/** taskLinksView */
const linkedTaskSchema = published(
  'LinkedTask',
  answers<Sdk.LinkedTask>()(
    z.looseObject({
      taskId,
      status: z
        .enum(TASK_STATUSES)
        .optional()
        .describe(
          'Absent: no such task (an `onFailure` task not submitted yet, or one purged past its retention).',
        ),
      queue: queueNameSchema.optional(),
    }),
  ),
);
export const taskLinksSchema = published(
  'TaskLinks',
  answers<Sdk.TaskLinks>()(
    z.looseObject({
      taskId,
      parent: linkedTaskSchema.optional().describe('The task whose agent submitted it.'),
      root: linkedTaskSchema.optional().describe('The first task of its tree.'),
      children: z
        .array(linkedTaskSchema)
        .describe('The tasks its agent submitted while running it, oldest first (up to 50).'),
      dependencies: z
        .array(linkedTaskSchema)
        .describe('Submitted with `dependsOn`: those it still waits on, and those whose end it was told of.'),
      dependents: z.array(linkedTaskSchema).describe('The tasks submitted to wait for it (up to 50).'),
      failureOf: linkedTaskSchema.optional().describe('It is the `onFailure` of this dead task.'),
      onFailure: linkedTaskSchema
        .optional()
        .describe('Its `onFailure` task, submitted when it dies (no `status` before).'),
      childrenTruncated: z.literal(true).optional().describe('It has more children than listed.'),
      dependentsTruncated: z.literal(true).optional().describe('It has more dependents than listed.'),
    }),
  ),
);
export const taskLinksResponseSchema = published(
  'TaskLinksResponse',
  z.looseObject({ links: taskLinksSchema }),
);

/** waitpointView */
export const waitpointSchema = published(
  'Waitpoint',
  answers<Sdk.Waitpoint>()(
    z.looseObject({
      waitpointId: z.string(),
      taskId,
      status: z.enum(['open', 'completed', 'rejected', 'timedOut', 'cancelled']),
      onTimeout: z.enum(['resume', 'fail']),
      timeoutAt: timestamp,
      createdAt: timestamp,
      resolvedAt: timestamp.optional(),
    }),
  ),
);
export const waitpointResponseSchema = published(
  'WaitpointResponse',
  z.looseObject({ waitpoint: waitpointSchema }),
);
export const waitResultSchema = published(
  'WaitResult',
  answers<Sdk.WaitResult>()(
    z.looseObject({
      task: taskSchema,
      waitpoint: waitpointSchema,
      callbackUrl: z
        .string()
        .describe(
          'POST JSON data here to complete the waitpoint: the URL is its only credential. Shown once.',
        ),
    }),
  ),
);
export const waitpointPageSchema = published(
  'WaitpointPage',
  answers<Sdk.WaitpointPage>()(z.looseObject({ waitpoints: z.array(waitpointSchema), nextCursor })),
);
export const taskPageSchema = published(
  'TaskPage',
  answers<Sdk.TaskPage>()(z.looseObject({ tasks: z.array(taskSummarySchema), nextCursor })),
);
export const batchResultsSchema = published(
  'BatchResults',
  z.looseObject({ results: z.array(batchItemResultSchema) }),
);
export const queueListSchema = published('QueueList', z.looseObject({ queues: z.array(queueStatsSchema) }));
export const queueResponseSchema = published('QueueResponse', z.looseObject({ queue: queueControlSchema }));
export const schedulerResponseSchema = published(
  'SchedulerResponse',
  z.looseObject({ scheduler: schedulerControlSchema }),
);
export const rateLimitResponseSchema = published(
  'RateLimitResponse',
  z.looseObject({ rateLimit: rateLimitSchema }),
);
export const rateLimitListSchema = published(
  'RateLimitList',
  z.looseObject({ rateLimits: z.array(rateLimitSchema) }),
);
export const createdAgentSchema = published(
  'CreatedAgent',
  answers<Sdk.CreatedAgent>()(
    z.looseObject({
      agent: agentSchema,
      token: z.string().min(1).describe("The agent's bearer token: shown once, stored only as a hash."),
    }),
  ),
);
export const agentPageSchema = published(
  'AgentPage',
  answers<Sdk.AgentPage>()(z.looseObject({ agents: z.array(agentSchema), nextCursor })),
);
export const revokedSchema = published('Revoked', z.looseObject({ revoked: z.literal(true) }));
export const schedulePageSchema = published(
  'SchedulePage',
  answers<Sdk.SchedulePage>()(z.looseObject({ schedules: z.array(scheduleSummarySchema), nextCursor })),
);
export const scheduleResponseSchema = published(
  'ScheduleResponse',
  z.looseObject({ schedule: scheduleSchema }),
);
export const deletedSchema = published('Deleted', z.looseObject({ deleted: z.literal(true) }));
export const occurrenceListSchema = published(
  'OccurrenceList',
  z.looseObject({ occurrences: z.array(occurrenceSchema) }),
);
export const roleListSchema = published('RoleList', z.looseObject({ roles: z.array(roleSchema) }));

export const sessionSchema = published(
  'Session',
  answers<Sdk.Session>()(
    z.looseObject({
      sessionId: z.string(),
      leaseTtlSeconds: z.int().min(1),
      heartbeatIntervalSeconds: z.int().min(1),
      expiresAt: timestamp,
    }),
  ),
);
export const sessionResponseSchema = published(
  'SessionResponse',
  z.looseObject({ session: sessionHoldingsSchema }),
);
/** The SDK reads `lostLeases` as optional, for servers older than it; this one always sends it. */
type WithLostLeases = Sdk.HeartbeatResult & { readonly lostLeases: readonly Sdk.TaskLease[] };
export const heartbeatResultSchema = published(
  'HeartbeatResult',
  answers<WithLostLeases>()(
    z.looseObject({
      cancelled: z
        .array(taskId)
        .describe('Tasks of this session an operator cancelled: stop working on them.'),
      lost: z.array(taskId).describe('Tasks this session held and no longer does.'),
      lostLeases: z
        .array(z.looseObject({ taskId, leaseEpoch: z.int().min(1) }))
        .describe(
          'The same, each with the epoch of the lease lost: a run of the task at a later epoch (claimed again since) is not lost.',
        ),
      roles: z
        .looseObject({ picked: z.array(roleLeaseSchema), lost: z.array(roleLeaseSchema) })
        .describe('Roles granted to this session, and taken from it, since the last heartbeat.'),
      held: z.array(taskId).describe('Task ids the session holds or is reserving: a superset of its leases.'),
      expiresAt: timestamp,
      extended: z
        .array(
          z.looseObject({
            taskId,
            leaseEpoch: z.int().min(1),
            seconds: z.number().min(0),
            leaseDeadline: timestamp,
          }),
        )
        .optional()
        .describe(
          "The deadlines the beat's `extend` asked for, as they now are: `seconds` left from the server's write, never past the task's `maxTimeoutSeconds`.",
        ),
    }),
  ),
);
export const pushTicketSchema = published(
  'PushTicket',
  answers<Sdk.PushTicket>()(
    z.looseObject({
      ticket: z.string().describe('Good once, for 60 seconds.'),
      url: z.string().describe('The WebSocket URL to open, ticket included.'),
      expiresAt: timestamp,
    }),
  ),
);

export const claimResultSchema = published(
  'ClaimResult',
  answers<Sdk.ClaimResult>()(
    z.looseObject({
      tasks: z.array(claimedTaskSchema),
      retryAfterMs: count
        .optional()
        .describe(
          'Sent when nothing was granted: how long to wait before claiming again. To an agent listening on the push channel, its safety poll: a wake comes first.',
        ),
    }),
  ),
);
/** What a completion that carried a claim (`claimNext`) answers of that claim. */
const claimAfter = {
  next: claimResultSchema.optional().describe('The answer of the claim the call carried (`claimNext`).'),
  nextError: z
    .looseObject({ code: z.string(), message: z.string().max(300) })
    .optional()
    .describe(
      'Why the carried claim was not made, as `POST /v1/agent/claim` would have refused it; the completion stands.',
    ),
};
export const completedSchema = published(
  'Completed',
  answers<Sdk.CompletedAndClaimed>()(z.looseObject({ task: taskSchema, ...claimAfter })),
);
export const completedManySchema = published(
  'CompletedMany',
  answers<Sdk.CompletedManyAndClaimed>()(
    z.looseObject({ results: z.array(batchItemResultSchema), ...claimAfter }),
  ),
);
export const progressResponseSchema = published(
  'ProgressResponse',
  z.looseObject({ progress: taskProgressSchema }),
);
export const progressResultsSchema = published(
  'ProgressResults',
  z.looseObject({
    results: z.array(
      answers<Sdk.ProgressItemResult>()(
        z.discriminatedUnion('ok', [
          z.looseObject({ ok: z.literal(true), progress: taskProgressSchema }),
          z.looseObject({
            ok: z.literal(false),
            error: z.looseObject({ code: z.string(), message: z.string() }),
            status: z.int().min(400).max(599),
          }),
        ]),
      ),
    ),
  }),
);
export const roleResponseSchema = published('RoleResponse', z.looseObject({ role: roleSchema }));
export const volunteerResultSchema = published(
  'VolunteerResult',
  answers<Sdk.VolunteerResult>()(
    z.looseObject({
      picked: z
        .boolean()
        .describe('Whether the role was granted to this agent now; if not, it waits in line.'),
      leaseEpoch: z.int().min(1).optional(),
      role: roleSchema,
    }),
  ),
);
export const releaseRoleResultSchema = published(
  'ReleaseRoleResult',
  answers<Sdk.ReleaseRoleResult>()(
    z.looseObject({
      released: z.literal(true),
      nextHolder: agentId.optional().describe('The live volunteer granted the role in the same write.'),
      role: roleSchema,
    }),
  ),
);
export const withdrawRoleResultSchema = published(
  'WithdrawRoleResult',
  answers<Sdk.WithdrawRoleResult>()(
    z.looseObject({
      withdrawn: z.boolean(),
      released: z.boolean(),
      nextHolder: agentId.optional(),
      role: roleSchema,
    }),
  ),
);

/** `GET /v1/events` (local mode only): lifecycle events in the order they happened. */
export const eventPageSchema = published(
  'EventPage',
  answers<Sdk.EventPage>()(
    z.looseObject({
      events: z.array(
        z.looseObject({
          sequence: z.int().positive(),
          version: z.int(),
          type: z.enum(EVENT_TYPES),
          time: timestamp,
          taskId: taskId.optional(),
          agentId: agentId.optional(),
          queue: z.string().optional(),
          schedule: z.string().optional(),
          role: roleName.optional(),
          data: z.record(z.string(), z.unknown()).optional(),
        }),
      ),
      next: count.describe('The sequence of the last event on the page: pass it as `since` to read on.'),
      latest: count.describe(
        'The sequence of the newest event the feed holds; below a `since` given, the feed counts anew (the local stack restarted).',
      ),
    }),
  ),
);
