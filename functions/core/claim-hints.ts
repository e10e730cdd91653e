/**
 * The hints a claim works from: received from the agent's queues in priority order, sorted to one per task (those
 * standing for a task the session already holds or is deciding on set aside), and the fate of each once the claim
 * is done with it: deleted, or handed back to its queue to be seen again later.
 */
import { errorName } from '#domain/errors';
import type { ReceivedHint, ReceivedTurn } from '#domain/hint';
import { claimOrder } from '#domain/priority';
import type { AgentSession } from '#domain/task';
import { LIMITS } from '#domain/task-spec';
import { type Examined, examine, merge } from './claim-reservation';
import type { SchedulerContext } from './context';
import { handBackTurns } from './turns';

/** Seconds a hint is hidden when a parallel claim of the same agent is deciding on the same task. */
const IN_FLIGHT_RETRY_SECONDS = 2;

/** Logs a failure of housekeeping that the claim carries on without. */
export const logged = (ctx: SchedulerContext, what: string) => (error: unknown) =>
  ctx.log.warn(`${what} failed`, { error: errorName(error) });

/** What becomes of the hints a claim received: deleted (done with), or handed back to be seen again later. */
export class HintFates {
  readonly toDelete: ReceivedHint[] = [];
  readonly toReturn: { hint: ReceivedHint; seconds: number }[] = [];

  delete(...hints: ReceivedHint[]): void {
    this.toDelete.push(...hints);
  }

  returnLater(seconds: number, ...hints: ReceivedHint[]): void {
    for (const hint of hints) this.toReturn.push({ hint, seconds });
  }
}

export interface SortedHints {
  /** The hints of each task; extra copies share the first one's fate. */
  readonly byTask: ReadonlyMap<string, ReceivedHint[]>;
  /** Tasks the claim may try to take. */
  readonly candidates: string[];
  readonly examined: Examined;
}

/**
 * One hint per task. A hint for a task already in the session's `held` map stands for one we hold (the hint is
 * stale), a leftover entry, or a task a parallel claim of ours is deciding on: it is set aside, and the rest are
 * the candidates.
 */
export async function sortHints(
  ctx: SchedulerContext,
  session: AgentSession,
  received: readonly ReceivedHint[],
  seen: Examined,
  readAt: number,
  fates: HintFates,
): Promise<SortedHints> {
  const byTask = new Map<string, ReceivedHint[]>();
  for (const hint of received) byTask.set(hint.taskId, [...(byTask.get(hint.taskId) ?? []), hint]);

  let examined = seen;
  const unexamined = [...byTask.keys()].filter(
    (id) => id in session.held && !examined.stale.has(id) && !examined.heldByUs.has(id),
  );
  if (unexamined.length > 0) examined = merge(examined, await examine(ctx, session, unexamined, readAt));

  const candidates: string[] = [];
  for (const [taskId, hints] of byTask) {
    const heldAt = examined.heldByUs.get(taskId);
    if (heldAt !== undefined) {
      // A hint older than our lease is stale. One as new (the task was given back since; the read was eventually
      // consistent) stands for the task waiting again: it goes back for a moment.
      for (const hint of hints) {
        if (hint.leaseEpoch < heldAt) fates.delete(hint);
        else fates.returnLater(IN_FLIGHT_RETRY_SECONDS, hint);
      }
    } else if (taskId in session.held && !examined.stale.has(taskId)) {
      const [first, ...copies] = hints;
      fates.delete(...copies);
      if (first) fates.returnLater(IN_FLIGHT_RETRY_SECONDS, first);
    } else {
      candidates.push(taskId);
    }
  }
  return { byTask, candidates, examined };
}

/** When each SQS queue (by URL) was last found empty, per context: one per function instance. */
const foundEmpty = new WeakMap<SchedulerContext, Map<string, number>>();

/**
 * Reads up to `capacity` hints: priority tiers in the claim order (see `claimOrder`), and within a tier the
 * agent's queues starting at a random one so no queue is always last. Tiers found empty in the last
 * `emptyTierRecheckMs` are read only if the others did not fill the claim.
 *
 * Turns of requirement sets the session does not meet (`serves`) do not fill the claim: each is handed back at once
 * for an agent that can serve it, and the claim reads on, past at most `LIMITS.claimMax` of them in all (a turn
 * stands for its lane's tasks, so that is at most ten sets, never ten sets' backlogs).
 */
export async function receiveHints(
  ctx: SchedulerContext,
  queues: readonly string[],
  capacity: number,
  serves: (turn: ReceivedTurn) => boolean = () => true,
): Promise<{ hints: ReceivedHint[]; turns: ReceivedTurn[] }> {
  const hints: ReceivedHint[] = [];
  const turns: ReceivedTurn[] = [];
  let passedOver = 0;
  const handedBack: Promise<void>[] = [];
  const poison: Parameters<SchedulerContext['queues']['delete']>[0][number][] = [];
  const offset = Math.floor(ctx.random() * queues.length);
  const rotated = [...queues.slice(offset), ...queues.slice(0, offset)];
  const tiers = claimOrder(ctx.random(), ctx.settings.priorityWeights).flatMap((priority) =>
    rotated.map((queue) => ({ queue, priority, key: `${queue}/${priority}` })),
  );
  const empty = foundEmpty.get(ctx) ?? new Map<string, number>();
  foundEmpty.set(ctx, empty);
  const now = ctx.now();
  const recentlyEmpty = (key: string) =>
    (empty.get(key) ?? -Infinity) > now - ctx.settings.emptyTierRecheckMs;
  const skipped = tiers.filter((tier) => recentlyEmpty(tier.key));
  for (const tier of [...tiers.filter((t) => !recentlyEmpty(t.key)), ...skipped]) {
    const wanted = Math.min(capacity - hints.length - turns.length, LIMITS.claimMax - passedOver);
    if (wanted <= 0) break;
    const batch = await ctx.queues.receive(tier.queue, tier.priority, {
      max: wanted,
      visibilityTimeoutSeconds: ctx.settings.claimVisibilityTimeoutSeconds,
      waitTimeSeconds: ctx.settings.receiveWaitSeconds,
    });
    if (batch.hints.length === 0 && batch.turns.length === 0 && batch.poison.length === 0)
      empty.set(tier.key, now);
    else empty.delete(tier.key);
    hints.push(...batch.hints);
    const foreign = batch.turns.filter((turn) => !serves(turn));
    turns.push(...batch.turns.filter((turn) => serves(turn)));
    poison.push(...batch.poison);
    if (foreign.length > 0) {
      passedOver += foreign.length;
      handedBack.push(handBackTurns(ctx, foreign).catch(logged(ctx, 'hand back turns')));
    }
  }
  if (poison.length > 0) await ctx.queues.delete(poison).catch(logged(ctx, 'delete unreadable messages'));
  await Promise.all(handedBack);
  return { hints, turns };
}
