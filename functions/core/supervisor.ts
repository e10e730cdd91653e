/**
 * One supervisor pass, as the Scheduler-Agent-Supervisor pattern has it: give new tasks still open a look in the due
 * index (`list-walk.ts`), take back leases of silent agents and of
 * attempts past their deadline (those of live agents too, see `deadlines.ts`) (retrying with backoff, or dead), send again what SQS lost, and climb the
 * starvation ladder, hand over roles whose holders went silent, handle schedule occurrences that were missed, and walk on
 * cancellations of descendants. Safe to run twice at once: every step is
 * a conditional write. Bounded per pass.
 */
import { errorName } from '#domain/errors';
import { advanceCascades, PASS_WALKS_UNTIL_MS } from './cascade';
import type { SchedulerContext } from './context';
import { reclaimOverdue } from './deadlines';
import { walkIfDue } from './list-walk';
import { catchUpMissedRuns } from './missed-runs';
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
  readonly errors: number;
  readonly durationMs: number;
}

export async function runSupervisorPass(ctx: SchedulerContext): Promise<CycleResult> {
  const started = Date.now();
  // First, so that the tasks it gives a look are in the due index as this pass reads it.
  const walked = await walkIfDue(ctx);
  const { summary: reclaimed, scan } = await sweepExpiredLeases(ctx);
  let overdueErrors = 0;
  const overdue = await reclaimOverdue(ctx).catch((error: unknown) => {
    overdueErrors++;
    ctx.log.error('taking back overdue attempts failed', { error: errorName(error) });
    return { requeued: [], dead: [], errors: 0 };
  });
  const roles = await sweepRoles(ctx);
  // The due index as the sweep read it: one query a shard for the pass.
  const reconciled = await reconcileDispatch(ctx, { after: scan });
  let missedErrors = 0;
  const missed = await catchUpMissedRuns(ctx, ctx.settings.missedRunGraceSeconds * 1_000).catch(
    (error: unknown) => {
      missedErrors++;
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
    ctx.log.error('walking cancellations of descendants failed', { error: errorName(error) });
    return { advanced: 0, finished: 0 };
  });
  return {
    recoveredLeases:
      reclaimed.requeued.length + reclaimed.dead.length + overdue.requeued.length + overdue.dead.length,
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
    errors:
      walked.errors +
      reclaimed.errors +
      overdue.errors +
      overdueErrors +
      roles.errors +
      reconciled.errors +
      missedErrors +
      cascadeErrors,
    durationMs: Date.now() - started,
  };
}
