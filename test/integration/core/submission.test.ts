/**
 * (c) idempotent submit, (g) a lost SQS send is found and sent again by reconcile.
 */
import { DeleteCommand, DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyConflictError } from '#domain/errors';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('submission', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['idem', 'race', 'conflict', 'lost', 'late', 'legacy'] });
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

  it('(g) a send lost after the write committed is sent again by reconcile', async () => {
    // Prepare: the send fails; the submission still succeeds because the task is committed.
    const { scheduler, faults, clock, ctx } = stack;
    faults.sqs.failNext('SendMessageCommand', 1, 'before');
    const { task, created } = await scheduler.submit({ queue: 'lost', payload: { lost: true } });
    expect(created).toBe(true);
    expect(faults.sqs.injected.SendMessageCommand).toBeGreaterThanOrEqual(1);
    const early = await startAgent(scheduler, { queues: ['lost'] });
    expect(await claimUntil(scheduler, early, 1, 500)).toHaveLength(0);

    // Act: nothing to do before the due time; after it, reconcile sends the task again.
    const beforeDue = await scheduler.reconcile();
    clock.advance(ctx.settings.reconcileAfterSeconds * 1_000 + 1_000);
    const due = await scheduler.reconcile();
    const agent = await startAgent(scheduler, { queues: ['lost'] });
    const [claimed] = await claimUntil(scheduler, agent, 1);

    // Assess
    expect(beforeDue.redispatched).not.toContain(task.taskId);
    expect(due.redispatched).toContain(task.taskId);
    expect(claimed).toMatchObject({ taskId: task.taskId, payload: { lost: true } });
    expect((await scheduler.getTask(task.taskId)).dispatchCount).toBe(2);
    // Once claimed, a further pass leaves it alone.
    clock.advance(ctx.settings.reconcileAfterSeconds * 4_000);
    expect((await scheduler.reconcile()).redispatched).not.toContain(task.taskId);
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
    const { task } = await scheduler.submit({ queue: 'legacy', payload: { kept: true } });
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
});
