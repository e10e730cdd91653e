/**
 * Fencing and replays: (b) a stale owner cannot act, (h) duplicate delivery gives one owner,
 * (i) a call retried after its commit returns the same outcome.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseLostError, ServiceUnavailableError, SessionLostError, TaskNotFoundError } from '#domain/errors';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('ownership', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // random 0: backoff draws are zero, so a requeued task is claimable at once.
    stack = await createTestStack({
      random: () => 0,
      queues: ['b', 'late', 'dup', 'i-complete', 'i-fail', 'i-release'],
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('(b) a reclaimed lease goes to B; A can neither heartbeat, complete nor fail; B completes', async () => {
    // Prepare: A holds the task.
    const { scheduler, clock, ctx } = stack;
    const a = await startAgent(scheduler, { name: 'a', queues: ['b'] });
    const { task } = await scheduler.submit({ queue: 'b', payload: { job: 'b' } });
    const [held] = await claimUntil(scheduler, a, 1);
    expect(held?.taskId).toBe(task.taskId);

    // Act: A goes silent past its lease; the sweep takes the task back; B claims it.
    clock.advance((ctx.settings.leaseTtlSeconds + 1) * 1_000);
    const swept = await scheduler.reclaim();
    const b = await startAgent(scheduler, { name: 'b', queues: ['b'] });
    const [taken] = await claimUntil(scheduler, b, 1);

    // Assess
    expect(swept.requeued).toEqual([task.taskId]);
    expect(taken).toMatchObject({ taskId: task.taskId, leaseEpoch: 2, attempt: 2 });
    const stale = { agentId: a.agentId, taskId: task.taskId, leaseEpoch: 1 };
    await expect(scheduler.heartbeat(a.agentId, a.sessionId)).rejects.toBeInstanceOf(SessionLostError);
    // The task is B's now: A hears what a task that does not exist answers, and learns nothing of B's lease.
    await expect(scheduler.complete(stale, { by: 'a' })).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(scheduler.fail(stale, { message: 'late' })).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(scheduler.release(stale)).rejects.toBeInstanceOf(TaskNotFoundError);
    // A presenting B's epoch is not B.
    await expect(scheduler.complete({ ...stale, leaseEpoch: 2 })).rejects.toBeInstanceOf(TaskNotFoundError);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({
      status: 'leased',
      owner: b.agentId,
      leaseEpoch: 2,
    });

    await scheduler.complete({ agentId: b.agentId, taskId: task.taskId, leaseEpoch: 2 }, { by: 'b' });
    expect(await scheduler.getTask(task.taskId)).toMatchObject({ status: 'succeeded', result: { by: 'b' } });
  });

  it('a late heartbeat does not revive an expired session, even before any sweep', async () => {
    const { scheduler, clock, ctx } = stack;
    const a = await startAgent(scheduler, { name: 'late', queues: ['late'] });
    await scheduler.submit({ queue: 'late', payload: {} });
    const [held] = await claimUntil(scheduler, a, 1);
    if (!held) throw new Error('nothing claimed');

    clock.advance((ctx.settings.leaseTtlSeconds + 1) * 1_000);

    await expect(scheduler.heartbeat(a.agentId, a.sessionId)).rejects.toBeInstanceOf(SessionLostError);
    await expect(
      scheduler.complete({ agentId: a.agentId, taskId: held.taskId, leaseEpoch: held.leaseEpoch }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect((await scheduler.getTask(held.taskId)).status).toBe('leased');
    await scheduler.reclaim();
    expect((await scheduler.getTask(held.taskId)).status).toBe('queued');
  });

  it('(h) a task delivered twice gets one owner, and the other hint is dropped', async () => {
    const { scheduler, ctx } = stack;
    const { task } = await scheduler.submit({ queue: 'dup', payload: {}, priority: 'high' });
    await ctx.queues.send('dup', 'high', { taskId: task.taskId, leaseEpoch: 0 });
    const agents = await Promise.all([
      startAgent(scheduler, { name: 'h1', queues: ['dup'] }),
      startAgent(stack.sibling(), { name: 'h2', queues: ['dup'] }),
    ]);

    const results = await Promise.all([
      claimUntil(scheduler, agents[0], 1, 1_500),
      claimUntil(stack.sibling(), agents[1], 1, 1_500),
    ]);

    const owners = results.flatMap((claimed, i) =>
      claimed.some((c) => c.taskId === task.taskId) ? [agents[i]?.agentId] : [],
    );
    expect(owners).toHaveLength(1);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({
      status: 'leased',
      leaseEpoch: 1,
      owner: owners[0],
    });
    const left = await ctx.queues.receive('dup', 'high', {
      max: 10,
      visibilityTimeoutSeconds: 1,
      waitTimeSeconds: 0,
    });
    expect(left.hints).toHaveLength(0);
  });

  it.each(['complete', 'fail', 'release'] as const)(
    '(i) %s whose response was lost after the commit: the retry returns the same outcome',
    async (kind) => {
      // Prepare
      const { scheduler, faults } = stack;
      const agent = await startAgent(scheduler, { name: `i-${kind}`, queues: [`i-${kind}`] });
      const { task } = await scheduler.submit({ queue: `i-${kind}`, payload: {}, maxAttempts: 3 });
      const [held] = await claimUntil(scheduler, agent, 1);
      if (held?.taskId !== task.taskId) throw new Error('the task was not claimed');
      const lease = { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: held.leaseEpoch };
      const call = () =>
        kind === 'complete'
          ? scheduler.complete(lease, { answer: 42 })
          : kind === 'fail'
            ? scheduler.fail(lease, { message: 'boom', retryable: true })
            : scheduler.release(lease);

      // Act: the write commits, then the caller sees a timeout; it retries.
      faults.dynamodb.failNext('UpdateItemCommand', 1, 'after');
      await expect(call()).rejects.toBeInstanceOf(ServiceUnavailableError);
      const retried = await call();

      // Assess
      const expectedStatus = { complete: 'succeeded', fail: 'queued', release: 'queued' }[kind];
      expect(retried.replayed).toBe(true);
      expect(retried.task.status).toBe(expectedStatus);
      const stored = await scheduler.getTask(task.taskId);
      expect(stored.status).toBe(expectedStatus);
      expect(stored.lastFinish).toMatchObject({ kind, leaseEpoch: held.leaseEpoch, agentId: agent.agentId });
      if (kind === 'complete') expect(stored.result).toEqual({ answer: 42 });
      // Only one transition happened: a release gives its attempt back, a fail keeps it.
      expect(stored.attempt).toBe(kind === 'release' ? 0 : 1);
      // A different call with the same stale lease is still refused.
      if (kind !== 'complete') await expect(scheduler.complete(lease)).rejects.toBeInstanceOf(LeaseLostError);
    },
  );
});
