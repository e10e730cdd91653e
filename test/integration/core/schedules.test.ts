/**
 * Run-time schedules: recorded, handed to the backend that fires them, listed beside the declared ones; and the
 * local backend firing one occurrence through the same path as the schedule-fire function.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fireSchedule, occurrenceKey } from '#core/fire-schedule';
import type { ScheduleBackend, ScheduleRecord } from '#core/schedules';
import {
  ConflictError,
  ScheduleNotFoundError,
  ServiceUnavailableError,
  ValidationError,
} from '#domain/errors';
import { taskIdForIdempotencyKey } from '#domain/ids';
import { LocalScheduleBackend } from '#local/local-schedules';
import { createTestStack, type TestStack } from '#test/stack';

class RecordingBackend implements ScheduleBackend {
  readonly armed = new Map<string, ScheduleRecord>();
  failNext = false;
  async put(record: ScheduleRecord) {
    if (this.failNext) {
      this.failNext = false;
      throw new ServiceUnavailableError('scheduler unavailable');
    }
    this.armed.set(record.name, record);
  }
  async remove(name: string) {
    this.armed.delete(name);
  }
}

describe('schedules', () => {
  let stack: TestStack;
  const backend = new RecordingBackend();
  const declared = {
    name: 'nightly',
    expression: 'cron(0 2 * * ? *)',
    timeZone: 'Europe/Paris',
    task: { queue: 'work' },
  };

  beforeAll(async () => {
    stack = await createTestStack({ scheduleBackend: backend, declaredSchedules: [declared] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('creates, lists and deletes a run-time schedule', async () => {
    const { scheduler } = stack;
    const created = await scheduler.createSchedule({
      name: 'hourly-report',
      expression: 'rate(1 hour)',
      task: { queue: 'work', priority: 'high', payload: { report: true } },
    });

    expect(created).toMatchObject({
      name: 'hourly-report',
      timeZone: 'UTC',
      overlap: 'skip',
      missedRuns: 'skip',
      source: 'api',
    });
    expect(backend.armed.get('hourly-report')?.expression).toBe('rate(1 hour)');
    expect((await scheduler.listSchedules()).map((s) => [s.name, s.source])).toEqual([
      ['hourly-report', 'api'],
      ['nightly', 'declared'],
    ]);

    await scheduler.deleteSchedule('hourly-report');
    expect(backend.armed.has('hourly-report')).toBe(false);
    expect((await scheduler.listSchedules()).map((s) => s.name)).toEqual(['nightly']);
  });

  it.each([
    ['a taken name', { name: 'dup', expression: 'rate(1 hour)', task: { queue: 'work' } }, ConflictError],
    [
      'a declared name',
      { name: 'nightly', expression: 'rate(1 hour)', task: { queue: 'work' } },
      ConflictError,
    ],
    [
      'a bad expression',
      { name: 'bad', expression: 'cron(0 12 * * * *)', task: { queue: 'work' } },
      ValidationError,
    ],
    [
      'a bad time zone',
      { name: 'bad', expression: 'rate(1 hour)', timeZone: 'Mars/Base', task: { queue: 'work' } },
      ValidationError,
    ],
    [
      'an unknown queue',
      { name: 'bad', expression: 'rate(1 hour)', task: { queue: 'nope' } },
      ValidationError,
    ],
    [
      'an unknown field',
      { name: 'bad', expression: 'rate(1 hour)', task: { queue: 'work' }, owner: 'x' },
      ValidationError,
    ],
  ])('refuses %s', async (_, input, error) => {
    if (input.name === 'dup') await stack.scheduler.createSchedule(input);
    await expect(stack.scheduler.createSchedule(input)).rejects.toBeInstanceOf(error);
  });

  it('takes the record back when the backend cannot arm the schedule', async () => {
    backend.failNext = true;
    await expect(
      stack.scheduler.createSchedule({ name: 'flaky', expression: 'rate(1 hour)', task: { queue: 'work' } }),
    ).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect((await stack.scheduler.listSchedules()).map((s) => s.name)).not.toContain('flaky');
  });

  it('refuses to delete a declared or unknown schedule', async () => {
    await expect(stack.scheduler.deleteSchedule('nightly')).rejects.toBeInstanceOf(ConflictError);
    await expect(stack.scheduler.deleteSchedule('ghost')).rejects.toBeInstanceOf(ScheduleNotFoundError);
  });

  it('a fire delivered twice creates one task', async () => {
    const fire = {
      schedule: 'nightly',
      scheduledTime: '2027-03-13T01:00:00.000Z',
      executionId: 'a',
      task: { queue: 'work' },
    };
    const first = await fireSchedule(stack.scheduler, fire);
    const again = await fireSchedule(stack.scheduler, { ...fire, executionId: 'b', attempt: 2 });
    expect(first.created).toBe(true);
    expect(again).toEqual({ taskId: first.taskId, created: false });
    expect(first.taskId).toBe(taskIdForIdempotencyKey(occurrenceKey('nightly', fire.scheduledTime)));
  });

  it('the local backend fires a one-time schedule at its time', async () => {
    const local = new LocalScheduleBackend({ info() {}, warn() {}, error() {} });
    const fired: { name: string; at: number; late: number }[] = [];
    const at = new Date(Math.ceil((Date.now() + 1_500) / 1_000) * 1_000);
    local.start(async (record, scheduledTime) => {
      fired.push({ name: record.name, at: scheduledTime, late: Date.now() - scheduledTime });
    }, []);
    await local.put({
      name: 'once',
      expression: `at(${at.toISOString().slice(0, 19)})`,
      timeZone: 'UTC',
      task: { queue: 'work' },
      overlap: 'skip',
      missedRuns: 'skip',
      enabled: true,
      createdAt: Date.now(),
      source: 'api',
    });
    expect(local.armed()).toEqual(['once']);
    await new Promise((resolve) => setTimeout(resolve, at.getTime() - Date.now() + 300));
    local.stop();

    expect(fired).toHaveLength(1);
    expect(fired[0]?.at).toBe(at.getTime());
    expect(fired[0]?.late).toBeGreaterThanOrEqual(0);
    expect(fired[0]?.late).toBeLessThan(1_000);
  });
});
