/**
 * Spawn requests: starving work that no live agent can serve asks for a worker with `agent.spawnRequested`, once per
 * queue and requirement set per `announceAfter`, however many tasks starve and however many passes run, one
 * conditional write per starving queue and pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEventFeed } from '#adapters/event-publishers';
import { requirementsKey } from '#domain/labels';
import { createTestStack, startAgent, type TestStack } from '#test/stack';

const TASKS = 1_000;
const ANNOUNCE_AFTER_S = 20;
/** The ladder's thresholds both stacks run: looks every 2 s, a task starving after `ANNOUNCE_AFTER_S`. */
const SETTINGS = {
  reconcileAfterSeconds: 2,
  starvation: {
    promoteAfterSeconds: 10,
    announceAfterSeconds: ANNOUNCE_AFTER_S,
    attentionAfterSeconds: 3_600,
  },
};

describe('spawn requests', () => {
  let stack: TestStack;
  const feed = new LocalEventFeed(undefined, 100_000);

  beforeAll(async () => {
    stack = await createTestStack({
      events: feed,
      queues: ['unserved', 'served'],
      settings: SETTINGS,
    });
    // Time moves only when the test moves it: the submits below take what wall-clock time they take.
    stack.clock.stop();
  });
  afterAll(async () => {
    await stack.destroy();
  });

  const spawnEvents = (queue: string) =>
    feed.read(0, 100_000).events.filter((e) => e.type === 'agent.spawnRequested' && e.queue === queue);

  /** One pass (or several at once), with the conditional writes of spawn marks it made counted on the wire. */
  async function passes(count: number) {
    let writes = 0;
    stack.dynamodb.middlewareStack.add(
      (next) => async (args) => {
        const key = (args.input as { Key?: { leaseId?: unknown } }).Key;
        if (typeof key?.leaseId === 'string' && key.leaseId.startsWith('spawn#')) writes++;
        return next(args);
      },
      { step: 'initialize', name: 'countSpawnWrites' },
    );
    try {
      const results = await Promise.all(Array.from({ length: count }, () => stack.scheduler.supervise()));
      return { results, writes };
    } finally {
      stack.dynamodb.middlewareStack.remove('countSpawnWrites');
    }
  }

  it(`${TASKS} starving tasks of one queue with no agent ask for one worker per announceAfter`, async () => {
    const { scheduler, clock } = stack;
    const served = await startAgent(scheduler, { queues: ['served'] });
    const keepServed = () => scheduler.heartbeat(served.agentId, served.sessionId);
    const ids = new Set<string>();
    for (let i = 0; i < TASKS; i += 25) {
      const batch = await scheduler.submitBatch(
        Array.from({ length: 25 }, (_, n) => ({ queue: 'unserved', payload: { n: i + n } })),
      );
      for (const item of batch) if (item.ok) ids.add(item.task.taskId);
    }
    expect(ids.size).toBe(TASKS);
    const [servedTask] = await scheduler.submitBatch(
      Array.from({ length: 5 }, (_, n) => ({ queue: 'served', payload: { n } })),
    );

    // A first pass, before any threshold, gives the new tasks their look in the due index (the list walk).
    clock.advance(5_000);
    await keepServed();
    expect((await passes(1)).writes).toBe(0);

    // Past the announce threshold: two passes at once, both looking at the starving tasks.
    clock.advance((ANNOUNCE_AFTER_S - 4) * 1_000);
    await keepServed();
    const racing = await passes(2);
    const perPass = racing.results.map((r) => r.spawnRequested);
    console.log(
      `[spawn] two passes at once: spawnRequested ${JSON.stringify(perPass)}, spawn-mark writes ${racing.writes}`,
    );
    expect(racing.results.every((r) => r.errors === 0)).toBe(true);
    expect(perPass.flat()).toEqual(['unserved']);
    // Both saw the queue starving and raced for the mark: one write each, not one per task.
    expect(racing.writes).toBe(2);
    let events = spawnEvents('unserved');
    expect(events).toHaveLength(1);
    const [event] = events;
    expect(event).toMatchObject({
      version: 1,
      type: 'agent.spawnRequested',
      queue: 'unserved',
      data: { requirements: {}, reason: 'noCapableAgent', oldestWaitedSeconds: ANNOUNCE_AFTER_S + 1 },
    });
    expect(ids.has(event?.taskId ?? '')).toBe(true);
    // A lower bound: the starving tasks the passes looked at (each pass counts its own).
    const waiting = Number(event?.data?.waiting);
    expect(waiting).toBeGreaterThanOrEqual(1);
    expect(waiting).toBeLessThanOrEqual(TASKS);
    console.log(`[spawn] first event: ${JSON.stringify(event)}`);

    // Within the window the tasks are looked at again (their hints resent): asked for no more, one write a pass.
    const within = [];
    for (const seconds of [3, 9, 3]) {
      clock.advance(seconds * 1_000);
      await keepServed();
      const pass = await passes(1);
      within.push(pass.writes);
      expect(pass.results[0]?.spawnRequested).toEqual([]);
    }
    console.log(
      `[spawn] passes within the window (at +3 s, +12 s, +15 s): spawn-mark writes ${JSON.stringify(within)}`,
    );
    expect(within.every((w) => w <= 1)).toBe(true);
    expect(within.some((w) => w === 1)).toBe(true);
    expect(spawnEvents('unserved')).toHaveLength(1);

    // Past another announceAfter, still starving: one more, however many passes look.
    let asked = 0;
    for (let i = 0; i < 4; i++) {
      clock.advance(4_000);
      await keepServed();
      const { results, writes } = await passes(i === 0 ? 1 : 2);
      expect(writes).toBeLessThanOrEqual(results.length);
      asked += results.flatMap((r) => r.spawnRequested).length;
    }
    events = spawnEvents('unserved');
    expect(asked).toBe(1);
    expect(events).toHaveLength(2);
    expect(Date.parse(events[1]?.time ?? '') - Date.parse(events[0]?.time ?? '')).toBeGreaterThan(
      ANNOUNCE_AFTER_S * 1_000,
    );

    console.log(`[spawn] second event: ${JSON.stringify(events[1])}`);

    // The served queue's tasks starved as long, but a live agent serves it.
    expect(servedTask?.ok && (await scheduler.getTask(servedTask.task.taskId)).starvationLevel).toBe(2);
    expect(spawnEvents('served')).toEqual([]);
  });

  it('names a requirement set by its canonical form', () => {
    expect(requirementsKey({})).toMatch(/^[0-9a-f]{16}$/);
    expect(requirementsKey({ gpu: 'a100', region: 'eu' })).toBe(
      requirementsKey({ region: 'eu', gpu: 'a100' }),
    );
    expect(requirementsKey({ gpu: 'a100' })).not.toBe(requirementsKey({}));
  });
});

describe('spawn requests of a requirement set', () => {
  // A stack of its own: its passes look at this test's tasks only.
  let own: TestStack;
  const ownFeed = new LocalEventFeed(undefined, 10_000);
  beforeAll(async () => {
    own = await createTestStack({
      events: ownFeed,
      queues: ['gpu'],
      settings: SETTINGS,
    });
    own.clock.stop();
  });
  afterAll(async () => {
    await own.destroy();
  });

  it('work an agent of its queue serves but whose requirements no live agent meets asks for a worker of that set', async () => {
    const { scheduler, clock } = own;
    // Served, but by an agent without a GPU, and by one with the wrong one.
    const plain = await startAgent(scheduler, { queues: ['gpu'] });
    const t4 = await startAgent(scheduler, { queues: ['gpu'], labels: { gpu: 't4' } });
    const keep = () => Promise.all([plain, t4].map((a) => scheduler.heartbeat(a.agentId, a.sessionId)));
    for (let i = 0; i < 100; i += 25)
      await scheduler.submitBatch(
        Array.from({ length: 25 }, (_, n) => ({
          queue: 'gpu',
          payload: { n: i + n },
          require: { gpu: 'h100' },
        })),
      );
    const servable = await scheduler.submit({
      queue: 'gpu',
      payload: {},
      require: { gpu: 't4' },
      delaySeconds: 1,
    });
    const since = ownFeed.read(0, 100_000).events.length;
    clock.advance(5_000);
    await keep();
    await scheduler.supervise();
    clock.advance((ANNOUNCE_AFTER_S - 3) * 1_000);
    await keep();
    const pass = await scheduler.supervise();
    await keep();
    await scheduler.supervise();
    const events = ownFeed.read(since, 100_000).events.filter((e) => e.queue === 'gpu');
    const spawns = events.filter((e) => e.type === 'agent.spawnRequested');
    expect(spawns).toHaveLength(1);
    expect(spawns[0]?.data).toMatchObject({ requirements: { gpu: 'h100' }, reason: 'noCapableAgent' });
    const noCapable = events.filter((e) => e.type === 'queue.noCapableAgent');
    expect(noCapable).toHaveLength(1);
    expect(noCapable[0]?.data).toEqual({ requirements: { gpu: 'h100' } });
    expect(pass.noCapableAgent).toEqual(['gpu']);
    // The t4 task starved too (nobody claimed it), but a live agent meets it: no worker is asked for it.
    expect((await scheduler.getTask(servable.task.taskId)).starvationLevel).toBeGreaterThanOrEqual(2);
    expect(spawns.map((e) => (e.data?.requirements as { gpu?: string } | undefined)?.gpu)).toEqual(['h100']);
  });
});
