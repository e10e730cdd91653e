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
});
