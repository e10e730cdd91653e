/**
 * Capability labels against the real emulators: an agent is never given a task whose requirements its labels do not
 * meet, a session may narrow its agent's labels but not add to them, a claim reads past a requirement set's turns
 * rather than its tasks, and the grant's condition holds even for a hint that does not say what the task requires.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEventFeed } from '#adapters/event-publishers';
import { ForbiddenError, ValidationError } from '#domain/errors';
import { taskIdForIdempotencyKey } from '#domain/ids';
import { meets } from '#domain/labels';
import { laneOf } from '#domain/lanes';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';
import { agentView } from '../../../functions/http/views';

describe('capability labels', () => {
  let stack: TestStack;
  const feed = new LocalEventFeed(undefined, 10_000);

  beforeAll(async () => {
    stack = await createTestStack({ events: feed, queues: ['work', 'other', 'keyed'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** Claims until nothing more comes for a while; every task claimed. */
  async function drain(agent: { agentId: string; sessionId: string }, quietMs = 600) {
    const claimed: Awaited<ReturnType<TestStack['scheduler']['claim']>> = [];
    let quietSince = Date.now();
    while (Date.now() - quietSince < quietMs) {
      const batch = await stack.scheduler.claim({ ...agent, max: 10 });
      if (batch.length > 0) quietSince = Date.now();
      claimed.push(...batch);
    }
    return claimed;
  }

  it('registers labels, normalised, and shows {} for agents without (those stored before labels too)', async () => {
    const { agent } = await stack.scheduler.registerAgent({
      name: 'gpu',
      queues: ['work'],
      labels: { model: ['gpt', 'claude', 'claude'], gpu: 'a100' },
    });
    expect(agent.labels).toEqual({ gpu: ['a100'], model: ['claude', 'gpt'] });
    expect((await stack.ctx.agents.get(agent.agentId))?.labels).toEqual({
      gpu: ['a100'],
      model: ['claude', 'gpt'],
    });
    const plain = await stack.scheduler.registerAgent({ name: 'plain', queues: ['work'] });
    expect(plain.agent.labels ?? {}).toEqual({});
    // An agent as a release before labels stored it.
    await stack.dynamodb.send(
      new PutCommand({
        TableName: stack.ctx.agents.tableName,
        Item: {
          agentId: 'a_oldagent00000000000001',
          name: 'old',
          queues: ['work'],
          maxConcurrency: 1,
          interactive: true,
          createdAt: 1,
        },
      }),
    );
    const listed = await stack.scheduler.listAgentPage({ limit: 100 });
    const views = Object.fromEntries(listed.agents.map((a) => [a.agentId, agentView(a)]));
    expect(views.a_oldagent00000000000001?.labels).toEqual({});
    expect(views[plain.agent.agentId]?.labels).toEqual({});
    expect(views[agent.agentId]?.labels).toEqual({ gpu: ['a100'], model: ['claude', 'gpt'] });
  });

  it('refuses labels and requirements out of bounds, changing nothing', async () => {
    for (const labels of [
      { '': 'x' },
      { 'bad name': 'x' },
      { gpu: '*' },
      { gpu: [] },
      {},
      { gpu: 'x\u0000' },
      Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`l${i}`, 'x'])),
      { gpu: Array.from({ length: 17 }, (_, i) => `v${i}`) },
    ]) {
      await expect(
        stack.scheduler.registerAgent({ name: 'x', queues: ['work'], labels }),
      ).rejects.toBeInstanceOf(ValidationError);
    }
    for (const require of [
      {},
      { gpu: '' },
      { 'a b': 'x' },
      { gpu: 5 },
      Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`l${i}`, 'x'])),
    ]) {
      await expect(stack.scheduler.submit({ queue: 'work', payload: {}, require })).rejects.toBeInstanceOf(
        ValidationError,
      );
    }
  });

  it('a session may narrow its labels, never add to them', async () => {
    const { agent } = await stack.scheduler.registerAgent({
      name: 'narrow',
      queues: ['other'],
      maxConcurrency: 10,
      labels: { gpu: ['a100', 'h100'], tenant: 'acme' },
    });
    await expect(
      stack.scheduler.openSession(agent.agentId, { labels: { gpu: 'v100' } }),
    ).rejects.toBeInstanceOf(ForbiddenError);
    await expect(
      stack.scheduler.openSession(agent.agentId, { labels: { tenant: ['acme', 'globex'] } }),
    ).rejects.toBeInstanceOf(ForbiddenError);
    await expect(
      stack.scheduler.openSession(agent.agentId, { labels: { region: 'eu' } }),
    ).rejects.toBeInstanceOf(ForbiddenError);

    // Narrowed to the a100: a task that needs the h100 is not its, one that needs any gpu is.
    const session = await stack.scheduler.openSession(agent.agentId, { labels: { gpu: 'a100' } });
    const me = { agentId: agent.agentId, sessionId: session.sessionId };
    const h100 = await stack.scheduler.submit({ queue: 'other', payload: {}, require: { gpu: 'h100' } });
    const anyGpu = await stack.scheduler.submit({ queue: 'other', payload: {}, require: { gpu: '*' } });
    const tenant = await stack.scheduler.submit({ queue: 'other', payload: {}, require: { tenant: 'acme' } });
    const claimed = await drain(me);
    expect(claimed.map((t) => t.taskId)).toEqual([anyGpu.task.taskId]);
    for (const t of claimed)
      await stack.scheduler.complete({ agentId: me.agentId, taskId: t.taskId, leaseEpoch: t.leaseEpoch });
    expect((await stack.scheduler.getTask(h100.task.taskId)).status).toBe('queued');
    expect((await stack.scheduler.getTask(tenant.task.taskId)).status).toBe('queued');

    // The whole agent again: the h100 and the tenant's task are its now.
    const whole = await stack.scheduler.openSession(agent.agentId);
    const rest = await drain({ agentId: agent.agentId, sessionId: whole.sessionId });
    expect(new Set(rest.map((t) => t.taskId))).toEqual(new Set([h100.task.taskId, tenant.task.taskId]));
  });

  it('gives each agent only the tasks its labels meet, and none of a set no agent has', async () => {
    const { scheduler } = stack;
    const gpu = await startAgent(scheduler, {
      name: 'gpu',
      queues: ['work'],
      maxConcurrency: 100,
      labels: { gpu: ['a100', 'h100'], model: 'claude' },
    });
    const cpu = await startAgent(scheduler, { name: 'cpu', queues: ['work'], maxConcurrency: 100 });
    const specs = [
      ...Array.from({ length: 30 }, () => ({ require: undefined })),
      ...Array.from({ length: 30 }, () => ({ require: { gpu: '*' } })),
      ...Array.from({ length: 30 }, () => ({ require: { gpu: 'h100', model: 'claude' } })),
      ...Array.from({ length: 20 }, () => ({ require: { gpu: 't4' } })),
    ];
    const submitted = new Map<string, Record<string, string> | undefined>();
    for (let i = 0; i < specs.length; i += 25) {
      const batch = await scheduler.submitBatch(
        specs.slice(i, i + 25).map((s, n) => ({
          queue: 'work',
          payload: { n: i + n },
          ...(s.require ? { require: s.require } : {}),
        })),
      );
      for (const [n, item] of batch.entries()) {
        if (!item.ok) throw new Error('submit refused');
        submitted.set(item.task.taskId, specs[i + n]?.require);
      }
    }
    const [byCpu, byGpu] = await Promise.all([drain(cpu, 1_000), drain(gpu, 1_000)]);
    const labelsOf = { cpu: {}, gpu: { gpu: ['a100', 'h100'], model: ['claude'] } };
    for (const t of byCpu) expect(meets(labelsOf.cpu, submitted.get(t.taskId))).toBe(true);
    for (const t of byGpu) expect(meets(labelsOf.gpu, submitted.get(t.taskId))).toBe(true);
    const taken = new Set([...byCpu, ...byGpu].map((t) => t.taskId));
    expect(taken.size).toBe(byCpu.length + byGpu.length);
    // Everything some agent can serve was taken; the t4 tasks wait.
    expect(taken.size).toBe(90);
    expect(byGpu.filter((t) => submitted.get(t.taskId) !== undefined).length).toBe(60);
    for (const [taskId, require] of submitted) {
      if (require?.gpu === 't4') expect((await scheduler.getTask(taskId)).status).toBe('queued');
    }
  });

  it('a claim reads past a deep backlog of work it cannot serve: its one task comes first', async () => {
    const { scheduler } = stack;
    const cpu = await startAgent(scheduler, { name: 'cpu2', queues: ['other'], maxConcurrency: 10 });
    for (let i = 0; i < 100; i += 25)
      await scheduler.submitBatch(
        Array.from({ length: 25 }, (_, n) => ({
          queue: 'other',
          payload: { n: i + n },
          require: { gpu: 'b200' },
        })),
      );
    const mine = await scheduler.submit({ queue: 'other', payload: { mine: true } });
    // The 100 tasks stand behind at most four turns of their set: the first claim or two find the task.
    const claimed = await claimUntil(scheduler, cpu, 1, 3_000, 10);
    expect(claimed.map((t) => t.taskId)).toEqual([mine.task.taskId]);
  });

  it('a hint that does not say what its task requires grants nothing: the task gets its lane turn', async () => {
    const { scheduler } = stack;
    const cpu = await startAgent(scheduler, { name: 'cpu3', queues: ['other'], maxConcurrency: 5 });
    const { task } = await scheduler.submit({ queue: 'other', payload: {}, require: { gpu: 'mi300' } });
    // As a function of a release before labels would send it: a hint of its own.
    await stack.ctx.queues.send('other', 'normal', { taskId: task.taskId, leaseEpoch: task.leaseEpoch });
    expect(await drain(cpu, 800)).toEqual([]);
    expect((await scheduler.getTask(task.taskId)).status).toBe('queued');
    const amd = await startAgent(scheduler, { name: 'amd', queues: ['other'], labels: { gpu: 'mi300' } });
    const claimed = await claimUntil(scheduler, amd, 1, 3_000);
    expect(claimed.map((t) => t.taskId)).toEqual([task.taskId]);
  });

  it('a key’s limit counts across its requirement sets, and each set of the key is served by agents that meet it', async () => {
    const { scheduler } = stack;
    await scheduler.setQueueLimits('keyed', { perKeyConcurrency: 1 });
    const both = await startAgent(scheduler, {
      name: 'both',
      queues: ['keyed'],
      maxConcurrency: 10,
      labels: { gpu: ['a100', 'h100'] },
    });
    const specs = [
      { require: { gpu: 'a100' } },
      { require: { gpu: 'h100' } },
      { require: { gpu: 'a100' } },
      {},
    ] as const;
    const ids: string[] = [];
    for (const spec of specs)
      ids.push(
        (await scheduler.submit({ queue: 'keyed', payload: {}, concurrencyKey: 'tenant-1', ...spec })).task
          .taskId,
      );
    const seen: string[] = [];
    for (let round = 0; round < ids.length; round++) {
      // However many of the key's sets have turns in line, one of the key's tasks runs at a time.
      const claimed = await claimUntil(scheduler, both, 1, 5_000, 10);
      expect(claimed).toHaveLength(1);
      const [task] = claimed;
      if (!task) throw new Error('nothing claimed');
      expect(await scheduler.claim({ ...both, max: 10 })).toEqual([]);
      seen.push(task.taskId);
      await scheduler.complete({ agentId: both.agentId, taskId: task.taskId, leaseEpoch: task.leaseEpoch });
    }
    expect(new Set(seen)).toEqual(new Set(ids));
  });

  it('a task offered while its set’s lane holds its turn for the index’s lag gets a turn now, not at the hold’s end', async () => {
    const { scheduler, clock, ctx } = stack;
    const require = { gpu: 'held' };
    // Two tasks of one lane of the set: their ids name the same of its lanes.
    const laneOfKey = (key: string) =>
      laneOf({ taskId: taskIdForIdempotencyKey(key), queue: 'other', priority: 'normal', require });
    const first = 'held-0';
    const second = Array.from({ length: 50 }, (_, n) => `held-${n + 1}`).find(
      (key) => laneOfKey(key)?.laneId === laneOfKey(first)?.laneId,
    );
    const laneId = laneOfKey(first)?.laneId ?? '';
    const gpu = await startAgent(scheduler, {
      name: 'held',
      queues: ['other'],
      maxConcurrency: 5,
      labels: { gpu: 'held' },
    });
    clock.stop();
    try {
      await scheduler.submit({ queue: 'other', payload: {}, require, idempotencyKey: first });
      expect(await claimUntil(scheduler, gpu, 1, 3_000, 5)).toHaveLength(1);
      // The lane, found empty, holds its turn a moment for the index's lag.
      const held = await ctx.lanes.turnSlot(laneId, { consistent: true });
      expect((held.visibleAt ?? 0) - clock.now()).toBeGreaterThan(1_000);
      clock.advance((held.visibleAt ?? 0) - clock.now() - 500);
      await scheduler.submit({ queue: 'other', payload: {}, require, idempotencyKey: second ?? '' });
      const now = await ctx.lanes.turnSlot(laneId, { consistent: true });
      expect(now.token).not.toBe(held.token);
      expect(now.visibleAt).toBeLessThanOrEqual(clock.now());
    } finally {
      clock.resume();
    }
  });

  it('requires taskLayout 5', async () => {
    const old = await createTestStack({ settings: { taskLayout: 4 } });
    try {
      await expect(
        old.scheduler.submit({ queue: 'work', payload: {}, require: { gpu: '*' } }),
      ).rejects.toThrow(/taskLayout 5/);
      await expect(old.scheduler.submit({ queue: 'work', payload: {} })).resolves.toBeDefined();
    } finally {
      await old.destroy();
    }
  });
});
