/**
 * The agent routes: its session, the tasks it claims and finishes (and the follow-ups it submits under their
 * leases), and its roles. The agent is always the one the authorizer established; bodies carry no identity.
 */
import type { z } from 'zod';
import { idleRetryAfterMs } from '#core/claim';
import type { Scheduler } from '#core/scheduler';
import type { SessionRead } from '#core/session-reads';
import { isSchedulerError, ValidationError } from '#domain/errors';
import { progressView } from '#domain/progress';
import type { Task } from '#domain/task';
import { type ApiRequest, type Operation, taskIdParam } from './http-api';
import {
  claimBody,
  completeBody,
  completeManyBody,
  failBody,
  fenceOf,
  heartbeatBody,
  noBody,
  openSessionBody,
  parseBody,
  progressBody,
  progressManyBody,
  releaseBody,
  releaseRoleBody,
  volunteerBody,
  waitBody,
  withdrawBody,
} from './request-bodies';
import { withTraceHeaders } from './trace-headers';
import {
  claimedTaskView,
  itemView,
  pushTicketView,
  roleView,
  sessionHoldingsView,
  taskView,
  waitpointView,
} from './views';

const agentOf = (request: ApiRequest): string => request.agentId ?? '';
const roleOf = (request: ApiRequest): string => request.params.role ?? '';

export const agentOperations = (scheduler: Scheduler): Record<string, Operation> => ({
  ...sessionOperations(scheduler),
  ...leaseOperations(scheduler),
  ...followUpOperations(scheduler),
  ...roleOperations(scheduler),
});

/** The agent's session: open it, read what it holds, keep it alive, and the ticket of its push connection. */
function sessionOperations(scheduler: Scheduler): Record<string, Operation> {
  return {
    openSession: async (request) => {
      const body = parseBody(openSessionBody, request.body);
      const session = await scheduler.openSession(agentOf(request), {
        ...(body.openId === undefined ? {} : { openId: body.openId }),
        ...(body.openSeq === undefined ? {} : { openSeq: body.openSeq }),
        ...(body.labels === undefined ? {} : { labels: body.labels }),
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
      const beat = await scheduler.heartbeat(agentOf(request), body.sessionId, body.checkpoints, body.extend);
      return {
        status: 200,
        body: {
          cancelled: beat.cancelled,
          lost: beat.lost,
          lostLeases: beat.lostLeases,
          roles: { picked: beat.rolesPicked, lost: beat.rolesLost },
          held: beat.held,
          expiresAt: new Date(beat.expiresAt).toISOString(),
          ...(body.extend === undefined
            ? {}
            : {
                extended: beat.extended.map((e) => ({
                  taskId: e.taskId,
                  leaseEpoch: e.leaseEpoch,
                  seconds: e.seconds,
                  leaseDeadline: new Date(e.leaseDeadline).toISOString(),
                })),
              }),
        },
      };
    },
    createAgentPushTicket: async (request) => {
      noBody(request);
      const ticket = await scheduler.pushTicket({ kind: 'agent', agentId: agentOf(request) });
      return { status: 201, body: pushTicketView(ticket) };
    },
  };
}

/** The tasks the agent holds: claimed, then completed, failed or released under the lease's epoch. */
function leaseOperations(scheduler: Scheduler): Record<string, Operation> {
  return {
    claimTasks: async (request) => {
      const body = parseBody(claimBody, request.body);
      return { status: 200, body: await claimFor(scheduler, agentOf(request), body) };
    },
    completeTask: async (request) => {
      const body = parseBody(completeBody, request.body);
      const agentId = agentOf(request);
      // A completion that carries a claim reads the session once, for both.
      const sessionRead = body.claimNext ? scheduler.ownerSession(agentId) : undefined;
      const done = await scheduler.complete(
        { agentId, taskId: taskIdParam(request), leaseEpoch: body.leaseEpoch },
        body.result,
        sessionRead,
        body.usage,
      );
      const next = await claimAfter(scheduler, agentId, body.claimNext, [done.task], sessionRead);
      return { status: 200, body: { task: taskView(done.task), ...next } };
    },
    completeTasks: async (request) => {
      const body = parseBody(completeManyBody, request.body);
      const agentId = agentOf(request);
      const sessionRead = scheduler.ownerSession(agentId);
      const outcomes = await scheduler.completeBatch(agentId, body.tasks, sessionRead);
      const ended = outcomes.flatMap((outcome) => (outcome.ok ? [outcome.task] : []));
      const next = await claimAfter(scheduler, agentId, body.claimNext, ended, sessionRead);
      return { status: 200, body: { results: outcomes.map(itemView), ...next } };
    },
    failTask: async (request) => {
      const body = parseBody(failBody, request.body);
      const failed = await scheduler.fail(
        { agentId: agentOf(request), taskId: taskIdParam(request), leaseEpoch: body.leaseEpoch },
        body.error,
        {
          ...(body.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: body.retryAfterSeconds }),
          ...(body.usage === undefined ? {} : { usage: body.usage }),
        },
      );
      return { status: 200, body: { task: taskView(failed.task) } };
    },
    reportProgress: async (request) => {
      const { leaseEpoch, ...report } = parseBody(progressBody, request.body);
      const progress = await scheduler.reportProgress(agentOf(request), {
        taskId: taskIdParam(request),
        leaseEpoch,
        ...report,
      });
      return { status: 200, body: { progress: progressView(progress) } };
    },
    reportProgressBatch: async (request) => {
      const body = parseBody(progressManyBody, request.body);
      const outcomes = await scheduler.reportProgressBatch(agentOf(request), body.tasks);
      return {
        status: 200,
        body: {
          results: outcomes.map((outcome) =>
            outcome.ok
              ? { ok: true, progress: progressView(outcome.progress) }
              : {
                  ok: false,
                  error: { code: outcome.error.code, message: outcome.error.message },
                  status: outcome.error.status,
                },
          ),
        },
      };
    },
    waitTask: async (request) => {
      const { leaseEpoch, ...input } = parseBody(waitBody, request.body);
      const suspended = await scheduler.wait(
        { agentId: agentOf(request), taskId: taskIdParam(request), leaseEpoch },
        input,
      );
      return {
        status: 200,
        body: {
          task: taskView(suspended.task),
          waitpoint: waitpointView(suspended.waitpoint),
          callbackUrl: `${request.origin ?? ''}/v1/callbacks/${suspended.token}`,
        },
      };
    },
    releaseTask: async (request) => {
      const body = parseBody(releaseBody, request.body);
      const released = await scheduler.release(
        { agentId: agentOf(request), taskId: taskIdParam(request), leaseEpoch: body.leaseEpoch },
        body.delaySeconds === undefined ? {} : { delaySeconds: body.delaySeconds },
      );
      return { status: 200, body: { task: taskView(released.task) } };
    },
  };
}

/** What `POST /v1/agent/claim` answers: the tasks granted, or how long to wait before claiming again. */
async function claimFor(
  scheduler: Scheduler,
  agentId: string,
  body: z.output<typeof claimBody>,
  /** Tasks the call has just ended (a completion that carries this claim): their slots are known free. */
  justWritten?: readonly Task[],
  /** The session as that completion read it. */
  sessionRead?: SessionRead,
) {
  const claim = {
    ...(justWritten && justWritten.length > 0 ? { justWritten } : {}),
    ...(sessionRead ? { sessionRead } : {}),
    agentId,
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
  return { tasks: tasks.map(claimedTaskView), ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
}

/**
 * The claim a completion carries (`claimNext`), made once the completion is answered, so a busy agent finishes a
 * task and takes the next in one call: its answer as `next`, or, for a refusal the claim route would have answered
 * (a session lost, a queue not the agent's), that refusal as `nextError`; the completion stands either way. A
 * failure that may be passing fails the whole call, which the agent sends again: the completion is answered as
 * committed and the claim, by its id, with what it granted.
 */
async function claimAfter(
  scheduler: Scheduler,
  agentId: string,
  body: z.output<typeof claimBody> | undefined,
  ended: readonly Task[],
  sessionRead: Promise<SessionRead> | undefined,
) {
  if (body === undefined) return {};
  try {
    return { next: await claimFor(scheduler, agentId, body, ended, await sessionRead) };
  } catch (error) {
    if (!isSchedulerError(error) || !error.expose) throw error;
    return { nextError: { code: error.code, message: error.message } };
  }
}

/** Follow-up tasks an agent submits while it runs their parent, fenced by the parent's lease. */
function followUpOperations(scheduler: Scheduler): Record<string, Operation> {
  return {
    submitChildTask: async (request) => {
      const { parentTaskId, leaseEpoch, rest } = fenceOf(request.body);
      const { task, created } = await scheduler.submitChild(
        { agentId: agentOf(request), parentTaskId, leaseEpoch },
        withTraceHeaders(rest, request.traceHeaders),
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
        Array.isArray(tasks) ? tasks.map((spec) => withTraceHeaders(spec, request.traceHeaders)) : tasks,
      );
      return { status: 200, body: { results: outcomes.map(itemView) } };
    },
  };
}

/** Roles: declare one, volunteer for it, give it up, leave its line. */
function roleOperations(scheduler: Scheduler): Record<string, Operation> {
  return {
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
