/**
 * What a key whose tasks come one at a time costs its lane's turn item: every write sent to it, refused conditional
 * writes included (DynamoDB bills those too), over tasks that each find their lane empty.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';
import { type ItemWrite, recordItemWrites } from '#test/write-keys';

const TASKS = 12;

describe('a lane whose tasks come alone', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['alone'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('writes its turn item at most 3.25 times a task, turns held for the quiet time included', async () => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['alone'] });
    const writes: ItemWrite[] = [];
    const stop = recordItemWrites(stack.dynamodb, (write) => {
      if (write.pk.startsWith('lane#')) writes.push(write);
    });
    try {
      for (let n = 0; n < TASKS; n++) {
        await scheduler.submit({ queue: 'alone', concurrencyKey: 'k', payload: { n } });
        const [task] = await claimUntil(scheduler, agent, 1, 10_000);
        if (!task) throw new Error(`task ${n} was not claimed`);
        await scheduler.complete({
          agentId: agent.agentId,
          taskId: task.taskId,
          leaseEpoch: task.leaseEpoch,
        });
      }
      // The turns held for the quiet time come back and go: the lane ends with no turn in line.
      const deadline = Date.now() + 8_000;
      while (Date.now() < deadline) {
        expect(await scheduler.claim(agent)).toEqual([]);
        const [laneId] = new Set(writes.map((w) => w.pk.slice('lane#'.length)));
        if (laneId && (await stack.ctx.lanes.turnSlot(laneId)).token === undefined) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    } finally {
      stop();
    }
    const [laneId] = new Set(writes.map((w) => w.pk.slice('lane#'.length)));
    console.log(`[lanes] ${writes.length} writes to the turn item for ${TASKS} tasks alone in their lane`);
    expect((await stack.ctx.lanes.turnSlot(laneId ?? '')).token).toBeUndefined();
    expect(writes.length / TASKS).toBeLessThanOrEqual(3.25);
  }, 60_000);
});
