/**
 * Occurrences that should have fired but were not recorded (the scheduler was down, or a delivery failed past
 * its retries) are found from each schedule's ledger and handled by its missed-run policy:
 * - `skip`: recorded as skipped (`missed`), nothing runs;
 * - `runOnce`: the latest one runs, the others are recorded as skipped;
 * - `runAll`: each runs, the latest `MISSED_RUN_LIMIT` at most.
 * A schedule with no recorded occurrence has nothing to catch up. Running twice is harmless: each occurrence is
 * recorded once, by its scheduled time.
 */

import type { ScheduleRecord } from '#domain/schedule';
import { nextFireTimes, parseScheduleExpression } from '#domain/schedule-expression';
import type { SchedulerContext } from './context';
import { fireSchedule } from './fire-schedule';
import { readOccurrences, recordOccurrence } from './occurrences';
import { listSchedules } from './schedules';

export const MISSED_RUN_LIMIT = 10;

export interface MissedRunSummary {
  readonly fired: number;
  readonly skipped: number;
}

export async function catchUpMissedRuns(ctx: SchedulerContext, graceMs: number): Promise<MissedRunSummary> {
  const now = ctx.now();
  let fired = 0;
  let skipped = 0;
  for (const schedule of await listSchedules(ctx)) {
    if (!schedule.enabled) continue;
    const known = await readOccurrences(ctx, schedule.name);
    const last = known[0];
    if (!last) continue;
    const missed = nextFireTimes(parseScheduleExpression(schedule.expression), {
      after: Date.parse(last.scheduledTime),
      timeZone: schedule.timeZone,
      limit: 1_000,
      endAt: now - graceMs,
    });
    if (missed.length === 0) continue;
    const toRun =
      schedule.missedRuns === 'runAll'
        ? missed.slice(-MISSED_RUN_LIMIT)
        : schedule.missedRuns === 'runOnce'
          ? missed.slice(-1)
          : [];
    const toSkip = missed.filter((t) => !toRun.includes(t)).slice(-MISSED_RUN_LIMIT);
    let ledger = known;
    for (const time of toSkip) {
      const outcome = await recordOccurrence(
        ctx,
        schedule.name,
        { scheduledTime: new Date(time).toISOString(), status: 'skipped', reason: 'missed', recordedAt: now },
        ledger,
      );
      if (outcome.recorded) skipped++;
      ledger = await readOccurrences(ctx, schedule.name);
    }
    for (const time of toRun) {
      const outcome = await fireSchedule(ctx, fireOf(schedule, time));
      if (outcome.created && outcome.status === 'fired') fired++;
    }
  }
  return { fired, skipped };
}

const fireOf = (schedule: ScheduleRecord, time: number) => ({
  schedule: schedule.name,
  scheduledTime: new Date(time).toISOString(),
  overlap: schedule.overlap,
  missedRuns: schedule.missedRuns,
  task: schedule.task,
});
