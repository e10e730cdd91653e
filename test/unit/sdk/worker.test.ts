import { afterEach, describe, expect, it, vi } from 'vitest';
import { AgentSchedulerClient } from '#sdk/client';
import { NonRetryableError } from '#sdk/errors';
import { PollBackoff } from '#sdk/poll-backoff';
import { describeFailure } from '#sdk/task-outcomes';
import type { ClaimedTask } from '#sdk/types';
import { Worker, type WorkerOptions } from '#sdk/worker';
import { type LostReason, TaskAbortedError, type TaskHandler } from '#sdk/worker-events';
import { aborted, deferred, FakeScheduler } from './fake-scheduler';

const workers: Worker[] = [];

function setup(handler: TaskHandler, options: Partial<WorkerOptions> = {}) {
  const server = new FakeScheduler();
  const client = new AgentSchedulerClient({
    endpoint: 'http://fake',
    token: 'tok',
    fetch: server.fetch,
    retries: { maxAttempts: 1 },
  });
  const worker = new Worker({ client, handler, pollIntervalMs: { min: 5, max: 20 }, ...options });
  workers.push(worker);
  const events = {
    picked: [] as string[],
    completed: [] as [string, unknown][],
    failed: [] as [string, unknown][],
    released: [] as string[],
    lost: [] as [string, LostReason][],
    sessions: [] as string[],
    errors: [] as unknown[],
  };
  worker.on('picked', (task) => events.picked.push(task.taskId));
  worker.on('completed', (task, result) => events.completed.push([task.taskId, result]));
  worker.on('failed', (task, error) => events.failed.push([task.taskId, error]));
  worker.on('released', (task) => events.released.push(task.taskId));
  worker.on('lost', (task, reason) => events.lost.push([task.taskId, reason]));
  worker.on('session', (session) => events.sessions.push(session.sessionId));
  worker.on('error', (error) => events.errors.push(error));
  return { server, worker, events };
}

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ drain: false })));
});

describe('Worker', () => {
  it('sends a completion at once when none is in flight, and groups those that finish meanwhile', async () => {
    const { server, worker, events } = setup(async (task) => task.payload, { concurrency: 10 });
    // The first completion call is held until the other nine tasks have finished.
    const hold = deferred();
    server.holdFirst('/complete', hold.promise);
    for (let i = 0; i < 10; i++) server.add(i);
    await worker.start();
    await vi.waitFor(() => expect(events.picked).toHaveLength(10));
    await new Promise((resolve) => setTimeout(resolve, 20));
    hold.resolve();
    await vi.waitFor(() => expect(events.completed).toHaveLength(10));

    const completions = server.calls.filter((c) => c.path.endsWith('/complete'));
    expect(completions.map((c) => c.path)).toEqual([
      expect.stringMatching(/^\/v1\/agent\/tasks\/[^/]+\/complete$/),
      '/v1/agent/tasks/complete',
    ]);
    expect(completions[1]?.body.tasks).toHaveLength(9);
    expect(events.errors).toEqual([]);
  });

  it('a grouped completion refused for one task reports that task lost and completes the others', async () => {
    const { server, worker, events } = setup(async () => 'ok', { concurrency: 3 });
    const hold = deferred();
    server.holdFirst('/complete', hold.promise);
    const ids = [0, 1, 2].map((i) => server.add(i));
    await worker.start();
    await vi.waitFor(() => expect(events.picked).toHaveLength(3));
    // One of the two waiting tasks was taken back meanwhile: its completion is refused, LeaseLost.
    const waiting = ids.filter((id) => id !== events.picked[0]);
    server.reclaim(waiting[0] ?? '');
    await new Promise((resolve) => setTimeout(resolve, 20));
    hold.resolve();
    await vi.waitFor(() => expect(events.lost).toEqual([[waiting[0], 'lost']]));
    await vi.waitFor(() =>
      expect(events.completed.map(([id]) => id)).toEqual(
        expect.arrayContaining([events.picked[0], waiting[1]]),
      ),
    );
    const batch = server.callsTo('/v1/agent/tasks/complete')[0] ?? { body: { tasks: [] } };
    expect((batch.body.tasks as { taskId: string }[]).map((t) => t.taskId).sort()).toEqual(
      [...waiting].sort(),
    );
    expect(events.errors).toEqual([]);
  });

  it('runs up to `concurrency` tasks at once and never claims more', async () => {
    let running = 0;
    let peak = 0;
    const { server, worker, events } = setup(
      async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise((resolve) => setTimeout(resolve, 15));
        running--;
        return 'done';
      },
      { concurrency: 2 },
    );
    for (let i = 0; i < 7; i++) server.add({ i });
    await worker.start();
    await vi.waitFor(() => expect(events.completed).toHaveLength(7));
    expect(peak).toBe(2);
    for (const call of server.callsTo('/claim')) expect(call.body.max).toBeLessThanOrEqual(2);
    expect(events.errors).toEqual([]);
  });

  it('completes a task with the handler’s return value', async () => {
    const handler = vi.fn(async (task: ClaimedTask) => ({ echoed: task.payload }));
    const { server, worker, events } = setup(handler);
    const taskId = server.add({ n: 1 });
    await worker.start();
    await vi.waitFor(() => expect(events.completed).toEqual([[taskId, { echoed: { n: 1 } }]]));
    expect(events.picked).toEqual([taskId]);
    // The worker (one task at a time) was full: the completion carried its next claim.
    expect(server.callsTo('/complete')[0]?.body).toEqual({
      leaseEpoch: 1,
      result: { echoed: { n: 1 } },
      claimNext: expect.objectContaining({
        sessionId: expect.any(String),
        max: 1,
        claimId: expect.any(String),
      }),
    });
    expect(server.task(taskId).status).toBe('succeeded');
  });

  it('fails a task, retryably unless the error says otherwise', async () => {
    const errors: unknown[] = [
      new Error('flaky'),
      new NonRetryableError('bad input'),
      Object.assign(new Error('also final'), { retryable: false }),
    ];
    const { server, worker, events } = setup(async (task) => {
      throw errors[task.payload as number];
    });
    const ids = [0, 1, 2].map((i) => server.add(i));
    await worker.start();
    await vi.waitFor(() => expect(events.failed).toHaveLength(3));
    const sent = Object.fromEntries(server.callsTo('/fail').map((call) => [call.path, call.body.error]));
    expect(sent[`/v1/agent/tasks/${ids[0]}/fail`]).toEqual({ message: 'flaky', retryable: true });
    expect(sent[`/v1/agent/tasks/${ids[1]}/fail`]).toEqual({ message: 'bad input', retryable: false });
    expect(sent[`/v1/agent/tasks/${ids[2]}/fail`]).toEqual({ message: 'also final', retryable: false });
    expect(events.failed.map(([, error]) => error)).toEqual(expect.arrayContaining(errors));
  });

  it('aborts a task an operator cancelled, and records nothing for it', async () => {
    let seenReason: unknown;
    const { server, worker, events } = setup(async (_task, { signal }) => {
      await aborted(signal);
      seenReason = signal.reason;
      return 'too late';
    });
    server.heartbeatIntervalSeconds = 0.01;
    const taskId = server.add('work');
    await worker.start();
    await vi.waitFor(() => expect(events.picked).toEqual([taskId]));
    server.cancel(taskId);
    await vi.waitFor(() => expect(events.lost).toEqual([[taskId, 'cancelled']]));
    await vi.waitFor(() => expect(worker.inFlight).toBe(0));
    expect(seenReason).toBeInstanceOf(TaskAbortedError);
    expect(seenReason).toMatchObject({ taskId, reason: 'cancelled' });
    expect(server.callsTo('/complete')).toEqual([]);
    expect(events.completed).toEqual([]);
  });

  it.each([
    ['a lost lease of an earlier epoch leaves the run of a later one alone', [{ leaseEpoch: 1 }], []],
    ['a lost lease of the epoch it runs aborts it', [{ leaseEpoch: 2 }], ['lost']],
    ['a server that names task ids only aborts the run of that task', undefined, ['lost']],
  ])('%s', async (_, leases, lost) => {
    // Prepare: the worker runs the task at epoch 2 (its lease at epoch 1 was taken back before).
    const done = deferred<string>();
    const { server, worker, events } = setup(async (_task, { signal }) =>
      Promise.race([done.promise, aborted(signal).then(() => 'aborted')]),
    );
    server.heartbeatIntervalSeconds = 0.01;
    const taskId = server.add('work');
    const task = server.tasks.get(taskId);
    if (task) task.leaseEpoch = 1;
    const notice = {
      cancelled: [],
      lost: [taskId],
      ...(leases ? { lostLeases: leases.map((l) => ({ taskId, ...l })) } : {}),
      roles: { picked: [], lost: [] },
      held: [taskId],
    };
    server.scripted.set('/heartbeat', [{ status: 200, body: notice }]);

    // Act: the notice comes with the first heartbeat; a few more follow while the task runs.
    await worker.start();
    await vi.waitFor(() => expect(events.picked).toEqual([taskId]));
    await vi.waitFor(() =>
      expect(server.callsTo('/heartbeat').length >= 3 || worker.inFlight === 0).toBe(true),
    );
    done.resolve('finished');

    // Assess
    await vi.waitFor(() => expect(worker.inFlight).toBe(0));
    expect(events.lost).toEqual(lost.map((reason) => [taskId, reason]));
    expect(events.completed).toEqual(lost.length === 0 ? [[taskId, 'finished']] : []);
  });

  it('aborts every task when the session is lost, then opens a new session and carries on', async () => {
    const { server, worker, events } = setup(
      async (task, { signal }) => {
        if (task.payload === 'after') return 'fresh';
        await aborted(signal);
      },
      { concurrency: 2 },
    );
    server.heartbeatIntervalSeconds = 0.01;
    const first = [server.add('before'), server.add('before')];
    await worker.start();
    await vi.waitFor(() => expect(events.picked).toHaveLength(2));
    server.expireSession();
    await vi.waitFor(() => expect(events.sessions).toEqual(['s_1', 's_2']));
    expect(events.lost).toEqual(first.map((taskId) => [taskId, 'session']));
    const later = server.add('after');
    await vi.waitFor(() => expect(events.completed).toEqual([[later, 'fresh']]));
    expect(server.callsTo('/complete')[0]?.body).toMatchObject({ leaseEpoch: 1 });
    expect(server.callsTo('/session')).toHaveLength(2);
    expect(events.errors).toEqual([]);
  });

  it('never gives back a grant whose claim answer is on its way, nor runs one it gave back', async () => {
    const server = new FakeScheduler();
    server.heartbeatIntervalSeconds = 0.01;
    // Claim answers are held, once the server has granted, while `held` is set.
    let held: Promise<void> | undefined;
    const fetch: typeof server.fetch = async (input, init) => {
      const answer = await server.fetch(input, init);
      const url = input instanceof Request ? input.url : String(input);
      if (held && url.endsWith('/v1/agent/claim')) await held;
      return answer;
    };
    const client = new AgentSchedulerClient({
      endpoint: 'http://fake',
      token: 'tok',
      fetch,
      retries: { maxAttempts: 1 },
    });
    const first = deferred();
    const runs: [string, number][] = [];
    const worker = new Worker({
      client,
      concurrency: 2,
      pollIntervalMs: { min: 5, max: 20 },
      handler: async (task) => {
        runs.push([task.taskId, task.leaseEpoch]);
        if (task.payload === 'first') await first.promise;
      },
    });
    workers.push(worker);
    worker.on('error', () => undefined);
    server.add('first');
    await worker.start();
    await vi.waitFor(() => expect(runs).toHaveLength(1));

    // The second task is granted, its answer held; meanwhile a heartbeat fails, so the next one reads the session,
    // which lists the second task.
    const answer = deferred();
    held = answer.promise;
    const second = server.add('second');
    await vi.waitFor(() => expect(server.task(second).status).toBe('leased'));
    server.scripted.set('/heartbeat', [
      { status: 503, body: { error: { code: 'ServiceUnavailable', message: 'down' } } },
    ]);
    await vi.waitFor(() =>
      expect(server.calls.some((c) => c.method === 'GET' && c.path === '/v1/agent/session')).toBe(true),
    );
    await new Promise((resolve) => setTimeout(resolve, 30));
    held = undefined;
    answer.resolve();
    first.resolve();
    await vi.waitFor(() => expect(server.task(second).status).toBe('succeeded'));

    const givenBack = server
      .callsTo('/release')
      .filter((c) => c.path.includes(second))
      .map((c) => c.body.leaseEpoch);
    const ranAt = runs.filter(([taskId]) => taskId === second).map(([, epoch]) => epoch);
    // Each lease of the task was either run or given back, never both.
    expect(ranAt.filter((epoch) => givenBack.includes(epoch))).toEqual([]);
    expect(ranAt).toHaveLength(1);
  });

  it('waits longer and longer while idle, and starts again from the minimum when work appears', async () => {
    vi.useFakeTimers();
    const { server, worker } = setup(async () => 'ok', { pollIntervalMs: { min: 10, max: 80 } });
    await worker.start();
    await vi.advanceTimersByTimeAsync(240);
    const gaps = (calls: { at: number }[]) => calls.slice(1).map((call, i) => call.at - (calls[i]?.at ?? 0));
    expect(gaps(server.claimsSent())).toEqual([10, 20, 40, 80, 80]);

    const before = server.claimsSent().length;
    server.add('work');
    await vi.advanceTimersByTimeAsync(120);
    // The claim that found work is followed at once by another (carried by the task's completion), then the waits
    // grow from the minimum again.
    expect(gaps(server.claimsSent().slice(before))).toEqual([0, 10, 20]);
    expect(server.callsTo('/complete')[0]?.body).toHaveProperty('claimNext');
  });

  it('tells the server how many claims in a row found nothing, from 0 again once work appears', async () => {
    vi.useFakeTimers();
    const { server, worker } = setup(async () => 'ok', { pollIntervalMs: { min: 10, max: 10 } });
    await worker.start();
    await vi.advanceTimersByTimeAsync(35);
    server.add('work');
    await vi.advanceTimersByTimeAsync(25);
    const idle = server.claimsSent().map((call) => (call.body as { idleClaims?: number }).idleClaims);
    expect(idle.slice(0, 4)).toEqual([0, 1, 2, 3]);
    // The claim that found work is followed by one (carried by the task's completion) that starts the count again.
    const found = idle.indexOf(4);
    expect(idle.slice(found, found + 3)).toEqual([4, 0, 1]);
  });

  it('sends no heartbeat while it holds nothing, and heartbeats while a task runs', async () => {
    vi.useFakeTimers();
    const gate = deferred();
    const { server, worker } = setup(async () => {
      await gate.promise;
      return 'done';
    });
    server.heartbeatIntervalSeconds = 0.01;
    await worker.start();
    await vi.advanceTimersByTimeAsync(100);
    expect(server.callsTo('/heartbeat')).toHaveLength(0);
    server.add('slow');
    await vi.advanceTimersByTimeAsync(100);
    expect(server.callsTo('/heartbeat').length).toBeGreaterThan(3);
    gate.resolve();
  });

  it('honours a claim’s retryAfterMs over its own backoff', async () => {
    vi.useFakeTimers();
    const { server, worker } = setup(async () => 'ok');
    server.scripted.set('/claim', [{ status: 200, body: { tasks: [], retryAfterMs: 1_000 } }]);
    await worker.start();
    await vi.advanceTimersByTimeAsync(999);
    expect(server.callsTo('/claim')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(server.callsTo('/claim')).toHaveLength(2);
  });

  it('aborts a task whose lease deadline passes', async () => {
    const { server, worker, events } = setup(async (_task, { signal }) => aborted(signal));
    const taskId = server.add('slow', { leaseMs: 30 });
    await worker.start();
    await vi.waitFor(() => expect(events.lost).toEqual([[taskId, 'deadline']]));
    expect(server.callsTo('/complete')).toEqual([]);
  });

  it('reckons a task’s deadline from its own send time, so a server clock far ahead cannot stretch it', async () => {
    // The server's clock is a minute ahead: its absolute deadline is a minute later than the lease really lasts.
    const { server, worker, events } = setup(async (_task, { signal }) => aborted(signal), {
      leaseMarginMs: 100,
    });
    server.clockAheadMs = 60_000;
    server.add('x', { leaseMs: 500 });
    const started = Date.now();
    await worker.start();
    await vi.waitFor(() => expect(events.lost).toHaveLength(1), { timeout: 3_000 });
    expect(events.lost[0]?.[1]).toBe('deadline');
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('a lapsed session aborts its tasks before the server could give them away, and sends nothing for them', async () => {
    // Heartbeats hang (packets dropped): the session's own reckoning runs out after the TTL less the margin.
    const { server, worker, events } = setup(
      async (_task, { signal }) => aborted(signal).then(() => 'late'),
      {
        leaseMarginMs: 200,
      },
    );
    server.leaseTtlSeconds = 1;
    server.heartbeatIntervalSeconds = 0.2;
    server.hanging.add('/heartbeat');
    server.add('x');
    const opened = Date.now();
    await worker.start();
    await vi.waitFor(() => expect(events.lost).toHaveLength(1), { timeout: 3_000 });
    expect(events.lost[0]?.[1]).toBe('expired');
    expect(Date.now() - opened).toBeLessThan(1_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.callsTo('/complete')).toEqual([]);
  });

  it('sends a result whose calls keep failing until its lease runs out by its own reckoning, then reports it lost', async () => {
    // Prepare: every completion is answered 503; the lease lasts 600 ms.
    const { server, worker, events } = setup(async () => 'done', { leaseMarginMs: 100 });
    const unavailable = {
      status: 503,
      body: { error: { code: 'ServiceUnavailable', message: 'try again' } },
    };
    server.scripted.set(
      '/complete',
      Array.from({ length: 1_000 }, () => unavailable),
    );
    const taskId = server.add('x', { leaseMs: 600 });

    // Act
    await worker.start();
    await vi.waitFor(() => expect(events.lost).toEqual([[taskId, 'deadline']]), { timeout: 3_000 });
    const sent = server.callsTo('/complete').length;
    await new Promise((resolve) => setTimeout(resolve, 300));

    // Assess: sent more than once, nothing after the lease was over by the agent's clock, every failure names it.
    expect(sent).toBeGreaterThan(1);
    expect(server.callsTo('/complete').length).toBe(sent);
    const claimedAt = server.callsTo('/claim')[0]?.at ?? 0;
    expect(server.callsTo('/complete').every((call) => call.at < claimedAt + 600)).toBe(true);
    expect(events.errors.length).toBeGreaterThan(0);
    for (const error of events.errors) expect(error).toMatchObject({ name: 'TaskError', taskId });
    expect(events.completed).toEqual([]);
  });

  it('reports a LeaseLost from complete as `lost`, not as an error', async () => {
    const gate = deferred();
    const { server, worker, events } = setup(async () => {
      await gate.promise;
      return 'late';
    });
    const taskId = server.add('x');
    await worker.start();
    await vi.waitFor(() => expect(events.picked).toEqual([taskId]));
    server.steal(taskId);
    gate.resolve();
    await vi.waitFor(() => expect(events.lost).toEqual([[taskId, 'lost']]));
    expect(events.errors).toEqual([]);
    expect(events.completed).toEqual([]);
  });

  it('sends each checkpoint once, with the heartbeat after it changed', async () => {
    const gate = deferred();
    const { server, worker, events } = setup(async (_task, context) => {
      context.checkpoint({ page: 1 });
      await context.heartbeatNow();
      await context.heartbeatNow();
      context.checkpoint({ page: 2 });
      await context.heartbeatNow();
      await gate.promise;
    });
    const taskId = server.add('x');
    await worker.start();
    await vi.waitFor(() => expect(server.callsTo('/heartbeat')).toHaveLength(3));
    expect(server.callsTo('/heartbeat').map((call) => call.body.checkpoints)).toEqual([
      [{ taskId, leaseEpoch: 1, checkpoint: { page: 1 } }],
      undefined,
      [{ taskId, leaseEpoch: 1, checkpoint: { page: 2 } }],
    ]);
    expect(server.task(taskId).checkpoint).toEqual({ page: 2 });
    gate.resolve();
    await vi.waitFor(() => expect(events.completed).toHaveLength(1));
  });

  it('keeps going after a transient error, and reports it', async () => {
    const { server, worker, events } = setup(async () => 'ok');
    server.scripted.set('/claim', [
      { status: 503, body: { error: { code: 'ServiceUnavailable', message: '' } } },
    ]);
    const taskId = server.add('x');
    await worker.start();
    await vi.waitFor(() => expect(events.completed).toEqual([[taskId, 'ok']]));
    expect(events.errors).toHaveLength(1);
    expect(events.errors[0]).toMatchObject({ status: 503 });
  });

  it('release() aborts the handler and gives the task back', async () => {
    const { server, worker, events } = setup(async (_task, { signal }) => aborted(signal));
    const taskId = server.add('x');
    await worker.start();
    await vi.waitFor(() => expect(events.picked).toEqual([taskId]));
    await worker.release(taskId);
    expect(events.released).toEqual([taskId]);
    expect(server.callsTo('/release')[0]?.body).toEqual({ leaseEpoch: 1 });
    await expect(worker.release('t_unknown')).rejects.toThrow(/not running/);
  });

  it('stop({ drain: true }) lets running tasks finish first', async () => {
    const gate = deferred();
    const { server, worker, events } = setup(async () => {
      await gate.promise;
      return 'finished';
    });
    const taskId = server.add('x');
    await worker.start();
    await vi.waitFor(() => expect(events.picked).toEqual([taskId]));
    let stopped = false;
    const stopping = worker.stop({ drain: true }).then(() => {
      stopped = true;
    });
    const claims = server.callsTo('/claim').length;
    server.add('not for now');
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(stopped).toBe(false);
    gate.resolve();
    await stopping;
    expect(events.completed).toEqual([[taskId, 'finished']]);
    expect(server.callsTo('/claim')).toHaveLength(claims);
    expect(server.callsTo('/release')).toEqual([]);
  });

  it('stop({ drain: false }) aborts running tasks and releases them', async () => {
    const signals: AbortSignal[] = [];
    const { server, worker, events } = setup(
      async (_task, { signal }) => {
        signals.push(signal);
        await aborted(signal);
        return 'ignored';
      },
      { concurrency: 2 },
    );
    const ids = [server.add('a'), server.add('b')];
    await worker.start();
    await vi.waitFor(() => expect(events.picked).toHaveLength(2));
    await worker.stop({ drain: false });
    expect(signals.every((signal) => signal.aborted)).toBe(true);
    expect(events.released.sort()).toEqual(ids);
    expect(server.callsTo('/complete')).toEqual([]);
    for (const taskId of ids) expect(server.task(taskId).status).toBe('queued');
  });

  it('a release that cannot be sent is reported as an error naming its task', async () => {
    const { server, worker, events } = setup(async (_task, { signal }) => aborted(signal));
    server.scripted.set('/release', [
      { status: 503, body: { error: { code: 'ServiceUnavailable', message: 'no' } } },
    ]);
    const taskId = server.add('a');
    await worker.start();
    await vi.waitFor(() => expect(events.picked).toHaveLength(1));
    await worker.stop({ drain: false });
    expect(events.errors).toEqual([expect.objectContaining({ name: 'TaskError', taskId })]);
  });

  it('releases what is still running when a drain times out', async () => {
    const { server, worker, events } = setup(async (_task, { signal }) => aborted(signal));
    const taskId = server.add('x');
    await worker.start();
    await vi.waitFor(() => expect(events.picked).toEqual([taskId]));
    await worker.stop({ drain: true, timeoutMs: 20 });
    expect(events.released).toEqual([taskId]);
  });

  it('fails the task for good when the server refuses its result', async () => {
    const { server, worker, events } = setup(async (task) => (task.payload === 'big' ? 'x' : 10n));
    server.scripted.set('/complete', [
      { status: 413, body: { error: { code: 'PayloadTooLarge', message: 'result is too large' } } },
    ]);
    const big = server.add('big');
    const bigint = server.add('bigint');
    await worker.start();
    await vi.waitFor(() => expect(events.failed).toHaveLength(2));
    expect(server.task(big).status).toBe('dead');
    expect(server.task(bigint).status).toBe('dead');
    expect(server.callsTo(`${bigint}/complete`)).toEqual([]);
    expect(events.errors).toEqual([]);
  });

  it('stops gracefully on SIGTERM and removes its signal handlers', async () => {
    const { server, worker, events } = setup(async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return 'ok';
    });
    const before = process.listenerCount('SIGTERM');
    worker.installSignalHandlers();
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    const taskId = server.add('x');
    await worker.start();
    await vi.waitFor(() => expect(events.picked).toEqual([taskId]));
    process.emit('SIGTERM', 'SIGTERM');
    await vi.waitFor(() => expect(process.listenerCount('SIGTERM')).toBe(before));
    expect(events.completed).toEqual([[taskId, 'ok']]);
  });

  it('stops, instead of opening session after session, once its agent was revoked', async () => {
    const { server, worker, events } = setup(async () => 'ok');
    await worker.start();
    // The session was ended by the revocation; opening another is refused for good.
    server.expireSession();
    server.scripted.set('/session', [
      { status: 403, body: { error: { code: 'AgentRevoked', message: 'this agent was revoked' } } },
    ]);
    await vi.waitFor(() => expect(worker.stopped).toBe(true));
    const opens = server.callsTo('/session').length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.callsTo('/session')).toHaveLength(opens);
    expect(events.errors).toContainEqual(expect.objectContaining({ code: 'AgentRevoked' }));
  });

  it('fails to start when no session can be opened', async () => {
    const { server, worker } = setup(async () => 'ok');
    server.scripted.set('/session', [
      { status: 404, body: { error: { code: 'AgentNotFound', message: 'gone' } } },
    ]);
    await expect(worker.start()).rejects.toMatchObject({ status: 404, code: 'AgentNotFound' });
    await expect(worker.start()).rejects.toThrow(/started once/);
  });
});

describe('PollBackoff', () => {
  it('doubles from min to max and resets', () => {
    const backoff = new PollBackoff({ min: 100, max: 500 });
    expect([backoff.next(), backoff.next(), backoff.next(), backoff.next()]).toEqual([100, 200, 400, 500]);
    backoff.reset();
    expect(backoff.next()).toBe(100);
    expect(() => new PollBackoff({ min: 10, max: 5 })).toThrow(RangeError);
  });
});

describe('describeFailure', () => {
  it('always gives a message within the limit', () => {
    expect(describeFailure(new Error(''))).toEqual({ message: 'Error', retryable: true });
    expect(describeFailure('plain')).toEqual({ message: 'plain', retryable: true });
    expect(describeFailure(new Error('x'.repeat(5_000))).message).toHaveLength(2_048);
  });
});
