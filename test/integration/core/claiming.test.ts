/**
 * (d) priority order and the bounded wait of low-priority work, (e) per-agent concurrency under parallel claims.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Scheduler } from '#core/scheduler';
import type { PriorityWeights } from '#domain/priority';
import { seededRandom } from '#local/seeded-random';
import { claimUntil, createTestStack, leasedTaskIds, startAgent, type TestStack } from '#test/stack';

describe('claiming', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['order', 'concurrency', 'given-back'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('(d) claims the most urgent tier first when the draw favours it', async () => {
    // Prepare: random 0 draws `critical` first, then strict order.
    const strict = stack.sibling({ random: () => 0 });
    for (const priority of ['low', 'normal', 'high', 'critical']) {
      await strict.submit({ queue: 'order', payload: { priority }, priority });
    }
    const agent = await startAgent(strict, { queues: ['order'] });

    // Act: claim and complete one at a time.
    const order: unknown[] = [];
    for (let i = 0; i < 4; i++) {
      const [claimed] = await claimUntil(strict, agent, 1);
      if (!claimed) throw new Error('nothing claimed');
      order.push(claimed.priority);
      await strict.complete({
        agentId: agent.agentId,
        taskId: claimed.taskId,
        leaseEpoch: claimed.leaseEpoch,
      });
    }

    // Assess
    expect(order).toEqual(['critical', 'high', 'normal', 'low']);
  });

  /**
   * A stream of high-priority work that never runs dry, and one low task. Returns after how many claims the low
   * task was claimed, or undefined if not within `limit`.
   */
  async function lowTaskWait(weights: PriorityWeights, limit: number): Promise<number | undefined> {
    const instance = new Scheduler({
      ...stack.ctx,
      random: seededRandom(7),
      settings: { ...stack.ctx.settings, priorityWeights: weights },
    });
    const agent = await startAgent(instance, { queues: ['order'] });
    for (let i = 0; i < 3; i++)
      await instance.submit({ queue: 'order', payload: { high: i }, priority: 'high' });
    const { task: low } = await instance.submit({ queue: 'order', payload: { low: true }, priority: 'low' });
    try {
      for (let claims = 1; claims <= limit; claims++) {
        const [claimed] = await claimUntil(instance, agent, 1);
        if (!claimed) throw new Error('nothing claimed');
        await instance.complete({
          agentId: agent.agentId,
          taskId: claimed.taskId,
          leaseEpoch: claimed.leaseEpoch,
        });
        if (claimed.taskId === low.taskId) return claims;
        await instance.submit({ queue: 'order', payload: { high: claims }, priority: 'high' });
      }
      return undefined;
    } finally {
      await instance.cancel(low.taskId).catch(() => undefined);
      // Drain what is left so the next case starts empty.
      for (;;) {
        const left = await instance.claim(agent);
        if (left.length === 0) break;
        for (const c of left)
          await instance.complete({ agentId: agent.agentId, taskId: c.taskId, leaseEpoch: c.leaseEpoch });
      }
    }
  }

  it('(d) a low task under a steady stream of high ones waits a bounded number of claims', async () => {
    const limit = 150;
    const weighted = await lowTaskWait({ critical: 70, high: 15, normal: 10, low: 5 }, limit);
    // Negative control: with no weight on the low tier, it is starved for as long as high work exists.
    const strict = await lowTaskWait({ critical: 1, high: 0, normal: 0, low: 0 }, 40);
    console.log(
      `[priority] low task claimed after ${weighted} claims under a high-priority stream (bound ${limit})`,
    );
    expect(weighted).toBeDefined();
    expect(weighted).toBeLessThanOrEqual(limit);
    expect(strict).toBeUndefined();
  });

  it('(e) maxConcurrency holds when one agent sends parallel claims', async () => {
    // Prepare: an agent that may hold 3, ten function instances claiming for it at once, 12 tasks.
    const { scheduler } = stack;
    const maxConcurrency = 3;
    const agent = await startAgent(scheduler, { queues: ['concurrency'], maxConcurrency });
    for (let i = 0; i < 12; i++) await scheduler.submit({ queue: 'concurrency', payload: { i } });
    const instances = Array.from({ length: 10 }, () => stack.sibling());

    let maxHeld = 0;
    let completed = 0;
    for (let round = 0; round < 6; round++) {
      // Act
      const batches = await Promise.all(instances.map((s) => s.claim({ ...agent, max: 2 })));
      const claimed = batches.flat();

      // Assess: never more than the limit leased to the agent, counted on the tasks themselves.
      const leased = await leasedTaskIds(stack, { owner: agent.agentId });
      maxHeld = Math.max(maxHeld, leased.length);
      expect(leased.length).toBeLessThanOrEqual(maxConcurrency);
      expect(claimed.every((c) => leased.includes(c.taskId))).toBe(true);
      // Free one slot per round; the next round may take exactly that much more.
      const [first] = claimed.length > 0 ? claimed : [];
      if (first) {
        await scheduler.complete({
          agentId: agent.agentId,
          taskId: first.taskId,
          leaseEpoch: first.leaseEpoch,
        });
        completed++;
      }
    }
    console.log(
      `[concurrency] at most ${maxHeld} of ${maxConcurrency} held under 10 parallel claimers; ${completed} completed`,
    );
    expect(maxHeld).toBe(maxConcurrency);
  });

  it('a hint as new as the lease an old read shows us holding is kept: the task was given back since', async () => {
    // Prepare: the agent's attempt runs past its deadline and the supervisor puts the task back, but its notice
    // to the session fails, so the session still lists the task. An eventually consistent read (DynamoDB Local
    // never gives one, so it is replayed here) still shows the task leased to us.
    const { scheduler, ctx, clock } = stack;
    const { task } = await scheduler.submit({ queue: 'given-back', payload: {}, timeoutSeconds: 5 });
    const agent = await startAgent(scheduler, { queues: ['given-back'], maxConcurrency: 2 });
    const [claimed] = await claimUntil(scheduler, agent, 1);
    if (!claimed) throw new Error('nothing claimed');
    const oldView = await ctx.tasks.getMany([task.taskId]);
    // The sweep looks at the task once its due time, later than its deadline, has come; the agent heartbeats.
    for (let waited = 0; waited <= ctx.settings.reconcileAfterSeconds + 20; waited += 20) {
      clock.advance(20_000);
      await scheduler.heartbeat(agent.agentId, agent.sessionId);
    }
    const notify = ctx.sessions.notify.bind(ctx.sessions);
    ctx.sessions.notify = () => Promise.reject(new Error('the notice was lost'));
    try {
      expect((await scheduler.reclaim()).requeued).toContain(task.taskId);
    } finally {
      ctx.sessions.notify = notify;
    }
    expect(Object.keys((await ctx.sessions.get(agent.agentId))?.held ?? {})).toContain(task.taskId);
    const getMany = ctx.tasks.getMany.bind(ctx.tasks);
    const receive = ctx.queues.receive.bind(ctx.queues);
    let received = 0;
    ctx.queues.receive = async (...args) => {
      const batch = await receive(...args);
      received += batch.hints.filter((h) => h.taskId === task.taskId).length;
      return batch;
    };
    ctx.tasks.getMany = async (ids, options) =>
      options?.consistent === false && ids.includes(task.taskId) ? oldView : getMany(ids, options);

    // Act: claims receive the new hint (after its backoff) while the old view says the task is ours; then the
    // view catches up.
    let stale: unknown[];
    try {
      stale = await claimUntil(scheduler, agent, 1, 3_000);
    } finally {
      ctx.tasks.getMany = getMany;
      ctx.queues.receive = receive;
    }
    const again = await claimUntil(scheduler, agent, 1, 6_000);

    // Assess: the hint was not deleted as ours; it came back and the task was claimed.
    expect(stale).toEqual([]);
    expect(received).toBeGreaterThanOrEqual(1);
    expect(again).toMatchObject([{ taskId: task.taskId, leaseEpoch: claimed.leaseEpoch + 1 }]);
  });
});
