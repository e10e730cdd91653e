/**
 * Expiry (a deadline to start) and `onFailure` (a task submitted once when another dies), on the emulators.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '#domain/errors';
import { onFailureTaskIdOf } from '#domain/ids';
import { claimUntil, collectedEvents, createTestStack, startAgent, type TestStack } from '#test/stack';
import { taskView } from '../../../functions/http/views';

describe('expiry', () => {
  let stack: TestStack;
  const recorded = collectedEvents();
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['fresh', 'race'], events: recorded.publisher });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('a task not claimed by its deadline ends expired at the next pass, with an event, and is never claimed', async () => {
    const { scheduler, clock } = stack;
    const { task } = await scheduler.submit({ queue: 'fresh', payload: { n: 1 }, ttlSeconds: 60 });
    expect(task.expiresAt).toBe(task.createdAt + 60_000);

    clock.advance(60_000);
    // At the deadline the grant's condition refuses it: the claim finds nothing, and ends it on the spot.
    const agent = await startAgent(scheduler, { queues: ['fresh'] });
    expect(await claimUntil(scheduler, agent, 1, 500)).toEqual([]);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({ status: 'expired', leaseEpoch: 0 });
    expect(recorded.events.filter((e) => e.type === 'task.expired').map((e) => e.taskId)).toEqual([
      task.taskId,
    ]);
  });

  it('with nobody claiming, the supervisor ends it within one pass of its deadline', async () => {
    const { scheduler, clock } = stack;
    const { task } = await scheduler.submit({
      queue: 'fresh',
      payload: {},
      expiresAt: new Date(clock.now() + 10_000).toISOString(),
    });
    clock.advance(5_000);
    expect((await scheduler.reconcile()).expired).toEqual([]);
    clock.advance(5_000);
    expect((await scheduler.reconcile()).expired).toEqual([task.taskId]);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({ status: 'expired' });
  });

  it('a running task is not cut short by its deadline, but once given back after it, it expires', async () => {
    const { scheduler, clock } = stack;
    const { task } = await scheduler.submit({ queue: 'fresh', payload: {}, ttlSeconds: 30 });
    const agent = await startAgent(scheduler, { queues: ['fresh'] });
    const [claimed] = await claimUntil(scheduler, agent, 1, 3_000);
    expect(claimed?.taskId).toBe(task.taskId);
    for (let step = 0; step < 4; step++) {
      clock.advance(8_000);
      await scheduler.heartbeat(agent.agentId, agent.sessionId);
    }
    const released = await scheduler.release({
      agentId: agent.agentId,
      taskId: task.taskId,
      leaseEpoch: claimed?.leaseEpoch ?? 0,
    });
    expect(released.task.status).toBe('queued');
    expect(await claimUntil(scheduler, agent, 1, 500)).toEqual([]);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({ status: 'expired', attempt: 0 });
  });

  it('refuses a deadline it cannot keep, and both forms at once', async () => {
    const { scheduler, clock } = stack;
    const past = new Date(clock.now() - 1_000).toISOString();
    await expect(scheduler.submit({ queue: 'fresh', payload: {}, expiresAt: past })).rejects.toThrow(
      ValidationError,
    );
    // A deadline before the end of the delay could never be met.
    const soon = new Date(clock.now() + 5_000).toISOString();
    await expect(
      scheduler.submit({ queue: 'fresh', payload: {}, delaySeconds: 10, expiresAt: soon }),
    ).rejects.toThrow(/not after the time the task may first be claimed/);
    await expect(
      scheduler.submit({ queue: 'fresh', payload: {}, ttlSeconds: 5, expiresAt: soon }),
    ).rejects.toThrow(/not both/);
  });

  it('1,000 tasks whose deadlines race their claims: none is claimed after its deadline, none is left', async () => {
    const { scheduler, clock } = stack;
    const total = 1_000;
    const submitted: { taskId: string; expiresAt: number }[] = [];
    // The clock stands still while the tasks are written: however long that takes on a busy machine, every
    // deadline is still ahead when the claims begin (all of them passed before the first claim, once).
    clock.stop();
    for (let from = 0; from < total; from += 25) {
      const specs = Array.from({ length: 25 }, (_, i) => ({
        queue: 'race',
        payload: { i: from + i },
        // Deadlines from 1 to 8 seconds of the test clock, which the claims below move forward.
        ttlSeconds: 1 + ((from + i) % 8),
      }));
      const results = await scheduler.submitBatch(specs);
      for (const r of results)
        if (r.ok) submitted.push({ taskId: r.task.taskId, expiresAt: r.task.expiresAt ?? 0 });
    }
    expect(submitted).toHaveLength(total);
    const agents = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        startAgent(scheduler, { name: `racer-${i}`, queues: ['race'], maxConcurrency: 10 }),
      ),
    );
    clock.resume();
    let claimed = 0;
    for (let round = 0; round < 60; round++) {
      // Time moves under the claims: each round, a fifth of a second.
      clock.advance(200);
      const batches = await Promise.all(
        agents.map(async (agent) => {
          const tasks = await scheduler.claim({
            agentId: agent.agentId,
            sessionId: agent.sessionId,
            max: 10,
          });
          await Promise.all(
            tasks.map((t) =>
              scheduler.complete({ agentId: agent.agentId, taskId: t.taskId, leaseEpoch: t.leaseEpoch }),
            ),
          );
          return tasks.length;
        }),
      );
      claimed += batches.reduce((a, b) => a + b, 0);
      await Promise.all(agents.map((a) => scheduler.heartbeat(a.agentId, a.sessionId)));
    }
    clock.advance(10_000);
    await scheduler.reconcile({ everything: true });
    const states = await stack.ctx.tasks.getMany(submitted.map((s) => s.taskId));
    const late = [...states.values()].filter(
      (t) => t.leasedAt !== undefined && t.expiresAt !== undefined && t.leasedAt >= t.expiresAt,
    );
    const byStatus = new Map<string, number>();
    for (const t of states.values()) byStatus.set(t.status, (byStatus.get(t.status) ?? 0) + 1);
    console.log(
      `[expiry] ${total} tasks, deadlines 1–8 s racing 4 agents: ${claimed} claimed, ${byStatus.get('succeeded') ?? 0} succeeded, ${byStatus.get('expired') ?? 0} expired, ${late.length} claimed after their deadline`,
    );
    expect(late).toEqual([]);
    expect(byStatus.get('succeeded')).toBe(claimed);
    expect((byStatus.get('succeeded') ?? 0) + (byStatus.get('expired') ?? 0)).toBe(total);
    // Both outcomes happened: the deadlines did race the claims.
    expect(claimed).toBeGreaterThan(0);
    expect(byStatus.get('expired')).toBeGreaterThan(0);
  });
});

describe('onFailure', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['work', 'cleanup'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('a task that dies has its onFailure submitted once, carrying its id and last error', async () => {
    const { scheduler } = stack;
    const { task } = await scheduler.submit({
      queue: 'work',
      payload: { step: 'charge' },
      maxAttempts: 1,
      onFailure: { queue: 'cleanup', payload: { step: 'refund' }, priority: 'high' },
    });
    expect(task.hasOnFailure).toBe(true);
    const agent = await startAgent(scheduler, { queues: ['work', 'cleanup'] });
    const [claimed] = await claimUntil(scheduler, agent, 1, 3_000);
    const failed = await scheduler.fail(
      { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
      { message: 'card declined', retryable: false },
    );
    expect(failed.task.status).toBe('dead');

    const followUp = await scheduler.getTask(onFailureTaskIdOf(task.taskId));
    expect(followUp).toMatchObject({
      queue: 'cleanup',
      priority: 'high',
      status: 'queued',
      failureOf: { taskId: task.taskId, error: { message: 'card declined', retryable: false } },
    });
    // Done with: the dead task left the due index, and another pass submits nothing more.
    expect((await scheduler.getTask(task.taskId)).followUpPending).toBeUndefined();
    expect((await scheduler.reconcile({ everything: true })).followedUp).toEqual([]);

    const [compensation] = await claimUntil(scheduler, agent, 1, 3_000);
    expect(compensation).toMatchObject({
      taskId: followUp.taskId,
      payload: { step: 'refund' },
      failureOf: { taskId: task.taskId, error: { message: 'card declined' } },
    });
  });

  it('when the submit of the onFailure is lost, the supervisor makes it', async () => {
    const { scheduler, clock, faults } = stack;
    const { task } = await scheduler.submit({
      queue: 'work',
      payload: {},
      maxAttempts: 1,
      onFailure: { queue: 'cleanup', payload: { undo: true } },
    });
    const agent = await startAgent(scheduler, { queues: ['work'] });
    const [claimed] = await claimUntil(scheduler, agent, 1, 3_000);
    // The onFailure's payload write fails: the dead task stays due, flagged.
    faults.dynamodb.failNext('BatchWriteItemCommand', 1, 'before');
    await scheduler.fail(
      { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
      { message: 'boom', retryable: false },
    );
    expect(faults.dynamodb.injected.BatchWriteItemCommand).toBe(1);
    expect(await stack.ctx.tasks.get(onFailureTaskIdOf(task.taskId))).toBeUndefined();
    expect((await scheduler.getTask(task.taskId)).followUpPending).toBe(true);

    clock.advance(stack.ctx.settings.reconcileAfterSeconds * 1_000);
    expect((await scheduler.reconcile()).followedUp).toEqual([task.taskId]);
    const followUp = await scheduler.getTask(onFailureTaskIdOf(task.taskId));
    expect(followUp).toMatchObject({ queue: 'cleanup', failureOf: { taskId: task.taskId } });
  });

  it('a redrive makes the pending onFailure of the death first: none is made for the task running again', async () => {
    const { scheduler, faults } = stack;
    const { task } = await scheduler.submit({
      queue: 'work',
      payload: {},
      maxAttempts: 1,
      onFailure: { queue: 'cleanup', payload: { undo: 'pending' } },
    });
    const agent = await startAgent(scheduler, { queues: ['work'] });
    const [claimed] = await claimUntil(scheduler, agent, 1, 3_000);
    faults.dynamodb.failNext('BatchWriteItemCommand', 1, 'before');
    await scheduler.fail(
      { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
      { message: 'first death', retryable: false },
    );
    expect((await scheduler.getTask(task.taskId)).followUpPending).toBe(true);

    // Redriven before the supervisor made the follow-up: the redrive makes it, for the death it follows.
    const redriven = await scheduler.redrive(task.taskId);
    expect(redriven.followUpPending).toBeUndefined();
    expect(await scheduler.getTask(onFailureTaskIdOf(task.taskId))).toMatchObject({
      failureOf: { taskId: task.taskId, error: { message: 'first death' } },
    });
    // Running again, the task is no one's follow-up to make: no pass submits anything for it.
    const [again] = await claimUntil(scheduler, agent, 1, 3_000);
    expect(again?.taskId).toBe(task.taskId);
    expect((await scheduler.reconcile({ everything: true })).followedUp).not.toContain(task.taskId);
    const listed = await scheduler.listTasks({ queue: 'cleanup', limit: 100 });
    expect(listed.tasks.filter((t) => t.failureOf?.taskId === task.taskId)).toHaveLength(1);
  });

  it('each death of a redriven task has its own onFailure, named in advance by the task', async () => {
    const { scheduler } = stack;
    const { task } = await scheduler.submit({
      queue: 'work',
      payload: {},
      maxAttempts: 1,
      onFailure: { queue: 'cleanup', payload: { undo: 'each' } },
    });
    const agent = await startAgent(scheduler, { queues: ['work'] });
    const die = async (message: string) => {
      const [claimed] = await claimUntil(scheduler, agent, 1, 3_000);
      expect(claimed?.taskId).toBe(task.taskId);
      await scheduler.fail(
        { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
        { message, retryable: false },
      );
    };
    await die('first death');
    // The first death keeps the key it always had: functions deployed before make the same task for it.
    expect(onFailureTaskIdOf(task.taskId, 1)).toBe(onFailureTaskIdOf(task.taskId));
    await scheduler.redrive(task.taskId);
    await die('second death');
    const second = await scheduler.getTask(onFailureTaskIdOf(task.taskId, 2));
    expect(second).toMatchObject({
      queue: 'cleanup',
      failureOf: { taskId: task.taskId, error: { message: 'second death' } },
    });
    expect(taskView(await scheduler.getTask(task.taskId)).onFailureTaskId).toBe(second.taskId);
    const listed = await scheduler.listTasks({ queue: 'cleanup', limit: 100 });
    expect(
      listed.tasks
        .filter((t) => t.failureOf?.taskId === task.taskId)
        .map((t) => t.failureOf?.error?.message)
        .sort(),
    ).toEqual(['first death', 'second death']);
  });

  it('a retry that could not start before the deadline is no retry: the task dies and its onFailure runs', async () => {
    const { scheduler } = stack;
    const { task } = await scheduler.submit({
      queue: 'work',
      payload: {},
      ttlSeconds: 30,
      maxAttempts: 5,
      backoffBaseSeconds: 120,
      onFailure: { queue: 'cleanup', payload: {} },
    });
    const agent = await startAgent(scheduler, { queues: ['work'] });
    const [claimed] = await claimUntil(scheduler, agent, 1, 3_000);
    const failed = await scheduler.fail(
      { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
      { message: 'try later', retryable: true },
    );
    // The backoff (about two minutes) ends after the 30 s deadline: dead now, not expired later.
    expect(failed.task).toMatchObject({ status: 'dead', error: { message: 'try later' } });
    expect((await scheduler.getTask(onFailureTaskIdOf(task.taskId))).status).toBe('queued');
    // Redriven, the task runs whatever its deadline said.
    expect((await scheduler.redrive(task.taskId)).expiresAt).toBeUndefined();
  });

  it('an onFailure with a large payload goes to the payload bucket like any other', async () => {
    const withBucket = await createTestStack({ queues: ['work', 'cleanup'], payloadBucket: true });
    try {
      const { scheduler } = withBucket;
      // Random text: it does not deflate below the bucket's threshold.
      const big = randomBytes(30 * 1024).toString('base64');
      const { task } = await scheduler.submit({
        queue: 'work',
        payload: {},
        maxAttempts: 1,
        onFailure: { queue: 'cleanup', payload: { big } },
      });
      const agent = await startAgent(scheduler, { queues: ['work', 'cleanup'] });
      const [claimed] = await claimUntil(scheduler, agent, 1, 3_000);
      await scheduler.fail(
        { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
        { message: 'no', retryable: false },
      );
      expect((await scheduler.getTask(onFailureTaskIdOf(task.taskId))).payloadInObject).toBe(true);
      const [compensation] = await claimUntil(scheduler, agent, 1, 3_000);
      expect(compensation?.payload).toEqual({ big });
    } finally {
      await withBucket.destroy();
    }
  });

  it('refuses an onFailure to a queue that does not exist, before writing anything', async () => {
    await expect(
      stack.scheduler.submit({ queue: 'work', payload: {}, onFailure: { queue: 'nowhere', payload: {} } }),
    ).rejects.toThrow(/onFailure.queue: nowhere does not exist/);
  });
});
