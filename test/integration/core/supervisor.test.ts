/**
 * The supervisor pass: the starvation ladder's steps in order, the warning for a queue no live agent serves,
 * paused queues left alone, and one cycle result.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEventFeed } from '#adapters/event-publishers';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('supervisor pass', () => {
  let stack: TestStack;
  const feed = new LocalEventFeed();

  beforeAll(async () => {
    stack = await createTestStack({
      events: feed,
      queues: ['starving', 'paused', 'served'],
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
    expect(types).toEqual(['task.starved', 'queue.noCapableAgent']);
    // The promoted task is claimable from its new, more urgent queue.
    const agent = await startAgent(scheduler, { queues: ['starving'] });
    const [claimed] = await claimUntil(scheduler, agent, 1);
    expect(claimed).toMatchObject({ taskId: task.taskId, priority: 'normal' });
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
});
