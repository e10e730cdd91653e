/**
 * What the API returns: records as JSON with ISO timestamps. Internal bookkeeping (spec hashes, due times) stays
 * inside.
 */

import type { ItemOutcome } from '#core/batches';
import type { ClaimedTask } from '#core/claim';
import type { CycleStats } from '#core/cycle-stats';
import type { Occurrence } from '#core/occurrences';
import type { CascadeProgress } from '#core/ports/cascade-store';
import type { QueueControl } from '#core/queue-controls';
import type { RateLimitUse } from '#core/rate-limits';
import type { RoleView } from '#core/roles';
import type { SchedulerControl } from '#core/scheduler-control';
import type { AgentPresence, SessionHoldings } from '#core/sessions';
import type { TaskLinkIds } from '#core/task-links';
import type { Agent } from '#domain/agent';
import { onFailureTaskIdOf } from '#domain/ids';
import { type Progress, progressView } from '#domain/progress';
import { enforcedLimits, isCapped } from '#domain/queue-limits';
import type { ScheduleRecord } from '#domain/schedule';
import { nextFireTimes, parseScheduleExpression } from '#domain/schedule-expression';
import { deathOf, type Task } from '#domain/task';
import { DEFAULT_MAX_SNOOZES } from '#domain/task-spec';
import type { Waitpoint } from '#domain/waitpoint';

function iso(ms: number): string;
function iso(ms: number | undefined): string | undefined;
function iso(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

/** What is read beside a task and shown with it: its last progress report, the walk of a cancel of its descendants. */
export interface SeenWithTask {
  readonly progress?: Progress | undefined;
  readonly cascade?: CascadeProgress | undefined;
}

export function taskView(task: Task, { progress, cascade }: SeenWithTask = {}) {
  return {
    taskId: task.taskId,
    queue: task.queue,
    priority: task.priority,
    status: task.status,
    attempt: task.attempt,
    maxAttempts: task.retryPolicy.maxAttempts,
    timeoutSeconds: task.timeoutSeconds,
    maxTimeoutSeconds: task.maxTimeoutSeconds,
    snoozes: task.snoozes,
    maxSnoozes: task.maxSnoozes ?? DEFAULT_MAX_SNOOZES,
    leaseEpoch: task.leaseEpoch,
    owner: task.owner,
    result: task.result,
    error: task.error,
    checkpoint: task.checkpoint,
    idempotencyKey: task.idempotencyKey,
    payloadBytes: task.payloadBytes,
    notBefore: iso(task.notBefore),
    leaseDeadline: task.status === 'leased' ? iso(task.leaseDeadline) : undefined,
    expiresAt: iso(task.expiresAt),
    failureOf: task.failureOf,
    // The follow-up of its latest death, or of the next one while it runs again after a redrive.
    onFailureTaskId: task.hasOnFailure ? onFailureTaskIdOf(task.taskId, deathOf(task)) : undefined,
    dependencyCount: task.dependencyCount,
    onDependencyFailure: task.onDependencyFailure,
    waitingOn: task.status === 'waiting' ? task.waitingOn : undefined,
    failedDependency: task.failedDependency,
    parentTaskId: task.parentTaskId,
    rootTaskId: task.rootTaskId,
    concurrencyKey: task.concurrencyKey,
    debounce:
      task.debounceKey === undefined
        ? undefined
        : { key: task.debounceKey, submissions: 1 + (task.debounceJoins ?? 0) },
    waitpointId: task.waitpointId,
    rateLimits: task.rateLimits,
    require: task.require,
    traceparent: task.traceparent,
    tracestate: task.tracestate,
    rateTaken: task.rateTaken?.map((t) => ({ ...t, window: iso(t.window) as string })),
    progress: progress && progressView(progress),
    cascade: cascade && {
      cancelled: cascade.cancelled,
      pending: cascade.pending,
      done: cascade.finishedAt !== undefined,
      startedAt: iso(cascade.startedAt),
      finishedAt: iso(cascade.finishedAt),
    },
    // Shown only when marked: absent is the common case, and what older servers send.
    needsAttention: task.needsAttention ? (true as const) : undefined,
    createdAt: iso(task.createdAt),
    updatedAt: iso(task.updatedAt),
    finishedAt: iso(task.finishedAt),
  };
}

/** A task with its payload, as `GET /v1/tasks/{taskId}?include=payload` answers it. */
export function taskWithPayloadView(
  task: Task,
  read: { readonly payload: unknown } | { readonly gone: true },
  seen?: SeenWithTask,
): ReturnType<typeof taskView> & { payload?: unknown; payloadGone?: true } {
  return {
    ...taskView(task, seen),
    ...('gone' in read ? { payloadGone: true as const } : { payload: read.payload }),
  };
}

/**
 * A task in a list: no result or checkpoint. A page of 100 tasks with 256 KB results each would pass Lambda's
 * 6 MB response limit; `GET /v1/tasks/{taskId}` has them.
 */
export function taskListView(task: Task) {
  const { result: _result, checkpoint: _checkpoint, ...view } = taskView(task);
  return view;
}

export function claimedTaskView(task: ClaimedTask) {
  return { ...task, leaseDeadline: iso(task.leaseDeadline) };
}

/** The tasks linked to a task, each with its status and queue when it is there. */
export function taskLinksView(links: TaskLinkIds) {
  const linked = (taskId: string) => {
    const found = links.found.get(taskId);
    return found ? { taskId, status: found.status, queue: found.queue } : { taskId };
  };
  const { task } = links;
  return {
    taskId: task.taskId,
    parent: task.parentTaskId === undefined ? undefined : linked(task.parentTaskId),
    root: task.rootTaskId === undefined ? undefined : linked(task.rootTaskId),
    children: links.children.map(linked),
    dependencies: links.dependencies.map(linked),
    dependents: links.dependents.map(linked),
    failureOf: task.failureOf === undefined ? undefined : linked(task.failureOf.taskId),
    onFailure: links.onFailure === undefined ? undefined : linked(links.onFailure),
    childrenTruncated: links.childrenTruncated ? (true as const) : undefined,
    dependentsTruncated: links.dependentsTruncated ? (true as const) : undefined,
  };
}

/** A waitpoint: its task, status and timeout (never its token). */
export function waitpointView(
  waitpoint: Pick<Waitpoint, 'waitpointId' | 'taskId' | 'onTimeout' | 'timeoutAt' | 'createdAt'> &
    Partial<Pick<Waitpoint, 'status' | 'resolvedAt'>>,
) {
  return {
    waitpointId: waitpoint.waitpointId,
    taskId: waitpoint.taskId,
    status: waitpoint.status ?? 'open',
    onTimeout: waitpoint.onTimeout,
    timeoutAt: iso(waitpoint.timeoutAt),
    createdAt: iso(waitpoint.createdAt),
    resolvedAt: iso(waitpoint.resolvedAt),
  };
}

/** An agent; in a list, with its presence: online, last heartbeat, tasks held. */
export function agentView(agent: Agent & { presence?: AgentPresence }) {
  const { presence } = agent;
  return {
    agentId: agent.agentId,
    name: agent.name,
    queues: agent.queues,
    maxConcurrency: agent.maxConcurrency,
    interactive: agent.interactive,
    labels: agent.labels ?? {},
    createdAt: iso(agent.createdAt),
    revokedAt: iso(agent.revokedAt),
    ...(presence
      ? {
          online: presence.online,
          state: presence.state,
          lastHeartbeatAt: iso(presence.lastHeartbeatAt),
          tasksHeld: presence.tasksHeld,
        }
      : {}),
  };
}

/** How many upcoming fire times a schedule's view lists. */
export const NEXT_FIRES = 5;

/**
 * The next fire times of an enabled schedule, after `now`. A rate() counts from when the schedule was created, as
 * EventBridge Scheduler counts it; a declared one's count starts at the deploy, which no record holds, so it
 * lists none.
 */
function nextFiresOf(schedule: ScheduleRecord, now: number): string[] {
  if (!schedule.enabled) return [];
  try {
    const expression = parseScheduleExpression(schedule.expression);
    if (expression.kind === 'rate' && schedule.source === 'declared') return [];
    return nextFireTimes(expression, {
      timeZone: schedule.timeZone,
      after: now,
      startAt: Math.min(schedule.createdAt, now),
      limit: NEXT_FIRES,
    }).map((at) => iso(at));
  } catch {
    // An expression this version cannot read (stored by another): no times, rather than no schedule.
    return [];
  }
}

export function scheduleView(schedule: ScheduleRecord, now: number = Date.now()) {
  return {
    ...schedule,
    createdAt: schedule.source === 'declared' ? undefined : iso(schedule.createdAt),
    nextFires: nextFiresOf(schedule, now),
  };
}

/**
 * A schedule in a list: its task template without the payload (up to 256 KB each; `GET /v1/schedules/{name}`
 * has it), so a page stays far below the 6 MB a Lambda may answer.
 */
export function scheduleListView(schedule: ScheduleRecord, now: number = Date.now()) {
  const { payload: _payload, ...task } = schedule.task as { payload?: unknown };
  return { ...scheduleView(schedule, now), task };
}

export function queueControlView(control: QueueControl) {
  return {
    name: control.queue,
    paused: control.paused,
    limits: control.limits,
    enforcedLimits: isCapped(control.limits) ? enforcedLimits(control.limits) : undefined,
    updatedAt: iso(control.updatedAt),
  };
}

/** The whole scheduler's control. */
export function schedulerControlView(control: SchedulerControl) {
  return { paused: control.paused, updatedAt: iso(control.updatedAt) };
}

/** The supervisor's figures: cumulative, the last pass's (flat, beside its time and ids), the last errors. */
export function schedulerStatsView(stats: CycleStats) {
  const last = stats.lastPass;
  return {
    cumulative: { ...stats.cumulative },
    lastPass: last && { at: iso(last.at), durationMs: last.durationMs, ...last.figures, ids: last.ids },
    lastErrors: stats.lastErrors.map((error) => ({ ...error, at: iso(error.at) })),
  };
}

/** A named rate limit in force, and its window open now. */
export function rateLimitView({ limit, window, used, keys }: RateLimitUse) {
  return {
    name: limit.name,
    limit: limit.limit,
    per: limit.per,
    burst: limit.burst,
    perKey: limit.perKey,
    source: limit.source,
    updatedAt: iso(limit.updatedAt),
    window: {
      start: iso(window.start) as string,
      end: iso(window.end) as string,
      capacity: window.capacity,
      used,
    },
    keys: keys?.map((k) => ({ key: k.key, used: k.used })),
  };
}

export function occurrenceView(occurrence: Occurrence) {
  return { ...occurrence, recordedAt: iso(occurrence.recordedAt) };
}

export function roleView(role: RoleView) {
  return {
    role: role.role,
    holder: role.holder ?? null,
    leaseEpoch: role.leaseEpoch,
    since: iso(role.since) ?? null,
    volunteers: role.volunteers,
    registered: role.registered,
  };
}

export function sessionHoldingsView(holdings: SessionHoldings) {
  return {
    sessionId: holdings.sessionId,
    expiresAt: iso(holdings.expiresAt),
    tasks: holdings.tasks.map((task) => ({ ...task, leaseDeadline: iso(task.leaseDeadline) })),
    roles: holdings.roles,
  };
}

/** A push connect ticket as the API answers it. */
export const pushTicketView = (ticket: { ticket: string; url: string; expiresAt: number }) => ({
  ticket: ticket.ticket,
  url: ticket.url,
  expiresAt: iso(ticket.expiresAt),
});

/** One item of a batch answer: the task, or the error the single call would have answered. */
export const itemView = (outcome: ItemOutcome<{ task: Task; created?: boolean; debounced?: boolean }>) =>
  outcome.ok
    ? {
        ok: true,
        task: taskView(outcome.task),
        ...(outcome.created === undefined ? {} : { created: outcome.created }),
        ...(outcome.debounced === undefined ? {} : { debounced: outcome.debounced }),
      }
    : {
        ok: false,
        error: { code: outcome.error.code, message: outcome.error.message },
        status: outcome.error.status,
      };
