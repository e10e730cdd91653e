/**
 * End to end over HTTP: the SDK's client and Worker against the local server on the emulators, with a supervisor
 * sweeping every half second and short leases so crashes are seen quickly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import type { ClaimedTask } from '#sdk/types';
import { Worker } from '#sdk/worker';
import {
  createTestStack,
  cuttableAgentClient,
  everyUnlessRunning,
  serveStack,
  type TestStack,
  waitFor,
} from '#test/stack';

const OPERATOR = 'op_e2e-operator-token';
const LEASE_TTL_SECONDS = 3;

describe('SDK and Worker end to end', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;
  let sweeper: NodeJS.Timeout;

  beforeAll(async () => {
    stack = await createTestStack({
      random: () => 0,
      queues: [
        'labelled',
        'lifecycle',
        'race',
        'crash',
        'cancel',
        'latency',
        'snooze',
        'snoozed-out',
        'extend',
        'overrun',
        'approval',
        'approval-worker',
        'metered',
      ],
      settings: { leaseTtlSeconds: LEASE_TTL_SECONDS, heartbeatIntervalSeconds: 1 },
    });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
    sweeper = everyUnlessRunning(() => stack.scheduler.reclaim(), 500);
  });
  afterAll(async () => {
    clearInterval(sweeper);
    await server.close();
    await stack.destroy();
  });

  /** A client for a new agent on `queue`, optionally through a fetch the test can cut. */
  async function agentClient(
    queue: string,
    options: { maxConcurrency?: number; cut?: { value: boolean } } = {},
  ) {
    const { token } = await operator.createAgent({
      name: `e2e-${queue}`,
      queues: [queue],
      maxConcurrency: options.maxConcurrency ?? 1,
    });
    return cuttableAgentClient(server.url, token, options.cut);
  }

  it('a task goes from submit to succeeded through the SDK and a Worker', async () => {
    const { task } = await operator.submitTask({ queue: 'lifecycle', payload: { x: 20 } });
    const worker = new Worker({
      client: await agentClient('lifecycle'),
      handler: async (claimed) => ({ doubled: (claimed.payload as { x: number }).x * 2 }),
      pollIntervalMs: { min: 20, max: 200 },
    });
    const completed: string[] = [];
    worker.on('completed', (t) => completed.push(t.taskId));
    await worker.start();

    await waitFor(() => completed.includes(task.taskId));
    await worker.stop();

    expect(await operator.getTask(task.taskId)).toMatchObject({
      status: 'succeeded',
      result: { doubled: 40 },
      attempt: 1,
    });
  });

  it('a Worker whose labels narrow its agent’s runs only the tasks they meet; one that adds a label does not start', async () => {
    const { token } = await operator.createAgent({
      name: 'e2e-labelled',
      queues: ['labelled'],
      maxConcurrency: 4,
      labels: { gpu: ['a100', 'h100'] },
    });
    const client = () => cuttableAgentClient(server.url, token);
    const refused = new Worker({ client: client(), handler: async () => ({}), labels: { gpu: 'tpu' } });
    await expect(refused.start()).rejects.toMatchObject({ status: 403 });
    const [a100, h100, any] = await Promise.all(
      [{ gpu: 'a100' }, { gpu: 'h100' }, { gpu: '*' }].map(
        async (require) =>
          (await operator.submitTask({ queue: 'labelled', payload: {}, require })).task.taskId,
      ),
    );
    const worker = new Worker({
      client: client(),
      handler: async () => ({ ok: true }),
      concurrency: 4,
      labels: { gpu: 'a100' },
      pollIntervalMs: { min: 20, max: 200 },
    });
    const completed: string[] = [];
    worker.on('completed', (t) => completed.push(t.taskId));
    const errors: unknown[] = [];
    worker.on('error', (e) => errors.push(e));
    await worker.start();
    // A correctness check, not a timing one: 4 s alone, 17 s once beside five other stacks on two cores.
    await waitFor(() => completed.length === 2, 30_000);
    expect(errors).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await worker.stop();
    expect(new Set(completed)).toEqual(new Set([a100, any]));
    expect((await operator.getTask(h100 ?? '')).status).toBe('queued');
    await operator.cancelTask(h100 ?? '');
  });

  it('a handler that meets a 429 with a Retry-After snoozes its task: no attempt used, run again after the delay', async () => {
    // Prepare: a provider that refuses the first call with a Retry-After of one second.
    const { task } = await operator.submitTask({ queue: 'snooze', payload: {}, maxAttempts: 1 });
    const runs: number[] = [];
    const worker = new Worker({
      client: await agentClient('snooze'),
      handler: async (claimed, ctx) => {
        runs.push(Date.now());
        if (runs.length === 1)
          throw Object.assign(new Error('429 Too Many Requests'), { retryAfterSeconds: 0.4 });
        if (runs.length === 2) return ctx.snooze(1);
        return { attempt: claimed.attempt };
      },
      pollIntervalMs: { min: 20, max: 200 },
    });
    const snoozed: number[] = [];
    worker.on('snoozed', (_, seconds) => snoozed.push(seconds));
    await worker.start();

    // Act
    await waitFor(async () => (await operator.getTask(task.taskId)).status === 'succeeded', 30_000);
    await worker.stop();

    // Assess: two snoozes of a second each (a Retry-After rounded up), then the one attempt the task had.
    expect(snoozed).toEqual([1, 1]);
    expect(await operator.getTask(task.taskId)).toMatchObject({
      attempt: 1,
      snoozes: 2,
      result: { attempt: 1 },
    });
    expect((runs[1] ?? 0) - (runs[0] ?? 0)).toBeGreaterThanOrEqual(900);
  });

  it('a snooze past the task’s maxSnoozes fails the attempt instead, retried after the same delay', async () => {
    const { task } = await operator.submitTask({
      queue: 'snoozed-out',
      payload: {},
      maxSnoozes: 0,
      maxAttempts: 2,
    });
    const worker = new Worker({
      client: await agentClient('snoozed-out'),
      handler: async (claimed, ctx) => (claimed.attempt === 1 ? ctx.snooze(1) : 'done'),
      pollIntervalMs: { min: 20, max: 200 },
    });
    const failed: unknown[] = [];
    worker.on('failed', (_, error) => failed.push(error));
    await worker.start();

    await waitFor(async () => (await operator.getTask(task.taskId)).status === 'succeeded', 10_000);
    await worker.stop();

    expect(failed).toHaveLength(1);
    expect(await operator.getTask(task.taskId)).toMatchObject({ attempt: 2, result: 'done' });
  });

  it('a handler that extends its deadline three times runs past its timeout to success', async () => {
    const { task } = await operator.submitTask({
      queue: 'extend',
      payload: {},
      timeoutSeconds: 3,
      maxTimeoutSeconds: 30,
      maxAttempts: 1,
    });
    const left: number[] = [];
    const worker = new Worker({
      client: await agentClient('extend'),
      handler: async (_, ctx) => {
        // The worker's own reckoning ends the attempt a second early (its margin): extend within it.
        for (let i = 0; i < 3; i++) {
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          left.push(await ctx.extendDeadline(3));
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        return { ranMs: 4_000 };
      },
      pollIntervalMs: { min: 20, max: 200 },
    });
    const lost: string[] = [];
    worker.on('lost', (_, reason) => lost.push(reason));
    await worker.start();

    await waitFor(async () => (await operator.getTask(task.taskId)).status === 'succeeded', 15_000);
    await worker.stop();

    expect(lost).toEqual([]);
    expect(left).toHaveLength(3);
    for (const seconds of left) expect(seconds).toBeGreaterThan(1);
    expect(await operator.getTask(task.taskId)).toMatchObject({ attempt: 1, result: { ranMs: 4_000 } });
  });

  it('a handler that passes maxTimeoutSeconds loses its lease at that moment', async () => {
    const { task } = await operator.submitTask({
      queue: 'overrun',
      payload: {},
      timeoutSeconds: 2,
      maxTimeoutSeconds: 3,
      maxAttempts: 1,
    });
    const worker = new Worker({
      client: await agentClient('overrun'),
      handler: async (_, ctx) => {
        await ctx.extendDeadline(60);
        await new Promise((resolve) => setTimeout(resolve, 6_000));
        return 'too late';
      },
      pollIntervalMs: { min: 20, max: 200 },
    });
    const lost: { reason: string; at: number }[] = [];
    worker.on('lost', (_, reason) => lost.push({ reason, at: Date.now() }));
    const started = Date.now();
    await worker.start();

    await waitFor(() => lost.length > 0, 10_000);
    await worker.stop();

    expect(lost[0]?.reason).toBe('deadline');
    // Three seconds from the grant, less the worker's margin: not the hour asked.
    expect((lost[0]?.at ?? 0) - started).toBeLessThan(3_500);
    expect((await operator.getTask(task.taskId)).status).not.toBe('succeeded');
  });

  it('a task suspended through the SDK resumes once when its callback URL is posted to, carrying the data', async () => {
    const { task } = await operator.submitTask({ queue: 'approval', payload: { plan: 'deploy' } });
    const agent = await agentClient('approval');
    const session = await agent.openSession();
    const claimOne = async () => {
      for (let i = 0; i < 40; i++) {
        const { tasks } = await agent.claim({ sessionId: session.sessionId, max: 1 });
        if (tasks[0]) return tasks[0];
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error('nothing was claimed');
    };
    const first = await claimOne();

    const suspended = await agent.wait(task.taskId, { leaseEpoch: first.leaseEpoch, timeoutSeconds: 600 });
    const listed = await operator.listWaitpoints();
    const post = (body: unknown) =>
      fetch(suspended.callbackUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const answers = [
      await post({ approved: true }),
      await post({ approved: true }),
      await post({ approved: false }),
    ];
    const resumed = await claimOne();

    expect(suspended.task.status).toBe('suspended');
    expect(suspended.callbackUrl).toMatch(/^http:\/\/.+\/v1\/callbacks\/w_[a-z2-7]{26}\.[A-Za-z0-9_-]{43}$/);
    expect(listed.waitpoints.map((w) => w.waitpointId)).toContain(suspended.waitpoint.waitpointId);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 409]);
    expect(resumed).toMatchObject({
      taskId: task.taskId,
      attempt: 1,
      waitpoint: { outcome: 'completed', data: { approved: true } },
    });
  });

  it('a Worker handler suspends its task for approval, and the run that resumes it reads the answer', async () => {
    const { task } = await operator.submitTask({ queue: 'approval-worker', payload: { plan: 'deploy' } });
    const runs: { waitpoint: unknown; checkpoint: unknown }[] = [];
    const answers: number[] = [];
    const worker = new Worker({
      client: await agentClient('approval-worker'),
      handler: async (claimed, ctx) => {
        runs.push({ waitpoint: ctx.waitpoint, checkpoint: claimed.checkpoint });
        if (!ctx.waitpoint) {
          ctx.checkpoint({ planned: true });
          return ctx.suspend({
            timeoutSeconds: 600,
            // A person answers the link they were sent, twice.
            onSuspended: async ({ callbackUrl }) => {
              for (let i = 0; i < 2; i++) {
                const answer = await fetch(callbackUrl, {
                  method: 'POST',
                  headers: { 'content-type': 'application/json' },
                  body: JSON.stringify({ approved: true }),
                });
                answers.push(answer.status);
              }
            },
          });
        }
        return { deployed: ctx.waitpoint.outcome === 'completed' };
      },
      pollIntervalMs: { min: 20, max: 200 },
    });
    const suspended: string[] = [];
    worker.on('suspended', (t, { waitpoint }) => suspended.push(`${t.taskId} ${waitpoint.status}`));
    await worker.start();

    await waitFor(async () => (await operator.getTask(task.taskId)).status === 'succeeded', 15_000);
    await worker.stop();

    expect(suspended).toEqual([`${task.taskId} open`]);
    expect(answers).toEqual([200, 200]);
    expect(runs).toEqual([
      { waitpoint: undefined, checkpoint: undefined },
      {
        waitpoint: { id: expect.stringMatching(/^w_/), outcome: 'completed', data: { approved: true } },
        checkpoint: { planned: true },
      },
    ]);
    // The suspension and the resume used no attempt.
    expect(await operator.getTask(task.taskId)).toMatchObject({ attempt: 1, result: { deployed: true } });
  });

  it('a handler reports the units it used; the completion settles what the grant took, through the SDK', async () => {
    await operator.setRateLimit('e2e.tokens', { limit: 10_000, per: 'day' });
    const before = (await operator.getRateLimit('e2e.tokens')).window.used ?? 0;
    const { task } = await operator.submitTask({
      queue: 'metered',
      payload: {},
      rateLimits: [{ name: 'e2e.tokens', units: 500 }],
    });
    const worker = new Worker({
      client: await agentClient('metered'),
      handler: async (_claimed, ctx) => {
        // Two model calls, counted as they go; a bad count throws and adds nothing.
        ctx.usage({ 'e2e.tokens': 300 });
        ctx.usage({ 'e2e.tokens': 420 });
        expect(() => ctx.usage({ 'e2e.tokens': -1 })).toThrow(RangeError);
        return 'summarised';
      },
      pollIntervalMs: { min: 20, max: 200 },
    });
    await worker.start();
    await waitFor(async () => (await operator.getTask(task.taskId)).status === 'succeeded');
    await worker.stop();
    const done = await operator.getTask(task.taskId);
    expect(done.rateLimits).toEqual([{ name: 'e2e.tokens', units: 500 }]);
    expect(done.rateTaken).toMatchObject([{ name: 'e2e.tokens', units: 500 }]);
    // 500 taken at the grant, 720 used: the day's window holds 720 more than before.
    expect((await operator.getRateLimit('e2e.tokens')).window.used).toBe(before + 720);
  });

  it('two workers racing over 20 tasks run each exactly once', async () => {
    const ids = await Promise.all(
      Array.from(
        { length: 20 },
        async (_, i) => (await operator.submitTask({ queue: 'race', payload: { i } })).task.taskId,
      ),
    );
    const runs = new Map<string, number>();
    const handler = async (claimed: ClaimedTask) => {
      runs.set(claimed.taskId, (runs.get(claimed.taskId) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, 10));
      return { ok: true };
    };
    const workers = await Promise.all(
      [0, 1].map(
        async () =>
          new Worker({
            client: await agentClient('race', { maxConcurrency: 3 }),
            handler,
            concurrency: 3,
            pollIntervalMs: { min: 20, max: 100 },
          }),
      ),
    );
    await Promise.all(workers.map((w) => w.start()));

    await waitFor(
      async () =>
        (await operator.listTasks({ queue: 'race', status: 'succeeded', limit: 100 })).tasks.length === 20,
      30_000,
    );
    await Promise.all(workers.map((w) => w.stop()));

    expect([...runs.keys()].sort()).toEqual([...ids].sort());
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
  });

  it('a worker cut off mid-task loses its lease; the task is reclaimed and finished by another', async () => {
    // Prepare: worker A takes the task and then vanishes from the network.
    const cut = { value: false };
    const { task } = await operator.submitTask({ queue: 'crash', payload: {}, maxAttempts: 3 });
    let release: () => void = () => undefined;
    const a = new Worker({
      client: await agentClient('crash', { cut }),
      handler: () => new Promise((resolve) => (release = () => resolve('late'))),
      pollIntervalMs: { min: 20, max: 100 },
    });
    const picked = new Promise<void>((resolve) => a.once('picked', () => resolve()));
    await a.start();
    await picked;
    const cutAt = Date.now();
    cut.value = true;

    // Act: the supervisor takes the task back once A's session expires; B picks it up.
    const b = new Worker({
      client: await agentClient('crash'),
      handler: async () => 'from b',
      pollIntervalMs: { min: 20, max: 100 },
    });
    const done = new Promise<number>((resolve) => b.on('completed', () => resolve(Date.now())));
    await b.start();
    const finishedAt = await done;
    release();
    cut.value = false;
    await Promise.all([a.stop({ drain: false, timeoutMs: 1_000 }), b.stop()]);

    // Assess
    const reclaimMs = finishedAt - cutAt;
    console.log(
      `[e2e] task reclaimed and finished by another worker ${reclaimMs} ms after its first worker was cut off (lease TTL ${LEASE_TTL_SECONDS} s)`,
    );
    const finished = await operator.getTask(task.taskId);
    expect(finished).toMatchObject({ status: 'succeeded', result: 'from b' });
    // B's attempt is the second, or a later one when a starved machine let B's own first lease lapse too (seen once
    // in CI: attempt 3); every grant is an attempt, and A's late result never lands.
    expect(finished.attempt).toBeGreaterThanOrEqual(2);
    expect(finished.leaseEpoch).toBe(finished.attempt);
    // Each lapsed lease costs at most its TTL; the rest is the sweep, the retry's backoff and the claim, which a
    // starved machine has stretched to 5 s (CI: 8.0 s at attempt 2). A reclaim waiting on anything but the lease (the
    // agent's silence, a queue's visibility) would take tens of seconds.
    expect(reclaimMs).toBeLessThan(((finished.attempt - 1) * LEASE_TTL_SECONDS + 6) * 1_000);
  });

  it('cancelling a running task aborts its handler through the AbortSignal', async () => {
    const { task } = await operator.submitTask({ queue: 'cancel', payload: {} });
    let sawAbort = false;
    const worker = new Worker({
      client: await agentClient('cancel'),
      handler: (_task, context) =>
        new Promise((_, reject) => {
          context.signal.addEventListener('abort', () => {
            sawAbort = true;
            reject(context.signal.reason);
          });
        }),
      pollIntervalMs: { min: 20, max: 100 },
    });
    const picked = new Promise<void>((resolve) => worker.once('picked', () => resolve()));
    const lost = new Promise<string>((resolve) => worker.once('lost', (_t, reason) => resolve(reason)));
    await worker.start();
    await picked;

    await operator.cancelTask(task.taskId);
    const reason = await lost;
    await worker.stop();

    expect(sawAbort).toBe(true);
    expect(reason).toBe('cancelled');
    expect((await operator.getTask(task.taskId)).status).toBe('cancelled');
  });

  it('measures claim and complete latency over HTTP', async () => {
    const client = await agentClient('latency');
    const { sessionId } = await client.openSession();
    const claimMs: number[] = [];
    const completeMs: number[] = [];
    let beatAt = Date.now();
    for (let i = 0; i < 40; i++) {
      // Keep the short-lived session alive, as a worker's heartbeat would.
      if (Date.now() - beatAt > 1_000) {
        await client.heartbeat({ sessionId });
        beatAt = Date.now();
      }
      await operator.submitTask({ queue: 'latency', payload: { i } });
      let claimed: ClaimedTask | undefined;
      while (!claimed) {
        const started = performance.now();
        [claimed] = (await client.claim({ sessionId })).tasks;
        if (claimed) claimMs.push(performance.now() - started);
      }
      const started = performance.now();
      await client.complete(claimed.taskId, { leaseEpoch: claimed.leaseEpoch });
      completeMs.push(performance.now() - started);
    }
    const pct = (list: number[], p: number) =>
      [...list].sort((x, y) => x - y)[Math.min(list.length - 1, Math.floor(list.length * p))] ?? 0;
    console.log(
      `[latency] local stack over HTTP, 40 tasks: claim p50 ${pct(claimMs, 0.5).toFixed(1)} ms p99 ${pct(claimMs, 0.99).toFixed(1)} ms; complete p50 ${pct(completeMs, 0.5).toFixed(1)} ms p99 ${pct(completeMs, 0.99).toFixed(1)} ms`,
    );
    expect(claimMs).toHaveLength(40);
  });
});
