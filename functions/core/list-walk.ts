/**
 * The list walk: how a task of layout 2 without a look in the due index is still looked at. Such a task (its hint
 * sent at submit, no delay, no deadline to start) is written without a due entry: most tasks end within seconds,
 * and an entry written at submit and removed at the end costs two write units a task. Its list entry (its payload
 * item, written anyway) is enough: each supervisor pass walks every list partition of every queue from where the
 * last walk stopped up to `reconcileAfterSeconds` ago, and gives each task it finds still open an entry, at the time
 * today's submit would have given it (now, for a queued task: the reconcile sends a lost hint again and climbs the
 * starvation ladder from there; its deadline, for a leased one, whose lease is otherwise watched through its
 * session). A task that ended by then costs the walk half a read unit (its state, read eventually consistent) and
 * its share of the query (the item whole, about an eighth of a unit for a 1 KB payload); nothing is written for it.
 *
 * Where the walk stands in each partition (the sort key of the last entry taken) is kept per queue beside its
 * control (`QueueControlStore.saveWalk`). A task is passed only once it is looked after: ended, or given its entry.
 * One that could not be (an error) stops the walk of its partition there, so the next pass begins with it. So every
 * open task older than its partition's place has a due entry, and the due index and the tail of the list past the
 * places together hold every open task (`queueStats` counts them so).
 */
import { errorName } from '#domain/errors';
import type { Task } from '#domain/task';
import { isTerminal } from '#domain/task-status';
import { eachConcurrently, SWEEP_CONCURRENCY } from './concurrently';
import type { SchedulerContext } from './context';
import { type ErrorTally, noteError, type PassError } from './pass-errors';
import { dueAtAfterDispatch } from './timing';

/**
 * Entries a query of the walk reads, and queries a partition a pass; and the wall time a pass gives the walk before
 * leaving the rest to the next (the supervisor has 60 s). 16 partitions a queue of 20 pages of 500: up to 160,000
 * tasks a queue a pass, 2,666 tasks a second at one pass a minute.
 */
const WALK_PAGE = 500;
const WALK_PAGES = 20;
const WALK_BUDGET_MS = 20_000;

/**
 * A supervisor pass walks only if the last walk of this process is this long ago: half the time a task waits for
 * its first look, 30 s at most. In AWS (a pass a minute) every pass walks; locally, where passes come every 5 s (and
 * every 250 ms in the chaos runs), the walk's fixed cost, a query for each list partition of each queue, is not paid
 * at every pass for a horizon that has barely moved.
 */
const walkEveryMs = (ctx: SchedulerContext) => Math.min(30_000, ctx.settings.reconcileAfterSeconds * 500);
const lastWalks = new WeakMap<object, number>();

/** The walk of a supervisor pass, unless this process walked the same tables too recently (see above). */
export async function walkIfDue(ctx: SchedulerContext): Promise<WalkSummary> {
  const now = ctx.now();
  const last = lastWalks.get(ctx.tasks);
  if (last !== undefined && now >= last && now - last < walkEveryMs(ctx))
    return { walked: 0, armed: [], errors: 0, complete: true, failures: [] };
  lastWalks.set(ctx.tasks, now);
  return walkNewTasks(ctx);
}

export interface WalkSummary {
  /** List entries read. */
  readonly walked: number;
  /** Tasks given an entry in the due index. */
  readonly armed: string[];
  readonly errors: number;
  /** Every partition was walked to its end (none stopped at its pages, at the time given, or at an error). */
  readonly complete: boolean;
  /** The first few errors met, as a pass keeps them (`pass-errors.ts`). */
  readonly failures: readonly PassError[];
}

/**
 * Walks every list partition up to `upTo` (by default `reconcileAfterSeconds` ago; now, to hand every open task to a
 * reconcile of everything, or to a rebuild), within the bounds above; `budgetMs` sets a shorter wall time (a rebuild
 * has a few seconds of an operator call).
 */
export async function walkNewTasks(
  ctx: SchedulerContext,
  options: { upTo?: number; budgetMs?: number } = {},
): Promise<WalkSummary> {
  const started = Date.now();
  const budgetMs = Math.min(WALK_BUDGET_MS, options.budgetMs ?? WALK_BUDGET_MS);
  const now = ctx.now();
  const horizon = now - ctx.settings.reconcileAfterSeconds * 1_000;
  const upTo = options.upTo ?? horizon;
  const summary = {
    walked: 0,
    armed: [] as string[],
    errors: 0,
    complete: true,
    failures: [] as PassError[],
  };
  for (const queue of ctx.queues.directory.names()) {
    try {
      const places = await ctx.queueControls.readWalk(queue);
      const moved: Record<string, string> = {};
      await eachConcurrently(ctx.tasks.walkPartitions(queue), SWEEP_CONCURRENCY, async (partition) => {
        let cursor = places[partition];
        const passed = (entry: { createdAt: number; place: string }) => {
          cursor = entry.place;
          // Kept only up to the usual horizon: a walk up to now (a reconcile of everything) may pass a task whose
          // submission is still writing its state, which the next walk must see again.
          if (entry.createdAt <= horizon) moved[partition] = entry.place;
        };
        for (let page = 0; page < WALK_PAGES && Date.now() - started < budgetMs; page++) {
          const { entries } = await ctx.tasks.queryWalk(partition, {
            ...(cursor === undefined ? {} : { after: cursor }),
            upTo,
            limit: WALK_PAGE,
          });
          summary.walked += entries.length;
          if (!(await walkEntries(ctx, entries, now, summary, passed))) break;
          if (entries.length < WALK_PAGE) return;
        }
        summary.complete = false;
      });
      if (Object.keys(moved).length > 0)
        await ctx.queueControls.saveWalk(queue, { ...places, ...moved }, now);
    } catch (error) {
      noteError(summary, 'listWalk', error);
      summary.complete = false;
      ctx.log.error('walking a queue’s new tasks failed', { queue, error: errorName(error) });
    }
  }
  return summary;
}

/** Looks after a page of entries in order; false when one could not be, which stops the walk of its partition. */
async function walkEntries(
  ctx: SchedulerContext,
  entries: readonly { taskId: string; createdAt: number; place: string }[],
  now: number,
  summary: { armed: string[] } & ErrorTally,
  passed: (entry: { createdAt: number; place: string }) => void,
): Promise<boolean> {
  if (entries.length === 0) return true;
  const tasks = await ctx.tasks.getMany([...new Set(entries.map((entry) => entry.taskId))], {
    consistent: false,
  });
  for (const entry of entries) {
    const task = tasks.get(entry.taskId);
    // No state item (its submission failed after the payload), or an entry of a retried submission: nothing.
    if (task && task.createdAt === entry.createdAt && !isTerminal(task.status) && !task.inDueIndex) {
      try {
        await arm(ctx, task, now);
        summary.armed.push(task.taskId);
      } catch (error) {
        noteError(summary, 'listWalk', error);
        ctx.log.error('giving a task its look in the due index failed', {
          taskId: task.taskId,
          error: errorName(error),
        });
        return false;
      }
    }
    passed(entry);
  }
  return true;
}

/**
 * The look an open task is given: when its submit would have put it for a queued one, its deadline for a leased
 * one. A refused write means the task changed since it was read (it ended, or was given an entry): nothing to do.
 */
async function arm(ctx: SchedulerContext, task: Task, now: number): Promise<void> {
  const dueAt =
    task.status === 'leased'
      ? (task.leaseDeadline ?? now)
      : Math.max(now, dueAtAfterDispatch(ctx, task.notBefore ?? task.createdAt, task.createdAt));
  await ctx.tasks.armLook(task, Math.min(dueAt, task.expiresAt ?? dueAt));
}
