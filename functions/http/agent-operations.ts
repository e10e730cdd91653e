/**
 * The agent routes: its session, the tasks it claims and finishes (and the follow-ups it submits under their
 * leases), and its roles. The agent is always the one the authorizer established; bodies carry no identity.
 */
import { idleRetryAfterMs } from '#core/claim';
import type { Scheduler } from '#core/scheduler';
import { ValidationError } from '#domain/errors';
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
  releaseBody,
  releaseRoleBody,
  volunteerBody,
  withdrawBody,
} from './request-bodies';
import { claimedTaskView, itemView, pushTicketView, roleView, sessionHoldingsView, taskView } from './views';

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
  };
}

/** The tasks the agent holds: claimed, then completed, failed or released under the lease's epoch. */
function leaseOperations(scheduler: Scheduler): Record<string, Operation> {
  return {
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
  };
}

/** Follow-up tasks an agent submits while it runs their parent, fenced by the parent's lease. */
function followUpOperations(scheduler: Scheduler): Record<string, Operation> {
  return {
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
