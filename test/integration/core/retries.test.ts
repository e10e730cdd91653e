/**
 * Retries with growing delays until dead, redrive, and recovery after SQS lost every message.
 */
import { PurgeQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backoffCapSeconds } from '#domain/retry-policy';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('retries and recovery', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // random 0.999: each backoff draws (nearly) its cap, so the growth is visible.
    stack = await createTestStack({ random: () => 0.999, queues: ['flaky', 'purged'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('a failing task retries with growing delays, goes dead after its attempts, and redrive brings it back', async () => {
    const { scheduler, clock } = stack;
    const { task } = await scheduler.submit({
      queue: 'flaky',
      payload: {},
      maxAttempts: 3,
      backoffBaseSeconds: 60,
    });
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      // Minutes pass between attempts on the test clock; each attempt is taken by an agent alive then.
      const agent = await startAgent(scheduler, { name: `flaky-${attempt}`, queues: ['flaky'] });
      const [claimed] = await claimUntil(scheduler, agent, 1, 3_000);
      expect(claimed).toMatchObject({ taskId: task.taskId, attempt });
      const failed = await scheduler.fail(
        { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
        { message: `boom ${attempt}` },
      );
      if (failed.task.status === 'queued') {
        const delay = (failed.task.notBefore ?? 0) - failed.task.updatedAt;
        delays.push(delay);
        // Time passes past the backoff; the hint's own SQS delay is real, so reconcile sends a fresh one.
        clock.advance(delay + 1_000);
        await scheduler.reconcile({ everything: true });
      } else {
        expect(failed.task).toMatchObject({ status: 'dead', error: { message: 'boom 3' } });
      }
    }
    const policy = { maxAttempts: 3, backoffBaseSeconds: 60, backoffMaxSeconds: 3_600 };
    console.log(
      `[retries] backoff delays drawn near their caps: ${delays.map((d) => `${Math.round(d / 1_000)} s`).join(', ')}`,
    );
    expect(delays).toHaveLength(2);
    expect(delays[1]).toBeGreaterThan(delays[0] ?? 0);
    expect(delays[0]).toBeLessThanOrEqual(backoffCapSeconds(1, policy) * 1_000);
    expect(delays[1]).toBeLessThanOrEqual(backoffCapSeconds(2, policy) * 1_000);

    // The death is on record in the queue's dead-letter queue.
    const deadLetter = await stack.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: stack.ctx.queues.directory.deadLetterUrlFor('flaky'),
        MaxNumberOfMessages: 10,
      }),
    );
    expect((deadLetter.Messages ?? []).map((m) => JSON.parse(m.Body ?? '{}'))).toEqual([
      expect.objectContaining({
        kind: 'dead-task',
        taskId: task.taskId,
        queue: 'flaky',
        attempt: 3,
        reason: 'boom 3',
      }),
    ]);

    const redriven = await scheduler.redrive(task.taskId);
    expect(redriven).toMatchObject({ status: 'queued', attempt: 0 });
    const fresh = await startAgent(scheduler, { queues: ['flaky'] });
    const [again] = await claimUntil(scheduler, fresh, 1, 3_000);
    expect(again).toMatchObject({ taskId: task.taskId, attempt: 1, leaseEpoch: 4 });
  });

  it('after SQS lost every message, reconcile sends each queued task again', async () => {
    const { scheduler, ctx, sqs } = stack;
    const ids = await Promise.all(
      [1, 2, 3].map(async (n) => (await scheduler.submit({ queue: 'purged', payload: { n } })).task.taskId),
    );
    await sqs.send(new PurgeQueueCommand({ QueueUrl: ctx.queues.directory.urlFor('purged', 'normal') }));
    const agent = await startAgent(scheduler, { queues: ['purged'], maxConcurrency: 3 });
    expect(await claimUntil(scheduler, agent, 1, 500)).toHaveLength(0);

    const restored = await scheduler.reconcile({ everything: true });
    const claimed = await claimUntil(scheduler, agent, 3, 3_000, 3);

    expect(restored.redispatched).toEqual(expect.arrayContaining(ids));
    expect(claimed.map((c) => c.taskId).sort()).toEqual([...ids].sort());
  });
});
