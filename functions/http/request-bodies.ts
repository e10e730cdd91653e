/**
 * The bodies the agent routes take, each held to the SDK's type of what it sends (`accepts`, `sdk/types.ts`): a
 * field changed on one side and not on the other fails to compile here. The operator routes' bodies are the
 * specifications the domain declares (`taskSpecSchema`, `scheduleSpecSchema`, `queueLimitsSchema`) and the
 * sessions' `agentSpecSchema`, held the same way where they are declared. The OpenAPI document publishes these
 * very schemas.
 */
import { z } from 'zod';
import { BATCH_LIMITS } from '#core/batches';
import { CHILDREN_LIMIT, childKeySchema } from '#core/children';
import { CLAIM_ID_PATTERN } from '#core/claim';
import { REBUILD_LIMITS } from '#core/rebuild';
import { checkpointsSchema, extensionsSchema, OPEN_ID_PATTERN } from '#core/sessions';
import { ValidationError } from '#domain/errors';
import { TASK_ID_PATTERN } from '#domain/ids';
import { labelsSchema } from '#domain/labels';
import { PROGRESS_LIMITS, progressShape } from '#domain/progress';
import { usageSchema } from '#domain/rate-limits';
import {
  describeIssues,
  jsonValueSchema,
  LIMITS,
  queueNameSchema,
  taskErrorSchema,
  taskSpecSchema,
} from '#domain/task-spec';
import { WAITPOINT_LIMITS, waitBodyShape } from '#domain/waitpoint';
import { accepts } from '#domain/wire-match';
import type * as Sdk from '#sdk/types';
import type { ApiRequest } from './http-api';

const sessionIdSchema = z.string().regex(/^s_[a-z2-7]{26}$/, 'a session id');
const leaseEpochSchema = z.int().min(1).max(Number.MAX_SAFE_INTEGER);

export const heartbeatBody = accepts<Sdk.HeartbeatInput>()(
  z.strictObject({
    sessionId: sessionIdSchema,
    checkpoints: checkpointsSchema.optional(),
    extend: extensionsSchema.optional(),
  }),
);
/** An open's id is optional: an SDK older than open ids sends `{}` or nothing, and every call opens anew. */
export const openSessionBody = accepts<Sdk.OpenSessionOptions>()(
  z.strictObject({
    openId: z
      .string()
      .regex(OPEN_ID_PATTERN, 'an open id: 8 to 64 letters, digits, "-" or "_"')
      .describe(
        'Chosen by the agent and sent again on every retry of this open: a retry, or a copy delivered late, is answered with the session this open made instead of replacing it, and refused once a later open replaced that session.',
      )
      .optional(),
    openSeq: z
      .int()
      .min(1)
      .max(Number.MAX_SAFE_INTEGER)
      .describe(
        'The open’s number, growing with each new open the agent sends (the SDK uses its clock in milliseconds). While the session an open made lives, an open numbered below it (sent before it, by a start the agent gave up on, and delivered late) is refused with 409 instead of replacing it. The same on every retry of one open.',
      )
      .optional(),
    labels: labelsSchema
      .describe(
        'Narrows the agent’s labels for this session (fewer names, fewer values); a name or value the agent was not registered with is refused with 403. Default: the agent’s labels.',
      )
      .optional(),
  }),
);

export const claimBody = accepts<Sdk.ClaimInput>()(
  z.strictObject({
    sessionId: sessionIdSchema,
    /** Chosen by the agent and sent again with a retry: a retried claim returns what the first one granted. */
    claimId: z.string().regex(CLAIM_ID_PATTERN, 'a claim id: 8 to 64 letters, digits, "-" or "_"').optional(),
    /** The claim's number in the session, growing with each new claim: an attempt delivered late grants nothing. */
    claimSeq: z.int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
    max: z.int().min(1).max(LIMITS.claimMax).optional(),
    queues: z.array(queueNameSchema).min(1).max(32).optional(),
    /** Claims in a row that found nothing before this one: the server answers an empty claim with a wait that grows. */
    idleClaims: z.int().min(0).max(1_000_000).optional(),
    /** The agent listens on the push channel: if the claim finds nothing, it waits to be woken. */
    listening: z.boolean().optional(),
  }),
);
/** A claim a completion carries: made once the completion is answered, answered with it (`next`). */
const claimNext = claimBody.optional();
export const completeBody = accepts<Sdk.CompleteRequest>()(
  z.strictObject({
    leaseEpoch: leaseEpochSchema,
    result: jsonValueSchema.optional(),
    usage: usageSchema.optional(),
    claimNext,
  }),
);
export const completeManyBody = accepts<Sdk.CompleteTasksRequest>()(
  z.strictObject({
    claimNext,
    tasks: z
      .array(
        z.strictObject({
          taskId: z.string().regex(TASK_ID_PATTERN, 'a task id'),
          leaseEpoch: leaseEpochSchema,
          result: jsonValueSchema.optional(),
          usage: usageSchema.optional(),
        }),
      )
      .min(1)
      .max(BATCH_LIMITS.complete),
  }),
);
export const progressBody = accepts<Sdk.ReportProgressInput>()(
  z.strictObject({ leaseEpoch: leaseEpochSchema, ...progressShape }),
);
export const progressManyBody = accepts<Sdk.ReportProgressBatchInput>()(
  z.strictObject({
    tasks: z
      .array(
        z.strictObject({
          taskId: z.string().regex(TASK_ID_PATTERN, 'a task id'),
          leaseEpoch: leaseEpochSchema,
          ...progressShape,
        }),
      )
      .min(1)
      .max(PROGRESS_LIMITS.perCall),
  }),
);
export const waitBody = accepts<Sdk.WaitInput>()(
  z.strictObject({ leaseEpoch: leaseEpochSchema, ...waitBodyShape, onTimeout: waitBodyShape.onTimeout }),
);
export const completeWaitpointBody = accepts<Sdk.CompleteWaitpointInput>()(
  z.strictObject({ data: jsonValueSchema.optional() }),
);
export const rejectWaitpointBody = accepts<Sdk.RejectWaitpointInput>()(
  z.strictObject({ reason: z.string().min(1).max(WAITPOINT_LIMITS.reasonChars) }),
);

/** A snooze's delay, or a failure's wait before its retry: whole seconds, up to 12 hours. */
const snoozeSeconds = z.int().min(0).max(LIMITS.snoozeSeconds);
export const failBody = accepts<Sdk.FailInput>()(
  z.strictObject({
    leaseEpoch: leaseEpochSchema,
    error: taskErrorSchema,
    retryAfterSeconds: snoozeSeconds.optional(),
    usage: usageSchema.optional(),
  }),
);
export const releaseBody = accepts<Sdk.ReleaseInput>()(
  z.strictObject({ leaseEpoch: leaseEpochSchema, delaySeconds: snoozeSeconds.optional() }),
);
export const volunteerBody = accepts<Sdk.VolunteerInput>()(z.strictObject({ sessionId: sessionIdSchema }));
export const releaseRoleBody = accepts<Sdk.ReleaseRoleInput>()(
  z.strictObject({ leaseEpoch: leaseEpochSchema }),
);
export const withdrawBody = accepts<Sdk.WithdrawRoleInput>()(
  z.strictObject({
    sessionId: sessionIdSchema,
    /** The holding to give up too, if the session holds the role at this epoch. */
    leaseEpoch: leaseEpochSchema.optional(),
  }),
);

/**
 * `POST /v1/tasks/batch`, as the document describes it: the route reads `tasks` itself, and each specification in
 * turn, so one bad item is that item's error and not the batch's.
 */
export const submitTasksBody = accepts<{ readonly tasks: readonly Sdk.SubmitTaskInput[] }>()(
  z.strictObject({ tasks: z.array(taskSpecSchema).min(1).max(BATCH_LIMITS.submit) }),
);

/** A follow-up task an agent submits: a task specification, named by a key of the agent's (not an idempotency key). */
export const childSpecSchema = accepts<Sdk.ChildTaskInput>()(
  taskSpecSchema.omit({ idempotencyKey: true, debounce: true }).extend({
    /** Names the child among its parent's: the same key again (the parent run again) gives back the same task. */
    key: childKeySchema,
  }),
);
const parentFence = {
  /** The task the agent runs, whose lease fences the submission. */
  parentTaskId: z.string().regex(TASK_ID_PATTERN, 'a task id'),
  leaseEpoch: leaseEpochSchema,
};
export const submitChildBody = accepts<Sdk.SubmitChildInput>()(childSpecSchema.extend(parentFence));
export const submitChildrenBody = accepts<Sdk.SubmitChildrenInput>()(
  z.strictObject({
    ...parentFence,
    tasks: z.array(childSpecSchema).min(1).max(CHILDREN_LIMIT),
  }),
);
/**
 * The fence of a child submission, read first, and the rest of the body as it was sent: the specifications are
 * checked item by item, strictly, so every key reaches that check (a schema's output would drop `__proto__`).
 */
export function fenceOf(body: unknown): {
  parentTaskId: string;
  leaseEpoch: number;
  rest: Record<string, unknown>;
} {
  const fence = parseBody(z.looseObject(parentFence), body);
  const rest = Object.fromEntries(
    Object.entries(body as Record<string, unknown>).filter(([key]) => !Object.hasOwn(parentFence, key)),
  );
  return { parentTaskId: fence.parentTaskId, leaseEpoch: fence.leaseEpoch, rest };
}

export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  // No body is an empty object; a body of `null` is a body, and not an object.
  const parsed = schema.safeParse(body === undefined ? {} : body);
  if (!parsed.success) throw new ValidationError(describeIssues(parsed.error));
  return parsed.data;
}

/** The body of `POST /v1/tasks/{taskId}/cancel`: none, or whether the cancel reaches the task's descendants. */
export const cancelBody = accepts<Sdk.CancelTaskInput>()(z.strictObject({ cascade: z.boolean().optional() }));

/**
 * The body of `POST /v1/tasks/{taskId}/attention`: `{ "needsAttention": false }`, the mark cleared. Only the ladder
 * sets it, so `true` is refused; the body names the field it changes, as it reads in the task.
 */
export const attentionBody = accepts<Sdk.AttentionInput>()(
  z.strictObject({ needsAttention: z.literal(false).describe('`false`: the mark is cleared.') }),
);

/**
 * The body of `POST /v1/scheduler/rebuild`: none to start, then the `cursor` each answer gives. The cursor's content
 * is checked by the rebuild, which alone can read it.
 */
export const rebuildBody = accepts<Sdk.RebuildInput>()(
  z.strictObject({
    cursor: z
      .string()
      .min(1)
      .max(2_048)
      .describe('The `cursor` the last call answered, to go on from there; none to start a rebuild.')
      .optional(),
    limit: z
      .int()
      .min(REBUILD_LIMITS.min)
      .max(REBUILD_LIMITS.max)
      .describe(`Open tasks this call reads at most (default ${REBUILD_LIMITS.default}).`)
      .optional(),
  }),
);

/** A route that takes no body: none, or `{}`, is all it accepts, so a body meant for another route changes nothing. */
export const noBody = (request: ApiRequest): void => {
  parseBody(z.strictObject({}), request.body);
};
