/**
 * Named rate limits on the emulators: a claim grants a task only with the units of every limit it names, taken
 * exactly under parallel claimers (one transaction with the grant); a task without units waits queued with no
 * attempt used, and runs when its window rolls; usage settles what a grant took, once however often it is sent.
 */
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEventFeed } from '#adapters/event-publishers';
import { rateWindowKey } from '#adapters/tables';
import type { Scheduler } from '#core/scheduler';
import { windowAt } from '#domain/rate-limits';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

const QUEUES = ['calls', 'tenants', 'settled', 'shared-a', 'shared-b', 'hostile', 'fleet', 'priced', 'told'];

describe('named rate limits', () => {
  let stack: TestStack;
  /** The tasks the hour's budget let run in the test that spends it (their leases lapse when the clock rolls). */
  const spentOn = new Set<string>();
  const feed = new LocalEventFeed(undefined, 100_000);
  beforeAll(async () => {
    stack = await createTestStack({
      events: feed,
      queues: QUEUES,
      settings: {
        rateLimits: [{ name: 'declared.rpm', limit: 600, per: 'minute' }],
      },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** A window's count as its item holds it (0 when no grant wrote it). */
  const usedIn = async (name: string, window: number, key?: string): Promise<number> => {
    const output = await DynamoDBDocumentClient.from(stack.dynamodb).send(
      new GetCommand({
        TableName: stack.wiring.tables.tasks,
        Key: rateWindowKey(name, window, key),
        ConsistentRead: true,
      }),
    );
    return Number(output.Item?.used ?? 0);
  };

  /** `count` agents, each a scheduler of its own, serving `queues`. */
  const fleet = async (count: number, queues: string[]) => {
    const instances: Scheduler[] = Array.from({ length: count }, () => stack.sibling());
    const agents = await Promise.all(
      instances.map((s, i) => startAgent(s, { name: `${queues[0]}-${i}`, queues, maxConcurrency: 10 })),
    );
    return { instances, agents };
  };

  it('parallel claimers take exactly what a window holds; the rest wait queued, their attempts unused', async () => {
    const { scheduler, clock } = stack;
    await scheduler.setRateLimit('calls.hourly', { limit: 6, per: 'hour' });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push(
        (await scheduler.submit({ queue: 'calls', payload: { i }, rateLimits: [{ name: 'calls.hourly' }] }))
          .task.taskId,
      );
    }
    const { instances, agents } = await fleet(10, ['calls']);
    const granted = new Set<string>();
    for (let round = 0; round < 6; round++) {
      const batches = await Promise.all(
        instances.map((s, i) => s.claim({ ...(agents[i] as (typeof agents)[0]), max: 3 })),
      );
      for (const c of batches.flat()) granted.add(c.taskId);
    }
    expect(granted.size).toBe(6);
    for (const id of granted) spentOn.add(id);
    const window = windowAt({ limit: 6, per: 'hour' }, clock.now()).start;
    expect(await usedIn('calls.hourly', window)).toBe(6);
    const waiting = (await stack.ctx.tasks.getMany(ids.filter((id) => !granted.has(id)))).values();
    for (const task of waiting) expect(task).toMatchObject({ status: 'queued', attempt: 0, leaseEpoch: 0 });
    const [one] = [...granted];
    expect((await scheduler.getTask(one as string))?.rateTaken).toEqual([
      { name: 'calls.hourly', units: 1, window },
    ]);
  });

  it('a task waiting for a budget runs when its window rolls (the supervisor sends it again)', async () => {
    const { scheduler, clock } = stack;
    const agent = await startAgent(scheduler, { name: 'roll', queues: ['calls'], maxConcurrency: 10 });
    // The test before spent the hour's budget: what is left waits.
    expect(await claimUntil(scheduler, agent, 1, 1_500, 3)).toHaveLength(0);
    const hour = 3_600_000;
    clock.advance(hour - (clock.now() % hour) + 1_000);
    await scheduler.supervise();
    const next = await claimUntil(scheduler, agent, 6, 8_000, 3);
    expect(next).toHaveLength(6);
    // A task that waited for the budget runs its first attempt; one the spent hour let run, whose lease lapsed as
    // the clock rolled an hour and which the pass sent again, may be among them at its second.
    for (const claimed of next)
      expect(claimed.attempt, claimed.taskId).toBe(spentOn.has(claimed.taskId) ? 2 : 1);
  });

  it('a per-key limit holds each key to its own windows', async () => {
    const { scheduler } = stack;
    await scheduler.setRateLimit('tenant.daily', { limit: 2, per: 'day', perKey: true });
    for (const key of ['a', 'a', 'a', 'a', 'b', 'b', 'c']) {
      await scheduler.submit({
        queue: 'tenants',
        payload: { key },
        rateLimits: [{ name: 'tenant.daily', key }],
      });
    }
    const agent = await startAgent(scheduler, { name: 'tenants', queues: ['tenants'], maxConcurrency: 10 });
    const claimed = await claimUntil(scheduler, agent, 10, 2_500, 5);
    const byKey = new Map<string, number>();
    for (const c of claimed) {
      const key = (c.payload as { key: string }).key;
      byKey.set(key, (byKey.get(key) ?? 0) + 1);
    }
    expect(Object.fromEntries(byKey)).toEqual({ a: 2, b: 2, c: 1 });
    const use = await scheduler.getRateLimit('tenant.daily');
    expect(use?.keys).toEqual([
      { key: 'a', used: 2 },
      { key: 'b', used: 2 },
      { key: 'c', used: 1 },
    ]);
  });

  it('a per-key budget over 50 keys: each key within it; a spent key gets nothing while the others run, and runs when the day rolls', async () => {
    const { scheduler, clock } = stack;
    await scheduler.setRateLimit('fleet.daily', { limit: 3, per: 'day', perKey: true });
    const keys = Array.from({ length: 50 }, (_, i) => `tenant-${String(i).padStart(2, '0')}`);
    // The spent key: 8 tasks against a budget of 3, submitted first, so its surplus is in line before everyone else.
    const submissions = [...Array.from({ length: 8 }, () => 'spender'), ...keys.flatMap((k) => [k, k])];
    for (let i = 0; i < submissions.length; i += 25) {
      await scheduler.submitBatch(
        submissions.slice(i, i + 25).map((key) => ({
          queue: 'fleet',
          payload: { key },
          rateLimits: [{ name: 'fleet.daily', key }],
        })),
      );
    }
    const { instances, agents } = await fleet(5, ['fleet']);
    const byKey = new Map<string, number>();
    const count = (claimed: { payload: unknown }[]) => {
      for (const c of claimed) {
        const key = (c.payload as { key: string }).key;
        byKey.set(key, (byKey.get(key) ?? 0) + 1);
      }
    };
    const done = (claimed: { taskId: string; leaseEpoch: number }[], i: number) =>
      Promise.all(
        claimed.map((c) =>
          (instances[i] as Scheduler).complete({
            agentId: agents[i]?.agentId ?? '',
            taskId: c.taskId,
            leaseEpoch: c.leaseEpoch,
          }),
        ),
      );
    const deadline = Date.now() + 20_000;
    while (keys.some((k) => (byKey.get(k) ?? 0) < 2) && Date.now() < deadline) {
      const batches = await Promise.all(
        instances.map((s, i) => s.claim({ ...(agents[i] as (typeof agents)[0]), max: 10 })),
      );
      batches.forEach(count);
      await Promise.all(batches.map(done));
    }
    // Every other key ran both its tasks; the spent key ran its budget's 3 and no more, its 5 others waiting.
    expect(keys.filter((k) => byKey.get(k) !== 2)).toEqual([]);
    expect(byKey.get('spender')).toBe(3);
    const day = 86_400_000;
    clock.advance(day - (clock.now() % day) + 1_000);
    await scheduler.supervise();
    // A day later the sessions have long expired: a fleet of its own.
    const next = await fleet(5, ['fleet']);
    const rolled = new Map<string, number>();
    const until = Date.now() + 10_000;
    while ((rolled.get('spender') ?? 0) < 3 && Date.now() < until) {
      const batches = await Promise.all(
        next.instances.map((s, i) => s.claim({ ...(next.agents[i] as (typeof agents)[0]), max: 10 })),
      );
      for (const c of batches.flat()) {
        const key = (c.payload as { key: string }).key;
        rolled.set(key, (rolled.get(key) ?? 0) + 1);
      }
      await Promise.all(
        batches.map((claimed, i) =>
          Promise.all(
            claimed.map((c) =>
              (next.instances[i] as Scheduler).complete({
                agentId: next.agents[i]?.agentId ?? '',
                taskId: c.taskId,
                leaseEpoch: c.leaseEpoch,
              }),
            ),
          ),
        ),
      );
      if (batches.flat().length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The new day's budget: 3 more of its 5, and nothing of any other key (they had nothing left).
    expect(Object.fromEntries(rolled)).toEqual({ spender: 3 });
  });

  it('usage settles what the grant took, once however often the call is sent', async () => {
    const { scheduler, clock } = stack;
    await scheduler.setRateLimit('tokens.daily', { limit: 1_000, per: 'day' });
    const agent = await startAgent(scheduler, { name: 'settled', queues: ['settled'], maxConcurrency: 5 });
    for (let i = 0; i < 3; i++) {
      await scheduler.submit({
        queue: 'settled',
        payload: { i },
        maxAttempts: 2,
        rateLimits: [{ name: 'tokens.daily', units: 100 }],
      });
    }
    const [first, second, third] = await claimUntil(scheduler, agent, 3, 3_000, 3);
    const window = windowAt({ limit: 1_000, per: 'day' }, clock.now()).start;
    expect(await usedIn('tokens.daily', window)).toBe(300);
    const lease = (c: typeof first) => ({
      agentId: agent.agentId,
      taskId: c?.taskId ?? '',
      leaseEpoch: c?.leaseEpoch ?? 0,
    });

    // 100 estimated, 250 used: the window's count grows by 150, and a retried call changes nothing more.
    await scheduler.complete(lease(first), 'done', undefined, { 'tokens.daily': 250 });
    const again = await scheduler.complete(lease(first), 'done', undefined, { 'tokens.daily': 250 });
    expect(again.replayed).toBe(true);
    expect(await usedIn('tokens.daily', window)).toBe(450);
    // A failure reports usage too: 100 estimated, 40 used gives 60 back.
    await scheduler.fail(lease(second), { message: 'provider error' }, { usage: { 'tokens.daily': 40 } });
    // Usage of a limit the task does not name is passed over.
    await scheduler.complete(lease(third), null, undefined, { other: 5 });
    expect(await usedIn('tokens.daily', window)).toBe(390);
  });

  it('a grant and a settlement whose answers were lost and sent again by the AWS SDK count once', async () => {
    const { scheduler, clock, faults } = stack;
    await scheduler.setRateLimit('retried.daily', { limit: 1_000, per: 'day' });
    const agent = await startAgent(scheduler, { name: 'retried', queues: ['settled'], maxConcurrency: 2 });
    await scheduler.submit({
      queue: 'settled',
      payload: {},
      rateLimits: [{ name: 'retried.daily', units: 10 }],
    });
    faults.dynamodb.failNext('TransactWriteItemsCommand', 1, 'retried');
    const [claimed] = await claimUntil(scheduler, agent, 1, 3_000);
    expect(faults.dynamodb.injected.TransactWriteItemsCommand).toBe(1);
    const window = windowAt({ limit: 1_000, per: 'day' }, clock.now()).start;
    expect(await usedIn('retried.daily', window)).toBe(10);
    faults.dynamodb.failNext('TransactWriteItemsCommand', 1, 'retried');
    const done = await scheduler.complete(
      { agentId: agent.agentId, taskId: claimed?.taskId ?? '', leaseEpoch: claimed?.leaseEpoch ?? 0 },
      'ok',
      undefined,
      { 'retried.daily': 17 },
    );
    expect(done.task.status).toBe('succeeded');
    expect(faults.dynamodb.injected.TransactWriteItemsCommand).toBe(2);
    expect(await usedIn('retried.daily', window)).toBe(17);
  });

  it('what a limited task costs beside a plain one: the grant and the settlement as transactions', async () => {
    const { scheduler, meter } = stack;
    await scheduler.setRateLimit('priced.daily', { limit: 1_000, per: 'day' });
    const agent = await startAgent(scheduler, { name: 'priced', queues: ['priced'], maxConcurrency: 1 });
    const lifecycle = async (spec: Record<string, unknown>, usage?: Record<string, number>) => {
      await scheduler.submit({ queue: 'priced', payload: {}, ...spec });
      // The claim's first receive may come before the hint: the figures are of the claim that grants.
      let claimed: Awaited<ReturnType<Scheduler['claim']>> = [];
      let claim = meter.totals();
      for (let i = 0; i < 50 && claimed.length === 0; i++) {
        meter.reset();
        claimed = await scheduler.claim({ ...agent, max: 1 });
        claim = meter.totals();
      }
      const [c] = claimed;
      meter.reset();
      await scheduler.complete(
        { agentId: agent.agentId, taskId: c?.taskId ?? '', leaseEpoch: c?.leaseEpoch ?? 0 },
        null,
        undefined,
        usage,
      );
      return { claim, complete: meter.totals() };
    };
    const plain = await lifecycle({});
    const limited = await lifecycle(
      { rateLimits: [{ name: 'priced.daily', units: 5 }] },
      { 'priced.daily': 7 },
    );
    const grant = {
      writeUnits: limited.claim.writeUnits - plain.claim.writeUnits,
      readUnits: limited.claim.readUnits - plain.claim.readUnits,
    };
    const settle = {
      writeUnits: limited.complete.writeUnits - plain.complete.writeUnits,
      readUnits: limited.complete.readUnits - plain.complete.readUnits,
    };
    console.log(
      `[rate-limits] a limited task's grant costs ${JSON.stringify(grant)} more, its settled completion ${JSON.stringify(settle)} more (plain: claim ${JSON.stringify(plain.claim)}, complete ${JSON.stringify(plain.complete)})`,
    );
    // The grant: the task's write twice over in the transaction (+1) and the window's (+2); the task read back (+1).
    expect(grant).toEqual({ writeUnits: 3, readUnits: 1 });
    // The settlement: the same transaction shape (+3), the task read before (+1) and after (+1).
    expect(settle).toEqual({ writeUnits: 3, readUnits: 2 });
  });

  it('a spent budget and a full rate are told once a window, however many claims find no room', async () => {
    const { scheduler } = stack;
    await scheduler.setRateLimit('told.daily', { limit: 1, per: 'day', perKey: true });
    await scheduler.setRateLimit('told.minute', { limit: 1, per: 'minute' });
    for (let i = 0; i < 4; i++) {
      await scheduler.submit({
        queue: 'told',
        payload: { i },
        rateLimits: [{ name: 'told.daily', key: 'acme' }],
      });
      await scheduler.submit({ queue: 'told', payload: { i }, rateLimits: [{ name: 'told.minute' }] });
    }
    const agent = await startAgent(scheduler, { name: 'told', queues: ['told'], maxConcurrency: 10 });
    expect(await claimUntil(scheduler, agent, 3, 2_000, 5)).toHaveLength(2);
    const told = feed
      .read(0, 100_000)
      .events.filter(
        (e) =>
          (e.type === 'budget.exhausted' || e.type === 'rateLimit.saturated') &&
          String(e.data?.rateLimit).startsWith('told.'),
      );
    expect(told.map((e) => [e.type, e.data?.rateLimit, e.data?.key])).toEqual(
      expect.arrayContaining([
        ['budget.exhausted', 'told.daily', 'acme'],
        ['rateLimit.saturated', 'told.minute', undefined],
      ]),
    );
    expect(told).toHaveLength(2);
  });

  it('a limit shared by two queues counts the grants of both', async () => {
    const { scheduler } = stack;
    await scheduler.setRateLimit('shared.hourly', { limit: 3, per: 'hour' });
    for (const queue of ['shared-a', 'shared-b', 'shared-a', 'shared-b', 'shared-a']) {
      await scheduler.submit({ queue, payload: {}, rateLimits: [{ name: 'shared.hourly' }] });
    }
    const a = await startAgent(scheduler, { name: 'sa', queues: ['shared-a'], maxConcurrency: 5 });
    const b = await startAgent(scheduler, { name: 'sb', queues: ['shared-b'], maxConcurrency: 5 });
    const claimed = [
      ...(await claimUntil(scheduler, a, 3, 1_500, 3)),
      ...(await claimUntil(scheduler, b, 2, 1_500, 2)),
    ];
    expect(claimed).toHaveLength(3);
  });

  it('refuses, changing nothing, a submission whose limits cannot be taken', async () => {
    const { scheduler } = stack;
    await scheduler.setRateLimit('keyed', { limit: 5, per: 'minute', perKey: true });
    const refusals: [unknown, RegExp][] = [
      [[{ name: 'nobody' }], /no rate limit is named nobody/],
      [[{ name: 'keyed' }], /keyed is per key; name one/],
      [[{ name: 'declared.rpm', key: 'k' }], /declared.rpm is not per key/],
      [[{ name: 'keyed', key: 'k', units: 6 }], /at most 5/],
      [[{ name: 'keyed', key: 'k#1' }], /without "#"/],
      [[{ name: 'keyed', key: 'k', units: 0 }], /rateLimits\.0\.units/],
      [
        [
          { name: 'keyed', key: 'a' },
          { name: 'keyed', key: 'b' },
        ],
        /each limit once/,
      ],
      [Array.from({ length: 5 }, (_, i) => ({ name: `l${i}` })), /rateLimits/],
      [[], /rateLimits/],
    ];
    for (const [rateLimits, message] of refusals) {
      await expect(scheduler.submit({ queue: 'hostile', payload: {}, rateLimits })).rejects.toThrow(message);
    }
    expect((await scheduler.queueStats()).find((q) => q.name === 'hostile')?.depth.normal).toBe(0);
    await expect(scheduler.setRateLimit('bad name', { limit: 1, per: 'day' })).rejects.toThrow(/name/);
    await expect(scheduler.setRateLimit('b', { limit: 1, per: 'day', burst: 2 })).rejects.toThrow(/burst/);
    await expect(scheduler.setRateLimit('b', { limit: 1000, per: 'second', burst: 1 })).rejects.toThrow(
      /burst: at least 100/,
    );
    await expect(scheduler.setRateLimit('b', { limit: -1, per: 'day' })).rejects.toThrow(/limit/);
    await expect(scheduler.setRateLimit('b', { limit: 1, per: 'week' })).rejects.toThrow(/per/);
    expect(await scheduler.getRateLimit('b')).toBeUndefined();
  });

  it('a limit set through one process is taken by a submission to another at once, whatever that one had read', async () => {
    const other = stack.sibling();
    // The other process reads the limits (and keeps them a moment) before the new one exists.
    await other.submit({ queue: 'hostile', payload: {}, rateLimits: [{ name: 'declared.rpm' }] });
    await stack.scheduler.setRateLimit('fresh.hourly', { limit: 3, per: 'hour' });
    const { task } = await other.submit({
      queue: 'hostile',
      payload: {},
      rateLimits: [{ name: 'fresh.hourly' }],
    });
    expect(task.rateLimits).toEqual([{ name: 'fresh.hourly', units: 1 }]);
  });

  it('a claim in a process that read the limits before a new one was set takes its units all the same', async () => {
    const third = stack.sibling();
    const agent = await startAgent(third, { name: 'fresh', queues: ['priced'], maxConcurrency: 5 });
    // The claim reads the limits (and keeps them a moment) before the new one exists.
    await stack.scheduler.submit({ queue: 'priced', payload: {}, rateLimits: [{ name: 'priced.daily' }] });
    expect(await claimUntil(third, agent, 1, 2_000)).toHaveLength(1);
    await stack.scheduler.setRateLimit('fresher.hourly', { limit: 3, per: 'hour' });
    const { task } = await stack.scheduler.submit({
      queue: 'priced',
      payload: {},
      rateLimits: [{ name: 'fresher.hourly' }],
    });
    expect((await claimUntil(third, agent, 1, 2_000)).map((c) => c.taskId)).toEqual([task.taskId]);
    expect((await stack.scheduler.getTask(task.taskId))?.rateTaken).toMatchObject([
      { name: 'fresher.hourly', units: 1 },
    ]);
  });

  it('a stack on an earlier task layout refuses tasks that name limits', async () => {
    const older = stack.sibling({ settings: { taskLayout: 3 } });
    await expect(
      older.submit({ queue: 'hostile', payload: {}, rateLimits: [{ name: 'declared.rpm' }] }),
    ).rejects.toThrow(/taskLayout 4/);
  });

  it('lists the limits in force, declared ones too, with their use now', async () => {
    const limits = await stack.scheduler.listRateLimits();
    const declared = limits.find((l) => l.limit.name === 'declared.rpm');
    expect(declared).toMatchObject({ limit: { source: 'declared', limit: 600, per: 'minute' }, used: 0 });
    expect(limits.find((l) => l.limit.name === 'calls.hourly')).toMatchObject({
      limit: { source: 'set' },
      window: { capacity: 6 },
    });
  });
});
