/**
 * The scheduler's cumulative figures: every supervisor pass adds its figures to one record (`CycleStatsStore`, one
 * write a pass) and sets itself as the last pass; an operator reads them at `GET /v1/scheduler/stats`. Passes that
 * overlap both count: the store adds, it does not read and write back.
 */
import type { SchedulerContext } from './context';
import { CYCLE_FIGURES, type CycleFigures, type CycleIds } from './cycle-figures';
import type { PassError } from './pass-errors';
import type { PassRecord } from './ports/cycle-stats-store';

export interface CycleStats {
  /** The figures added up over every pass recorded, and how many passes that was. */
  readonly cumulative: CycleFigures & { readonly passes: number };
  /** The pass recorded last; absent before the first. */
  readonly lastPass?: {
    readonly at: number;
    readonly durationMs: number;
    readonly figures: CycleFigures;
    readonly ids: CycleIds;
  };
  /** The errors the last pass that met any kept (at most `PASS_ERRORS_KEPT`), each with that pass's time. */
  readonly lastErrors: readonly (PassError & { readonly at: number })[];
}

const zeros = Object.fromEntries(CYCLE_FIGURES.map((name) => [name, 0])) as CycleFigures;

/** The cumulative figures as recorded: zeros, no last pass and no errors before the first pass. */
export async function readCycleStats(ctx: SchedulerContext): Promise<CycleStats> {
  const stored = await ctx.cycleStats.get();
  return {
    cumulative: { passes: stored?.passes ?? 0, ...(stored?.totals ?? zeros) },
    ...(stored?.lastPass ? { lastPass: stored.lastPass } : {}),
    lastErrors: (stored?.lastErrors?.errors ?? []).map((error) => ({
      at: stored?.lastErrors?.at ?? 0,
      ...error,
    })),
  };
}

/** Adds a pass to the cumulative figures. Never throws: a pass that could not be recorded is logged, not undone. */
export async function recordPass(ctx: SchedulerContext, pass: PassRecord): Promise<boolean> {
  try {
    await ctx.cycleStats.add(pass);
    return true;
  } catch (error) {
    ctx.log.error('recording the pass’s figures failed; the cumulative figures miss this pass', {
      error: error instanceof Error ? error.name : String(error),
    });
    return false;
  }
}
