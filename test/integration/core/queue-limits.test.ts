/**
 * Queue controls under parallel claims from many agents: a paused queue gives nothing; a concurrency limit is
 * never exceeded; a rate limit holds (measured).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler } from '#core/scheduler';
import { claimUntil, createTestStack, leasedTaskIds, startAgent, type TestStack } from '#test/stack';

const AGENTS = 20;

describe('queue controls', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['paused', 'limited', 'rated'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  const leasedIn = async (queue: string) => (await leasedTaskIds(stack, { queue })).length;

  /** Completes every task of every batch, each by the agent that claimed it. */
  const completeAll = (
    instances: Scheduler[],
    agents: { agentId: string }[],
    batches: Awaited<ReturnType<Scheduler['claim']>>[],
  ) =>
    Promise.all(
      batches.flatMap((claimed, i) =>
        claimed.map((c) =>
          (instances[i] as Scheduler).complete({
            agentId: agents[i]?.agentId ?? '',
            taskId: c.taskId,
            leaseEpoch: c.leaseEpoch,
          }),
        ),
      ),
    );

  async function fleet(queue: string) {
    const instances: Scheduler[] = Array.from({ length: AGENTS }, () => stack.sibling());
    const agents = await Promise.all(
      instances.map((s, i) => startAgent(s, { name: `${queue}-${i}`, queues: [queue], maxConcurrency: 5 })),
    );
    return { instances, agents };
  }

  it('a paused queue gives nothing to claims and resumes', async () => {
    const { scheduler } = stack;
    await scheduler.submit({ queue: 'paused', payload: {} });
    await scheduler.pauseQueue('paused');
    const agent = await startAgent(scheduler, { queues: ['paused'] });

    expect(await claimUntil(scheduler, agent, 1, 2_500)).toHaveLength(0);
    expect((await scheduler.queueStats()).find((q) => q.name === 'paused')).toMatchObject({
      paused: true,
      depth: { normal: 1 },
    });

    await scheduler.resumeQueue('paused');
    expect(await claimUntil(scheduler, agent, 1, 4_000)).toHaveLength(1);
  });

  it('20 agents claiming in parallel never hold more than the queue’s concurrency limit', async () => {
    const limit = 4;
    await stack.scheduler.setQueueLimits('limited', { maxConcurrency: limit });
    for (let i = 0; i < 40; i++) await stack.scheduler.submit({ queue: 'limited', payload: { i } });
    const { instances, agents } = await fleet('limited');

    let maxSeen = 0;
    let completed = 0;
    for (let round = 0; round < 12 && completed < 40; round++) {
      const batches = await Promise.all(
        instances.map((s, i) => s.claim({ ...(agents[i] as (typeof agents)[number]), max: 3 })),
      );
      const held = await leasedIn('limited');
      maxSeen = Math.max(maxSeen, held);
      expect(held).toBeLessThanOrEqual(limit);
      // Finish what was claimed so the next round has room again.
      await completeAll(instances, agents, batches);
      completed += batches.flat().length;
    }
    console.log(
      `[limits] concurrency: at most ${maxSeen} of limit ${limit} leased under ${AGENTS} parallel claimers; ${completed} completed`,
    );
    expect(maxSeen).toBe(limit);
  });

  it('the claim rate across 20 agents stays within the queue’s rate limit', async () => {
    const rate = 5;
    const burst = 5;
    await stack.scheduler.setQueueLimits('rated', { ratePerSecond: rate, burst });
    for (let i = 0; i < 60; i++) await stack.scheduler.submit({ queue: 'rated', payload: { i } });
    const { instances, agents } = await fleet('rated');

    const started = Date.now();
    const claimedAt: number[] = [];
    while (Date.now() - started < 3_000) {
      const batches = await Promise.all(
        instances.map((s, i) => s.claim({ ...(agents[i] as (typeof agents)[number]), max: 2 })),
      );
      const now = Date.now();
      for (const batch of batches) for (const _ of batch) claimedAt.push(now);
      await completeAll(instances, agents, batches);
    }
    const elapsedSeconds = (Date.now() - started) / 1_000;
    const allowed = burst + rate * elapsedSeconds;
    console.log(
      `[limits] rate: ${claimedAt.length} claims in ${elapsedSeconds.toFixed(1)} s under ${AGENTS} parallel claimers (limit ${rate}/s, burst ${burst}: at most ${Math.floor(allowed)})`,
    );
    expect(claimedAt.length).toBeLessThanOrEqual(Math.floor(allowed));
    expect(claimedAt.length).toBeGreaterThanOrEqual(Math.floor(rate * elapsedSeconds * 0.5));
  });
});

describe('queue limits declared in the infrastructure', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['declared'],
      settings: { queueLimits: { declared: { maxConcurrency: 1 } } },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('apply until an operator changes them', async () => {
    const { scheduler } = stack;
    for (let i = 0; i < 4; i++) await scheduler.submit({ queue: 'declared', payload: { i } });
    const agents = await Promise.all(
      [0, 1, 2].map((i) => startAgent(stack.sibling(), { name: `d${i}`, queues: ['declared'] })),
    );
    const claim = () => Promise.all(agents.map((agent) => claimUntil(stack.sibling(), agent, 1, 1_500)));

    const first = (await claim()).flat();
    expect(first).toHaveLength(1);
    expect((await scheduler.queueStats()).find((q) => q.name === 'declared')?.limits).toEqual({
      maxConcurrency: 1,
    });

    await scheduler.setQueueLimits('declared', { maxConcurrency: 3 });
    const second = (await claim()).flat();
    expect(second.length).toBeGreaterThanOrEqual(1);
    expect((await leasedTaskIds(stack, { queue: 'declared' })).length).toBeLessThanOrEqual(3);
  });
});
