/**
 * Leases over time: one heartbeat for many leases, checkpoints handed over, deadlines, cancel, overlapping sweeps.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { dispatch } from '#core/dispatch';
import { reclaimTask } from '#core/reclaim';
import { LeaseLostError, SessionLostError } from '#domain/errors';
import { runApart } from '#local/function-scope';
import { claimUntil, createTestStack, startAgent, type TestStack, waitFor } from '#test/stack';

describe('leases', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // random 0: backoff draws are zero, so a requeued task is claimable at once.
    stack = await createTestStack({
      random: () => 0,
      queues: [
        'many',
        'checkpoint',
        'deadline',
        'cancel',
        'overlap',
        'dead',
        'late',
        'between',
        'reopen',
        'orphan',
        'replaced',
        'relost',
        'slow-claim',
      ],
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('one heartbeat write keeps all of an agent’s leases alive, whatever their number', async () => {
    const { scheduler, meter, clock, ctx } = stack;
    const agent = await startAgent(scheduler, { queues: ['many'], maxConcurrency: 5 });
    for (let i = 0; i < 5; i++) await scheduler.submit({ queue: 'many', payload: { i } });
    const claimed = await claimUntil(scheduler, agent, 5, 5_000, 5);
    expect(claimed).toHaveLength(5);

    // Two thirds of a TTL later, a heartbeat; then another two thirds: still alive only thanks to the heartbeat.
    clock.advance((ctx.settings.leaseTtlSeconds * 2_000) / 3);
    meter.reset();
    await scheduler.heartbeat(agent.agentId, agent.sessionId);
    const cost = meter.totals((r) => r.service === 'dynamodb');
    clock.advance((ctx.settings.leaseTtlSeconds * 2_000) / 3);
    const swept = await scheduler.reclaim();

    expect(cost).toMatchObject({ requests: 1, writeUnits: 1 });
    expect(swept.requeued).toEqual([]);
    for (const c of claimed) {
      await scheduler.complete({ agentId: agent.agentId, taskId: c.taskId, leaseEpoch: c.leaseEpoch });
    }
  });

  it('a heartbeat decided before the session expired but written after the sweep took its lease is refused', async () => {
    const { scheduler, clock, ctx } = stack;
    const agent = await startAgent(scheduler, { queues: ['late'] });
    const { task } = await scheduler.submit({ queue: 'late', payload: {} });
    await claimUntil(scheduler, agent, 1);
    const expiresAt = (await ctx.sessions.get(agent.agentId))?.expiresAt ?? 0;

    clock.advance((ctx.settings.leaseTtlSeconds + 1) * 1_000);
    expect((await scheduler.reclaim()).requeued).toEqual([task.taskId]);
    // The agent's request left before its session expired and arrives only now.
    const late = stack.sibling({ now: () => expiresAt - 1 });
    const error = await late.heartbeat(agent.agentId, agent.sessionId).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SessionLostError);
    expect((error as SessionLostError).context.lost).toEqual([task.taskId]);
    const session = await ctx.sessions.get(agent.agentId);
    expect(session?.expiresAt).toBe(expiresAt);
    expect(session?.endedAt).toBeDefined();
  });

  it('a heartbeat or claim that lands after a later-decided one never moves the session’s expiry back', async () => {
    const { scheduler, clock, ctx } = stack;
    const agent = await startAgent(scheduler, { queues: ['late'], maxConcurrency: 2 });
    await scheduler.submit({ queue: 'late', payload: {} });
    const [held] = await claimUntil(scheduler, agent, 1);
    if (!held) throw new Error('nothing claimed');
    const ttlMs = ctx.settings.leaseTtlSeconds * 1_000;
    // The clock moves only when the test moves it: the sweep below comes a second before the expiry, however long
    // the calls in between take on a loaded machine.
    clock.stop();
    onTestFinished(() => clock.resume());
    // A first attempt is decided, then stalls (a slow instance); its retry is decided later and lands first.
    const decidedFirst = clock.now();
    clock.advance(2_000);
    const { expiresAt: extended } = await scheduler.heartbeat(agent.agentId, agent.sessionId);
    expect(extended).toBeGreaterThanOrEqual(decidedFirst + 2_000 + ttlMs);

    // The stalled attempt lands now: it is answered as the live session it is, and shortens nothing.
    const stalled = stack.sibling({ now: () => decidedFirst });
    const answer = await stalled.heartbeat(agent.agentId, agent.sessionId);
    expect(answer).toMatchObject({ expiresAt: extended, lost: [] });
    expect((await ctx.sessions.get(agent.agentId))?.expiresAt).toBe(extended);
    // Nor does a claim decided that early.
    await scheduler.submit({ queue: 'late', payload: {} });
    const claimed = await claimUntil(stalled, agent, 1);
    expect(claimed).toHaveLength(1);
    expect((await ctx.sessions.get(agent.agentId))?.expiresAt).toBe(extended);

    // So the sweep, just before the expiry the agent was last told of, finds the lease alive.
    clock.advance(ttlMs - 1_000);
    expect((await scheduler.reclaim()).requeued).toEqual([]);
    for (const { taskId, leaseEpoch } of [held, ...claimed]) {
      await scheduler.complete({ agentId: agent.agentId, taskId, leaseEpoch });
    }
  });

  /**
   * Claims for `agent` until a claim reaches a grant, running `between` just before that grant is written (the one
   * write that records a lease's start); the claim's answer.
   */
  const claimAround = async (
    agent: { agentId: string; sessionId: string },
    between: () => Promise<unknown>,
  ) => {
    let reached = false;
    stack.interleave(
      (operation, input) =>
        operation === 'UpdateItemCommand' &&
        Object.values(input.ExpressionAttributeNames ?? {}).includes('leasedAt'),
      async () => {
        reached = true;
        await between();
      },
    );
    let answer: unknown[] = [];
    await waitFor(async () => {
      answer = await stack.scheduler.claim({ agentId: agent.agentId, sessionId: agent.sessionId });
      return reached;
    });
    return answer;
  };

  it('a grant sent after the sweep ended its session does not land: the task is not left leased to no one', async () => {
    const { scheduler, clock, ctx } = stack;
    const agent = await startAgent(scheduler, { queues: ['orphan'] });
    const { task } = await scheduler.submit({ queue: 'orphan', payload: {} });
    // The claim stalls between its reservation and its grant for longer than a lease: meanwhile the sweep finds
    // the session expired, ends it and hands back what it held (nothing is leased yet: it bars the grant), then
    // the grant is sent.
    const answer = await claimAround(agent, async () => {
      clock.advance((ctx.settings.leaseTtlSeconds + 1) * 1_000);
      // The supervisor's own function, not the claim's: its actions are checked against its own role.
      await runApart('supervisor', () => scheduler.reclaim());
    });

    // The agent is not told of it, and the task is waiting at once, its hint back in the queue.
    expect(answer).toEqual([]);
    expect((await ctx.sessions.get(agent.agentId))?.endedAt).toBeDefined();
    expect(await scheduler.getTask(task.taskId)).toMatchObject({ status: 'queued', leaseEpoch: 0 });
    const next = await startAgent(scheduler, { queues: ['orphan'] });
    const [taken] = await claimUntil(scheduler, next, 1);
    expect(taken).toMatchObject({ taskId: task.taskId, leaseEpoch: 1 });
    await scheduler.complete({ agentId: next.agentId, taskId: task.taskId, leaseEpoch: 1 });
  });

  it('a grant sent after its agent opened a new session does not land, however fast the claim', async () => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['replaced'] });
    const { task } = await scheduler.submit({ queue: 'replaced', payload: {} });
    // Between the claim's reservation and its grant the agent opens a new session (its own reckoning gave the old
    // one up): the new session hands back what the old one held, and nothing is leased yet. Then the grant lands.
    let reopened: { sessionId: string } | undefined;
    const answer = await claimAround(agent, async () => {
      reopened = await scheduler.openSession(agent.agentId);
    });

    expect(answer).toEqual([]);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({ status: 'queued', leaseEpoch: 0 });
    const [taken] = await claimUntil(
      scheduler,
      { agentId: agent.agentId, sessionId: reopened?.sessionId ?? '' },
      1,
    );
    expect(taken).toMatchObject({ taskId: task.taskId, leaseEpoch: 1 });
    await scheduler.complete({ agentId: agent.agentId, taskId: task.taskId, leaseEpoch: 1 });
  });

  it('a claim slower than the grace period: a parallel claim that drops its entry bars its grant, so the agent never holds more than its maxConcurrency', async () => {
    const { scheduler, clock, ctx } = stack;
    const agent = await startAgent(scheduler, { queues: ['slow-claim'], maxConcurrency: 1 });
    const { task: first } = await scheduler.submit({ queue: 'slow-claim', payload: { n: 1 } });
    let parallel: { taskId: string; leaseEpoch: number }[] = [];
    const answer = await claimAround(agent, async () => {
      // The claim stalls past the grace period; a second task comes, and a parallel claim of the same agent
      // finds the session full with an entry no grant has landed for: it drops the entry and takes the task.
      // (Heartbeats meanwhile keep the session: the grace period is longer than a lease.)
      const step = (ctx.settings.leaseTtlSeconds * 1_000) / 2;
      for (let waited = 0; waited <= ctx.settings.reservationGraceSeconds * 1_000; waited += step) {
        clock.advance(step);
        await scheduler.heartbeat(agent.agentId, agent.sessionId);
      }
      await scheduler.submit({ queue: 'slow-claim', payload: { n: 2 } });
      parallel = await claimUntil(scheduler, agent, 1, 3_000);
    });
    expect(answer).toEqual([]);
    expect(parallel).toHaveLength(1);
    const firstNow = await scheduler.getTask(first.taskId);
    expect(firstNow).toMatchObject({ status: 'queued', leaseEpoch: 0 });
    const [second] = parallel;
    if (!second) throw new Error('the parallel claim took nothing');
    const leased = [...(await ctx.tasks.getMany([first.taskId, second.taskId])).values()].filter(
      (t) => t.status === 'leased' && t.owner === agent.agentId,
    );
    expect(leased.map((t) => t.taskId)).toEqual([second.taskId]);
    await scheduler.complete({
      agentId: agent.agentId,
      taskId: second.taskId,
      leaseEpoch: second.leaseEpoch,
    });
  });

  it('a heartbeat that lands between the sweep reading the session and acting on it keeps the lease', async () => {
    const { scheduler, clock, ctx } = stack;
    const agent = await startAgent(scheduler, { queues: ['between'] });
    const { task } = await scheduler.submit({ queue: 'between', payload: {} });
    const [held] = await claimUntil(scheduler, agent, 1);
    if (!held) throw new Error('nothing claimed');
    const expiresAt = (await ctx.sessions.get(agent.agentId))?.expiresAt ?? 0;

    clock.advance((ctx.settings.leaseTtlSeconds + 1) * 1_000);
    const late = stack.sibling({ now: () => expiresAt - 1 });
    // The sweep has found the session expired; the agent's heartbeat, sent before the expiry, lands first. The
    // sweep ends sessions several at a time: the write to wait for is the end of this agent's session.
    stack.interleave(
      (operation, input) =>
        operation === 'UpdateItemCommand' &&
        String(input.UpdateExpression).includes('if_not_exists') &&
        JSON.stringify(input.Key).includes(agent.agentId),
      () => late.heartbeat(agent.agentId, agent.sessionId),
    );
    const swept = await scheduler.reclaim();

    expect(swept.requeued).toEqual([]);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({
      status: 'leased',
      leaseEpoch: held.leaseEpoch,
    });
    await scheduler.complete({ agentId: agent.agentId, taskId: task.taskId, leaseEpoch: held.leaseEpoch });
    expect((await scheduler.getTask(task.taskId)).status).toBe('succeeded');
  });

  it('a new session takes the old one’s tasks back at once, even when the answer to opening it was lost', async () => {
    const { scheduler, ctx, dynamodb } = stack;
    const agent = await startAgent(scheduler, { queues: ['reopen'] });
    const { task } = await scheduler.submit({ queue: 'reopen', payload: {} });
    const [held] = await claimUntil(scheduler, agent, 1);
    // The next session write commits, its answer is lost, and the SDK writes it again.
    let lost = 0;
    dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        // The session's write: one item, or one item of a transaction.
        if (
          lost === 0 &&
          (context.commandName === 'PutItemCommand' || context.commandName === 'TransactWriteItemsCommand') &&
          JSON.stringify(args.input).includes(`"${ctx.sessions.tableName}"`)
        ) {
          lost++;
          throw Object.assign(new Error('answer lost'), { name: 'TimeoutError', $metadata: {} });
        }
        return result;
      },
      { step: 'finalizeRequest', name: 'loseOneSessionAnswer', priority: 'low' },
    );
    try {
      await scheduler.openSession(agent.agentId);
    } finally {
      dynamodb.middlewareStack.remove('loseOneSessionAnswer');
    }

    expect(lost).toBe(1);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({
      status: 'queued',
      leaseEpoch: held?.leaseEpoch,
    });
  });

  it('a checkpoint saved by one owner is handed to the next', async () => {
    const { scheduler, clock, ctx } = stack;
    const a = await startAgent(scheduler, { name: 'a', queues: ['checkpoint'] });
    const { task } = await scheduler.submit({ queue: 'checkpoint', payload: {} });
    const [held] = await claimUntil(scheduler, a, 1);
    expect(held?.checkpoint).toBeUndefined();

    const beat = await scheduler.heartbeat(a.agentId, a.sessionId, [
      { taskId: task.taskId, leaseEpoch: 1, checkpoint: { page: 7 } },
    ]);
    clock.advance((ctx.settings.leaseTtlSeconds + 1) * 1_000);
    await scheduler.reclaim();
    const b = await startAgent(scheduler, { name: 'b', queues: ['checkpoint'] });
    const [taken] = await claimUntil(scheduler, b, 1);

    expect(beat.lost).toEqual([]);
    expect(taken).toMatchObject({ taskId: task.taskId, leaseEpoch: 2, checkpoint: { page: 7 } });
    // A's late checkpoint cannot overwrite B's.
    await scheduler.heartbeat(b.agentId, b.sessionId, [
      { taskId: task.taskId, leaseEpoch: 2, checkpoint: { page: 9 } },
    ]);
    expect((await scheduler.getTask(task.taskId)).checkpoint).toEqual({ page: 9 });
  });

  it('an attempt past its deadline is taken back even while the session is alive, and the owner is told', async () => {
    const { scheduler, clock } = stack;
    const agent = await startAgent(scheduler, { queues: ['deadline'] });
    const { task } = await scheduler.submit({ queue: 'deadline', payload: {}, timeoutSeconds: 5 });
    const [held] = await claimUntil(scheduler, agent, 1);
    if (!held) throw new Error('nothing claimed');

    // The task's own due time is later than its deadline; the sweep sees it once it is due.
    clock.advance(6_000);
    await scheduler.heartbeat(agent.agentId, agent.sessionId);
    const early = await scheduler.reclaim();
    // The agent stays alive, heartbeating, until the task's due time has come.
    for (let waited = 0; waited <= stack.ctx.settings.reconcileAfterSeconds; waited += 20) {
      clock.advance(20_000);
      await scheduler.heartbeat(agent.agentId, agent.sessionId);
    }
    const swept = await scheduler.reclaim();
    const beat = await scheduler.heartbeat(agent.agentId, agent.sessionId);

    expect(early.requeued).not.toContain(task.taskId);
    expect(swept.requeued).toContain(task.taskId);
    expect(beat.lost).toContain(task.taskId);
    await expect(
      scheduler.complete({ agentId: agent.agentId, taskId: task.taskId, leaseEpoch: held.leaseEpoch }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    // The slot came back with the lost lease: the agent can take the task again.
    const [again] = await claimUntil(scheduler, agent, 1);
    expect(again).toMatchObject({ taskId: task.taskId, leaseEpoch: 2, attempt: 2 });
  });

  it('a lost lease is told with its epoch, and a later claim of the task by the same session keeps its slot', async () => {
    // Prepare: the session runs the task at epoch 1; its deadline passes.
    const { scheduler, ctx } = stack;
    const agent = await startAgent(scheduler, { queues: ['relost'], maxConcurrency: 2 });
    const { task } = await scheduler.submit({ queue: 'relost', payload: {} });
    const [first] = await claimUntil(scheduler, agent, 1);
    expect(first).toMatchObject({ taskId: task.taskId, leaseEpoch: 1 });
    // Between the take-back and the notice to the session, the same session claims the task again: another hint
    // of the task (the supervisor's look at it, say) is already in its queue.
    let again: Awaited<ReturnType<typeof scheduler.claim>> = [];
    stack.interleave(
      (operation, input) => {
        const names = JSON.stringify(input.ExpressionAttributeNames ?? {});
        return (
          operation === 'UpdateItemCommand' &&
          JSON.stringify(input.Key).includes(agent.agentId) &&
          names.includes('"lost"') &&
          !names.includes('"expiresAt"')
        );
      },
      async () => {
        // A claim for two looks at the session's entries (it has room for more than it holds) and finds the
        // entry of epoch 1 stale: the task is queued again.
        await dispatch(ctx, await scheduler.getTask(task.taskId), 0, 'reclaimed');
        const sibling = stack.sibling();
        await waitFor(async () => {
          again = await sibling.claim({ ...agent, max: 2 });
          return again.length > 0;
        });
      },
    );

    // Act
    await reclaimTask(ctx, task.taskId, { reason: 'deadline' });
    const beat = await scheduler.heartbeat(agent.agentId, agent.sessionId);

    // Assess: the notice names epoch 1, the run at epoch 2 keeps its slot and its lease.
    expect(again).toMatchObject([{ taskId: task.taskId, leaseEpoch: 2 }]);
    expect(beat.lost).toEqual([task.taskId]);
    expect(beat.lostLeases).toEqual([{ taskId: task.taskId, leaseEpoch: 1 }]);
    expect(beat.held).toEqual([task.taskId]);
    expect(Object.keys((await ctx.sessions.get(agent.agentId))?.held ?? {})).toEqual([task.taskId]);
    await scheduler.complete({ agentId: agent.agentId, taskId: task.taskId, leaseEpoch: 2 });
  });

  it('cancelling a leased task reaches the owner at its next heartbeat and fences its writes', async () => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['cancel'] });
    const { task } = await scheduler.submit({ queue: 'cancel', payload: {} });
    const [held] = await claimUntil(scheduler, agent, 1);
    if (!held) throw new Error('nothing claimed');

    const cancelled = await scheduler.cancel(task.taskId);
    const beat = await scheduler.heartbeat(agent.agentId, agent.sessionId);
    const next = await scheduler.heartbeat(agent.agentId, agent.sessionId);

    expect(cancelled.status).toBe('cancelled');
    expect(beat.cancelled).toEqual([task.taskId]);
    expect(next.cancelled).toEqual([]);
    await expect(
      scheduler.complete({ agentId: agent.agentId, taskId: task.taskId, leaseEpoch: held.leaseEpoch }),
    ).rejects.toThrow(/cancelled/);
    expect((await scheduler.cancel(task.taskId)).status).toBe('cancelled');
  });

  it('two sweeps at once take each lease back once', async () => {
    const { scheduler, clock, ctx } = stack;
    const agent = await startAgent(scheduler, { queues: ['overlap'], maxConcurrency: 4 });
    for (let i = 0; i < 4; i++) await scheduler.submit({ queue: 'overlap', payload: { i } });
    const claimed = await claimUntil(scheduler, agent, 4, 5_000, 4);
    expect(claimed).toHaveLength(4);

    clock.advance((ctx.settings.leaseTtlSeconds + 1) * 1_000);
    const [first, second] = await Promise.all([scheduler.reclaim(), stack.sibling().reclaim()]);

    const requeued = [...first.requeued, ...second.requeued];
    for (const c of claimed) expect(requeued.filter((id) => id === c.taskId)).toHaveLength(1);
    for (const c of claimed) {
      expect(await scheduler.getTask(c.taskId)).toMatchObject({
        status: 'queued',
        attempt: 1,
        leaseEpoch: 1,
      });
    }
  });

  it('a task whose attempts run out on reclaim is dead', async () => {
    const { scheduler, clock, ctx } = stack;
    const { task } = await scheduler.submit({ queue: 'dead', payload: {}, maxAttempts: 1 });
    const agent = await startAgent(scheduler, { queues: ['dead'] });
    await claimUntil(scheduler, agent, 1);

    clock.advance((ctx.settings.leaseTtlSeconds + 1) * 1_000);
    const swept = await scheduler.reclaim();

    expect(swept.dead).toEqual([task.taskId]);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({
      status: 'dead',
      error: { message: 'lease expired (session)', retryable: true },
    });
  });
});
