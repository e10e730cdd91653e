/**
 * What a claim counts for metrics: the tasks it granted, by queue, once per claim; an empty claim counts nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('claim counts', () => {
  let stack: TestStack;
  const counted: [string, number][] = [];
  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['mail', 'report'],
      counters: { claimed: (queue, tasks) => counted.push([queue, tasks]) },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('counts the grants of each claim by queue, and nothing for a claim that granted nothing', async () => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['mail', 'report'], maxConcurrency: 5 });
    expect(await scheduler.claim({ ...agent, max: 5 })).toEqual([]);
    expect(counted).toEqual([]);

    for (const queue of ['mail', 'mail', 'report']) await scheduler.submit({ queue, payload: {} });
    const claimed = await claimUntil(scheduler, agent, 3, 5_000, 5);

    const total = (queue: string) => counted.filter(([q]) => q === queue).reduce((sum, [, n]) => sum + n, 0);
    expect([total('mail'), total('report')]).toEqual([2, 1]);
    expect(claimed.map((task) => task.queue).sort()).toEqual(['mail', 'mail', 'report']);
  });
});
