/**
 * Items that tasks share: a queue whose tasks carry concurrency keys, worked by 50 agents listening on the push
 * channel, woken one task at a time. Every write is recorded by item; besides a task's own items (its state, its
 * payload and list entry), no item and no partition may be written by every task of the queue: each would cap the
 * queue at one partition's 1,000 writes a second however many agents it has.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, RecordingPushSender, startAgent, type TestStack } from '#test/stack';
import { type ItemWrite, recordItemWrites } from '#test/write-keys';

const AGENTS = 50;
const TASKS = 120;
const KEYS = 8;

describe('items shared by the tasks of a keyed queue with 50 listening agents', () => {
  let stack: TestStack;
  const sender = new RecordingPushSender();
  const writes: ItemWrite[] = [];

  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['work'],
      push: { sender, url: 'ws://push.test/v1/push' },
      // Woken agents may be woken again at once; the safety poll never comes within the test.
      settings: { pushSafetyPollMs: 600_000, wakeCooldownMs: 0 },
      // Each wake reads a listener partition of its own drawing first, as in a deployed stack.
      random: Math.random,
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('writes no item and no partition once per task or more, besides the task’s own', async () => {
    const { scheduler } = stack;
    const agents = await Promise.all(
      Array.from({ length: AGENTS }, async (_, i) => {
        const agent = await startAgent(scheduler, { name: `listener-${i}`, queues: ['work'] });
        const { ticket } = await scheduler.pushTicket({ kind: 'agent', agentId: agent.agentId });
        const principal = await scheduler.redeemPushTicket(ticket);
        if (!principal) throw new Error('ticket refused');
        await scheduler.openPushConnection(`c${i}`, principal);
        return { ...agent, connectionId: `c${i}`, wakesSeen: 0 };
      }),
    );
    // Every agent looks once and is idle.
    for (const agent of agents) expect((await scheduler.claimOrListen(agent)).tasks).toEqual([]);
    const stop = recordItemWrites(stack.dynamodb, (write) => writes.push(write));

    let done = 0;
    /** An agent woken works until its claim finds nothing, which leaves it idle again. */
    const work = async (agent: (typeof agents)[number]) => {
      for (;;) {
        const { tasks } = await scheduler.claimOrListen(agent);
        if (tasks.length === 0) return;
        for (const task of tasks) {
          await scheduler.complete({
            agentId: agent.agentId,
            taskId: task.taskId,
            leaseEpoch: task.leaseEpoch,
          });
          done++;
        }
      }
    };
    const woken = () =>
      agents.filter((agent) => {
        const wakes = sender.to(agent.connectionId).filter((f) => f.type === 'wake').length;
        const fresh = wakes > agent.wakesSeen;
        agent.wakesSeen = wakes;
        return fresh;
      });
    let submitted = 0;
    const deadline = Date.now() + 120_000;
    while (done < TASKS && Date.now() < deadline) {
      // Tasks arrive one submission at a time, each waking an agent; woken agents work them.
      for (let i = 0; i < 5 && submitted < TASKS; i++, submitted++)
        await scheduler.submit({
          queue: 'work',
          concurrencyKey: `tenant-${submitted % KEYS}`,
          payload: { n: submitted },
        });
      const toWork = woken();
      // A hint not yet visible to a woken agent's look is found by its safety poll: all of them, when no wake came.
      await Promise.all((toWork.length > 0 || submitted < TASKS ? toWork : agents).map(work));
    }
    stop();
    expect(done).toBe(TASKS);

    const own = (w: ItemWrite) =>
      (w.table === stack.wiring.tables.tasks && /^t_[a-z2-7]{26}$/.test(w.pk)) || /^list#/.test(w.pk);
    const shared = writes.filter((w) => !own(w));
    const tally = (key: (w: ItemWrite) => string) => {
      const counts = new Map<string, number>();
      for (const w of shared) counts.set(key(w), (counts.get(key(w)) ?? 0) + 1);
      return [...counts].sort((a, b) => b[1] - a[1]);
    };
    const byItem = tally((w) => `${w.table.replace(/^t\w+?-/, '')}:${w.pk}:${w.sk}`);
    const byPartition = tally((w) => `${w.table.replace(/^t\w+?-/, '')}:${w.pk}`);
    console.log(
      `writes per task, busiest shared items: ${JSON.stringify(byItem.slice(0, 4).map(([k, n]) => [k, n / TASKS]))}; ` +
        `partitions: ${JSON.stringify(byPartition.slice(0, 4).map(([k, n]) => [k, n / TASKS]))}`,
    );
    // The busiest shared item is a key's lane turn (written as its tasks are offered and their turns passed on:
    // an eighth of the tasks here), or an agent's own records.
    expect((byItem[0]?.[1] ?? 0) / TASKS).toBeLessThan(1);
    expect((byPartition[0]?.[1] ?? 0) / TASKS).toBeLessThan(1);
  }, 180_000);
});
