/**
 * End to end over HTTP: what a Worker does when the network loses answers or hangs. A claim whose answer was lost
 * is answered again by its retry, a finished result is sent until it lands or the lease is over by the agent's own
 * reckoning, and a lease that reckoning says is over aborts its handler, whose result is then never sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { Worker } from '#sdk/worker';
import { createTestStack, everyUnlessRunning, serveStack, type TestStack, waitFor } from '#test/stack';

const OPERATOR = 'op_lost-answers-operator';
/**
 * Six heartbeats (one a second) to a lease: only what a test does to the network may cost a lease, not a loaded
 * machine's late beats (with three, a busy two-core machine lost leases and ran tasks twice).
 */
const LEASE_TTL_SECONDS = 6;

type Fetch = typeof fetch;

describe('a Worker when answers are lost', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;
  let sweeper: NodeJS.Timeout;

  beforeAll(async () => {
    stack = await createTestStack({
      random: () => 0,
      queues: ['claim', 'complete', 'hang'],
      settings: { leaseTtlSeconds: LEASE_TTL_SECONDS, heartbeatIntervalSeconds: 1 },
    });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
    sweeper = everyUnlessRunning(() => stack.scheduler.reclaim(), 1_000);
  });
  afterAll(async () => {
    clearInterval(sweeper);
    await server.close();
    await stack.destroy();
  });

  /** A client for a new agent on `queue`, whose requests go through `through` (which gets the real fetch). */
  async function agentClient(queue: string, through: (input: Request, real: Fetch) => Promise<Response>) {
    const { token } = await operator.createAgent({ name: `lost-${queue}`, queues: [queue] });
    return new AgentSchedulerClient({
      endpoint: server.url,
      token,
      retries: { maxAttempts: 4, baseDelayMs: 20, maxDelayMs: 100 },
      fetch: (input, init) => through(new Request(input, init), fetch),
    });
  }

  it('a claim whose answer is lost is answered by its retry: the task runs once, on its first attempt', async () => {
    // Prepare: the first claim answer that carries a task is lost after the server committed it.
    let lost = 0;
    const client = await agentClient('claim', async (request, real) => {
      const response = await real(request);
      if (lost === 0 && request.url.endsWith('/v1/agent/claim')) {
        const body = (await response.clone().json()) as { tasks?: unknown[] };
        if ((body.tasks ?? []).length > 0) {
          lost++;
          throw new TypeError('the answer was lost');
        }
      }
      return response;
    });
    const runs: string[] = [];
    const worker = new Worker({
      client,
      handler: async (task) => {
        runs.push(task.taskId);
        return { ok: true };
      },
      pollIntervalMs: { min: 20, max: 100 },
    });
    const { task } = await operator.submitTask({ queue: 'claim', payload: {} });

    // Act
    await worker.start();
    try {
      await waitFor(async () => (await operator.getTask(task.taskId)).status === 'succeeded', 10_000);
    } finally {
      await worker.stop();
    }

    // Assess: finished under the lease the lost answer granted (epoch 1), so not after that lease ran out and the
    // task was taken back, however long a loaded machine took.
    expect(lost).toBe(1);
    expect(runs).toEqual([task.taskId]);
    expect(await operator.getTask(task.taskId)).toMatchObject({
      status: 'succeeded',
      attempt: 1,
      leaseEpoch: 1,
    });
  });

  it('a completion the transport gave up on is sent again while the lease lasts: the task never runs again', async () => {
    // Prepare: every completion fails for the first 1.2 s after the first one is sent (four attempts fail).
    let cutUntil = 0;
    const client = await agentClient('complete', async (request, real) => {
      if (request.url.includes('/complete')) {
        if (cutUntil === 0) cutUntil = Date.now() + 1_200;
        if (Date.now() < cutUntil) throw new TypeError('network cut');
      }
      return real(request);
    });
    const runs: string[] = [];
    const lostEvents: string[] = [];
    const worker = new Worker({
      client,
      handler: async (task) => {
        runs.push(task.taskId);
        return { n: runs.length };
      },
      pollIntervalMs: { min: 20, max: 100 },
    });
    worker.on('lost', (task) => lostEvents.push(task.taskId));
    const { task } = await operator.submitTask({ queue: 'complete', payload: {} });

    // Act
    await worker.start();
    try {
      await waitFor(async () => (await operator.getTask(task.taskId)).status === 'succeeded', 10_000);
      // Long enough for a lease taken back to be claimed and run again.
      await new Promise((resolve) => setTimeout(resolve, (LEASE_TTL_SECONDS + 1) * 1_000));
    } finally {
      await worker.stop();
    }

    // Assess
    expect(runs).toEqual([task.taskId]);
    expect(lostEvents).toEqual([]);
    expect(await operator.getTask(task.taskId)).toMatchObject({
      status: 'succeeded',
      attempt: 1,
      result: { n: 1 },
    });
  });

  it('when requests hang, the handler is aborted before the lease can be anyone else’s, and its result is never sent', async () => {
    // Prepare: once the task is running, every request hangs (packets dropped, not refused) until released.
    let hanging = false;
    const held: (() => void)[] = [];
    const sentAfterAbort: string[] = [];
    let abortedAt = 0;
    const client = await agentClient('hang', async (request, real) => {
      if (abortedAt > 0) sentAfterAbort.push(new URL(request.url).pathname);
      if (hanging) {
        await new Promise<void>((resolve) => held.push(resolve));
        throw new TypeError('the connection was reset');
      }
      return real(request);
    });
    let grantedAt = 0;
    const worker = new Worker({
      client,
      handler: async (_task, { signal }) => {
        grantedAt = Date.now();
        hanging = true;
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
        abortedAt = Date.now();
        return { late: true };
      },
      pollIntervalMs: { min: 20, max: 100 },
    });
    const { task } = await operator.submitTask({ queue: 'hang', payload: {} });

    // Act
    await worker.start();
    try {
      await waitFor(() => abortedAt > 0, 10_000);
      // The server takes the task back once the lease is over; the agent must have stopped before.
      await waitFor(async () => (await operator.getTask(task.taskId)).status !== 'leased', 10_000);
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      hanging = false;
      for (const release of held.splice(0)) release();
      await worker.stop({ drain: false });
    }

    // Assess: aborted within the lease TTL of the grant, and nothing about the task was sent after.
    expect(abortedAt - grantedAt).toBeLessThan(LEASE_TTL_SECONDS * 1_000);
    expect(sentAfterAbort.filter((path) => path.includes(task.taskId))).toEqual([]);
    expect((await operator.getTask(task.taskId)).result).toBeUndefined();
  });
});
