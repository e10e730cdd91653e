/**
 * One supervisor pass, as the Scheduler-Agent-Supervisor pattern has it: give new tasks still open a look in the due
 * index (`list-walk.ts`), take back leases of silent agents and of
 * attempts past their deadline (those of live agents too, see `deadlines.ts`) (retrying with backoff, or dead), send again what SQS lost, and climb the
 * starvation ladder, hand over roles whose holders went silent, handle schedule occurrences that were missed, and walk on
 * cancellations of descendants. Safe to run twice at once: every step is
 * a conditional write. Bounded per pass.
 *
 * Each pass reports its figures (`cycle-figures.ts`: runs pending and active, sessions scanned, leases recovered,
 * wakes, and the tasks the ladder and the pauses hold, with their ids) and the errors it went on from, by name and
 * short message (`pass-errors.ts`), and adds them to the scheduler's cumulative figures in one write
 * (`cycle-stats.ts`).
 */
import { errorName } from '#domain/errors';
import { advanceCascades, PASS_WALKS_UNTIL_MS } from './cascade';
import type { SchedulerContext } from './context';
import {
  CYCLE_FIGURES,
  type CycleFigures,
  type CycleIdFigureName,
  type CycleIds,
  cycleIds,
} from './cycle-figures';
import { recordPass } from './cycle-stats';
import { reclaimOverdue } from './deadlines';
import { walkIfDue } from './list-walk';
import { catchUpMissedRuns } from './missed-runs';
import { firstErrors, type PassError, passError } from './pass-errors';
import { sweepExpiredLeases } from './reclaim';
import { reconcileDispatch } from './reconcile';
import { sweepRoles } from './roles';

export interface CycleResult {
  /** Leases taken back (requeued or dead). */
  readonly recoveredLeases: number;
  readonly requeued: number;
  readonly deadLettered: number;
  readonly agentsOffline: number;
  readonly reconciled: number;
  readonly promoted: number;
  readonly starved: number;
  /** Tasks that reached the top of the ladder: they need a person. */
  readonly escalated: number;
  readonly noCapableAgent: readonly string[];
  /** Queues a worker was asked for (`agent.spawnRequested`), at most once per `announceAfter` each. */
  readonly spawnRequested: readonly string[];
  readonly pausedQueuesSkipped: number;
  /** Missed schedule occurrences run, or recorded as skipped, by their missed-run policy. */
  readonly missedRunsFired: number;
  readonly missedRunsSkipped: number;
  /** Roles passed to a live volunteer because their holder's session was over, and roles left free. */
  readonly rolesHandedOver: number;
  readonly rolesFreed: number;
  /** New tasks' list entries the walk read, and the tasks of them still open, given a look in the due index. */
  readonly listWalked: number;
  readonly listArmed: number;
  /** Cancellations of descendants walked on by this pass, and those it finished. */
  readonly cascadesAdvanced: number;
  readonly cascadesFinished: number;
  /** Queued tasks the pass looked at, and leased ones (see `cycle-figures.ts` for each figure). */
  readonly pendingRuns: number;
  readonly activeRuns: number;
  readonly sessionsScanned: number;
  /** Leases taken back: `recoveredLeases` under the name the figures share. */
  readonly leasesRecovered: number;
  readonly wakeAttempts: number;
  readonly wakesSucceeded: number;
  readonly wakesFailed: number;
  /** Starving tasks whose queue no live session serves (`noCapableAgent` names the queues). */
  readonly noMatchingSession: number;
  readonly recentlyNotified: number;
  readonly unclaimable: number;
  /** Tasks marked as needing attention: `escalated` under the name the figures share. */
  readonly needsAttention: number;
  /** The tasks the id-bearing figures counted, the first `CYCLE_IDS_KEPT` (20) each. */
  readonly ids: CycleIds;
  readonly errors: number;
  /** The first errors the pass met (at most `PASS_ERRORS_KEPT`): step, name, short message. */
  readonly failures: readonly PassError[];
  /** When the pass started. */
  readonly at: number;
  readonly durationMs: number;
}

/** A pass's figures by their shared names (`spawnRequested`: the workers asked for). */
export function figuresOf(cycle: CycleResult): CycleFigures {
  const figures = { ...cycle, spawnRequested: cycle.spawnRequested.length };
  return Object.fromEntries(CYCLE_FIGURES.map((name) => [name, figures[name]])) as CycleFigures;
}

export async function runSupervisorPass(ctx: SchedulerContext): Promise<CycleResult> {
  const started = Date.now();
  const at = ctx.now();
  const failures: PassError[] = [];
  // First, so that the tasks it gives a look are in the due index as this pass reads it.
  const walked = await walkIfDue(ctx);
  const { summary: reclaimed, scan } = await sweepExpiredLeases(ctx);
  let overdueErrors = 0;
  const overdue = await reclaimOverdue(ctx).catch((error: unknown) => {
    overdueErrors++;
    failures.push(passError('overdue', error));
    ctx.log.error('taking back overdue attempts failed', { error: errorName(error) });
    return { sessions: 0, looked: 0, lookedIds: [], requeued: [], dead: [], errors: 0, failures: [] };
  });
  const roles = await sweepRoles(ctx);
  // The due index as the sweep read it: one query a shard for the pass.
  const reconciled = await reconcileDispatch(ctx, { after: scan });
  let missedErrors = 0;
  const missed = await catchUpMissedRuns(ctx, ctx.settings.missedRunGraceSeconds * 1_000).catch(
    (error: unknown) => {
      missedErrors++;
      failures.push(passError('missedRuns', error));
      ctx.log.error('catching up missed schedule runs failed', {
        error: errorName(error),
      });
      return { fired: 0, skipped: 0 };
    },
  );
  // Last, with the time left: cancellations of descendants a cancel call did not finish.
  let cascadeErrors = 0;
  const cascades = await advanceCascades(
    ctx,
    Math.max(0, PASS_WALKS_UNTIL_MS - (Date.now() - started)),
  ).catch((error: unknown) => {
    cascadeErrors++;
    failures.push(passError('cascades', error));
    ctx.log.error('walking cancellations of descendants failed', { error: errorName(error) });
    return { advanced: 0, finished: 0 };
  });
  const recovered = [...reclaimed.requeued, ...reclaimed.dead, ...overdue.requeued, ...overdue.dead];
  const counted: Record<CycleIdFigureName, readonly string[]> = {
    leasesRecovered: recovered,
    wakesFailed: reconciled.wakesFailed,
    noMatchingSession: reconciled.noMatchingSession,
    recentlyNotified: reconciled.recentlyNotified,
    unclaimable: reconciled.unclaimable,
    starved: reconciled.starved,
    spawnRequested: reconciled.spawnRequestedFor,
    needsAttention: reconciled.needsAttention,
  };
  const ids = cycleIds((name) => counted[name]);
  const result: CycleResult = {
    recoveredLeases: recovered.length,
    requeued: reclaimed.requeued.length + overdue.requeued.length,
    deadLettered: reclaimed.dead.length + overdue.dead.length,
    agentsOffline: reclaimed.expiredSessions,
    reconciled: reconciled.redispatched.length,
    promoted: reconciled.promoted.length,
    starved: reconciled.starved.length,
    escalated: reconciled.needsAttention.length,
    noCapableAgent: reconciled.noCapableAgent,
    spawnRequested: reconciled.spawnRequested,
    pausedQueuesSkipped: reconciled.pausedSkipped,
    missedRunsFired: missed.fired,
    missedRunsSkipped: missed.skipped,
    rolesHandedOver: roles.handedOver,
    rolesFreed: roles.freed,
    listWalked: walked.walked,
    listArmed: walked.armed.length,
    cascadesAdvanced: cascades.advanced,
    cascadesFinished: cascades.finished,
    pendingRuns: reconciled.pending,
    // A task of a live session that the due index named too is counted once.
    activeRuns: reclaimed.looked + overdue.lookedIds.filter((id) => !scan.handled.has(id)).length,
    sessionsScanned: overdue.sessions + reclaimed.sessionsFound,
    leasesRecovered: recovered.length,
    wakeAttempts: reconciled.wakeAttempts,
    wakesSucceeded: reconciled.wakesSucceeded,
    wakesFailed: reconciled.wakesFailed.length,
    noMatchingSession: reconciled.noMatchingSession.length,
    recentlyNotified: reconciled.recentlyNotified.length,
    unclaimable: reconciled.unclaimable.length,
    needsAttention: reconciled.needsAttention.length,
    ids,
    errors:
      walked.errors +
      reclaimed.errors +
      overdue.errors +
      overdueErrors +
      roles.errors +
      reconciled.errors +
      missedErrors +
      cascadeErrors,
    // In the order the steps ran.
    failures: firstErrors(
      walked.failures,
      reclaimed.failures,
      overdue.failures,
      roles.failures,
      reconciled.failures,
      failures,
    ),
    at,
    durationMs: Date.now() - started,
  };
  await recordPass(ctx, {
    at,
    durationMs: result.durationMs,
    figures: figuresOf(result),
    ids,
    errors: result.failures,
  });
  return result;
}
