/**
 * What an agent can recover when an answer is lost: a retried claim returns what its first attempt granted, a
 * checkpoint is fenced by the epoch it was taken under, and a session read lists what the session holds.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  claimUntil,
  createTestStack,
  leasedTaskIds,
  serveStack,
  startAgent,
  type TestStack,
  waitFor,
} from '#test/stack';

describe('claim ids, fenced checkpoints and session reads', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['retry', 'fence', 'read', 'window', 'race', 'late'],
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('a claim retried with its claim id returns what the first attempt granted, and grants nothing more', async () => {
    // Prepare: two tasks ready, an agent with room for both.
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['retry'], maxConcurrency: 2 });
    for (const n of [1, 2]) await scheduler.submit({ queue: 'retry', payload: { n } });
    const claimId = 'claim-0001-retry';
    let first: Awaited<ReturnType<typeof scheduler.claim>> = [];
    await waitFor(async () => {
      first = await scheduler.claim({ ...agent, claimId, max: 1 });
      return first.length === 1;
    });

    // Act: the answer was lost; the agent sends the same claim again.
    const again = await scheduler.claim({ ...agent, claimId, max: 1 });
    const another = await scheduler.claim({ ...agent, claimId: 'claim-0002-retry', max: 1 });

    // Assess: the same task at the same epoch, with its payload; a new claim id takes the other task.
    expect(again).toEqual(first);
    expect(again[0]?.timeoutSeconds).toBeGreaterThan(0);
    expect(await leasedTaskIds(stack, { owner: agent.agentId })).toHaveLength(another.length + 1);
    expect(another.map((t) => t.taskId)).not.toContain(first[0]?.taskId);
  });

  it('a retry that overtakes its first attempt still in flight: the two grant one claim’s worth between them', async () => {
    // Prepare: four tasks ready, an agent with room for all four, claims of two.
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['race'], maxConcurrency: 4 });
    for (const n of [1, 2, 3, 4]) await scheduler.submit({ queue: 'race', payload: { n } });
    const claimId = 'claim-0004-race';
    // The first attempt has read the session and received its messages; before it reserves, its retry (sent
    // because the first timed out) is served from start to end.
    let retry: Awaited<ReturnType<typeof scheduler.claim>> = [];
    stack.interleave(
      (operation, input) =>
        operation === 'UpdateItemCommand' &&
        JSON.stringify(input.ExpressionAttributeNames).includes('"claims"'),
      async () => {
        retry = await stack.sibling().claim({ ...agent, claimId, max: 2 });
      },
    );

    // Act
    const first = await scheduler.claim({ ...agent, claimId, max: 2 });

    // Assess: whatever each attempt answered, the leases under this claim id are the retry's, and the first
    // attempt answers with them too.
    expect(retry.length).toBeGreaterThan(0);
    const leased = await leasedTaskIds(stack, { owner: agent.agentId });
    expect(leased.sort()).toEqual(retry.map((t) => t.taskId).sort());
    expect(first.map((t) => t.taskId).sort()).toEqual(leased);
  });

  it('an attempt held in the network past the agent’s next claim grants nothing, however many claims came between', async () => {
    // Prepare: tasks enough for every claim; claims 2 to 5 reserve one task each, so the session no longer
    // remembers claim 1's id by the time its first attempt arrives.
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['late'], maxConcurrency: 10 });
    for (const n of [1, 2, 3, 4, 5, 6]) await scheduler.submit({ queue: 'late', payload: { n } });
    const later: string[] = [];
    for (const claimSeq of [2, 3, 4, 5]) {
      let got: Awaited<ReturnType<typeof scheduler.claim>> = [];
      await waitFor(async () => {
        got = await scheduler.claim({ ...agent, claimId: `claim-late-${claimSeq}`, claimSeq, max: 1 });
        return got.length === 1;
      });
      later.push(...got.map((t) => t.taskId));
    }

    // Act: claim 1 arrives now.
    const late = await scheduler.claim({ ...agent, claimId: 'claim-late-1', claimSeq: 1, max: 1 });

    // Assess: nothing granted, nothing leased beyond what claims 2 to 5 took; a next claim still works.
    expect(late).toEqual([]);
    expect((await leasedTaskIds(stack, { owner: agent.agentId })).sort()).toEqual([...later].sort());
    const next = await scheduler.claim({ ...agent, claimId: 'claim-late-6', claimSeq: 6, max: 1 });
    expect(next).toHaveLength(1);
  });

  it('a retried claim returns only the tasks of that claim still leased to the session', async () => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['window'], maxConcurrency: 3 });
    await scheduler.submit({ queue: 'window', payload: { n: 1 } });
    const claimId = 'claim-0003-window';
    let first: Awaited<ReturnType<typeof scheduler.claim>> = [];
    await waitFor(async () => {
      first = await scheduler.claim({ ...agent, claimId });
      return first.length === 1;
    });
    const [task] = first;
    if (!task) throw new Error('nothing claimed');
    await scheduler.complete({ agentId: agent.agentId, taskId: task.taskId, leaseEpoch: task.leaseEpoch });

    // A late retry of a claim whose task was finished meanwhile returns nothing, and takes nothing new.
    await scheduler.submit({ queue: 'window', payload: { n: 2 } });
    const late = await scheduler.claim({ ...agent, claimId });

    expect(late).toEqual([]);
    expect(await leasedTaskIds(stack, { owner: agent.agentId })).toEqual([]);
  });

  it('a checkpoint taken under an older epoch cannot overwrite the current one, even from the same session', async () => {
    // Prepare: the agent holds the task at epoch 1, gives it back, and takes it again at epoch 2.
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['fence'] });
    const { task } = await scheduler.submit({ queue: 'fence', payload: {} });
    await claimUntil(scheduler, agent, 1);
    await scheduler.release({ agentId: agent.agentId, taskId: task.taskId, leaseEpoch: 1 });
    const [again] = await claimUntil(scheduler, agent, 1);
    expect(again?.leaseEpoch).toBe(2);
    await scheduler.heartbeat(agent.agentId, agent.sessionId, [
      { taskId: task.taskId, leaseEpoch: 2, checkpoint: { page: 'new' } },
    ]);

    // Act: a heartbeat decided under epoch 1 lands late.
    const late = await scheduler.heartbeat(agent.agentId, agent.sessionId, [
      { taskId: task.taskId, leaseEpoch: 1, checkpoint: { page: 'old' } },
    ]);

    // Assess: refused, and the task is not reported lost: the session holds it at epoch 2.
    expect((await scheduler.getTask(task.taskId)).checkpoint).toEqual({ page: 'new' });
    expect(late.lost).toEqual([]);
    expect(late.held).toEqual([task.taskId]);
  });

  it('refuses checkpoints sent without the epoch they were taken under', async () => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['fence'] });
    await expect(
      scheduler.heartbeat(agent.agentId, agent.sessionId, { t_aaaaaaaaaaaaaaaaaaaaaaaaaa: { page: 1 } }),
    ).rejects.toMatchObject({ code: 'ValidationError' });
  });

  it('a session read lists the tasks the session holds with their epochs, and the roles it holds', async () => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['read'], maxConcurrency: 2 });
    const { task } = await scheduler.submit({ queue: 'read', payload: {} });
    await waitFor(async () => (await scheduler.claim(agent)).length === 1);
    await scheduler.volunteerForRole(agent.agentId, agent.sessionId, 'reader-role');

    const read = await scheduler.readSession(agent.agentId);

    expect(read.sessionId).toBe(agent.sessionId);
    expect(read.tasks).toEqual([
      expect.objectContaining({ taskId: task.taskId, queue: 'read', leaseEpoch: 1, attempt: 1 }),
    ]);
    expect(read.roles).toEqual([{ role: 'reader-role', leaseEpoch: 1 }]);
  });

  it('a session read of an agent whose session is over says the session is lost', async () => {
    const { scheduler, clock, ctx } = stack;
    const agent = await startAgent(scheduler, { queues: ['read'] });
    clock.advance((ctx.settings.leaseTtlSeconds + 1) * 1_000);
    try {
      await expect(scheduler.readSession(agent.agentId)).rejects.toMatchObject({ code: 'SessionLost' });
    } finally {
      clock.advance(-(ctx.settings.leaseTtlSeconds + 1) * 1_000);
    }
  });

  it('over HTTP, a claim retried with its id is answered the same, and the agent reads its own session', async () => {
    const operator = 'op_claim-ids-operator';
    const server = await serveStack(stack, operator);
    const call = async (method: string, path: string, token: string, body?: unknown) => {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    try {
      const created = await call('POST', '/v1/agents', operator, { name: 'http', queues: ['read'] });
      const token = String(created.body.token);
      const { sessionId } = (await call('POST', '/v1/agent/session', token)).body as { sessionId: string };
      await call('POST', '/v1/tasks', operator, { queue: 'read', payload: { over: 'http' } });
      const claim = { sessionId, claimId: 'http-claim-0001' };
      let first: { status: number; body: Record<string, unknown> } = { status: 0, body: {} };
      await waitFor(async () => {
        first = await call('POST', '/v1/agent/claim', token, claim);
        return (first.body.tasks as unknown[]).length === 1;
      });

      const again = await call('POST', '/v1/agent/claim', token, claim);
      const read = await call('GET', '/v1/agent/session', token);

      expect(again).toEqual(first);
      const [task] = first.body.tasks as { taskId: string; leaseEpoch: number }[];
      expect(read.status).toBe(200);
      expect(read.body.session).toMatchObject({
        sessionId,
        tasks: [{ taskId: task?.taskId, leaseEpoch: task?.leaseEpoch, queue: 'read' }],
        roles: [],
      });
    } finally {
      await server.close();
    }
  });

  it('a claim stalled past half the reservation grace sends no grant: its reservation may be dropped as stale by then', async () => {
    // Prepare: one task; the claim stalls between its start (its reservation's time) and its reservation's write
    // for 60 % of the grace, as a claim does on a host that stopped running it.
    // A grace well within the session's time to live, so that the stall leaves the session live.
    const own = await createTestStack({ queues: ['stalled'], settings: { reservationGraceSeconds: 4 } });
    onTestFinished(() => own.destroy());
    const { scheduler, clock, ctx } = own;
    const agent = await startAgent(scheduler, { queues: ['stalled'] });
    const { task } = await scheduler.submit({ queue: 'stalled', payload: { n: 1 } });
    const graceMs = ctx.settings.reservationGraceSeconds * 1_000;
    let stalled = false;
    const stall = () =>
      own.interleave(
        (operation, input) =>
          operation === 'UpdateItemCommand' &&
          JSON.stringify(input.ExpressionAttributeNames).includes('"held"'),
        async () => {
          clock.advance(graceMs * 0.6);
          stalled = true;
        },
      );

    // Act: claim until the stalled claim has received the task's hint and reserved it.
    stall();
    let answered: Awaited<ReturnType<typeof scheduler.claim>> = [];
    await waitFor(async () => {
      answered = await scheduler.claim({ ...agent, claimId: 'claim-stalled-1' });
      if (!stalled) return false;
      return true;
    });

    // Assess: no grant, nothing leased, the slot freed; the next claim takes the task at the first epoch.
    expect(answered).toEqual([]);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({ status: 'queued', leaseEpoch: 0 });
    expect((await scheduler.readSession(agent.agentId)).tasks).toEqual([]);
    const next = await claimUntil(scheduler, agent, 1, 5_000);
    expect(next.map((t) => [t.taskId, t.leaseEpoch])).toEqual([[task.taskId, 1]]);
  });
});
