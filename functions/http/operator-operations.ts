/**
 * The operator routes: submit and inspect tasks, cancel and redrive them, clear their attention mark; pause queues
 * and set their limits; pause the whole scheduler; schedules; register and revoke agents, list roles.
 */

import type { Scheduler } from '#core/scheduler';
import { issueAgentToken } from '#domain/agent-token';
import { RateLimitNotFoundError, ValidationError, WaitpointNotFoundError } from '#domain/errors';
import { WAITPOINT_ID_PATTERN } from '#domain/ids';
import { RATE_LIMIT_NAME_PATTERN } from '#domain/rate-limits';
import { QUEUE_NAME_PATTERN } from '#domain/task-spec';
import { type ApiRequest, type Operation, taskIdParam } from './http-api';
import { openApiDocument } from './openapi';
import {
  attentionBody,
  cancelBody,
  completeWaitpointBody,
  noBody,
  parseBody,
  rebuildBody,
  rejectWaitpointBody,
} from './request-bodies';
import { withTraceHeaders } from './trace-headers';
import {
  agentView,
  itemView,
  occurrenceView,
  pushTicketView,
  queueControlView,
  rateLimitView,
  roleView,
  scheduleListView,
  schedulerControlView,
  schedulerStatsView,
  scheduleView,
  taskLinksView,
  taskListView,
  taskView,
  taskWithPayloadView,
  waitpointView,
} from './views';

const optional = (key: string, value: string | null) => (value === null ? {} : { [key]: value });
/** `limit=` as digits only: `Number()` would also take " 5", "0x10" and "1e1". */
const limitOf = (value: string | null) =>
  value === null ? {} : { limit: /^\d{1,4}$/.test(value) ? Number(value) : Number.NaN };
/** `attention=true`, the one value it takes: only the tasks marked as needing attention. */
function attentionOf(value: string | null): { attention?: true } {
  if (value === null) return {};
  if (value !== 'true')
    throw new ValidationError('attention: only "true" (the tasks marked as needing attention)');
  return { attention: true };
}

function queueParam(request: ApiRequest): string {
  const name = request.params.name ?? '';
  if (!QUEUE_NAME_PATTERN.test(name)) throw new ValidationError('name: not a queue name');
  return name;
}

/** The `{waitpointId}` path parameter; one that cannot exist is not found. */
function waitpointParam(request: ApiRequest): string {
  const id = request.params.waitpointId ?? '';
  if (!WAITPOINT_ID_PATTERN.test(id))
    throw new WaitpointNotFoundError(`waitpoint ${id.slice(0, 64)} does not exist`);
  return id;
}

export const operatorOperations = (scheduler: Scheduler): Record<string, Operation> => ({
  health: async () => ({ status: 200, body: { status: 'ok' } }),
  answerCallback: async (request) => {
    const resolved = await scheduler.answerCallback(request.params.token ?? '', request.body);
    return { status: 200, body: { waitpoint: waitpointView(resolved.waitpoint) } };
  },
  completeWaitpoint: async (request) => {
    const body = parseBody(completeWaitpointBody, request.body ?? {});
    const resolved = await scheduler.answerWaitpoint(waitpointParam(request), {
      outcome: 'completed',
      ...(body.data === undefined ? {} : { data: body.data }),
    });
    return { status: 200, body: { waitpoint: waitpointView(resolved.waitpoint) } };
  },
  rejectWaitpoint: async (request) => {
    const body = parseBody(rejectWaitpointBody, request.body);
    const resolved = await scheduler.answerWaitpoint(waitpointParam(request), {
      outcome: 'rejected',
      reason: body.reason,
    });
    return { status: 200, body: { waitpoint: waitpointView(resolved.waitpoint) } };
  },
  getWaitpoint: async (request) => {
    const waitpointId = waitpointParam(request);
    const waitpoint = await scheduler.getWaitpoint(waitpointId);
    if (!waitpoint) throw new WaitpointNotFoundError(`waitpoint ${waitpointId} does not exist`);
    return { status: 200, body: { waitpoint: waitpointView(waitpoint) } };
  },
  listWaitpoints: async (request) => {
    const status = request.query.get('status') ?? 'open';
    if (status !== 'open') throw new ValidationError('status: only open waitpoints are listed');
    const { limit = 50 } = limitOf(request.query.get('limit'));
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new ValidationError('limit: 1 to 100');
    const cursor = request.query.get('cursor') ?? undefined;
    if (cursor !== undefined && !/^\d{15}#w_[a-z2-7]{26}$/.test(cursor))
      throw new ValidationError('cursor: not one this list gave');
    const page = await scheduler.listOpenWaitpoints(limit, cursor);
    return {
      status: 200,
      body: {
        waitpoints: page.waitpoints.map((w) => waitpointView(w)),
        ...(page.next === undefined ? {} : { nextCursor: page.next }),
      },
    };
  },
  openApi: async () => ({ status: 200, body: openApiDocument() }),
  ...taskOperations(scheduler),
  ...queueOperations(scheduler),
  ...rateLimitOperations(scheduler),
  ...scheduleOperations(scheduler),
  ...fleetOperations(scheduler),
});

/** Tasks: submit (one or a batch), list, read, cancel, redrive, clear the attention mark. */
function taskOperations(scheduler: Scheduler): Record<string, Operation> {
  return {
    submitTask: async (request) => {
      const { task, created, debounced } = await scheduler.submit(
        withTraceHeaders(request.body, request.traceHeaders),
      );
      return {
        status: created ? 201 : 200,
        body: { task: taskView(task), ...(debounced === undefined ? {} : { debounced }) },
      };
    },
    submitTasks: async (request) => {
      const tasks = (request.body as { tasks?: unknown } | undefined)?.tasks;
      if (
        typeof request.body !== 'object' ||
        request.body === null ||
        Object.keys(request.body).join() !== 'tasks'
      ) {
        throw new ValidationError('the body is { "tasks": [ ...task specifications ] }');
      }
      const outcomes = await scheduler.submitBatch(
        Array.isArray(tasks) ? tasks.map((spec) => withTraceHeaders(spec, request.traceHeaders)) : tasks,
      );
      return { status: 200, body: { results: outcomes.map(itemView) } };
    },
    listTasks: async (request) => {
      const limit = request.query.get('limit');
      const page = await scheduler.listTasks({
        ...optional('queue', request.query.get('queue')),
        ...optional('status', request.query.get('status')),
        ...optional('cursor', request.query.get('cursor')),
        ...optional('createdAfter', request.query.get('createdAfter')),
        ...optional('createdBefore', request.query.get('createdBefore')),
        ...optional('concurrencyKey', request.query.get('concurrencyKey')),
        ...attentionOf(request.query.get('attention')),
        ...limitOf(limit),
      });
      return {
        status: 200,
        body: {
          tasks: page.tasks.map(taskListView),
          ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
        },
      };
    },
    getTask: async (request) => {
      const include = request.query.get('include');
      if (include !== null && include !== 'payload') throw new ValidationError('include: only "payload"');
      const taskId = taskIdParam(request);
      // The last progress report is read beside the task (half a read unit, nothing found or not).
      const [task, progress] = await Promise.all([scheduler.getTask(taskId), scheduler.progressOf(taskId)]);
      // A cancelled task may have begun a cancellation of its descendants: how far it has come (half a read unit).
      const cascade = task.status === 'cancelled' ? await scheduler.cascadeOf(taskId) : undefined;
      const seen = { progress, cascade };
      if (include === null) return { status: 200, body: { task: taskView(task, seen) } };
      const read = await scheduler.taskPayload(task);
      return { status: 200, body: { task: taskWithPayloadView(task, read, seen) } };
    },
    getTaskLinks: async (request) => {
      const links = await scheduler.taskLinks(taskIdParam(request));
      return { status: 200, body: { links: taskLinksView(links) } };
    },
    cancelTask: async (request) => {
      const { cascade } = parseBody(cancelBody, request.body);
      const taskId = taskIdParam(request);
      if (!cascade) return { status: 200, body: { task: taskView(await scheduler.cancel(taskId)) } };
      const tree = await scheduler.cancelTree(taskId);
      return { status: 200, body: { task: taskView(tree.task, { cascade: tree.cascade }) } };
    },
    redriveTask: async (request) => {
      noBody(request);
      return { status: 200, body: { task: taskView(await scheduler.redrive(taskIdParam(request))) } };
    },
    // The starvation ladder's mark cleared: 200 with the task, marked or not before (a retry changes nothing more).
    clearAttention: async (request) => {
      parseBody(attentionBody, request.body);
      return { status: 200, body: { task: taskView(await scheduler.clearAttention(taskIdParam(request))) } };
    },
  };
}

/** Queues: their counts, a pause and a resume, their limits; and the pause of the whole scheduler. */
function queueOperations(scheduler: Scheduler): Record<string, Operation> {
  return {
    listQueues: async () => ({ status: 200, body: { queues: await scheduler.queueStats() } }),
    pauseQueue: async (request) => {
      noBody(request);
      return {
        status: 200,
        body: { queue: queueControlView(await scheduler.pauseQueue(queueParam(request))) },
      };
    },
    resumeQueue: async (request) => {
      noBody(request);
      return {
        status: 200,
        body: { queue: queueControlView(await scheduler.resumeQueue(queueParam(request))) },
      };
    },
    setQueueLimits: async (request) => ({
      status: 200,
      body: { queue: queueControlView(await scheduler.setQueueLimits(queueParam(request), request.body)) },
    }),
    // The whole scheduler: its state, a pause and a resume, each answered with the control as it is now.
    getSchedulerControl: async (request) => {
      noBody(request);
      return {
        status: 200,
        body: { scheduler: schedulerControlView(await scheduler.getSchedulerControl()) },
      };
    },
    pauseScheduler: async (request) => {
      noBody(request);
      return { status: 200, body: { scheduler: schedulerControlView(await scheduler.pauseScheduler()) } };
    },
    resumeScheduler: async (request) => {
      noBody(request);
      return { status: 200, body: { scheduler: schedulerControlView(await scheduler.resumeScheduler()) } };
    },
    // One call's share of a rebuild, its counts and, while more is left, its cursor.
    rebuildScheduler: async (request) => ({
      status: 200,
      body: await scheduler.rebuild(parseBody(rebuildBody, request.body)),
    }),
    // The supervisor's figures: cumulative, the last pass's, the last errors.
    getSchedulerStats: async (request) => {
      noBody(request);
      return { status: 200, body: schedulerStatsView(await scheduler.getSchedulerStats()) };
    },
  };
}

/** Named rate limits: those in force with their use now, one with its keys' use, new terms for one. */
function rateLimitOperations(scheduler: Scheduler): Record<string, Operation> {
  return {
    listRateLimits: async () => ({
      status: 200,
      body: { rateLimits: (await scheduler.listRateLimits()).map(rateLimitView) },
    }),
    getRateLimit: async (request) => {
      const name = rateLimitParam(request);
      const use = await scheduler.getRateLimit(name);
      if (!use) throw new RateLimitNotFoundError(`no rate limit is named ${name}`);
      return { status: 200, body: { rateLimit: rateLimitView(use) } };
    },
    setRateLimit: async (request) => ({
      status: 200,
      body: { rateLimit: rateLimitView(await scheduler.setRateLimit(rateLimitParam(request), request.body)) },
    }),
  };
}

/** The `{name}` of a rate limit's path, checked. */
function rateLimitParam(request: ApiRequest): string {
  const name = request.params.name ?? '';
  if (!RATE_LIMIT_NAME_PATTERN.test(name)) {
    throw new ValidationError(
      'name: 1 to 64 letters, digits, ".", "_", "-" or ":", starting with a letter or digit',
    );
  }
  return name;
}

/** Schedules created through the API, and what happened at their fire times. */
function scheduleOperations(scheduler: Scheduler): Record<string, Operation> {
  return {
    listSchedules: async (request) => {
      const page = await scheduler.listSchedulePage({
        ...optional('cursor', request.query.get('cursor')),
        ...limitOf(request.query.get('limit')),
      });
      return {
        status: 200,
        body: {
          schedules: page.schedules.map((schedule) => scheduleListView(schedule, scheduler.ctx.now())),
          ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
        },
      };
    },
    getSchedule: async (request) => ({
      status: 200,
      body: {
        schedule: scheduleView(await scheduler.getSchedule(request.params.name ?? ''), scheduler.ctx.now()),
      },
    }),
    createSchedule: async (request) => ({
      status: 201,
      body: { schedule: scheduleView(await scheduler.createSchedule(request.body), scheduler.ctx.now()) },
    }),
    deleteSchedule: async (request) => {
      noBody(request);
      await scheduler.deleteSchedule(request.params.name ?? '');
      return { status: 200, body: { deleted: true } };
    },
    listOccurrences: async (request) => ({
      status: 200,
      body: { occurrences: (await scheduler.listOccurrences(request.params.name ?? '')).map(occurrenceView) },
    }),
  };
}

/** The agents, the roles they hold, and the operator's push ticket. */
function fleetOperations(scheduler: Scheduler): Record<string, Operation> {
  return {
    registerAgent: async (request) => {
      // The token is minted for an id chosen up front, so the stored hash and the id always go together.
      const { agent, token } = await scheduler.registerAgent(request.body, issueAgentToken);
      return { status: 201, body: { agent: agentView(agent), token } };
    },
    listAgents: async (request) => {
      const limit = request.query.get('limit');
      const page = await scheduler.listAgentPage({
        ...optional('cursor', request.query.get('cursor')),
        ...limitOf(limit),
      });
      return {
        status: 200,
        body: {
          agents: page.agents.map(agentView),
          ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
        },
      };
    },
    revokeAgent: async (request) => {
      noBody(request);
      await scheduler.revokeAgent(request.params.agentId ?? '');
      return { status: 200, body: { revoked: true } };
    },
    listRoles: async () => ({
      status: 200,
      body: { roles: (await scheduler.listRoles()).map(roleView) },
    }),
    createPushTicket: async (request) => {
      noBody(request);
      return { status: 201, body: pushTicketView(await scheduler.pushTicket({ kind: 'operator' })) };
    },
  };
}
