/**
 * Attempts past their deadline while their agent is still alive. A session that goes silent is found by the
 * session sweep, and a lease's next look in the due index is moved to its deadline once the supervisor has seen
 * it; but a grant leaves that look where the dispatch put it (`reconcileAfterSeconds` after the hint, 120 s by
 * default), so an attempt with a shorter timeout whose handler hangs while its agent heartbeats would wait for
 * that look. Each supervisor pass therefore reads the tasks the live sessions hold and takes back those whose
 * deadline has passed: a deadline is enforced within one supervisor period of its passing.
 *
 * Cost, per pass: one scan of the session items (one per agent), and one eventually consistent read of each task a
 * live session holds (half a read unit for a task record up to 4 KB), batched by 100. So a task costs half a read
 * unit per pass it is leased across: none if it ends within a pass, 0.5 RRU a minute in AWS after that. Moving the
 * look at every grant instead would cost two index writes (the old index entry deleted, the new one put) on every
 * claim, whatever the task's length. Nothing is written unless a deadline has passed.
 */
import { errorName } from '#domain/errors';
import { isSessionLive, leaseExpiry, type Task } from '#domain/task';
import { eachConcurrently, SWEEP_CONCURRENCY } from './concurrently';
import type { SchedulerContext } from './context';
import { noteError, type PassError } from './pass-errors';
import { reclaimTask } from './reclaim';

export interface OverdueSummary {
  /** Live sessions the scan found. */
  readonly sessions: number;
  /** Tasks of live sessions read, and their ids. */
  readonly looked: number;
  readonly lookedIds: readonly string[];
  readonly requeued: string[];
  readonly dead: string[];
  readonly errors: number;
  /** The first few errors met, as a pass keeps them (`pass-errors.ts`). */
  readonly failures: readonly PassError[];
}

/**
 * Takes back every task of a live session whose attempt's deadline has passed, oldest reservations first, up to
 * `sweepLimit` tasks a pass. The take-back is fenced by the epoch read, so a task that ended or changed hands since
 * the (eventually consistent) read is left alone.
 */
export async function reclaimOverdue(ctx: SchedulerContext): Promise<OverdueSummary> {
  const summary = {
    sessions: 0,
    looked: 0,
    lookedIds: [] as string[],
    requeued: [] as string[],
    dead: [] as string[],
    errors: 0,
    failures: [] as PassError[],
  };
  const now = ctx.now();
  const sessions = (await ctx.sessions.listLive(now)).filter((session) => isSessionLive(session, now));
  summary.sessions = sessions.length;
  const entries = sessions
    .flatMap((session) =>
      Object.entries(session.held).map(([taskId, reservedAt]) => ({ taskId, reservedAt, session })),
    )
    .sort((a, b) => a.reservedAt - b.reservedAt)
    .slice(0, ctx.settings.sweepLimit);
  if (entries.length === 0) return summary;
  const tasks = await ctx.tasks.getMany(
    entries.map((entry) => entry.taskId),
    { consistent: false },
  );
  summary.looked = tasks.size;
  summary.lookedIds = [...tasks.keys()];
  const overdue = entries.flatMap(({ taskId, session }) => {
    const task = tasks.get(taskId);
    return task && task.sessionId === session.sessionId && leaseExpiry(task, session, now) === 'deadline'
      ? [task]
      : [];
  });
  await eachConcurrently(overdue, SWEEP_CONCURRENCY, async (task: Task) => {
    try {
      const outcome = await reclaimTask(ctx, task.taskId, { reason: 'deadline', task });
      if (outcome === 'requeued') summary.requeued.push(task.taskId);
      if (outcome === 'dead') summary.dead.push(task.taskId);
    } catch (error) {
      noteError(summary, 'overdue', error);
      ctx.log.error('taking back an overdue attempt failed', {
        taskId: task.taskId,
        error: errorName(error),
      });
    }
  });
  return summary;
}
