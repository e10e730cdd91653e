/**
 * A cancellation that reaches a task's descendants (`cancel` with `cascade: true`): the task is cancelled, then its
 * children (found by their `parentTaskId`), theirs, and so on, each open one cancelled as an operator's cancel would
 * (its holder told at once, its dependents following their `onDependencyFailure`); ended ones are left as they ended,
 * but their children are walked too. The walk is kept in the store (the tasks still to walk), so it survives any
 * failure: the call walks as much as its budget allows and the supervisor finishes the rest, a pass at a time.
 *
 * Cost, per descendant: a query of its children (half a read unit; more for many children), its cancel (a read and
 * a conditional write, and what a cancel of a leased task does besides), and two writes of the walk's own records
 * (its entry put and deleted, 25 to a request); the counters take one write a page of 64.
 */

import { cancelIfOpen } from './cancel';
import { eachConcurrently } from './concurrently';
import type { SchedulerContext } from './context';
import type { CascadeProgress } from './ports/cascade-store';

/** Tasks walked at once, and children of one task cancelled at once. */
const WALK_CONCURRENCY = 8;
/** Tasks to walk read at a time. */
const WALK_PAGE = 64;
/** How long the cancel call walks before it answers (the operator function has 10 s in all). */
export const CALL_BUDGET_MS = 3_000;
/**
 * How far into a supervisor pass its walks may go (the supervisor has 60 s in all): they come last, with the time
 * the pass's other steps left.
 */
export const PASS_WALKS_UNTIL_MS = 45_000;
/** Walks one supervisor pass takes up, oldest first. */
const WALKS_PER_PASS = 20;

/** The walk's records outlive the tree they walk: kept for a day past the retention, renewed with each step. */
const purgeAtFor = (ctx: SchedulerContext): number =>
  Math.ceil(ctx.now() / 1_000) + ctx.settings.taskRetentionSeconds + 86_400;

/** Starts the walk of `rootTaskId`'s descendants (the root cancelled already) and walks for up to `budgetMs`. */
export async function cascadeFrom(
  ctx: SchedulerContext,
  rootTaskId: string,
  budgetMs = CALL_BUDGET_MS,
): Promise<CascadeProgress | undefined> {
  await ctx.cascades.start(rootTaskId, ctx.now(), purgeAtFor(ctx));
  await walk(ctx, rootTaskId, Date.now() + budgetMs);
  return ctx.cascades.progress(rootTaskId);
}

/** The supervisor's share: the walks not finished, oldest first, for up to `budgetMs` in all. */
export async function advanceCascades(
  ctx: SchedulerContext,
  budgetMs = PASS_WALKS_UNTIL_MS,
): Promise<{ readonly advanced: number; readonly finished: number }> {
  const deadline = Date.now() + budgetMs;
  let advanced = 0;
  let finished = 0;
  for (const rootTaskId of await ctx.cascades.open(WALKS_PER_PASS)) {
    if (Date.now() >= deadline) break;
    advanced++;
    if (await walk(ctx, rootTaskId, deadline)) finished++;
  }
  return { advanced, finished };
}

/** Walks until nothing is left (the walk then finished: true) or `deadline` passes. */
async function walk(ctx: SchedulerContext, rootTaskId: string, deadline: number): Promise<boolean> {
  while (Date.now() < deadline) {
    const toWalk = await ctx.cascades.toWalk(rootTaskId, WALK_PAGE);
    if (toWalk.length === 0) {
      await ctx.cascades.finish(rootTaskId, ctx.now());
      return true;
    }
    // A page at a time: its children found, the open ones cancelled, then the page's records in a few requests.
    const steps: { walked: string; children: string[] }[] = [];
    let cancelled = 0;
    await eachConcurrently(toWalk, WALK_CONCURRENCY, async (taskId) => {
      if (Date.now() >= deadline) return;
      const children = await ctx.cascades.childrenOf(taskId);
      let whole = true;
      await eachConcurrently(children, WALK_CONCURRENCY, async (child) => {
        // Out of time: the task stays to walk, and the next walk cancels the rest of its children (those cancelled
        // already are passed over).
        if (Date.now() >= deadline) whole = false;
        else if ((await cancelIfOpen(ctx, child)).changed) cancelled++;
      });
      if (whole) steps.push({ walked: taskId, children });
    });
    if (steps.length > 0 || cancelled > 0)
      await ctx.cascades.walked(rootTaskId, steps, cancelled, purgeAtFor(ctx));
  }
  return false;
}
