/**
 * A claim that fails after it received hints (a request of its own failed: DynamoDB throttled or timed out) hands
 * them back at once. Left hidden for the claim's visibility timeout, such a hint wakes nobody when it shows again:
 * an idle agent waiting on push wakes would not claim the task until the supervisor's reconcile sent its hint again,
 * minutes later.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, startAgent, type TestStack } from '#test/stack';

describe('a claim that fails after receiving its hints', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['reserve', 'grant'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  const onLeases = (input: Record<string, unknown>) => input.TableName === stack.wiring.tables.leases;
  const onTasks = (input: Record<string, unknown>) => input.TableName === stack.wiring.tables.tasks;

  it.each([
    ['its slot could not be reserved', 'the same agent', 'reserve', onLeases, 'before'],
    ['its slot was reserved but the answer was lost', 'another agent', 'reserve', onLeases, 'after'],
    ['its task could not be granted', 'another agent', 'grant', onTasks, 'before'],
  ] as const)(
    'hands its hint back at once when %s: %s takes the task',
    async (_, next, queue, matches, when) => {
      const { scheduler, faults } = stack;
      const first = await startAgent(scheduler, { name: `${queue}-first`, queues: [queue] });
      // A slot reserved by a claim that failed stays taken until the reservation's grace is over (the grant may have
      // landed): with one slot, the first agent has none for it meanwhile, and another takes the task.
      const taker =
        next === 'the same agent'
          ? first
          : await startAgent(scheduler, { name: `${queue}-taker`, queues: [queue] });
      const { task } = await scheduler.submit({ queue, payload: { queue } });

      const failedBefore = faults.dynamodb.injected.UpdateItemCommand ?? 0;
      faults.dynamodb.failNext('UpdateItemCommand', 1, when, matches);
      await expect(scheduler.claim(first)).rejects.toThrow();
      expect(faults.dynamodb.injected.UpdateItemCommand).toBe(failedBefore + 1);

      // Well inside the claim's visibility timeout (30 s): the hint must be in the queue again already.
      const started = Date.now();
      let claimed: Awaited<ReturnType<typeof scheduler.claim>> = [];
      while (claimed.length === 0 && Date.now() - started < 5_000) claimed = await scheduler.claim(taker);
      expect(claimed.map((c) => c.taskId)).toEqual([task.taskId]);
      expect(claimed[0]?.attempt).toBe(1);
    },
  );
});
