/**
 * The agent routes. The agent is always the one the authorizer established; bodies carry no identity.
 */
import { z } from 'zod';
import { BATCH_LIMITS, type ItemOutcome } from '#core/batches';
import { CHILDREN_LIMIT, childKeySchema } from '#core/children';
import { CLAIM_ID_PATTERN, idleRetryAfterMs } from '#core/claim';
import type { Scheduler } from '#core/scheduler';
import { checkpointsSchema, OPEN_ID_PATTERN } from '#core/sessions';
import { ValidationError } from '#domain/errors';
import { TASK_ID_PATTERN } from '#domain/ids';
import type { Task } from '#domain/task';
import { describeIssues, jsonValueSchema, LIMITS, queueNameSchema, taskSpecSchema } from '#domain/task-spec';
import { type ApiRequest, type Operation, taskIdParam } from './http-api';
import { claimedTaskView, pushTicketView, roleView, sessionHoldingsView, taskView } from './views';

const sessionIdSchema = z.string().regex(/^s_[a-z2-7]{26}$/, 'a session id');
const leaseEpochSchema = z.int().min(1).max(Number.MAX_SAFE_INTEGER);

export const heartbeatBody = z.strictObject({
  sessionId: sessionIdSchema,
  checkpoints: checkpointsSchema.optional(),
});
/** An open's id is optional: an SDK older than open ids sends `{}` or nothing, and every call opens anew. */
export const openSessionBody = z.strictObject({
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
});

export const claimBody = z.strictObject({
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
});
export const completeBody = z.strictObject({
  leaseEpoch: leaseEpochSchema,
  result: jsonValueSchema.optional(),
});
export const completeManyBody = z.strictObject({
  tasks: z
    .array(
      z.strictObject({
        taskId: z.string().regex(TASK_ID_PATTERN, 'a task id'),
        leaseEpoch: leaseEpochSchema,
        result: jsonValueSchema.optional(),
      }),
    )
    .min(1)
    .max(BATCH_LIMITS.complete),
});
export const failBody = z.strictObject({
  leaseEpoch: leaseEpochSchema,
  error: z.strictObject({
    message: z.string().min(1).max(LIMITS.errorMessageChars),
    retryable: z.boolean().optional(),
  }),
});
export const releaseBody = z.strictObject({ leaseEpoch: leaseEpochSchema });
export const volunteerBody = z.strictObject({ sessionId: sessionIdSchema });
export const releaseRoleBody = z.strictObject({ leaseEpoch: leaseEpochSchema });
export const withdrawBody = z.strictObject({
  sessionId: sessionIdSchema,
  /** The holding to give up too, if the session holds the role at this epoch. */
  leaseEpoch: leaseEpochSchema.optional(),
});

/** A follow-up task an agent submits: a task specification, named by a key of the agent's (not an idempotency key). */
export const childSpecSchema = taskSpecSchema.omit({ idempotencyKey: true }).extend({
  /** Names the child among its parent's: the same key again (the parent run again) gives back the same task. */
  key: childKeySchema,
});
const parentFence = {
  /** The task the agent runs, whose lease fences the submission. */
  parentTaskId: z.string().regex(TASK_ID_PATTERN, 'a task id'),
  leaseEpoch: leaseEpochSchema,
};
export const submitChildBody = childSpecSchema.extend(parentFence);
export const submitChildrenBody = z.strictObject({
  ...parentFence,
  tasks: z.array(childSpecSchema).min(1).max(CHILDREN_LIMIT),
});
/**
 * The fence of a child submission, read first, and the rest of the body as it was sent: the specifications are
 * checked item by item, strictly, so every key reaches that check (a schema's output would drop `__proto__`).
 */
function fenceOf(body: unknown): { parentTaskId: string; leaseEpoch: number; rest: Record<string, unknown> } {
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

/** A route that takes no body: none, or `{}`, is all it accepts, so a body meant for another route changes nothing. */
export const noBody = (request: ApiRequest): void => {
  parseBody(z.strictObject({}), request.body);
};

const agentOf = (request: ApiRequest): string => request.agentId ?? '';

/** One item of a batch answer: the task, or the error the single call would have answered. */
export const itemView = (outcome: ItemOutcome<{ task: Task; created?: boolean }>) =>
  outcome.ok
    ? {
        ok: true,
        task: taskView(outcome.task),
        ...(outcome.created === undefined ? {} : { created: outcome.created }),
      }
    : {
        ok: false,
        error: { code: outcome.error.code, message: outcome.error.message },
        status: outcome.error.status,
      };
const roleOf = (request: ApiRequest): string => request.params.role ?? '';

export function agentOperations(scheduler: Scheduler): Record<string, Operation> {
  return {
    openSession: async (request) => {
      const body = parseBody(openSessionBody, request.body);
      const session = await scheduler.openSession(agentOf(request), {
        ...(body.openId === undefined ? {} : { openId: body.openId }),
        ...(body.openSeq === undefined ? {} : { openSeq: body.openSeq }),
      });
      return {
        status: 200,
        body: {
          sessionId: session.sessionId,
          leaseTtlSeconds: session.leaseTtlSeconds,
          heartbeatIntervalSeconds: session.heartbeatIntervalSeconds,
          expiresAt: new Date(session.expiresAt).toISOString(),
        },
      };
    },
    readSession: async (request) => {
      const read = await scheduler.readSession(agentOf(request));
      return { status: 200, body: { session: sessionHoldingsView(read) } };
    },
    heartbeat: async (request) => {
      const body = parseBody(heartbeatBody, request.body);
      const beat = await scheduler.heartbeat(agentOf(request), body.sessionId, body.checkpoints);
      return {
        status: 200,
        body: {
          cancelled: beat.cancelled,
          lost: beat.lost,
          lostLeases: beat.lostLeases,
          roles: { picked: beat.rolesPicked, lost: beat.rolesLost },
          held: beat.held,
          expiresAt: new Date(beat.expiresAt).toISOString(),
        },
      };
    },
    createAgentPushTicket: async (request) => {
      noBody(request);
      const ticket = await scheduler.pushTicket({ kind: 'agent', agentId: agentOf(request) });
      return { status: 201, body: pushTicketView(ticket) };
    },
    claimTasks: async (request) => {
      const body = parseBody(claimBody, request.body);
      const claim = {
        agentId: agentOf(request),
        sessionId: body.sessionId,
        ...(body.max === undefined ? {} : { max: body.max }),
        ...(body.queues === undefined ? {} : { queues: body.queues }),
        ...(body.claimId === undefined ? {} : { claimId: body.claimId }),
        ...(body.claimSeq === undefined ? {} : { claimSeq: body.claimSeq }),
      };
      const { tasks, retryAfterMs: listening } = body.listening
        ? await scheduler.claimOrListen(claim)
        : { tasks: await scheduler.claim(claim), retryAfterMs: undefined };
      // Nothing to do: say how long to wait, longer the longer the agent has been idle (a listener: until woken).
      const retryAfterMs =
        tasks.length === 0
          ? (listening ?? idleRetryAfterMs(scheduler.ctx.settings, body.idleClaims ?? 0))
          : undefined;
      return {
        status: 200,
        body: { tasks: tasks.map(claimedTaskView), ...(retryAfterMs === undefined ? {} : { retryAfterMs }) },
      };
    },
    completeTask: async (request) => {
      const body = parseBody(completeBody, request.body);
      const done = await scheduler.complete(
        { agentId: agentOf(request), taskId: taskIdParam(request), leaseEpoch: body.leaseEpoch },
        body.result,
      );
      return { status: 200, body: { task: taskView(done.task) } };
    },
    submitChildTask: async (request) => {
      const { parentTaskId, leaseEpoch, rest } = fenceOf(request.body);
      const { task, created } = await scheduler.submitChild(
        { agentId: agentOf(request), parentTaskId, leaseEpoch },
        rest,
      );
      return { status: created ? 201 : 200, body: { task: taskView(task) } };
    },
    submitChildTasks: async (request) => {
      const { parentTaskId, leaseEpoch, rest } = fenceOf(request.body);
      const { tasks, ...others } = rest;
      if (Object.keys(others).length > 0) {
        throw new ValidationError('the body is { "parentTaskId", "leaseEpoch", "tasks": [ ... ] }');
      }
      const outcomes = await scheduler.submitChildren(
        { agentId: agentOf(request), parentTaskId, leaseEpoch },
        tasks,
      );
      return { status: 200, body: { results: outcomes.map(itemView) } };
    },
    completeTasks: async (request) => {
      const body = parseBody(completeManyBody, request.body);
      const outcomes = await scheduler.completeBatch(agentOf(request), body.tasks);
      return { status: 200, body: { results: outcomes.map(itemView) } };
    },
    failTask: async (request) => {
      const body = parseBody(failBody, request.body);
      const failed = await scheduler.fail(
        { agentId: agentOf(request), taskId: taskIdParam(request), leaseEpoch: body.leaseEpoch },
        body.error,
      );
      return { status: 200, body: { task: taskView(failed.task) } };
    },
    releaseTask: async (request) => {
      const body = parseBody(releaseBody, request.body);
      const released = await scheduler.release({
        agentId: agentOf(request),
        taskId: taskIdParam(request),
        leaseEpoch: body.leaseEpoch,
      });
      return { status: 200, body: { task: taskView(released.task) } };
    },
    registerRole: async (request) => {
      noBody(request);
      const role = await scheduler.registerRole(agentOf(request), roleOf(request));
      return { status: 200, body: { role: roleView(role) } };
    },
    volunteerForRole: async (request) => {
      const body = parseBody(volunteerBody, request.body);
      const result = await scheduler.volunteerForRole(agentOf(request), body.sessionId, roleOf(request));
      return {
        status: 200,
        body: {
          picked: result.picked,
          ...(result.leaseEpoch === undefined ? {} : { leaseEpoch: result.leaseEpoch }),
          role: roleView(result.role),
        },
      };
    },
    releaseRole: async (request) => {
      const body = parseBody(releaseRoleBody, request.body);
      const released = await scheduler.releaseRole(agentOf(request), roleOf(request), body.leaseEpoch);
      return {
        status: 200,
        body: {
          released: true,
          ...(released.nextHolder ? { nextHolder: released.nextHolder } : {}),
          role: roleView(released.role),
        },
      };
    },
    withdrawFromRole: async (request) => {
      const body = parseBody(withdrawBody, request.body);
      const result = await scheduler.withdrawFromRole(
        agentOf(request),
        body.sessionId,
        roleOf(request),
        body.leaseEpoch,
      );
      return {
        status: 200,
        body: {
          withdrawn: result.withdrawn,
          released: result.released,
          ...(result.nextHolder ? { nextHolder: result.nextHolder } : {}),
          role: roleView(result.role),
        },
      };
    },
  };
}
