/**
 * Rebuild on DynamoDB Local and the SQS emulator: every message of every queue deleted (plain, delayed and keyed
 * tasks' hints and turns), a claim finds nothing; a rebuild paged over several calls by a small `limit` sends them
 * again, and every queued task is claimed once, a delayed one not before its time, a paused queue's not before its
 * resume. A second rebuild changes nothing but duplicate hints; a bad call changes nothing. With a push channel, the
 * wake marks are set back and the idle agents woken.
 */
import { PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClaimedTask } from '#core/claim';
import type { RebuildSummary } from '#core/rebuild';
import { PRIORITIES } from '#domain/priority';
import { createTestStack, RecordingPushSender, startAgent, type TestStack } from '#test/stack';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Deletes every message of every queue of the stack, delayed ones too: the hints and turns are gone. */
async function purgeEveryQueue(stack: TestStack, queues: readonly string[]): Promise<void> {
  for (const queue of queues)
    for (const priority of PRIORITIES)
      await stack.sqs.send(
        new PurgeQueueCommand({ QueueUrl: stack.ctx.queues.directory.urlFor(queue, priority) }),
      );
}

type Totals = { -readonly [K in keyof Omit<RebuildSummary, 'cursor'>]: number } & { calls: number };

/** A whole rebuild, call after call from each answer's cursor, its counts summed. */
async function rebuildAll(stack: TestStack, limit: number): Promise<Totals> {
  const totals: Totals = {
    calls: 0,
    pendingRuns: 0,
    activeRuns: 0,
    sessionsScanned: 0,
    wakeKeysCleared: 0,
    hintsSent: 0,
    turnsReplaced: 0,
  };
  let cursor: string | undefined;
  do {
    const { cursor: next, ...counts } = await stack.scheduler.rebuild({
      limit,
      ...(cursor === undefined ? {} : { cursor }),
    });
    totals.calls++;
    for (const [name, value] of Object.entries(counts))
      totals[name as keyof RebuildSummary & keyof Totals] += value;
    cursor = next;
  } while (cursor !== undefined && totals.calls < 500);
  expect(cursor).toBeUndefined();
  return totals;
}

describe('rebuild', () => {
  const QUEUES = ['work', 'held'];
  let stack: TestStack;

  beforeAll(async () => {
    stack = await createTestStack({ queues: QUEUES, settings: { leaseTtlSeconds: 600 } });
  });
  afterAll(async () => {
    await stack?.destroy();
  });

  it('sends every queued task’s hint again after the queues were purged, a page at a time', async () => {
    const { scheduler } = stack;
    // Prepare: plain, delayed and keyed tasks, two of them leased, and a paused queue's.
    const submitted = async (spec: Record<string, unknown>) => (await scheduler.submit(spec)).task.taskId;
    const plain = await Promise.all(
      Array.from({ length: 8 }, (_, n) => submitted({ queue: 'work', payload: { n } })),
    );
    const delayedFrom = stack.clock.now();
    const delayed = await Promise.all(
      Array.from({ length: 2 }, (_, n) => submitted({ queue: 'work', payload: { n }, delaySeconds: 3 })),
    );
    const keyed = await Promise.all(
      Array.from({ length: 6 }, (_, n) =>
        submitted({ queue: 'work', payload: { n }, concurrencyKey: `key-${n % 2}` }),
      ),
    );
    const held = await Promise.all(
      Array.from({ length: 3 }, (_, n) => submitted({ queue: 'held', payload: { n } })),
    );
    const holder = await startAgent(scheduler, { name: 'holder', queues: ['work'], maxConcurrency: 2 });
    const leased: ClaimedTask[] = [];
    while (leased.length < 2) leased.push(...(await scheduler.claim({ ...holder, max: 2 - leased.length })));
    const leasedIds = new Set(leased.map((t) => t.taskId));
    const queued = [...plain, ...delayed, ...keyed, ...held].filter((id) => !leasedIds.has(id));
    await purgeEveryQueue(stack, QUEUES);
    const worker = await startAgent(scheduler, { name: 'worker', queues: QUEUES, maxConcurrency: 100 });
    expect(await scheduler.claim({ ...worker, max: 10 })).toEqual([]);
    await scheduler.pauseQueue('held');

    // Act: a rebuild of 2 entries a call, then a second one from the start.
    const started = Date.now();
    const first = await rebuildAll(stack, 2);
    const elapsed = Date.now() - started;
    const second = await rebuildAll(stack, 1_000);
    console.log(
      `[rebuild] ${queued.length + leased.length} open tasks: ${first.calls} calls of limit 2 in ${elapsed} ms; ` +
        `a second rebuild in ${second.calls} call(s)`,
    );

    // Assess: the counts, then every queued task claimed once, the paused queue's only after its resume.
    const hinted = plain.filter((id) => !leasedIds.has(id)).length + delayed.length + held.length;
    const expected = {
      pendingRuns: queued.length,
      activeRuns: leased.length,
      sessionsScanned: 2,
      wakeKeysCleared: 0,
      hintsSent: hinted,
      turnsReplaced: 2,
    };
    expect(first).toMatchObject(expected);
    expect(first.calls).toBeGreaterThan(queued.length / 2);
    expect(second).toMatchObject(expected);
    expect(second.calls).toBe(1);

    const claimed: ClaimedTask[] = [];
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && claimed.length < queued.length - held.length) {
      const got = await scheduler.claim({ ...worker, max: 10 });
      claimed.push(...got);
      if (got.length === 0) await sleep(100);
    }
    const ids = claimed.map((t) => t.taskId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.sort()).toEqual(queued.filter((id) => !held.includes(id)).sort());
    expect(claimed.every((t) => t.leaseEpoch === 1)).toBe(true);
    // The delayed tasks were not granted before their time.
    for (const task of claimed.filter((t) => delayed.includes(t.taskId)))
      expect(task.leaseDeadline - task.timeoutSeconds * 1_000).toBeGreaterThanOrEqual(delayedFrom + 3_000);
    expect(await scheduler.claim({ ...worker, max: 10 })).toEqual([]);

    await scheduler.resumeQueue('held');
    const resumed: ClaimedTask[] = [];
    const until = Date.now() + 10_000;
    while (Date.now() < until && resumed.length < held.length) {
      const got = await scheduler.claim({ ...worker, max: 10 });
      resumed.push(...got);
      if (got.length === 0) await sleep(100);
    }
    expect(resumed.map((t) => t.taskId).sort()).toEqual([...held].sort());
    // The duplicates the second rebuild sent are dropped as stale: nothing is granted twice.
    await sleep(200);
    expect(await scheduler.claim({ ...worker, max: 10 })).toEqual([]);
  });

  it.each([
    ['a cursor that is not base64url', { cursor: 'not a cursor!' }],
    ['a cursor of other JSON', { cursor: Buffer.from('{"v":1}').toString('base64url') }],
    [
      'a cursor naming a shard that does not exist',
      { cursor: Buffer.from(JSON.stringify({ v: 1, since: 1, shard: 'due#99' })).toString('base64url') },
    ],
    [
      'a cursor whose key is not a key of its shard',
      {
        cursor: Buffer.from(
          JSON.stringify({
            v: 1,
            since: 1,
            shard: 'due#03',
            key: { dueShard: 'due#04', dueAt: 1, taskId: 'x', part: 'state' },
          }),
        ).toString('base64url'),
      },
    ],
    ['a limit of 0', { limit: 0 }],
    ['a limit above the bound', { limit: 5_001 }],
    ['a limit that is not an integer', { limit: 1.5 }],
  ])('refuses %s, changing nothing', async (_, input) => {
    stack.meter.reset();
    await expect(stack.scheduler.rebuild(input)).rejects.toMatchObject({
      name: 'ValidationError',
      statusCode: 400,
    });
    expect(stack.meter.totals().requests).toBe(0);
  });
});

describe('rebuild with a push channel', () => {
  const sender = new RecordingPushSender();
  let stack: TestStack;

  beforeAll(async () => {
    stack = await createTestStack({
      push: { sender, url: 'ws://push.test/v1/push' },
      settings: { wakeCooldownMs: 600_000, pushSafetyPollMs: 600_000 },
    });
  });
  afterAll(async () => {
    await stack?.destroy();
  });

  it('sets back the wake marks, and wakes the idle agents for the hints it sends', async () => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['work'] });
    const { ticket } = await scheduler.pushTicket({ kind: 'agent', agentId: agent.agentId });
    const principal = await scheduler.redeemPushTicket(ticket);
    if (!principal) throw new Error('ticket refused');
    await scheduler.openPushConnection('c1', principal);
    // Idle, then woken by a submission: cooling down for ten minutes, no later submission wakes it.
    expect((await scheduler.claimOrListen({ ...agent, max: 1 })).tasks).toEqual([]);
    await scheduler.submit({ queue: 'work', payload: {} });
    await purgeEveryQueue(stack, ['work']);
    expect((await scheduler.claimOrListen({ ...agent, max: 1 })).tasks).toEqual([]);
    const wakes = () => sender.to('c1').filter((f) => f.type === 'wake').length;
    expect(wakes()).toBe(1);

    const summary = await scheduler.rebuild();

    expect(summary).toMatchObject({ pendingRuns: 1, hintsSent: 1, wakeKeysCleared: 1, sessionsScanned: 1 });
    expect(summary.cursor).toBeUndefined();
    expect(wakes()).toBe(2);
    expect(await scheduler.claim({ ...agent, max: 1 })).toHaveLength(1);
  });
});
