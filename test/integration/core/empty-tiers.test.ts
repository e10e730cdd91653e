/**
 * Under load a claim reads one SQS queue, not four: a priority tier found empty is passed over for a while,
 * unless the other tiers cannot fill the claim.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, startAgent, type TestStack } from '#test/stack';

// Shorter than the session's 30 s lease, so the clock can pass it without the session expiring.
const RECHECK_MS = 20_000;

describe('claims and empty priority tiers', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // random 0: every claim looks at critical first, then high, normal, low.
    stack = await createTestStack({ random: () => 0, settings: { emptyTierRecheckMs: RECHECK_MS } });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  const receivesOf = async (work: () => Promise<{ taskId: string }[]>) => {
    stack.meter.reset();
    const claimed = await work();
    const receives = stack.meter.requests.filter((r) => r.operation === 'ReceiveMessageCommand').length;
    return { taskIds: claimed.map((t) => t.taskId), receives };
  };

  it('reads a tier found empty again only after the recheck time, or when the others come up short', async () => {
    const { scheduler, clock } = stack;
    const agent = await startAgent(scheduler);
    const complete = async (taskIds: string[]) => {
      for (const taskId of taskIds) {
        const task = await scheduler.getTask(taskId);
        await scheduler.complete({ agentId: agent.agentId, taskId, leaseEpoch: task?.leaseEpoch ?? 0 });
      }
    };
    const normal = await scheduler.submitBatch([1, 2, 3].map((n) => ({ queue: 'work', payload: { n } })));
    const normalIds = normal.map((r) => (r.ok ? r.task.taskId : ''));

    // Critical and high are read, found empty, and remembered.
    const first = await receivesOf(() => scheduler.claim(agent));
    expect(first.receives).toBe(3);
    expect(normalIds).toContain(first.taskIds[0]);
    await complete(first.taskIds);

    // The next claim goes straight to the tier that had work.
    const second = await receivesOf(() => scheduler.claim(agent));
    expect(second.receives).toBe(1);
    await complete(second.taskIds);

    // The price: urgent work arriving in a tier just found empty waits behind the other tiers' work...
    const urgent = await scheduler.submit({ queue: 'work', priority: 'critical', payload: {} });
    const third = await receivesOf(() => scheduler.claim(agent));
    expect(third.taskIds).toEqual([
      normalIds.find((id) => ![...first.taskIds, ...second.taskIds].includes(id)),
    ]);
    await complete(third.taskIds);

    // ...until the recheck time has passed.
    clock.advance(RECHECK_MS);
    const fourth = await receivesOf(() => scheduler.claim(agent));
    expect(fourth.taskIds).toEqual([urgent.task.taskId]);
    expect(fourth.receives).toBe(1);
    await complete(fourth.taskIds);

    // Normal is empty now and remembered as such by this claim; high stays remembered from the first claim.
    // A high task is still found at once: the tiers read first come up short, so the remembered ones are read.
    const empty = await receivesOf(() => scheduler.claim(agent));
    expect(empty.taskIds).toEqual([]);
    const late = await scheduler.submit({ queue: 'work', priority: 'high', payload: {} });
    const fifth = await receivesOf(() => scheduler.claim(agent));
    expect(fifth.taskIds).toEqual([late.task.taskId]);
  });
});
