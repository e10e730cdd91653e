/**
 * The occurrence ledger of a schedule: a map from scheduled time to what happened (fired with a task, or skipped
 * and why). An occurrence is recorded once per scheduled time, never per delivery (whose execution id changes on
 * every retry): a fire delivered twice is recorded once.
 */
import type { SchedulerContext } from './context';
import type { Occurrence } from './ports/occurrence-store';

export type { Occurrence, OccurrenceStatus } from './ports/occurrence-store';

/** Entries kept per schedule; older ones are dropped as new ones come. */
export const OCCURRENCES_KEPT = 100;

/** The ledger of `schedule`, newest first. */
export async function readOccurrences(ctx: SchedulerContext, schedule: string): Promise<Occurrence[]> {
  const occurrences = await ctx.occurrences.read(schedule);
  return occurrences.sort((a, b) => b.scheduledTime.localeCompare(a.scheduledTime));
}

/**
 * Records an occurrence unless its scheduled time is already recorded; then returns the recorded one instead.
 * Drops the oldest entries past `OCCURRENCES_KEPT` in the same write.
 */
export async function recordOccurrence(
  ctx: SchedulerContext,
  schedule: string,
  occurrence: Occurrence,
  known: readonly Occurrence[],
): Promise<{ recorded: true } | { recorded: false; existing: Occurrence }> {
  const { scheduledTime } = occurrence;
  const drop = known
    .slice(OCCURRENCES_KEPT - 1)
    .map((o) => o.scheduledTime)
    .filter((t) => t !== scheduledTime);
  if (await ctx.occurrences.record(schedule, occurrence, { first: known.length === 0, drop })) {
    return { recorded: true };
  }
  const existing = (await readOccurrences(ctx, schedule)).find((o) => o.scheduledTime === scheduledTime);
  if (existing) return { recorded: false, existing };
  // The ledger changed shape under us (created by a concurrent first fire): try once more against it.
  return recordOccurrence(ctx, schedule, occurrence, await readOccurrences(ctx, schedule));
}
