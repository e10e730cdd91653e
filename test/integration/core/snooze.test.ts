/**
 * A snooze (a release with a delay: a provider's 429, a resource not ready) uses no attempt, holds the task back for
 * its delay, and is bounded by the task's `maxSnoozes`; a failure may say when its retry can succeed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SnoozeLimitError } from '#domain/errors';
import { DEFAULT_MAX_SNOOZES } from '#domain/task-spec';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('snoozes', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['snoozer', 'limited', 'default', 'retry-after', 'permanent'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** A task of its own, in a queue of its own (`name`), claimed by an agent of its own. */
  const claimed = async (name: string, spec: Record<string, unknown> = {}) => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { name, queues: [name], maxConcurrency: 5 });
    const { task } = await scheduler.submit({ queue: name, payload: { name }, ...spec });
    const [lease] = await claimUntil(scheduler, agent, 1, 3_000);
    if (lease?.taskId !== task.taskId) throw new Error('the task was not claimed');
    return { agent, lease: { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: lease.leaseEpoch } };
  };

  it('holds the task back for its delay and uses no attempt; a retried call answers the same', async () => {
    const { scheduler, clock } = stack;
    const { agent, lease } = await claimed('snoozer', { maxAttempts: 1 });
    const before = clock.now();

    const snoozed = await scheduler.release(lease, { delaySeconds: 2 });
    const again = await scheduler.release(lease, { delaySeconds: 2 });
    const early = await claimUntil(scheduler, agent, 1, 1_000);
    const later = await claimUntil(scheduler, agent, 1, 5_000);

    expect(snoozed.task).toMatchObject({ status: 'queued', attempt: 0, snoozes: 1 });
    expect(snoozed.task.notBefore).toBeGreaterThanOrEqual(before + 2_000);
    expect(again.replayed).toBe(true);
    expect(again.task.snoozes).toBe(1);
    expect(early).toEqual([]);
    // One attempt in all, and the task runs it after the snooze.
    expect(later.map((t) => [t.taskId, t.attempt])).toEqual([[lease.taskId, 1]]);
  });

  it('refuses a snooze past the task’s maxSnoozes and changes nothing', async () => {
    const { scheduler } = stack;
    const { agent, lease } = await claimed('limited', { maxSnoozes: 1 });
    await scheduler.release(lease, { delaySeconds: 1 });
    const [next] = await claimUntil(scheduler, agent, 1, 4_000);
    const held = { ...lease, leaseEpoch: next?.leaseEpoch ?? 0 };

    const refused = scheduler.release(held, { delaySeconds: 1 });

    await expect(refused).rejects.toThrow(SnoozeLimitError);
    await expect(refused).rejects.toThrow(/1 snoozes/);
    const task = await scheduler.getTask(lease.taskId);
    expect(task).toMatchObject({ status: 'leased', leaseEpoch: held.leaseEpoch, snoozes: 1, maxSnoozes: 1 });
    // A release at once is not a snooze: still given back.
    expect((await scheduler.release(held)).task.status).toBe('queued');
  });

  it(`lets a task snooze ${DEFAULT_MAX_SNOOZES} times unless it says otherwise`, async () => {
    const { scheduler } = stack;
    const { lease } = await claimed('default');
    expect((await scheduler.getTask(lease.taskId)).maxSnoozes).toBeUndefined();
    const { taskView } = await import('../../../functions/http/views');
    expect(taskView(await scheduler.getTask(lease.taskId)).maxSnoozes).toBe(DEFAULT_MAX_SNOOZES);
  });

  it('a failure that says when to retry replaces the backoff and uses its attempt', async () => {
    const { scheduler, clock } = stack;
    const { lease } = await claimed('retry-after', { maxAttempts: 3, backoffBaseSeconds: 3_600 });
    const before = clock.now();

    const failed = await scheduler.fail(
      lease,
      { message: '429 Too Many Requests' },
      { retryAfterSeconds: 30 },
    );

    expect(failed.task).toMatchObject({ status: 'queued', attempt: 1 });
    expect(failed.task.notBefore).toBeGreaterThanOrEqual(before + 30_000);
    expect(failed.task.notBefore).toBeLessThan(clock.now() + 31_000);
  });

  it('a failure not retried ignores retryAfterSeconds', async () => {
    const { scheduler } = stack;
    const { lease } = await claimed('permanent');
    const failed = await scheduler.fail(
      lease,
      { message: 'bad input', retryable: false },
      { retryAfterSeconds: 30 },
    );
    expect(failed.task.status).toBe('dead');
  });
});
