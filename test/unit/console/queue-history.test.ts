/**
 * A queue's last hour minute by minute, without a browser: claims counted from the events, the queued count worked
 * back from now's through the events that change it, minutes before the events kept left unknown; and the same hour
 * from CloudWatch's points.
 */
import { describe, expect, it } from 'vitest';
import type { FeedEvent } from '#sdk/types';
import { hoursFromEvents, hoursFromMetrics, MINUTES, queuedChange } from '../../../console/app/queue-history';

const NOW = Date.parse('2026-11-25T10:30:20.000Z');
/** `m` minutes before the minute under way began, and `s` seconds. */
const minute = (m: number, s = 0) => Date.parse('2026-11-25T10:30:00.000Z') - m * 60_000 + s * 1_000;

let sequence = 0;
const event = (at: number, type: FeedEvent['type'], data: Record<string, unknown> = {}, queue = 'work') =>
  ({ version: 1, sequence: ++sequence, type, time: new Date(at).toISOString(), queue, data }) as FeedEvent;

describe('a queue’s last hour', () => {
  it('works the queued count back from now and counts claims by minute', () => {
    const events = [
      event(minute(3, 10), 'task.submitted'),
      event(minute(3, 20), 'task.submitted'),
      event(minute(3, 30), 'task.submitted', {}, 'other'),
      event(minute(2, 5), 'task.claimed'),
      event(minute(2, 6), 'task.claimed'),
      event(minute(1, 0), 'task.failed', { status: 'queued' }),
      event(minute(0, 5), 'task.claimed'),
      event(minute(0, 6), 'task.submitted', { dependsOn: 2 }),
    ];
    const [work] = hoursFromEvents([{ name: 'work', queued: 0 }], events, NOW, true);
    const last = work?.minutes.slice(-5).map((m) => [m.queued, m.claims]);
    // Minutes 10:25 … 10:29, then the one under way (10:30).
    expect(work?.minutes).toHaveLength(MINUTES);
    expect(last).toEqual([
      [0, 0], // 10:26: nothing yet
      [2, 0], // 10:27: two submitted
      [0, 2], // 10:28: both claimed
      [1, 0], // 10:29: one failed and queued again
      [0, 1], // 10:30, now: claimed again; the one waiting on dependencies is not queued
    ]);
  });

  it('leaves the minutes before the oldest event kept unknown when the feed does not go back to the start', () => {
    const events = [event(minute(2, 30), 'task.claimed'), event(minute(0, 1), 'task.submitted')];
    const [work] = hoursFromEvents([{ name: 'work', queued: 5 }], events, NOW, false);
    const tail = work?.minutes.slice(-4);
    expect(tail?.map((m) => [m.queued, m.claims])).toEqual([
      [undefined, undefined], // 10:27: before the oldest event
      [4, undefined], // 10:28: its end is known (after the claim), its start is not
      [4, 0],
      [5, 0],
    ]);
  });

  it('counts a lost lease as queued again, and not when it died of it; a cancel or expiry of a queued task out', () => {
    expect(
      [
        event(0, 'task.lost', { reason: 'deadline' }),
        event(0, 'task.dead', { reason: 'lease expired (deadline)' }),
        event(0, 'task.dead', { reason: 'the model refused' }),
        event(0, 'task.cancelled', { from: 'queued' }),
        event(0, 'task.cancelled', { from: 'leased' }),
        event(0, 'task.expired'),
        event(0, 'task.completed', { status: 'succeeded' }),
      ].map(queuedChange),
    ).toEqual([1, -1, 0, -1, 0, -1, 0]);
  });

  it('takes CloudWatch’s points by minute: a minute without claims had none, one without a depth is unknown', () => {
    const [work] = hoursFromMetrics(
      {
        from: '2026-11-25T09:31:00.000Z',
        to: '2026-11-25T10:31:00.000Z',
        queues: [
          {
            name: 'work',
            depth: [['2026-11-25T10:29:00.000Z', 4]],
            claims: [['2026-11-25T10:30:00.000Z', 12]],
          },
        ],
      },
      NOW,
    );
    expect(work?.minutes.slice(-2).map((m) => [m.queued, m.claims])).toEqual([
      [4, 0],
      [undefined, 12],
    ]);
    expect(work?.minutes[0]).toEqual({ at: Date.parse('2026-11-25T09:31:00.000Z'), claims: 0 });
  });
});
