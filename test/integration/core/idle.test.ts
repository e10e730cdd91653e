/**
 * What an idle agent costs: claims that find nothing write nothing and are told to wait longer and longer, and an
 * agent holding nothing need not heartbeat, since the claim that gives it work extends its session.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idleRetryAfterMs } from '#core/claim';
import { DEFAULT_SETTINGS } from '#core/context';
import { SessionLostError } from '#domain/errors';
import { claimUntil, createTestStack, serveStack, startAgent, type TestStack } from '#test/stack';

const TTL_MS = 30_000;

describe('idle agents', () => {
  let stack: TestStack;

  beforeAll(async () => {
    // `quiet` is served by the HTTP test alone: a task another test left in `work` (taken back from an expired
    // session, due again a little later) would otherwise answer one of its empty claims.
    stack = await createTestStack({ queues: ['work', 'quiet'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('suggests a wait that doubles with each empty claim, up to the cap', () => {
    const waits = [0, 1, 2, 3, 6, 7, 8, 50].map((n) => idleRetryAfterMs(DEFAULT_SETTINGS, n));
    expect(waits).toEqual([500, 1_000, 2_000, 4_000, 32_000, 64_000, 90_000, 90_000]);
  });

  it('an empty claim writes nothing, whatever the agent serves', async () => {
    const agent = await startAgent(stack.scheduler);
    stack.meter.reset();
    expect(await stack.scheduler.claim(agent)).toEqual([]);
    expect(stack.meter.totals((r) => r.service === 'dynamodb').writeUnits).toBe(0);
  });

  it('an idle agent drops the entries of finished tasks once, then polls without looking at them', async () => {
    const { scheduler, meter } = stack;
    const agent = await startAgent(scheduler, { maxConcurrency: 2 });
    await scheduler.submitBatch([
      { queue: 'work', payload: { n: 1 } },
      { queue: 'work', payload: { n: 2 } },
    ]);
    const claimed = await claimUntil(scheduler, agent, 2, 5_000, 2);
    await scheduler.completeBatch(
      agent.agentId,
      claimed.map((t) => ({ taskId: t.taskId, leaseEpoch: t.leaseEpoch })),
    );
    const poll = async () => {
      meter.reset();
      expect(await scheduler.claim({ ...agent, max: 2 })).toEqual([]);
      return meter.totals((r) => r.service === 'dynamodb');
    };
    const first = await poll();
    const second = await poll();
    expect(first.writeUnits).toBe(1);
    expect(second.writeUnits).toBe(0);
    expect(second.readUnits).toBeLessThan(first.readUnits);
    expect(second.requests).toBeLessThan(first.requests);
  });

  it('an agent that held nothing claims after its session expired, and the claim extends the session', async () => {
    const { scheduler, clock, ctx } = stack;
    const agent = await startAgent(scheduler);
    clock.advance(TTL_MS + 60_000);
    expect(await scheduler.claim(agent)).toEqual([]);
    const { task } = await scheduler.submit({ queue: 'work', payload: { n: 1 } });
    const [claimed] = await claimUntil(scheduler, agent, 1);
    expect(claimed?.taskId).toBe(task.taskId);
    const session = await ctx.sessions.get(agent.agentId);
    expect(session?.expiresAt).toBeGreaterThan(clock.now() + TTL_MS - 5_000);
    // The lease is good: the holder completes it.
    await scheduler.complete({
      agentId: agent.agentId,
      taskId: task.taskId,
      leaseEpoch: claimed?.leaseEpoch ?? 0,
    });
  });

  it('a session that expired holding a task stays over: it must hear what it lost first', async () => {
    const { scheduler, clock } = stack;
    const agent = await startAgent(scheduler);
    await scheduler.submit({ queue: 'work', payload: {} });
    expect(await claimUntil(scheduler, agent, 1)).toHaveLength(1);
    clock.advance(TTL_MS + 1_000);
    // Before and after the sweep took the task back.
    await expect(scheduler.claim(agent)).rejects.toBeInstanceOf(SessionLostError);
    await scheduler.supervise();
    await expect(scheduler.claim(agent)).rejects.toBeInstanceOf(SessionLostError);
  });

  it('over HTTP, an empty claim answers at once with retryAfterMs growing with idleClaims', async () => {
    const server = await serveStack(stack, 'op_idle');
    try {
      const { token } = (await (
        await fetch(`${server.url}/v1/agents`, {
          method: 'POST',
          headers: { authorization: 'Bearer op_idle', 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'idle', queues: ['quiet'] }),
        })
      ).json()) as { token: string };
      const call = async (path: string, body: object) =>
        (await (
          await fetch(`${server.url}${path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          })
        ).json()) as Record<string, unknown>;
      const { sessionId } = (await call('/v1/agent/session', {})) as { sessionId: string };
      const waits: unknown[] = [];
      for (const idleClaims of [0, 1, 2, 3, 4]) {
        const started = Date.now();
        const answer = await call('/v1/agent/claim', { sessionId, idleClaims });
        // Not held: the stack's claims do not long-poll (a long poll would hold the call up to SQS's 20 s); a
        // quarter of that leaves a loaded machine room and still tells the two apart.
        expect(Date.now() - started).toBeLessThan(5_000);
        waits.push(answer.retryAfterMs);
      }
      // The test stack's settings: 20 ms doubling, capped at 200 ms.
      expect(waits).toEqual([20, 40, 80, 160, 200]);
    } finally {
      await server.close();
    }
  });
});
