/**
 * Progress reports of running tasks (`POST /v1/agent/tasks/{taskId}/progress`, and many at once): taken only from
 * the agent that holds the task, under the epoch it presents, before its attempt's deadline; kept as the task's last
 * report (one item per task, beside its state), shown by `GET /v1/tasks/{id}`, and pushed at once to the
 * connections watching the task.
 *
 * Cost of one report: a consistent read of the task (one read unit up to 4 KB) for its lease, one write of the report
 * (a write unit a KB: one for a percentage and a line, up to 17 for 16 KB of data); for a watched task, a query of its
 * watchers (half a read unit) and a frame to each.
 */
import { LeaseLostError, TaskNotFoundError, ValidationError } from '#domain/errors';
import { PROGRESS_LIMITS, type Progress, saysSomething } from '#domain/progress';
import { isLeasedTo } from '#domain/task';
import { encodeBoundedJson } from '#domain/task-spec';
import { type ItemOutcome, outcomeOf } from './batches';
import type { SchedulerContext } from './context';
import { payloadPurgeAtFor } from './lifetimes';
import { announceProgress } from './push';

/** One report: the task, the lease it is held under, and what to say. */
export interface ProgressReport {
  readonly taskId: string;
  readonly leaseEpoch: number;
  readonly percent?: number;
  readonly message?: string;
  readonly data?: unknown;
}

/** Keeps a report of a task the agent holds; refused (`LeaseLost`, `TaskNotFound`) when it does not hold it. */
export async function reportProgress(
  ctx: SchedulerContext,
  agentId: string,
  report: ProgressReport,
): Promise<Progress> {
  if (!saysSomething(report)) throw new ValidationError('a report says one of percent, message or data');
  const dataJson =
    report.data === undefined ? undefined : encodeBoundedJson(report.data, PROGRESS_LIMITS.dataBytes, 'data');
  const task = await ctx.tasks.get(report.taskId);
  // Only its holder learns more than that the task does not exist (as for a finish).
  if (!task || (task.owner !== agentId && task.lastFinish?.agentId !== agentId)) {
    throw new TaskNotFoundError(report.taskId);
  }
  const now = ctx.now();
  if (!isLeasedTo(task, { agentId, leaseEpoch: report.leaseEpoch }, now)) throw lost(report);
  const progress: Progress = {
    ...(report.percent === undefined ? {} : { percent: report.percent }),
    ...(report.message === undefined ? {} : { message: report.message }),
    ...(dataJson === undefined ? {} : { dataJson }),
    at: now,
    leaseEpoch: report.leaseEpoch,
    attempt: task.attempt,
  };
  // Kept as long as a payload written now would be: past any attempt the report could still be shown for.
  if (!(await ctx.progress.put(task.taskId, progress, payloadPurgeAtFor(ctx.settings, now))))
    throw lost(report);
  await announceProgress(ctx, task, progress);
  return progress;
}

/** Reports of several tasks, each with its own outcome (a refused one does not fail the others). */
export async function reportProgressBatch(
  ctx: SchedulerContext,
  agentId: string,
  reports: readonly ProgressReport[],
): Promise<ItemOutcome<{ progress: Progress }>[]> {
  if (reports.length === 0 || reports.length > PROGRESS_LIMITS.perCall) {
    throw new ValidationError(`tasks: an array of 1 to ${PROGRESS_LIMITS.perCall} items`);
  }
  return Promise.all(
    reports.map((report) =>
      outcomeOf(reportProgress(ctx, agentId, report).then((progress) => ({ progress }))),
    ),
  );
}

const lost = (report: ProgressReport) =>
  new LeaseLostError(`the lease on task ${report.taskId} at epoch ${report.leaseEpoch} is lost`, {
    context: { taskId: report.taskId, leaseEpoch: report.leaseEpoch },
  });
