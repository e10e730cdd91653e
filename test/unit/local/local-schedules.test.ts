/**
 * The local stack's schedules: a rate() created through the API keeps counting from its creation across a
 * restart, as EventBridge Scheduler counts it and as the schedule's view lists its next fires.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ScheduleRecord } from '#domain/schedule';
import { LocalScheduleBackend } from '#local/local-schedules';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 25, 9, 0, 7);

const record = (source: 'api' | 'declared'): ScheduleRecord => ({
  name: `every-ten-${source}`,
  expression: 'rate(10 minutes)',
  timeZone: 'UTC',
  task: { queue: 'work', payload: {} },
  overlap: 'skip',
  missedRuns: 'skip',
  enabled: true,
  createdAt: source === 'api' ? T0 : 0,
  source,
});

describe('local schedules', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    // A restart 25 minutes after the schedule was created.
    vi.setSystemTime(T0 + 25 * MINUTE);
  });
  afterEach(() => vi.useRealTimers());

  it('fires a rate() created through the API on its own count after a restart; a declared one counts from the start', async () => {
    const fired: { name: string; at: number }[] = [];
    const backend = new LocalScheduleBackend({ info() {}, warn() {}, error() {} });
    backend.start(
      async (schedule, scheduledTime) => {
        fired.push({ name: schedule.name, at: scheduledTime });
      },
      [record('api'), record('declared')],
    );
    await vi.advanceTimersByTimeAsync(11 * MINUTE);
    backend.stop();
    expect(fired).toEqual([
      { name: 'every-ten-api', at: T0 + 30 * MINUTE },
      { name: 'every-ten-declared', at: T0 + 35 * MINUTE },
    ]);
  });

  it('with a spread, a fire comes anywhere in it; an early fire comes a minute ahead of its occurrence, anywhere in its minute', async () => {
    const draws = [0.25, 0.5, 0.999, 0];
    let n = 0;
    const backend = new LocalScheduleBackend({ info() {}, warn() {}, error() {} }, Date.now, {
      spreadMs: MINUTE,
      random: () => draws[n++ % draws.length] ?? 0,
    });
    const start = Date.now();
    const fired: { scheduledTime: number; at: number; early: boolean }[] = [];
    backend.start(
      async (schedule, scheduledTime, delivery) => {
        fired.push({ scheduledTime, at: Date.now(), early: delivery?.early === true });
        // As the fire function does: each fire arms the next occurrence's early fire.
        if (!delivery?.early)
          await backend.armEarlyFire?.(
            { name: schedule.name, expression: schedule.expression, timeZone: 'UTC', task: schedule.task },
            scheduledTime + 10 * MINUTE,
          );
      },
      [record('declared')],
    );
    await vi.advanceTimersByTimeAsync(21 * MINUTE);
    // The next occurrence's own fire and its early fire wait.
    expect(backend.armed().sort()).toEqual(['early:every-ten-declared', 'every-ten-declared']);
    backend.stop();
    const first = T0 + 35 * MINUTE;
    expect(first).toBeGreaterThan(start);
    expect(fired).toEqual([
      // The first occurrence a quarter into its minute; the next one's early fire, armed by it, half into the
      // minute before that occurrence; that occurrence's own delivery at the end of its minute.
      { scheduledTime: first, at: first + 15_000, early: false },
      { scheduledTime: first + 10 * MINUTE, at: first + 10 * MINUTE - MINUTE + 30_000, early: true },
      { scheduledTime: first + 10 * MINUTE, at: first + 10 * MINUTE + 59_940, early: false },
    ]);
  });

  it('on time (no spread) it arms no early fires: they are not needed', () => {
    expect(new LocalScheduleBackend({ info() {}, warn() {}, error() {} }).armEarlyFire).toBeUndefined();
  });
});
