/**
 * Declared schedules, fired locally at their exact times with the same expression module the construct validates
 * with, and the same fire path as the schedule-fire function (one task per occurrence).
 */
import type { SchedulerLog } from '#core/context';
import { fireSchedule } from '#core/fire-schedule';
import type { Scheduler } from '#core/scheduler';
import { nextFireTime, parseScheduleExpression } from '#domain/schedule-expression';
import type { TaskScheduleProps } from '../infra/task-schedule';

/** setTimeout's limit; longer waits are taken in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface LocalSchedules {
  stop(): void;
}

export function startLocalSchedules(
  scheduler: Scheduler,
  schedules: readonly TaskScheduleProps[],
  log: SchedulerLog,
  now: () => number = Date.now,
): LocalSchedules {
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;

  const arm = (schedule: TaskScheduleProps, after: number) => {
    if (stopped || schedule.enabled === false) return;
    const parsed = parseScheduleExpression(schedule.expression);
    const next = nextFireTime(parsed, {
      after,
      ...(schedule.timeZone ? { timeZone: schedule.timeZone } : {}),
    });
    if (next === undefined) return;
    const wait = () => {
      const remaining = next - now();
      const timer = setTimeout(
        () => {
          timers.delete(timer);
          if (next - now() > 0) return wait();
          fireSchedule(scheduler, {
            schedule: schedule.name,
            scheduledTime: new Date(next).toISOString(),
            overlap: schedule.overlap ?? 'skip',
            missedRuns: schedule.missedRuns ?? 'skip',
            task: schedule.task,
          })
            .then((fired) =>
              log.info('schedule fired', { schedule: schedule.name, scheduledTime: next, ...fired }),
            )
            .catch((error: unknown) =>
              log.error('schedule fire failed', {
                schedule: schedule.name,
                error: error instanceof Error ? error.message : String(error),
              }),
            );
          arm(schedule, next);
        },
        Math.max(0, Math.min(remaining, MAX_TIMER_MS)),
      );
      timers.add(timer);
    };
    wait();
  };

  const start = now();
  for (const schedule of schedules) arm(schedule, start);
  return {
    stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
