/**
 * Fairness between the keys of one queue, and per-key concurrency, on the emulators.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { ClaimedTask } from '#core/claim';
import { keyHashOf } from '#domain/lanes';
import { createTestStack, startAgent, type TestStack } from '#test/stack';

/** Submits `count` tasks of one key, 25 to a batch, four batches at a time. */
async function submitKeyed(stack: TestStack, queue: string, key: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  const batches = Array.from({ length: Math.ceil(count / 25) }, (_, b) =>
    Array.from({ length: Math.min(25, count - b * 25) }, (_, i) => ({
      queue,
      payload: { key, n: b * 25 + i },
      concurrencyKey: key,
    })),
  );
  for (let i = 0; i < batches.length; i += 4) {
    const results = await Promise.all(
      batches.slice(i, i + 4).map((batch) => stack.scheduler.submitBatch(batch)),
    );
    for (const r of results.flat()) if (r.ok) ids.push(r.task.taskId);
  }
  return ids;
}

describe('fairness between keys', () => {
  let stack: TestStack;
  const sent: Record<string, unknown>[] = [];
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['shared', 'limited', 'plain'] });
    // The requests sent to SQS, as AWS would see them.
    stack.sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'SendMessageCommand') sent.push(args.input as Record<string, unknown>);
        return next(args);
      },
      { step: 'initialize', name: 'recordSends' },
    );
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('key B’s 20 tasks submitted behind key A’s 5,000 are all among the first 60 claimed after them', async () => {
    const { scheduler } = stack;
    const started = Date.now();
    const a = await submitKeyed(stack, 'shared', 'tenant-a', 5_000);
    const submitMs = Date.now() - started;
    const b = new Set(await submitKeyed(stack, 'shared', 'tenant-b', 20));
    expect(a).toHaveLength(5_000);

    // Five agents claim (up to 10 at a time) and complete, in parallel, until every task of B ran.
    const agents = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        startAgent(scheduler, { name: `fair-${i}`, queues: ['shared'], maxConcurrency: 10 }),
      ),
    );
    const order: string[] = [];
    const bLeft = () => [...b].filter((id) => !order.includes(id)).length;
    // Claims, not seconds, bound the loop: past the 60th claim plus one more round (5 agents, up to 10 each), B's
    // tasks are either all in or the test fails, however fast the machine runs. With 5,000 tasks queued each round
    // claims some; as many rounds as claims end a loop whose claims come back empty.
    const enough = 60 + 5 * 10;
    for (let round = 0; bLeft() > 0 && order.length < enough && round < enough; round++) {
      await Promise.all(
        agents.map(async (agent) => {
          const tasks: ClaimedTask[] = await scheduler.claim({ ...agent, max: 10 });
          order.push(...tasks.map((t) => t.taskId));
          await Promise.all(
            tasks.map((t) =>
              scheduler.complete({ agentId: agent.agentId, taskId: t.taskId, leaseEpoch: t.leaseEpoch }),
            ),
          );
        }),
      );
    }
    const positions = order.flatMap((id, index) => (b.has(id) ? [index + 1] : []));
    console.log(
      `[fairness] 5,000 of key A submitted in ${(submitMs / 1_000).toFixed(1)} s, then 20 of key B: B's tasks were claimed at positions ${positions[0]}–${positions.at(-1)} of ${order.length} claimed`,
    );
    expect(positions).toHaveLength(20);
    expect(Math.max(...positions)).toBeLessThanOrEqual(60);
    // A kept running meanwhile: fairness is turns, not B first and A starved.
    expect(order.filter((id) => !b.has(id)).length).toBeGreaterThan(0);

    // Each key's turns were sent with its hash as the message group, never the key itself.
    const groups = new Set(
      sent.flatMap((input) => (input.MessageGroupId ? [String(input.MessageGroupId)] : [])),
    );
    expect(groups).toEqual(new Set([keyHashOf('tenant-a'), keyHashOf('tenant-b')]));
    for (const group of groups) expect(group).toMatch(/^[A-Za-z0-9_-]{22}$/);
    // One message in line stands for a key, however deep: far fewer sends than tasks.
    expect(sent.filter((input) => input.MessageGroupId === keyHashOf('tenant-a')).length).toBeLessThan(
      order.length,
    );
    // A guard against a hang, not a bound: the 5,000 submissions take 25 s on two quiet cores, seven times that
    // beside other CPU-bound work.
  }, 400_000);

  it('perKeyConcurrency 3 under 20 parallel claimers: never more than 3 of the key leased, other keys kept busy', async () => {
    const { scheduler } = stack;
    await scheduler.setQueueLimits('limited', { perKeyConcurrency: 3 });
    const hot = new Set(await submitKeyed(stack, 'limited', 'hot', 30));
    const others: string[] = [];
    for (let k = 0; k < 6; k++) others.push(...(await submitKeyed(stack, 'limited', `cool-${k}`, 5)));

    const claimers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        startAgent(scheduler, { name: `claimer-${i}`, queues: ['limited'], maxConcurrency: 2 }),
      ),
    );
    const held: { agentId: string; taskId: string; leaseEpoch: number; round: number }[] = [];
    let maxHot = 0;
    let maxOthers = 0;
    // A key at its limit has its turn back 1 s later, doubling while it stays full, up to 30 s (turns.ts); SQS
    // holds it in real time. So the run ends when every task has, and fails only once no task has ended for twice
    // that longest wait: a lane that is stuck, not a machine that is slow.
    const STALL_MS = 2 * 30_000;
    let ended = 0;
    let endedAt = Date.now();
    let lastBeat = Date.now();
    for (let round = 0; Date.now() - endedAt < STALL_MS; round++) {
      // The claimers keep their sessions alive as a worker would (the lease TTL is 30 s).
      if (Date.now() - lastBeat > 5_000) {
        await Promise.all(claimers.map((c) => scheduler.heartbeat(c.agentId, c.sessionId)));
        lastBeat = Date.now();
      }
      // Each claimer takes what it can; tasks are held for two rounds, then completed.
      const granted = await Promise.all(claimers.map((c) => scheduler.claim({ ...c, max: 2 })));
      granted.forEach((tasks, i) => {
        for (const t of tasks)
          held.push({
            agentId: claimers[i]?.agentId ?? '',
            taskId: t.taskId,
            leaseEpoch: t.leaseEpoch,
            round,
          });
      });
      // Sample the truth: the tasks' own records.
      const states = await stack.ctx.tasks.getMany([...hot, ...others]);
      const leased = [...states.values()].filter((t) => t.status === 'leased');
      maxHot = Math.max(maxHot, leased.filter((t) => hot.has(t.taskId)).length);
      maxOthers = Math.max(maxOthers, leased.filter((t) => !hot.has(t.taskId)).length);
      const due = held.filter((h) => h.round <= round - 2);
      await Promise.all(
        due.map((h) =>
          scheduler.complete({ agentId: h.agentId, taskId: h.taskId, leaseEpoch: h.leaseEpoch }),
        ),
      );
      held.splice(0, held.length, ...held.filter((h) => h.round > round - 2));
      const succeeded = [...states.values()].filter((t) => t.status === 'succeeded').length;
      if (succeeded === states.size) break;
      if (succeeded > ended) [ended, endedAt] = [succeeded, Date.now()];
      // Rounds a tenth of the shortest wait of a key at its limit apart.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const states = await stack.ctx.tasks.getMany([...hot, ...others]);
    const done = [...states.values()].filter((t) => t.status === 'succeeded').length;
    console.log(
      `[fairness] perKeyConcurrency 3, 20 claimers: at most ${maxHot} of the hot key leased at once, up to ${maxOthers} of 6 other keys meanwhile; ${done} of ${states.size} done`,
    );
    expect(maxHot).toBe(3);
    expect(maxOthers).toBeGreaterThan(3);
    expect(done).toBe(states.size);
    // A guard against a hang, not a bound: 12 s on two quiet cores; the stall bound above is the test's.
  }, 400_000);

  /** On tables of its own: a key limited to 1 with two tasks, the first of them claimed and running. */
  async function keyAtItsLimit() {
    const own = await createTestStack({ queues: ['paced'] });
    onTestFinished(() => own.destroy());
    const { scheduler } = own;
    await scheduler.setQueueLimits('paced', { perKeyConcurrency: 1 });
    const ids = await submitKeyed(own, 'paced', 'one-at-a-time', 2);
    const agent = await startAgent(scheduler, { queues: ['paced'], maxConcurrency: 4 });
    const [running] = await scheduler.claim({ ...agent, max: 4 });
    expect(ids).toContain(running?.taskId);
    return { own, scheduler, ids, agent, running };
  }

  it('a key at its limit has its next task claimable as soon as its running one ends, not after its turn’s wait', async () => {
    const { scheduler, ids, agent, running } = await keyAtItsLimit();
    // The key is full: this claim finds its turn and sends it back for later (1 s, doubling while it stays full).
    expect(await scheduler.claim({ ...agent, max: 4 })).toEqual([]);
    await scheduler.complete({
      agentId: agent.agentId,
      taskId: running?.taskId ?? '',
      leaseEpoch: running?.leaseEpoch ?? 0,
    });
    // Claims do not wait on SQS here (`receiveWaitSeconds` 0): the turn must be in line now.
    const started = Date.now();
    const [next] = await scheduler.claim({ ...agent, max: 4 });
    expect(next?.taskId).toBe(ids.find((id) => id !== running?.taskId));
    expect(Date.now() - started).toBeLessThan(900);
  });

  it('a key’s running lease that ends while a claim is sending its turn back for later still brings the turn forward', async () => {
    const { own, scheduler, ids, agent, running } = await keyAtItsLimit();
    // The next claim finds the key full. Between that and its sending the turn back for later (the write of the
    // turn slot's later time), the running task completes in another function instance: its look at the turn
    // finds it not yet sent back, and leaves it be.
    const other = own.sibling();
    own.interleave(
      (operation, input) =>
        operation === 'UpdateItemCommand' &&
        Object.values(input.ExpressionAttributeNames ?? {}).includes('heldAt') &&
        // Two assignments (the later time and when it was held): the turn sent back, not a new one put in line.
        String(input.UpdateExpression).split('=').length === 3,
      () =>
        other.complete({
          agentId: agent.agentId,
          taskId: running?.taskId ?? '',
          leaseEpoch: running?.leaseEpoch ?? 0,
        }),
    );
    expect(await scheduler.claim({ ...agent, max: 4 })).toEqual([]);
    expect((await scheduler.getTask(running?.taskId ?? '')).status).toBe('succeeded');
    // The key has room again: its next task is claimable now, not after the turn's wait of 1 s.
    const started = Date.now();
    const [next] = await scheduler.claim({ ...agent, max: 4 });
    expect(next?.taskId).toBe(ids.find((id) => id !== running?.taskId));
    expect(Date.now() - started).toBeLessThan(900);
  });

  it('a turn lost from SQS is put in line again by the supervisor', async () => {
    // On tables of its own: in the shared ones, the 4,960 tasks of key A the first test left queued would be due
    // too once the clock moves, and the pass would look at each of them (29 s on two quiet cores) besides this one.
    const own = await createTestStack({ queues: ['plain'] });
    onTestFinished(() => own.destroy());
    const { scheduler, clock, faults } = own;
    // The send of the key's turn fails after the slot was taken: the task waits without a turn in line.
    faults.sqs.failNext('SendMessageCommand', 1, 'before');
    const { task } = await scheduler.submit({ queue: 'plain', payload: {}, concurrencyKey: 'lost' });
    const agent = await startAgent(scheduler, { queues: ['plain'] });
    expect(await scheduler.claim(agent)).toEqual([]);
    clock.advance(own.ctx.settings.reconcileAfterSeconds * 1_000);
    expect((await scheduler.reconcile()).redispatched).toContain(task.taskId);
    const again = await startAgent(scheduler, { queues: ['plain'] });
    const [claimed] = await scheduler.claim(again);
    expect(claimed?.taskId).toBe(task.taskId);
  });
});
