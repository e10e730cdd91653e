/**
 * A queue's concurrency slots (`maxConcurrency`, `perKeyConcurrency`) are kept in one control item per queue and
 * per key. Each lease's slot is freed at its end, whatever the end; a task given back is admitted again at once;
 * the limits are bounded by what one item holds, and limits set above that bound before it existed keep working.
 */
import { DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STALE_LOOK } from '#core/queue-limits';
import type { Scheduler } from '#core/scheduler';
import { ValidationError } from '#domain/errors';
import { newTaskId } from '#domain/ids';
import { keyHashOf } from '#domain/lanes';
import { QUEUE_SLOTS_MAX, SLOT_ITEMS_MAX, slotItemName } from '#domain/queue-limits';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('queue slots', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({
      random: () => 0,
      queues: ['ends', 'again', 'plain', 'bound', 'legacy', 'cost', 'fit', 'full'],
      settings: { leaseTtlSeconds: 5 },
    });
    await stack.scheduler.setQueueLimits('ends', { maxConcurrency: 10, perKeyConcurrency: 10 });
    await stack.scheduler.setQueueLimits('again', { maxConcurrency: 20 });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** The slots of the queue's control item and of its key's, as task id → reservation time. */
  const slots = async (queue: string, key: string) => ({
    queue: (await stack.ctx.queueControls.readAdmission(queue)).held ?? {},
    key: (await stack.ctx.queueControls.readAdmission(`${queue}/key/${keyHashOf(key)}`)).held ?? {},
  });

  type Lease = { agentId: string; taskId: string; leaseEpoch: number };
  const ends: [string, (scheduler: Scheduler, lease: Lease) => Promise<unknown>][] = [
    ['complete', (s, lease) => s.complete(lease, { ok: true })],
    ['a failure retried', (s, lease) => s.fail(lease, { message: 'again', retryable: true })],
    ['a failure that kills it', (s, lease) => s.fail(lease, { message: 'no', retryable: false })],
    ['release', (s, lease) => s.release(lease)],
    ['cancel', (s, lease) => s.cancel(lease.taskId)],
    [
      'a take-back of an expired lease',
      async (s) => {
        stack.clock.advance(60_000);
        return s.reclaim();
      },
    ],
  ];

  for (const [index, [end, act]] of ends.entries()) {
    it(`${end} frees the lease's slot in the queue and in its key`, async () => {
      // Prepare: a keyed task leased under both limits.
      const { scheduler } = stack;
      const key = `tenant-${index}`;
      const agent = await startAgent(scheduler, { name: `ends-${end}`, queues: ['ends'] });
      const { task } = await scheduler.submit({
        queue: 'ends',
        payload: {},
        concurrencyKey: key,
        timeoutSeconds: 30,
      });
      const [claimed] = await claimUntil(scheduler, agent, 1);
      expect(claimed?.taskId).toBe(task.taskId);
      const before = await slots('ends', key);
      expect(Object.keys(before.queue)).toContain(task.taskId);
      expect(Object.keys(before.key)).toContain(task.taskId);

      // Act
      await act(scheduler, {
        agentId: agent.agentId,
        taskId: task.taskId,
        leaseEpoch: claimed?.leaseEpoch ?? 0,
      });

      // Assess: the lease is over and neither control counts it any more.
      expect((await scheduler.getTask(task.taskId)).status).not.toBe('leased');
      const after = await slots('ends', key);
      expect(Object.keys(after.queue)).not.toContain(task.taskId);
      expect(Object.keys(after.key)).not.toContain(task.taskId);
      // Whatever is still queued is left for the next case's agent not to take.
      await scheduler.cancel(task.taskId).catch(() => undefined);
    });
  }

  it('a task released in a queue with a concurrency limit is claimed again at once', async () => {
    // Prepare: an agent holds the queue's only task.
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { name: 'again', queues: ['again'] });
    const { task } = await scheduler.submit({ queue: 'again', payload: {} });
    const [first] = await claimUntil(scheduler, agent, 1);
    expect(first?.taskId).toBe(task.taskId);

    // Act: it gives the task back and claims again.
    await scheduler.release({ agentId: agent.agentId, taskId: task.taskId, leaseEpoch: 1 });
    const again = await claimUntil(scheduler, agent, 1, 5_000);

    // Assess
    expect(again.map((c) => [c.taskId, c.leaseEpoch])).toEqual([[task.taskId, 2]]);
  });

  it('refuses a concurrency limit above what the control item holds, and changes nothing', async () => {
    const { scheduler } = stack;
    await scheduler.setQueueLimits('bound', { maxConcurrency: QUEUE_SLOTS_MAX });
    for (const limits of [{ maxConcurrency: QUEUE_SLOTS_MAX + 1 }, { perKeyConcurrency: 100_000 }]) {
      await expect(scheduler.setQueueLimits('bound', limits)).rejects.toThrow(ValidationError);
      await expect(scheduler.setQueueLimits('bound', limits)).rejects.toThrow(
        new RegExp(`at most ${QUEUE_SLOTS_MAX.toLocaleString('en-US')}`),
      );
    }
    expect((await scheduler.queueStats()).find((q) => q.name === 'bound')?.limits).toEqual({
      maxConcurrency: QUEUE_SLOTS_MAX,
    });
  });

  /** The control item's table (the leases table), written directly as a function of an older release left it. */
  const controls = () => ({
    doc: DynamoDBDocumentClient.from(stack.dynamodb),
    table: stack.ctx.sessions.tableName,
  });

  /** Adds `count` entries to the queue's slots, reserved at `at`, for tasks that do not exist. */
  const fillSlots = async (queue: string, count: number, at: number) => {
    const { doc, table } = controls();
    const ids = Array.from({ length: count }, () => newTaskId());
    // An update expression takes 4 KB: 100 entries at a time.
    for (let i = 0; i < ids.length; i += 100) {
      const chunk = ids.slice(i, i + 100);
      await doc.send(
        new UpdateCommand({
          TableName: table,
          Key: { leaseId: `queue#${queue}` },
          UpdateExpression: `SET ${chunk.map((_, j) => `held.#n${j} = :at`).join(', ')}`,
          ExpressionAttributeNames: Object.fromEntries(chunk.map((id, j) => [`#n${j}`, id])),
          ExpressionAttributeValues: { ':at': at },
        }),
      );
    }
  };

  it('a control item written before the bound keeps working: its stale entries and a limit above the bound', async () => {
    // Prepare: as an older release left it, a limit of 20,000, an entry of a task it released without freeing
    // the slot (the task is queued again; its record still names the grant time), and entries of other leases it
    // never freed, one long past and one recent.
    const { scheduler, clock } = stack;
    const agent = await startAgent(scheduler, { name: 'legacy', queues: ['legacy'] });
    const { task } = await scheduler.submit({ queue: 'legacy', payload: {} });
    const [first] = await claimUntil(scheduler, agent, 1);
    await scheduler.release({
      agentId: agent.agentId,
      taskId: task.taskId,
      leaseEpoch: first?.leaseEpoch ?? 0,
    });
    const leasedAt = (await scheduler.getTask(task.taskId)).leasedAt ?? 0;
    const { doc, table } = controls();
    await doc.send(
      new PutCommand({
        TableName: table,
        Item: {
          leaseId: 'queue#legacy',
          kind: 'queue',
          queue: 'legacy',
          paused: false,
          limits: { maxConcurrency: 20_000 },
          updatedAt: clock.now() - 86_400_000,
          held: {
            [task.taskId]: leasedAt,
            [newTaskId()]: clock.now() - 3_600_000,
            [newTaskId()]: clock.now(),
          },
        },
      }),
    );

    // Act: a function started after the deploy (no cached control) claims.
    const again = await claimUntil(stack.sibling(), agent, 1, 5_000);
    const listed = (await scheduler.queueStats()).find((q) => q.name === 'legacy');

    // Assess: the task is admitted again, its slot reserved at its new grant (in one of the items its limit is now
    // spread over); the limit is kept as set, enforced capped.
    expect(again.map((c) => [c.taskId, c.leaseEpoch])).toEqual([[task.taskId, (first?.leaseEpoch ?? 0) + 1]]);
    const names = Array.from({ length: SLOT_ITEMS_MAX }, (_, i) => slotItemName('legacy', i));
    const items = [...(await stack.ctx.queueControls.readSlotItems(names)).values()];
    expect(items.map((item) => item.held?.[task.taskId])).toContain(
      (await scheduler.getTask(task.taskId)).leasedAt,
    );
    expect(listed).toMatchObject({
      limits: { maxConcurrency: 20_000 },
      enforcedLimits: { maxConcurrency: QUEUE_SLOTS_MAX },
    });
  });

  it(`a claim of a full queue looks at its ${STALE_LOOK} oldest entries for a slot no lease holds, not at every lease`, async () => {
    // Prepare: a queue of 200 slots, all reserved: 199 a moment ago (by claims still deciding, as far as anyone can
    // tell), and the oldest an hour ago, by a lease whose freeing was lost.
    const { scheduler, clock } = stack;
    await scheduler.setQueueLimits('full', { maxConcurrency: 200 });
    const { doc, table } = controls();
    await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: { leaseId: 'queue#full' },
        UpdateExpression: 'SET held = :none',
        ExpressionAttributeValues: { ':none': {} },
      }),
    );
    await fillSlots('full', 1, clock.now() - 3_600_000);
    await fillSlots('full', 199, clock.now());
    const agent = await startAgent(scheduler, { name: 'full', queues: ['full'] });
    const { task } = await scheduler.submit({ queue: 'full', payload: {} });
    let tasksRead = 0;
    const name = 'countTaskReads';
    stack.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        const requested = (args.input as { RequestItems?: Record<string, { Keys?: unknown[] }> })
          .RequestItems;
        if (context.commandName === 'BatchGetItemCommand')
          tasksRead += requested?.[stack.ctx.tasks.tableName]?.Keys?.length ?? 0;
        return next(args);
      },
      { step: 'initialize', name },
    );

    // Act
    let claimed: Awaited<ReturnType<typeof claimUntil>> = [];
    try {
      claimed = await claimUntil(scheduler, agent, 1, 5_000);
    } finally {
      stack.dynamodb.middlewareStack.remove(name);
    }

    // Assess: the task takes the stale slot; the claims read no more than the oldest entries, each time they looked.
    expect(claimed.map((c) => c.taskId)).toEqual([task.taskId]);
    expect(Object.keys((await stack.ctx.queueControls.readAdmission('full')).held ?? {})).toHaveLength(200);
    expect(tasksRead).toBeGreaterThan(0);
    expect(tasksRead).toBeLessThanOrEqual(STALE_LOOK);
  });

  it('a limit above the bound set before it is enforced at the bound', async () => {
    // Prepare: a limit of 20,000 and the bound's worth of slots taken by leases still running.
    const { scheduler, clock } = stack;
    const { doc, table } = controls();
    const now = clock.now();
    await doc.send(
      new PutCommand({
        TableName: table,
        Item: {
          leaseId: 'queue#fit',
          kind: 'queue',
          queue: 'fit',
          limits: { maxConcurrency: 20_000 },
          held: {},
        },
      }),
    );
    // Young entries with no task behind them stand for claims still deciding: they count.
    await fillSlots('fit', QUEUE_SLOTS_MAX, now);
    const agent = await startAgent(scheduler, { name: 'fit', queues: ['fit'] });
    await scheduler.submit({ queue: 'fit', payload: {} });

    // Act
    const claimed = await claimUntil(scheduler, agent, 1, 1_500);

    // Assess: the item holds the bound's worth of slots, and no more are admitted.
    expect(claimed).toEqual([]);
    expect(Object.keys((await stack.ctx.queueControls.readAdmission('fit')).held ?? {})).toHaveLength(
      QUEUE_SLOTS_MAX,
    );
  });

  it('freeing a slot costs one write for a queue with limits, and nothing for a queue without', async () => {
    const { scheduler, meter } = stack;
    await scheduler.setQueueLimits('cost', { maxConcurrency: 100 });
    const touched: string[] = [];
    stack.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        const key = JSON.stringify((args.input as { Key?: unknown }).Key ?? '');
        if (key.includes('queue#')) touched.push(`${context.commandName}`);
        return next(args);
      },
      { step: 'initialize', name: 'queue-control-requests' },
    );
    /** The requests and units of one task's end, by complete, in `queue`; and the control item requests. */
    const end = async (queue: string) => {
      const agent = await startAgent(scheduler, { name: `cost-${queue}`, queues: [queue] });
      const { task } = await scheduler.submit({ queue, payload: {} });
      const [claimed] = await claimUntil(scheduler, agent, 1);
      meter.reset();
      touched.length = 0;
      await scheduler.complete({
        agentId: agent.agentId,
        taskId: task.taskId,
        leaseEpoch: claimed?.leaseEpoch ?? 0,
      });
      return { ...meter.totals((r) => r.service === 'dynamodb'), control: [...touched] };
    };
    try {
      const plain = await end('plain');
      const limited = await end('cost');
      console.log(
        `[limits] a task's end: ${plain.requests} requests, ${plain.writeUnits} WCU without limits; ${limited.requests} requests, ${limited.writeUnits} WCU with a concurrency limit (of 100, spread over 5 items) and 1 lease held`,
      );
      expect(plain.control).toEqual([]);
      expect(limited.control).toEqual(['UpdateItemCommand']);
      expect(limited.requests).toBe(plain.requests + 1);
      expect(limited.writeUnits).toBe(plain.writeUnits + 1);
      // With 950 of 1,000 held, still one write unit: `slot-spread.test.ts`.
    } finally {
      stack.dynamodb.middlewareStack.remove('queue-control-requests');
    }
  });
});
