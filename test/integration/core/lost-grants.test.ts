/**
 * A grant whose answer from DynamoDB is lost after it committed: the SDK's retry of the write finds the task
 * leased already, to this very claim. The claim must answer it as granted, not drop it: otherwise the task sits
 * leased to a session that never learns of it until its deadline, and one allowed a single attempt dies unrun.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, startAgent, type TestStack, waitFor } from '#test/stack';

/** A task's grant: the one write that records a lease's start. */
const isGrant = (input: Record<string, unknown>) =>
  Object.values((input.ExpressionAttributeNames as Record<string, string>) ?? {}).includes('leasedAt');

describe('a grant whose answer is lost', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['lost-grant', 'lost-grant-old'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  for (const [queue, claimId] of [
    ['lost-grant', 'claim-lost-grant-1'],
    // An agent on an SDK that sends no claim id.
    ['lost-grant-old', undefined],
  ] as const) {
    it(`is answered as granted when the retry finds its own write (${claimId ? 'with' : 'without'} a claim id): a task of one attempt runs once`, async () => {
      // Prepare: one attempt allowed; the grant's first answer is lost and the SDK sends it again.
      const { scheduler, faults } = stack;
      const agent = await startAgent(scheduler, { name: queue, queues: [queue] });
      const { task } = await scheduler.submit({ queue, payload: { n: 1 }, maxAttempts: 1 });
      const lostBefore = faults.dynamodb.injected.UpdateItemCommand ?? 0;
      faults.dynamodb.failNext('UpdateItemCommand', 1, 'retried', isGrant);

      // Act
      let claimed: Awaited<ReturnType<typeof scheduler.claim>> = [];
      await waitFor(async () => {
        claimed = await scheduler.claim({ ...agent, ...(claimId ? { claimId } : {}) });
        return claimed.length > 0 || (faults.dynamodb.injected.UpdateItemCommand ?? 0) > lostBefore;
      });

      // Assess: the retry's refusal was the claim's own grant; the agent holds the task and finishes it.
      expect(faults.dynamodb.injected.UpdateItemCommand).toBe(lostBefore + 1);
      expect(claimed.map((c) => [c.taskId, c.leaseEpoch, c.attempt])).toEqual([[task.taskId, 1, 1]]);
      expect((await scheduler.readSession(agent.agentId)).tasks).toEqual([
        expect.objectContaining({ taskId: task.taskId, leaseEpoch: 1 }),
      ]);
      await scheduler.complete({ agentId: agent.agentId, taskId: task.taskId, leaseEpoch: 1 }, { ran: 1 });
      expect(await scheduler.getTask(task.taskId)).toMatchObject({
        status: 'succeeded',
        attempt: 1,
        result: { ran: 1 },
      });
    });
  }
});
