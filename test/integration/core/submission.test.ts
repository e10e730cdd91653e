/**
 * (c) idempotent submit, (g) a lost SQS send is found and sent again by reconcile.
 */
import { DeleteCommand, DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HINT_MAX_RECEIVES } from '#adapters/task-queues';
import { BACKLOG_PATIENCE } from '#core/reconcile';
import { Scheduler } from '#core/scheduler';
import { IdempotencyConflictError } from '#domain/errors';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('submission', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({
      queues: [
        'idem',
        'race',
        'conflict',
        'lost',
        'vanished',
        'backlog',
        'returned',
        'late',
        'legacy',
        'purged',
      ],
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('(c) the same idempotency key returns the same task and writes nothing new', async () => {
    const { scheduler } = stack;
    const first = await scheduler.submit({ queue: 'idem', payload: { n: 1 }, idempotencyKey: 'order-1' });
    const again = await scheduler.submit({ queue: 'idem', payload: { n: 1 }, idempotencyKey: 'order-1' });

    expect(first.created).toBe(true);
    expect(again.created).toBe(false);
    expect(again.task.taskId).toBe(first.task.taskId);
    expect(again.task.createdAt).toBe(first.task.createdAt);

    // Two hints may exist (a replay sends again), but only one task and one owner.
    const agent = await startAgent(scheduler, { queues: ['idem'], maxConcurrency: 5 });
    const claimed = await claimUntil(scheduler, agent, 2, 1_500, 5);
    expect(claimed.map((c) => c.taskId)).toEqual([first.task.taskId]);
  });

  it('(c) ten concurrent submissions with one key create exactly one task', async () => {
    const instances = Array.from({ length: 10 }, () => stack.sibling());
    const results = await Promise.all(
      instances.map((s) => s.submit({ queue: 'race', payload: { n: 2 }, idempotencyKey: 'order-2' })),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.task.taskId)).size).toBe(1);
  });

  it('(c) a key reused for a different task is refused and the first payload is kept', async () => {
    const { scheduler } = stack;
    const { task } = await scheduler.submit({
      queue: 'conflict',
      payload: { v: 'first' },
      idempotencyKey: 'order-3',
    });
    await expect(
      scheduler.submit({ queue: 'conflict', payload: { v: 'second' }, idempotencyKey: 'order-3' }),
    ).rejects.toBeInstanceOf(IdempotencyConflictError);
    await expect(
      scheduler.submit({
        queue: 'conflict',
        payload: { v: 'first' },
        priority: 'high',
        idempotencyKey: 'order-3',
      }),
    ).rejects.toBeInstanceOf(IdempotencyConflictError);

    const agent = await startAgent(scheduler, { queues: ['conflict'] });
    const [claimed] = await claimUntil(scheduler, agent, 1);
    expect(claimed).toMatchObject({ taskId: task.taskId, payload: { v: 'first' } });
  });

  it('(g) a send that failed after the write committed is sent again by the next reconcile', async () => {
    // Prepare: the send fails; the submission still succeeds because the task is committed.
    const { scheduler, faults, clock, ctx } = stack;
    faults.sqs.failNext('SendMessageCommand', 1, 'before');
    const { task, created } = await scheduler.submit({ queue: 'lost', payload: { lost: true } });
    expect(created).toBe(true);
    expect(faults.sqs.injected.SendMessageCommand).toBeGreaterThanOrEqual(1);
    const early = await startAgent(scheduler, { queues: ['lost'] });
    expect(await claimUntil(scheduler, early, 1, 500)).toHaveLength(0);

    // Act: the failed send marked the task, so the very next pass sends it, without waiting for its due time.
    const next = await scheduler.reconcile();
    const agent = await startAgent(scheduler, { queues: ['lost'] });
    const [claimed] = await claimUntil(scheduler, agent, 1);

    // Assess
    expect(next.redispatched).toContain(task.taskId);
    expect(claimed).toMatchObject({ taskId: task.taskId, payload: { lost: true } });
    expect((await scheduler.getTask(task.taskId)).dispatchCount).toBe(2);
    // Once claimed, a further pass leaves it alone.
    clock.advance(ctx.settings.reconcileAfterSeconds * 4_000);
    expect((await scheduler.reconcile()).redispatched).not.toContain(task.taskId);
  });

  it('a hint gone without a trace is sent again once its due time passes and its queue has no backlog', async () => {
    const { scheduler, clock, ctx } = stack;
    const { task } = await scheduler.submit({ queue: 'vanished', payload: {} });
    await dropHints(stack, 'vanished', [task.taskId]);
    expect((await scheduler.reconcile()).redispatched).not.toContain(task.taskId);

    clock.advance(ctx.settings.reconcileAfterSeconds * 1_000 + 1_000);
    expect((await scheduler.reconcile()).redispatched).toContain(task.taskId);
    const agent = await startAgent(scheduler, { queues: ['vanished'] });
    expect(await claimUntil(scheduler, agent, 1)).toMatchObject([{ taskId: task.taskId }]);
  });

  it('tasks whose hints may still be waiting behind a backlog are not sent again until patience runs out', async () => {
    // Prepare: three tasks in one queue; the hint of the first is gone, the other two still wait in SQS.
    const { scheduler, clock, ctx } = stack;
    const tasks = [];
    for (let i = 0; i < 3; i++)
      tasks.push((await scheduler.submit({ queue: 'backlog', payload: { i } })).task);
    const [gone] = tasks.map((t) => t.taskId);
    await dropHints(stack, 'backlog', [gone ?? '']);
    const afterMs = ctx.settings.reconcileAfterSeconds * 1_000;

    // Act: a pass once they are overdue, and one when they have waited BACKLOG_PATIENCE looks.
    clock.advance(afterMs + 1_000);
    const overdue = await scheduler.reconcile();
    const again = await scheduler.reconcile();
    clock.advance(afterMs * BACKLOG_PATIENCE - afterMs);
    const patient = await scheduler.reconcile();

    // Assess: nothing was sent while the queue had hints ready, the next look was moved later, and then all were.
    expect(overdue.redispatched).toEqual([]);
    expect(overdue.deferred).toBeGreaterThanOrEqual(3);
    expect(again).toMatchObject({ redispatched: [], deferred: 0 });
    expect(patient.redispatched).toEqual(expect.arrayContaining(tasks.map((t) => t.taskId)));
    const agent = await startAgent(scheduler, { queues: ['backlog'], maxConcurrency: 3 });
    expect((await claimUntil(scheduler, agent, 3)).map((t) => t.taskId).sort()).toEqual(
      tasks.map((t) => t.taskId).sort(),
    );
  });

  it('a hint handed back again and again is sent anew before SQS would move it to the dead-letter queue', async () => {
    const { scheduler, ctx } = stack;
    const { task } = await scheduler.submit({ queue: 'returned', payload: {} });
    const receiveOnce = async () =>
      (
        await ctx.queues.receive('returned', 'normal', {
          max: 10,
          visibilityTimeoutSeconds: 30,
          waitTimeSeconds: 0,
        })
      ).hints.filter((h) => h.taskId === task.taskId);
    const counts: number[] = [];
    for (let i = 0; i < HINT_MAX_RECEIVES + 2; i++) {
      const [hint, ...copies] = await receiveOnce();
      expect(copies).toEqual([]);
      if (!hint) throw new Error(`the hint was gone at receive ${i + 1}`);
      counts.push(hint.receiveCount);
      await ctx.queues.returnLater(hint, 0);
    }
    expect(Math.max(...counts)).toBeLessThan(HINT_MAX_RECEIVES);
    const agent = await startAgent(scheduler, { queues: ['returned'] });
    expect(await claimUntil(scheduler, agent, 1)).toMatchObject([{ taskId: task.taskId }]);
  });

  it('a delay longer than SQS can carry waits in the due index and is sent when it is nearly due', async () => {
    const { scheduler, clock } = stack;
    const { task } = await scheduler.submit({ queue: 'late', payload: {}, delaySeconds: 3_600 });
    expect(await scheduler.getTask(task.taskId)).toMatchObject({
      dispatchCount: 0,
      notBefore: task.createdAt + 3_600_000,
    });
    expect((await scheduler.reconcile()).redispatched).not.toContain(task.taskId);

    // 15 minutes before it is due, the hint leaves with the rest of the delay on it.
    clock.advance((3_600 - 900) * 1_000);
    expect((await scheduler.reconcile()).redispatched).toContain(task.taskId);
    const sent = await scheduler.getTask(task.taskId);
    expect(sent.dispatchCount).toBe(1);
    expect(sent.dispatchedAt).toBe(task.createdAt + 3_600_000);
    // It is not sent again while that hint is pending.
    clock.advance(60 * 1_000);
    expect((await scheduler.reconcile()).redispatched).not.toContain(task.taskId);
  });

  it('a payload stored under the key payloads had before they named their specification is still found', async () => {
    const { scheduler, ctx } = stack;
    // Written by layout 1, whose payload items are keyed by their task.
    const layoutOne = new Scheduler({ ...ctx, settings: { ...ctx.settings, taskLayout: 1 } });
    const { task } = await layoutOne.submit({ queue: 'legacy', payload: { kept: true } });
    const doc = DynamoDBDocumentClient.from(stack.dynamodb);
    const TableName = ctx.tasks.tableName;
    const current = { taskId: task.taskId, part: `payload#${task.specHash}` };
    const { Item } = await doc.send(new GetCommand({ TableName, Key: current }));
    await doc.send(new PutCommand({ TableName, Item: { ...Item, part: 'payload' } }));
    await doc.send(new DeleteCommand({ TableName, Key: current }));

    const agent = await startAgent(scheduler, { queues: ['legacy'] });
    const [claimed] = await claimUntil(scheduler, agent, 1);
    expect(claimed).toMatchObject({ taskId: task.taskId, payload: { kept: true } });
  });

  it('a pass that sends many lost hints again sends them ten to a request', async () => {
    // Prepare: 25 tasks whose hints are all gone, as after a purge.
    const { scheduler, clock, ctx, meter } = stack;
    const batch = await scheduler.submitBatch(
      Array.from({ length: 25 }, (_, n) => ({ queue: 'purged', payload: { n } })),
    );
    const ids = batch.flatMap((item) => (item.ok ? [item.task.taskId] : []));
    expect(ids).toHaveLength(25);
    for (;;) {
      const { hints } = await ctx.queues.receive('purged', 'normal', {
        max: 10,
        visibilityTimeoutSeconds: 30,
        waitTimeSeconds: 0,
      });
      if (hints.length === 0) break;
      await ctx.queues.delete(hints);
    }

    // Act: a pass once they are overdue.
    clock.advance(ctx.settings.reconcileAfterSeconds * 1_000 + 1_000);
    meter.reset();
    const pass = await scheduler.reconcile();

    // Assess: every one sent again, in batches of up to ten a queue (other tests' tasks may be sent with them).
    expect(pass.redispatched).toEqual(expect.arrayContaining(ids));
    const sends = meter.requests.filter((r) => r.service === 'sqs' && r.operation.startsWith('SendMessage'));
    const queues = new Set(
      await Promise.all(pass.redispatched.map(async (id) => (await scheduler.getTask(id)).queue)),
    );
    expect(sends.filter((r) => r.operation === 'SendMessageCommand')).toEqual([]);
    expect(sends.length).toBeLessThanOrEqual(Math.ceil(pass.redispatched.length / 10) + queues.size);
    const agent = await startAgent(scheduler, { queues: ['purged'], maxConcurrency: 25 });
    expect((await claimUntil(scheduler, agent, 25, 5_000, 10)).map((t) => t.taskId).sort()).toEqual(
      [...ids].sort(),
    );
  });
});

/** Takes the hints of `taskIds` out of a queue, as a purge or a lost message would; the others are put back. */
async function dropHints(stack: TestStack, queue: string, taskIds: readonly string[]): Promise<void> {
  const { hints } = await stack.ctx.queues.receive(queue, 'normal', {
    max: 10,
    visibilityTimeoutSeconds: 30,
    waitTimeSeconds: 0,
  });
  await stack.ctx.queues.delete(hints.filter((h) => taskIds.includes(h.taskId)));
  await Promise.all(
    hints.filter((h) => !taskIds.includes(h.taskId)).map((h) => stack.ctx.queues.returnLater(h, 0)),
  );
}
