/**
 * The supervisor pass: the starvation ladder's steps in order, the warning for a queue no live agent serves,
 * paused queues left alone, one cycle result, and one read of the due index for the whole pass.
 */

import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEventFeed } from '#adapters/event-publishers';
import { DUE_INDEX } from '#adapters/tables';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('supervisor pass', () => {
  let stack: TestStack;
  const feed = new LocalEventFeed();

  beforeAll(async () => {
    stack = await createTestStack({
      events: feed,
      queues: ['starving', 'paused', 'served', 'join', 'again', 'legacy', 'shared'],
      settings: {
        reconcileAfterSeconds: 5,
        starvation: { promoteAfterSeconds: 10, announceAfterSeconds: 20, attentionAfterSeconds: 30 },
      },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('climbs the ladder in order: promoted, starved (with no capable agent), needs attention', async () => {
    const { scheduler, clock } = stack;
    const { task } = await scheduler.submit({ queue: 'starving', payload: {}, priority: 'low' });
    await scheduler.submit({ queue: 'paused', payload: {} });
    await scheduler.pauseQueue('paused');

    const passes = [];
    for (const seconds of [5, 6, 10, 10]) {
      clock.advance(seconds * 1_000);
      passes.push(await scheduler.supervise());
    }
    console.log(`[supervisor] one cycle result: ${JSON.stringify(passes[1])}`);

    expect(passes.map((p) => [p.promoted, p.starved, p.escalated])).toEqual([
      [0, 0, 0],
      [1, 0, 0],
      [0, 1, 0],
      [0, 0, 1],
    ]);
    expect(passes[2]?.noCapableAgent).toEqual(['starving']);
    expect(passes.every((p) => p.pausedQueuesSkipped >= 1)).toBe(true);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({
      priority: 'normal',
      starvationLevel: 3,
      needsAttention: true,
      status: 'queued',
    });
    const types = feed
      .read(0, 1_000)
      .events.filter((e) => e.taskId === task.taskId || e.queue === 'starving')
      .map((e) => e.type);
    // One worker asked for in the pass that found it starving; the next pass is within `announceAfter` of it.
    expect(types).toEqual(['task.starved', 'queue.noCapableAgent', 'agent.spawnRequested']);
    // The promoted task is claimable from its new, more urgent queue.
    const agent = await startAgent(scheduler, { queues: ['starving'] });
    const [claimed] = await claimUntil(scheduler, agent, 1);
    expect(claimed).toMatchObject({ taskId: task.taskId, priority: 'normal' });
  });

  it('reads each shard of the due index once a pass: the tasks of a silent agent taken back, a lost hint sent again', async () => {
    const { scheduler, clock, ctx, dynamodb } = stack;
    const agent = await startAgent(scheduler, { queues: ['shared'] });
    const { task: held } = await scheduler.submit({ queue: 'shared', payload: { n: 1 } });
    await claimUntil(scheduler, agent, 1);
    const { task: lost } = await scheduler.submit({ queue: 'shared', payload: { n: 2 } });
    // The second task's hint is lost: taken off the queue and deleted.
    for (;;) {
      const { hints } = await ctx.queues.receive('shared', 'normal', {
        max: 10,
        visibilityTimeoutSeconds: 30,
        waitTimeSeconds: 0,
      });
      if (hints.length === 0) break;
      await ctx.queues.delete(hints);
    }
    // The agent falls silent past its session's end; the lost hint is past its reconcile time.
    clock.advance(10 * 60_000);

    // Queries of the due index, counted on the wire.
    let queries = 0;
    dynamodb.middlewareStack.add(
      (next) => async (args) => {
        if ((args.input as { IndexName?: string }).IndexName === DUE_INDEX) queries++;
        return next(args);
      },
      { step: 'initialize', name: 'countDueQueries' },
    );
    const pass = await scheduler
      .supervise()
      .finally(() => dynamodb.middlewareStack.remove('countDueQueries'));
    expect(queries).toBe(ctx.tasks.dueShards.length);
    // Other tests' agents fell silent too: their tasks are counted with this one.
    expect(pass.errors).toBe(0);
    expect(pass.recoveredLeases).toBeGreaterThanOrEqual(1);
    expect(pass.reconciled).toBeGreaterThanOrEqual(1);
    expect(await scheduler.getTask(held.taskId)).toMatchObject({ status: 'queued' });
    const fresh = await startAgent(scheduler, { queues: ['shared'] });
    const claimed = await claimUntil(scheduler, fresh, 1);
    expect(claimed.map((c) => c.taskId)).toContain(lost.taskId);
  });

  it('a starving queue with a live agent is not reported as having none', async () => {
    const { scheduler, clock } = stack;
    const agent = await startAgent(scheduler, { queues: ['served'], maxConcurrency: 1 });
    // The agent is busy with one task while another waits.
    await scheduler.submit({ queue: 'served', payload: { n: 1 } });
    await claimUntil(scheduler, agent, 1);
    await scheduler.submit({ queue: 'served', payload: { n: 2 } });
    let reported: readonly string[] = [];
    for (let i = 0; i < 5; i++) {
      clock.advance(6_000);
      await scheduler.heartbeat(agent.agentId, agent.sessionId);
      reported = [...reported, ...(await scheduler.supervise()).noCapableAgent];
    }
    expect(reported).not.toContain('served');
  });

  it('a join that waited on its dependencies counts its wait from when it became claimable', async () => {
    const { scheduler, clock } = stack;
    const { task: first } = await scheduler.submit({ queue: 'join', payload: {} });
    const { task: join } = await scheduler.submit({ queue: 'join', payload: {}, dependsOn: [first.taskId] });
    // The join waits 15 s on its dependency, past the 10 s of the ladder's first rung.
    clock.advance(15_000);
    const agent = await startAgent(scheduler, { queues: ['join'] });
    const [claimed] = await claimUntil(scheduler, agent, 1);
    expect(claimed?.taskId).toBe(first.taskId);
    await scheduler.complete({
      agentId: agent.agentId,
      taskId: first.taskId,
      leaseEpoch: claimed?.leaseEpoch ?? 0,
    });
    expect((await scheduler.getTask(join.taskId)).status).toBe('queued');

    clock.advance(6_000);
    await scheduler.supervise();
    expect((await scheduler.getTask(join.taskId)).starvationLevel).toBeUndefined();
    clock.advance(5_000);
    await scheduler.supervise();
    expect((await scheduler.getTask(join.taskId)).starvationLevel).toBe(1);
  });

  it('a task that starves again after a requeue climbs the ladder again, and is announced again', async () => {
    const { scheduler, clock } = stack;
    const { task } = await scheduler.submit({ queue: 'again', payload: {}, priority: 'low' });
    const climb = async () => {
      const levels = [];
      for (const seconds of [5, 6, 10, 10]) {
        clock.advance(seconds * 1_000);
        await scheduler.supervise();
        levels.push((await scheduler.getTask(task.taskId)).starvationLevel ?? 0);
      }
      return levels;
    };
    expect(await climb()).toEqual([0, 1, 2, 3]);
    const agent = await startAgent(scheduler, { queues: ['again'] });
    const [claimed] = await claimUntil(scheduler, agent, 1);
    expect(claimed?.taskId).toBe(task.taskId);
    const released = await scheduler.release({
      agentId: agent.agentId,
      taskId: task.taskId,
      leaseEpoch: claimed?.leaseEpoch ?? 0,
    });
    expect(released.task).toMatchObject({ status: 'queued' });
    expect(released.task.starvationLevel).toBeUndefined();
    expect(released.task.needsAttention).toBeUndefined();
    expect(await climb()).toEqual([0, 1, 2, 3]);
    const starved = feed
      .read(0, 1_000)
      .events.filter((e) => e.taskId === task.taskId && e.type === 'task.starved');
    expect(starved).toHaveLength(2);
  });

  it('a queued record written before the claimable time was kept counts from its submit or its delay', async () => {
    const { scheduler, clock, ctx, dynamodb } = stack;
    const { task } = await scheduler.submit({ queue: 'legacy', payload: {} });
    // As an older version left it: no `readyAt`.
    await DynamoDBDocumentClient.from(dynamodb).send(
      new UpdateCommand({
        TableName: ctx.tasks.tableName,
        Key: { taskId: task.taskId, part: 'state' },
        UpdateExpression: 'REMOVE #readyAt',
        ExpressionAttributeNames: { '#readyAt': 'readyAt' },
      }),
    );
    expect((await ctx.tasks.get(task.taskId))?.readyAt).toBeUndefined();
    clock.advance(11_000);
    await scheduler.supervise();
    expect((await scheduler.getTask(task.taskId)).starvationLevel).toBe(1);
  });
});
