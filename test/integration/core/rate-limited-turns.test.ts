/**
 * A task that travels as its lane's turn (a labelled or keyed task) and is refused by a rate limit comes back when
 * the limit's window ends: not later, on the backoff of a key at its concurrency limit, and not after the timed wake
 * armed for that moment (the wake would find nothing, and the task would wait for the agent's next poll).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, startAgent, type TestStack } from '#test/stack';

/** What is left of the minute's window when the first task takes its one unit. */
const WINDOW_LEFT_MS = 9_000;

describe('a rate-limited turn', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['tools'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('comes back as the window ends, however often it was refused before', async () => {
    const { scheduler, clock } = stack;
    await scheduler.setRateLimit('tools.minute', { limit: 1, per: 'minute' });
    const agent = await startAgent(scheduler, {
      queues: ['tools'],
      labels: { example: 'turns' },
      maxConcurrency: 2,
    });
    const spec = {
      queue: 'tools',
      require: { example: 'turns' },
      rateLimits: [{ name: 'tools.minute' }],
    };
    const first = (await scheduler.submit({ ...spec, payload: { call: 1 } })).task;
    const second = (await scheduler.submit({ ...spec, payload: { call: 2 } })).task;
    // Forward only: a clock set back would put the tasks' creation ahead of it.
    clock.advance((120_000 - WINDOW_LEFT_MS - (clock.now() % 60_000)) % 60_000);
    const windowEnds = clock.now() + WINDOW_LEFT_MS;

    // Claims as an agent polling every 250 ms would: the first takes the window's unit, the next are refused.
    const granted = new Map<string, number>();
    while (!granted.has(second.taskId) && clock.now() < windowEnds + 15_000) {
      for (const task of await scheduler.claim(agent)) granted.set(task.taskId, clock.now());
      await new Promise((resolve) => setTimeout(resolve, 250));
    }

    expect(granted.get(first.taskId)).toBeLessThan(windowEnds);
    const late = (granted.get(second.taskId) ?? Number.POSITIVE_INFINITY) - windowEnds;
    // The turn's delay is whole seconds: up to one past the window's end, and the poll's 250 ms.
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThan(2_500);
  });
});
