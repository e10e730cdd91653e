/**
 * A task's attempts pieced together from its events and its record, without a browser: each claim opens one, its
 * end event closes it, a claim of the same attempt number again means it was given back, a suspension ends where its
 * waitpoint was made, and the last one is running while the task is leased under its epoch.
 */
import { describe, expect, it } from 'vitest';
import type { FeedEvent, Task, Waitpoint } from '#sdk/types';
import { attemptsOf, timeTicks } from '../../../console/app/attempts';

const TASK_ID = 't_aaaaaaaaaaaaaaaaaaaaaaaaaa';
const T0 = Date.parse('2026-11-25T10:00:00.000Z');
const iso = (s: number) => new Date(T0 + s * 1_000).toISOString();

let sequence = 0;
const event = (s: number, type: FeedEvent['type'], data: Record<string, unknown> = {}, taskId = TASK_ID) =>
  ({ version: 1, sequence: ++sequence, type, time: iso(s), taskId, agentId: 'a_x', data }) as FeedEvent;

const task = (fields: Partial<Task>): Task => ({
  taskId: TASK_ID,
  queue: 'work',
  priority: 'normal',
  status: 'queued',
  attempt: 1,
  maxAttempts: 3,
  timeoutSeconds: 60,
  maxSnoozes: 100,
  leaseEpoch: 1,
  payloadBytes: 2,
  createdAt: iso(0),
  updatedAt: iso(0),
  ...fields,
});

describe('a task’s attempts', () => {
  it('each claim to its end: a failure retried, a lost lease, a success; other tasks’ events left out', () => {
    const feed = [
      event(0, 'task.submitted'),
      event(1, 'task.claimed', { leaseEpoch: 1, attempt: 1 }),
      event(2, 'task.claimed', { leaseEpoch: 1, attempt: 1 }, 't_bbbbbbbbbbbbbbbbbbbbbbbbbb'),
      event(3, 'task.failed', { leaseEpoch: 1, attempt: 1, status: 'queued' }),
      event(5, 'task.claimed', { leaseEpoch: 2, attempt: 2 }),
      event(65, 'task.lost', { leaseEpoch: 2, attempt: 2, reason: 'deadline' }),
      event(70, 'task.claimed', { leaseEpoch: 3, attempt: 3 }),
      event(80, 'task.completed', { leaseEpoch: 3, attempt: 3, status: 'succeeded' }),
    ];
    const history = attemptsOf(
      task({ status: 'succeeded', attempt: 3, leaseEpoch: 3, finishedAt: iso(80) }),
      feed,
      undefined,
      T0 + 999_000,
    );
    expect(
      history.attempts.map((a) => [a.attempt, a.claimedAt - T0, a.endedAt - T0, a.end, a.detail]),
    ).toEqual([
      [1, 1_000, 3_000, 'failed, retried', undefined],
      [2, 5_000, 65_000, 'lease lost', 'deadline'],
      [3, 70_000, 80_000, 'succeeded', undefined],
    ]);
    expect([history.from - T0, history.to - T0]).toEqual([0, 80_000]);
  });

  it('an attempt given back ends by the next claim at the latest, or where its waitpoint was made', () => {
    const feed = [
      event(0, 'task.submitted'),
      event(1, 'task.claimed', { leaseEpoch: 1, attempt: 1 }),
      event(10, 'task.claimed', { leaseEpoch: 2, attempt: 1 }),
      event(30, 'task.claimed', { leaseEpoch: 3, attempt: 1 }),
    ];
    const waitpoint: Waitpoint = {
      waitpointId: 'w_1',
      taskId: TASK_ID,
      status: 'completed',
      onTimeout: 'resume',
      timeoutAt: iso(3_600),
      createdAt: iso(12),
    };
    const history = attemptsOf(
      task({ status: 'leased', leaseEpoch: 3, progress: { percent: 50, at: iso(31), attempt: 1 } }),
      feed,
      waitpoint,
      T0 + 40_000,
    );
    expect(history.attempts.map((a) => [a.endedAt - T0, a.end, a.endUnknown ?? false])).toEqual([
      [10_000, 'snoozed or suspended', true],
      [12_000, 'suspended', false],
      [40_000, 'running', false],
    ]);
    // The progress report is the last attempt's: after the claims before it.
    expect(history.attempts.map((a) => a.progressAt)).toEqual([undefined, undefined, T0 + 31_000]);
  });

  it('the last attempt, no end event after it: suspended now, or given back before the record last changed', () => {
    const feed = [event(0, 'task.submitted'), event(1, 'task.claimed', { leaseEpoch: 1, attempt: 1 })];
    const suspended = attemptsOf(
      task({ status: 'suspended', updatedAt: iso(9) }),
      feed,
      undefined,
      T0 + 50_000,
    );
    expect(suspended.attempts.map((a) => [a.end, a.endedAt - T0, a.endUnknown])).toEqual([
      ['suspended', 9_000, true],
    ]);
    const released = attemptsOf(task({ status: 'queued', updatedAt: iso(7) }), feed, undefined, T0 + 50_000);
    expect(released.attempts.map((a) => [a.end, a.endedAt - T0])).toEqual([['snoozed or suspended', 7_000]]);
    // A cancel that took the task from its holder ends the attempt.
    const cancelled = attemptsOf(
      task({ status: 'cancelled', updatedAt: iso(4) }),
      [...feed, event(4, 'task.cancelled', { from: 'leased' })],
      undefined,
      T0 + 50_000,
    );
    expect(cancelled.attempts.map((a) => a.end)).toEqual(['cancelled']);
  });

  it('no claim among the events: no attempts, the span from the record', () => {
    const history = attemptsOf(task({}), [], undefined, T0 + 5_000);
    expect(history).toEqual({ attempts: [], submittedAt: T0, from: T0, to: T0 + 1_000 });
  });

  it('ticks at round steps, about as many as asked', () => {
    expect(timeTicks(T0 + 500, T0 + 10_500, 5).map((t) => t - T0)).toEqual([
      2_000, 4_000, 6_000, 8_000, 10_000,
    ]);
    const hour = timeTicks(T0, T0 + 3_600_000, 6);
    expect(hour.map((t) => (t - T0) / 60_000)).toEqual([0, 10, 20, 30, 40, 50, 60]);
  });
});
