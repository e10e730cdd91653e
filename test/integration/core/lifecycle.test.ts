import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('task lifecycle on the emulators', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack();
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('submit → claim → complete', async () => {
    // Prepare
    const { scheduler } = stack;
    const agent = await startAgent(scheduler);
    const { task, created } = await scheduler.submit({ queue: 'work', payload: { n: 1 } });
    expect(created).toBe(true);

    // Act
    const [claimed] = await claimUntil(scheduler, agent, 1);
    if (!claimed) throw new Error('nothing claimed');
    const done = await scheduler.complete(
      { agentId: agent.agentId, taskId: claimed.taskId, leaseEpoch: claimed.leaseEpoch },
      { ok: true },
    );

    // Assess
    expect(claimed).toMatchObject({ taskId: task.taskId, payload: { n: 1 }, attempt: 1, leaseEpoch: 1 });
    expect(done.replayed).toBe(false);
    const stored = await scheduler.getTask(task.taskId);
    expect(stored).toMatchObject({
      status: 'succeeded',
      result: { ok: true },
      owner: agent.agentId,
      leaseEpoch: 1,
    });
  });
});
