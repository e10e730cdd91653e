/**
 * A concurrency limit above `SLOTS_PER_ITEM` keeps its slots in several items, each with its share (`queueSlotLayout`
 * 2): the limit holds exactly under parallel claims, through changes of the limit and of the layout, and for slots
 * an earlier release kept in one item; a claim and a freeing write one small item whatever the limit.
 */
import { DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QueueAdmissionState } from '#core/ports/queue-control-store';
import type { Scheduler } from '#core/scheduler';
import { newTaskId } from '#domain/ids';
import { SLOT_ITEMS_MAX, SLOTS_PER_ITEM, slotItemName } from '#domain/queue-limits';
import { claimUntil, createTestStack, leasedTaskIds, startAgent, type TestStack } from '#test/stack';

describe('slots spread over items', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['parallel', 'moved', 'lowered', 'raised', 'back', 'rated', 'keyed', 'cost', 'plain'],
      settings: { leaseTtlSeconds: 300 },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** Every item a control's slots may be in, by name, as they are now. */
  const items = async (control: string): Promise<Map<string, QueueAdmissionState>> => {
    const names = Array.from({ length: SLOT_ITEMS_MAX }, (_, i) => slotItemName(control, i));
    const read = await stack.ctx.queueControls.readSlotItems(names);
    return new Map([...read].filter(([, state]) => state.held !== undefined || state.stamp !== undefined));
  };
  const entries = (state: QueueAdmissionState | undefined) => Object.keys(state?.held ?? {}).length;

  const doc = () => DynamoDBDocumentClient.from(stack.dynamodb);
  const table = () => stack.ctx.sessions.tableName;

  /** Adds `count` entries reserved `at` to an item of slots, for tasks that do not exist. */
  const fill = async (item: string, count: number, at: number) => {
    const ids = Array.from({ length: count }, () => newTaskId());
    for (let i = 0; i < ids.length; i += 100) {
      const chunk = ids.slice(i, i + 100);
      await doc().send(
        new UpdateCommand({
          TableName: table(),
          Key: { leaseId: `queue#${item}` },
          UpdateExpression: `SET ${chunk.map((_, j) => `held.#n${j} = :at`).join(', ')}`,
          ExpressionAttributeNames: Object.fromEntries(chunk.map((id, j) => [`#n${j}`, id])),
          ExpressionAttributeValues: { ':at': at },
        }),
      );
    }
  };

  /** Submits `count` tasks to `queue`. */
  const submit = async (queue: string, count: number) => {
    const ids: string[] = [];
    for (let i = 0; i < count; i++)
      ids.push((await stack.scheduler.submit({ queue, payload: { i } })).task.taskId);
    return ids;
  };

  const completeAll = async (
    scheduler: Scheduler,
    agent: { agentId: string },
    leases: readonly { taskId: string; leaseEpoch: number }[],
  ) => {
    for (const { taskId, leaseEpoch } of leases)
      await scheduler.complete({ agentId: agent.agentId, taskId, leaseEpoch });
  };

  it('12 agents claiming in parallel fill a limit of 45 spread over three items exactly, and never hold more', async () => {
    // Prepare: 45 slots, so three items of 15; 90 tasks.
    const { scheduler } = stack;
    await scheduler.setQueueLimits('parallel', { maxConcurrency: 45 });
    await submit('parallel', 90);
    const agents = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        startAgent(stack.sibling(), { name: `parallel-${i}`, queues: ['parallel'], maxConcurrency: 10 }),
      ),
    );

    // Act: every agent claims in parallel with a function of its own, holding what it gets, until nothing more is
    // granted; then each completes what it holds and claims again, until all 90 are done.
    let most = 0;
    let done = 0;
    const held = new Map<number, { taskId: string; leaseEpoch: number }[]>();
    const round = async () => {
      const granted = await Promise.all(
        agents.map(async (agent, i) => {
          const claimed = await stack.sibling().claim({ ...agent, max: 5 });
          held.set(i, [...(held.get(i) ?? []), ...claimed]);
          return claimed.length;
        }),
      );
      most = Math.max(most, (await leasedTaskIds(stack, { queue: 'parallel' })).length);
      return granted.reduce((a, b) => a + b, 0);
    };
    // Refused hints come back a second later: a claim that found the limit full waits for them.
    const filling = Date.now() + 10_000;
    while (most < 45 && Date.now() < filling) {
      if ((await round()) === 0) await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const filled = most;
    const deadline = Date.now() + 20_000;
    while (done < 90 && Date.now() < deadline) {
      for (const [i, leases] of held) {
        await completeAll(stack.sibling(), agents[i] ?? { agentId: '' }, leases);
        done += leases.length;
      }
      held.clear();
      if (done < 90 && (await round()) === 0) await new Promise((resolve) => setTimeout(resolve, 300));
    }

    // Assess
    expect(done).toBe(90);
    expect(filled).toBe(45);
    expect(most).toBeLessThanOrEqual(45);
    const spread = await items('parallel');
    expect([...spread.values()].map((s) => s.stamp)).toEqual(['3/45', '3/45', '3/45']);
    expect([...spread.values()].map(entries)).toEqual([0, 0, 0]);
  });

  it('slots an earlier release kept in one item all count: with 50 of 60 held, exactly 10 more are admitted', async () => {
    // Prepare: the control item as a release before the spread left it: one map of 50 reservations a moment old
    // (claims still deciding, as far as anyone can tell), under a limit of 60.
    const { scheduler, clock } = stack;
    await doc().send(
      new PutCommand({
        TableName: table(),
        Item: {
          leaseId: 'queue#moved',
          kind: 'queue',
          queue: 'moved',
          limits: { maxConcurrency: 60 },
          held: {},
        },
      }),
    );
    await fill('moved', 50, clock.now());
    await submit('moved', 15);
    const agent = await startAgent(scheduler, { name: 'moved', queues: ['moved'], maxConcurrency: 20 });

    // Act
    const claimed = await claimUntil(scheduler, agent, 10, 4_000, 5);
    const beyond = await claimUntil(scheduler, agent, 1, 800);

    // Assess: 10 granted; the first item keeps its 50 and 30 copies stand for its surplus in the others.
    expect(claimed).toHaveLength(10);
    expect(beyond).toEqual([]);
    const spread = await items('moved');
    expect([...spread.values()].map((s) => s.stamp)).toEqual(['3/60', '3/60', '3/60']);
    expect(entries(spread.get('moved'))).toBe(50);
    expect([...spread.values()].reduce((sum, s) => sum + entries(s), 0)).toBe(90);
  });

  it('a lowered limit admits nothing until the leases are under it, then up to it exactly', async () => {
    // Prepare: 60 leases under a limit of 60, then the limit lowered to 25.
    const { scheduler } = stack;
    await scheduler.setQueueLimits('lowered', { maxConcurrency: 60 });
    await submit('lowered', 75);
    const agent = await startAgent(scheduler, { name: 'lowered', queues: ['lowered'], maxConcurrency: 100 });
    const first = await claimUntil(scheduler, agent, 60, 6_000, 10);
    expect(first).toHaveLength(60);
    await scheduler.setQueueLimits('lowered', { maxConcurrency: 25 });

    // Act: claims while 60 are held; then 40 end, and claims again.
    const over = await claimUntil(scheduler, agent, 1, 1_500);
    await completeAll(scheduler, agent, first.slice(0, 40));
    const after = await claimUntil(scheduler, agent, 5, 4_000, 10);
    const beyond = await claimUntil(scheduler, agent, 1, 800);

    // Assess
    expect(over).toEqual([]);
    expect(after).toHaveLength(5);
    expect(beyond).toEqual([]);
    expect(await leasedTaskIds(stack, { queue: 'lowered' })).toHaveLength(25);
    const spread = await items('lowered');
    expect(spread.get('lowered')?.stamp).toBe('2/25');
    expect(spread.get('lowered/slots/2')?.stamp).toBe('2/25');
  });

  it('a raised limit admits up to the new limit exactly', async () => {
    const { scheduler } = stack;
    await scheduler.setQueueLimits('raised', { maxConcurrency: 20 });
    await submit('raised', 70);
    const agent = await startAgent(scheduler, { name: 'raised', queues: ['raised'], maxConcurrency: 100 });
    const first = await claimUntil(scheduler, agent, 20, 2_000, 10);
    expect(first).toHaveLength(20);
    expect(await claimUntil(scheduler, agent, 1, 800)).toEqual([]);
    expect((await items('raised')).get('raised')?.stamp).toBeUndefined();

    await scheduler.setQueueLimits('raised', { maxConcurrency: 60 });
    const more = await claimUntil(scheduler, agent, 40, 5_000, 10);
    const beyond = await claimUntil(scheduler, agent, 1, 800);

    expect(more).toHaveLength(40);
    expect(beyond).toEqual([]);
    expect(await leasedTaskIds(stack, { queue: 'raised' })).toHaveLength(60);
  });

  it('with queueSlotLayout 1, slots are kept in one item, and a spread is moved back into it', async () => {
    // Prepare: a limit of 30 spread by a layout 2 function, 12 leases held.
    const { scheduler } = stack;
    const layout1 = stack.sibling({ settings: { queueSlotLayout: 1 } });
    await scheduler.setQueueLimits('back', { maxConcurrency: 30 });
    await submit('back', 40);
    const agent = await startAgent(scheduler, { name: 'back', queues: ['back'], maxConcurrency: 100 });
    const first = await claimUntil(scheduler, agent, 12, 3_000, 6);
    expect((await items('back')).get('back')?.stamp).toBe('2/30');

    // Act: a layout 1 function claims all it can.
    const more = await claimUntil(layout1, agent, 18, 4_000, 10);
    const beyond = await claimUntil(layout1, agent, 1, 800);

    // Assess: exactly the limit; the first item holds every lease (as functions before the spread read it).
    expect(first.length + more.length).toBe(30);
    expect(beyond).toEqual([]);
    const spread = await items('back');
    expect(spread.get('back')?.stamp).toBeUndefined();
    const leased = await leasedTaskIds(stack, { queue: 'back' });
    expect(Object.keys(spread.get('back')?.held ?? {})).toEqual(expect.arrayContaining(leased));
  });

  it('a rate beside a spread limit admits what its bucket holds, and the slots it refused are given back', async () => {
    // Prepare: 40 slots in two items, and a bucket of 3 that refills once in 1,000 s.
    const { scheduler } = stack;
    await scheduler.setQueueLimits('rated', { maxConcurrency: 40, ratePerSecond: 0.001, burst: 3 });
    await submit('rated', 8);
    const agent = await startAgent(scheduler, { name: 'rated', queues: ['rated'], maxConcurrency: 10 });

    // Act
    const claimed = await claimUntil(scheduler, agent, 3, 3_000, 8);
    const beyond = await claimUntil(scheduler, agent, 1, 800, 8);

    // Assess: three leases, three slots; none kept for the tasks the bucket refused.
    expect(claimed).toHaveLength(3);
    expect(beyond).toEqual([]);
    const spread = await items('rated');
    expect([...spread.values()].reduce((sum, state) => sum + entries(state), 0)).toBe(3);
  });

  it('a key’s limit above 20 is spread too: at most 30 of a key’s 40 tasks leased, the others once they end', async () => {
    const { scheduler } = stack;
    await scheduler.setQueueLimits('keyed', { perKeyConcurrency: 30 });
    for (let i = 0; i < 40; i++)
      await scheduler.submit({ queue: 'keyed', payload: { i }, concurrencyKey: 'tenant-a' });
    const agent = await startAgent(scheduler, { name: 'keyed', queues: ['keyed'], maxConcurrency: 50 });

    const first = await claimUntil(scheduler, agent, 30, 6_000, 10);
    const beyond = await claimUntil(scheduler, agent, 1, 800);
    await completeAll(scheduler, agent, first.slice(0, 10));
    const rest = await claimUntil(scheduler, agent, 10, 6_000, 10);

    expect(first).toHaveLength(30);
    expect(beyond).toEqual([]);
    expect(rest).toHaveLength(10);
    expect(await leasedTaskIds(stack, { queue: 'keyed' })).toHaveLength(30);
  });

  it('a freeing writes one item of about 1 KB with 950 of 1,000 slots held', async () => {
    // Prepare: a limit of 1,000 (50 items of 20), 19 reservations in each.
    const { scheduler, meter, clock } = stack;
    await scheduler.setQueueLimits('cost', { maxConcurrency: 1_000 });
    /** A task of `queue` claimed, then completed: the units of its claim and of its end. */
    const lifecycle = async (queue: string) => {
      const agent = await startAgent(scheduler, { name: `cost-${queue}`, queues: [queue] });
      const [taskId] = await submit(queue, 1);
      meter.reset();
      const [claimed] = await claimUntil(scheduler, agent, 1, 3_000);
      const claim = meter.totals((r) => r.service === 'dynamodb');
      meter.reset();
      await scheduler.complete({
        agentId: agent.agentId,
        taskId: taskId ?? '',
        leaseEpoch: claimed?.leaseEpoch ?? 0,
      });
      return { taskId, claimed: claimed?.taskId, claim, end: meter.totals((r) => r.service === 'dynamodb') };
    };
    await lifecycle('cost');
    for (let i = 0; i < SLOT_ITEMS_MAX; i++)
      await fill(slotItemName('cost', i), SLOTS_PER_ITEM - 1, clock.now());

    // Act
    const plain = await lifecycle('plain');
    const busy = await lifecycle('cost');

    // Assess: the task's end frees its slot with one write unit more than a task of a queue without limits.
    expect(busy.claimed).toBe(busy.taskId);
    expect(busy.end.writeUnits - plain.end.writeUnits).toBe(1);
    console.log(
      `[limits] 950 of 1,000 slots held: a claim ${busy.claim.writeUnits} WCU / ${busy.claim.readUnits} RCU (without limits ${plain.claim.writeUnits} / ${plain.claim.readUnits}), an end ${busy.end.writeUnits} WCU (${plain.end.writeUnits})`,
    );
  });
});
