/**
 * Lifecycle events, in the order things happen, through the local feed that `GET /v1/events` serves.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEventFeed } from '#adapters/event-publishers';
import { fireSchedule } from '#core/fire-schedule';
import { EVENT_SCHEMA_VERSION } from '#domain/events';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('lifecycle events', () => {
  let stack: TestStack;
  const file = join(mkdtempSync(join(tmpdir(), 'events-')), 'events.jsonl');
  const feed = new LocalEventFeed(file);
  let cursor = 0;
  const next = () => {
    const page = feed.read(cursor, 1_000);
    cursor = page.next;
    return page.events;
  };

  beforeAll(async () => {
    stack = await createTestStack({
      events: feed,
      random: () => 0,
      queues: ['work', 'crash'],
      settings: { routineEvents: true },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('submit, claim and complete: agent.online, task.submitted, task.claimed, task.completed', async () => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler);
    const { task } = await scheduler.submit({ queue: 'work', payload: {} });
    const [claimed] = await claimUntil(scheduler, agent, 1);
    await scheduler.complete(
      { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
      1,
    );

    const events = next();
    expect(events.map((e) => e.type)).toEqual([
      'agent.online',
      'task.submitted',
      'task.claimed',
      'task.completed',
    ]);
    expect(events[2]).toMatchObject({
      version: EVENT_SCHEMA_VERSION,
      taskId: task.taskId,
      agentId: agent.agentId,
      queue: 'work',
      data: { leaseEpoch: 1, attempt: 1 },
    });
    expect(events.every((e) => e.sequence > 0 && !Number.isNaN(Date.parse(e.time)))).toBe(true);
    // The same events, one per line, in the file.
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).type);
    expect(lines.slice(-4)).toEqual(events.map((e) => e.type));
  });

  it('a silent agent: task.lost and agent.offline; attempts used up: task.dead', async () => {
    const { scheduler, clock, ctx } = stack;
    const agent = await startAgent(scheduler, { queues: ['crash'] });
    const { task } = await scheduler.submit({ queue: 'crash', payload: {}, maxAttempts: 1 });
    const claimed = await claimUntil(scheduler, agent, 1);
    expect(claimed.map((c) => c.taskId)).toEqual([task.taskId]);
    next();

    clock.advance((ctx.settings.leaseTtlSeconds + 1) * 1_000);
    const swept = await scheduler.reclaim();
    expect(swept.dead).toEqual([task.taskId]);

    // The first test's agent went silent too; look at this one's events.
    const events = next().filter((e) => e.agentId === agent.agentId || e.taskId === task.taskId);
    expect(events.map((e) => e.type)).toEqual(['task.lost', 'task.dead', 'agent.offline']);
    expect(events[0]).toMatchObject({
      taskId: task.taskId,
      agentId: agent.agentId,
      data: { reason: 'session' },
    });
  });

  it('schedules: schedule.fired, then schedule.skipped for an overlapping occurrence; none for a duplicate', async () => {
    const fire = (minute: number) => ({
      schedule: 'hourly',
      scheduledTime: `2027-06-01T10:0${minute}:00Z`,
      overlap: 'skip',
      task: { queue: 'work' },
    });
    await fireSchedule(stack.ctx, fire(0));
    await fireSchedule(stack.ctx, fire(0));
    await fireSchedule(stack.ctx, fire(1));

    const events = next().filter((e) => e.type.startsWith('schedule.'));
    expect(events.map((e) => [e.type, e.data?.scheduledTime])).toEqual([
      ['schedule.fired', '2027-06-01T10:00:00.000Z'],
      ['schedule.skipped', '2027-06-01T10:01:00.000Z'],
    ]);
  });
});

describe('lifecycle events by default', () => {
  let stack: TestStack;
  const feed = new LocalEventFeed();

  beforeAll(async () => {
    stack = await createTestStack({ events: feed, queues: ['work'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('a task that succeeds publishes nothing; a failure and a death are still published', async () => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler);
    const ok = await scheduler.submit({ queue: 'work', payload: {} });
    const [first] = await claimUntil(scheduler, agent, 1);
    await scheduler.complete({
      agentId: agent.agentId,
      taskId: ok.task.taskId,
      leaseEpoch: first?.leaseEpoch ?? 0,
    });
    const doomed = await scheduler.submit({ queue: 'work', payload: {}, maxAttempts: 1 });
    const [second] = await claimUntil(scheduler, agent, 1);
    await scheduler.fail(
      { agentId: agent.agentId, taskId: doomed.task.taskId, leaseEpoch: second?.leaseEpoch ?? 0 },
      { message: 'no', retryable: false },
    );

    const events = feed.read(0, 1_000).events;
    expect(events.filter((e) => e.taskId === ok.task.taskId)).toEqual([]);
    expect(events.map((e) => e.type)).toEqual(['agent.online', 'task.dead', 'task.failed']);
  });
});
