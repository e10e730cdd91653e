/**
 * The push channel end to end: the SDK's Worker and client on real `ws` sockets to the local server on the
 * emulators. An idle worker is woken instead of polling; a wait for a task hears its end instead of reading it; a
 * socket dropped every two seconds costs nothing but a little latency (the SDK polls until it is back); a role
 * grant reaches its new holder on its socket, not at its next heartbeat.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { LocalPushSender } from '#local/push-server';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import type { WebSocketConstructor } from '#sdk/push-channel';
import type { Task } from '#sdk/types';
import { Worker } from '#sdk/worker';
import { createTestStack, serveStack, type TestStack, waitFor } from '#test/stack';
import { main } from '../../cli/main';

const OPERATOR = 'op_e2e-push-operator';
const SAFETY_POLL_MS = 60_000;
const HEARTBEAT_MS = 10_000;

/** A frame a counted socket received, and when. */
interface Heard {
  readonly type: string;
  readonly taskId?: string;
  readonly role?: string;
  readonly at: number;
}
const heard: Heard[] = [];

/**
 * `ws`'s client, counted: how many sockets the SDK opened and every frame they heard; with `own`, one client's
 * sockets are kept there too.
 */
let socketsOpened = 0;
function countedWebSocket(own?: Set<WebSocket>): WebSocketConstructor {
  // The SDK's structural type accepts `ws`'s class as it is.
  return class CountedWebSocket extends WebSocket {
    constructor(url: string) {
      super(url);
      socketsOpened++;
      own?.add(this);
      this.on('message', (data) => {
        heard.push({ ...(JSON.parse(String(data)) as { type: string }), at: performance.now() });
      });
    }
  };
}
const Injected = countedWebSocket();

interface Call {
  readonly method: string;
  readonly path: string;
  readonly at: number;
  readonly body?: Record<string, unknown>;
}

/** A fetch that records every request's method, path, send time and JSON body. */
function recordingFetch(calls: Call[]): typeof fetch {
  return async (input, init) => {
    const request = input instanceof Request ? input : new Request(input, init);
    const text = request.body ? await request.clone().text() : '';
    calls.push({
      method: request.method,
      path: new URL(request.url).pathname,
      at: performance.now(),
      ...(text ? { body: JSON.parse(text) as Record<string, unknown> } : {}),
    });
    return fetch(request);
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('push channel through the SDK', () => {
  const sender = new LocalPushSender();
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;
  const workers: Worker[] = [];
  const figures: Record<string, unknown> = {};

  beforeAll(async () => {
    let serverUrl = '';
    stack = await createTestStack({
      queues: ['wake', 'watch', 'stream', 'parked', 'idle', 'cli', 'cancel', 'progress', 'busy', 'follow'],
      push: { sender, url: () => `${serverUrl.replace(/^http/, 'ws')}/v1/push` },
      settings: {
        pushSafetyPollMs: SAFETY_POLL_MS,
        leaseTtlSeconds: 30,
        heartbeatIntervalSeconds: HEARTBEAT_MS / 1_000,
      },
    });
    server = await serveStack(stack, OPERATOR, { push: sender });
    serverUrl = server.url;
    operator = new AgentSchedulerClient({
      endpoint: server.url,
      token: OPERATOR,
      push: { WebSocket: Injected },
    });
  });
  afterAll(async () => {
    await Promise.allSettled(workers.map((worker) => worker.stop({ drain: false })));
    sender.dropAll();
    await server?.close();
    await stack?.destroy();
    console.info('push e2e figures', JSON.stringify(figures));
  });

  async function agent(queues: string[], calls?: Call[], maxConcurrency = 4) {
    const { token, agent: created } = await operator.createAgent({
      name: 'e2e-push',
      queues,
      maxConcurrency,
    });
    const client = new AgentSchedulerClient({
      endpoint: server.url,
      token,
      ...(calls ? { fetch: recordingFetch(calls) } : {}),
    });
    return { client, agentId: created.agentId };
  }

  it('an idle worker is woken for a new task at once, though its safety poll is a minute', async () => {
    const calls: Call[] = [];
    const { client } = await agent(['wake'], calls);
    const picked: { taskId: string; at: number }[] = [];
    // No WebSocket given: on Node.js 20 the SDK finds the optional peer `ws` itself.
    const worker = new Worker({ client, handler: async () => 'ok' });
    workers.push(worker);
    worker.on('picked', (task) => picked.push({ taskId: task.taskId, at: performance.now() }));
    await worker.start();
    const claims = () => calls.filter((c) => c.path === '/v1/agent/claim');
    await waitFor(() => claims().some((c) => c.body?.listening === true), 10_000);
    // The listening claim was answered: the worker is idle, for up to its safety poll.
    await sleep(300);
    const claimsWhileIdle = claims().length;

    const submittedAt = performance.now();
    const { task } = await operator.submitTask({ queue: 'wake', payload: {} });
    const submitAnsweredAt = performance.now();
    // Not woken, the worker would claim again only at its safety poll, a minute on: a twelfth of that leaves a
    // loaded machine room for the wake's round trips and still tells a wake from a poll (quiet: ~250 ms).
    await waitFor(() => picked.some((p) => p.taskId === task.taskId), SAFETY_POLL_MS / 12);

    const pickedAt = picked[0]?.at ?? Number.POSITIVE_INFINITY;
    figures.submitSentToPickedMs = Math.round(pickedAt - submittedAt);
    figures.submitAnsweredToPickedMs = Math.round(pickedAt - submitAnsweredAt);
    // One claim after the wake took it (and maybe the next, listening again); none while idle.
    expect(claims().length - claimsWhileIdle).toBeLessThanOrEqual(2);
    expect(worker.listening).toBe(true);
  });

  it('a cancel aborts a listening worker’s handler on its socket: within 1 s of the cancel for each of 50 tasks, no heartbeat needed', async () => {
    const calls: Call[] = [];
    const { client } = await agent(['cancel'], calls, 10);
    const aborted = new Map<string, { at: number; reason: unknown }>();
    const picked: string[] = [];
    const worker = new Worker({
      client,
      concurrency: 10,
      push: { WebSocket: Injected },
      handler: (task, ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            aborted.set(task.taskId, {
              at: performance.now(),
              reason: (ctx.signal.reason as { reason?: unknown }).reason,
            });
            resolve('stopped');
          });
        }),
    });
    workers.push(worker);
    worker.on('picked', (task) => picked.push(task.taskId));
    await worker.start();
    await waitFor(() => worker.listening, 10_000);
    await Promise.all(
      Array.from({ length: 50 }, (_, i) => operator.submitTask({ queue: 'cancel', payload: { i } })),
    );

    const delays: number[] = [];
    for (let n = 0; n < 50; n++) {
      await waitFor(() => picked.length > n, 10_000);
      const taskId = picked[n] ?? '';
      const sentAt = performance.now();
      await operator.cancelTask(taskId);
      await waitFor(() => aborted.has(taskId), 5_000);
      delays.push((aborted.get(taskId)?.at ?? Number.POSITIVE_INFINITY) - sentAt);
    }
    await worker.stop();

    const sorted = [...delays].sort((a, b) => a - b);
    const p99 = sorted[Math.ceil(0.99 * sorted.length) - 1] ?? Number.POSITIVE_INFINITY;
    figures.cancelToAbortMs = {
      p50: Math.round(sorted[24] ?? 0),
      p99: Math.round(p99),
      max: Math.round(sorted.at(-1) ?? 0),
    };
    expect(p99).toBeLessThan(1_000);
    expect([...aborted.values()].every((a) => a.reason === 'cancelled')).toBe(true);
    // Heartbeats every 10 s: the run took less than that, or not many more; the aborts came on the socket.
    expect(calls.filter((c) => c.path === '/v1/agent/heartbeat').length).toBeLessThanOrEqual(3);
  });

  it('a watcher sees each coalesced progress report on the socket within a second of its write', async () => {
    const { client } = await agent(['progress']);
    const worker = new Worker({
      client,
      push: { WebSocket: Injected },
      handler: async (_, ctx) => {
        // Twenty reports 150 ms apart: the Worker sends at most one a second.
        for (let step = 1; step <= 20; step++) {
          ctx.progress({ percent: step * 5, message: `step ${step}`, data: { step } });
          await sleep(150);
        }
        await sleep(1_200);
        return 'done';
      },
    });
    workers.push(worker);
    await worker.start();
    const { task } = await operator.submitTask({ queue: 'progress', payload: {} });
    const seen: { percent: number | undefined; at: string; lateMs: number }[] = [];

    const ended = await operator.watchTask(task.taskId, {
      timeoutMs: 20_000,
      onProgress: (progress) =>
        seen.push({
          percent: progress.percent,
          at: progress.at,
          lateMs: Date.now() - Date.parse(progress.at),
        }),
    });
    await worker.stop();

    const late = seen.map((s) => s.lateMs).sort((a, b) => a - b);
    const p90 = late[Math.ceil(0.9 * late.length) - 1] ?? Number.POSITIVE_INFINITY;
    figures.progressSeenMs = { reports: seen.length, p50: late[Math.floor(late.length / 2)], p90 };
    expect(ended.status).toBe('succeeded');
    // Coalesced: about one a second over the handler's three seconds, not twenty; the last one among them.
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.length).toBeLessThanOrEqual(6);
    expect(seen.at(-1)?.percent).toBe(100);
    expect(seen.map((s) => s.at)).toEqual([...seen.map((s) => s.at)].sort());
    expect(p90).toBeLessThan(1_000);
    expect((await operator.getTask(task.taskId)).progress).toMatchObject({
      percent: 100,
      message: 'step 20',
    });
  });

  it('a Worker running 25 tasks that report progress often stays within its agent’s request rate', async () => {
    const calls: Call[] = [];
    const { client } = await agent(['busy'], calls, 25);
    const worker = new Worker({
      client,
      concurrency: 25,
      push: { WebSocket: Injected },
      handler: async (claimed, ctx) => {
        const { i } = claimed.payload as { i: number };
        for (let step = 1; step <= 30; step++) {
          ctx.progress({ percent: (step * 10) / 3, message: `task ${i} step ${step}` });
          await sleep(100);
        }
        return i;
      },
    });
    workers.push(worker);
    const ids = await Promise.all(
      Array.from(
        { length: 25 },
        async (_, i) => (await operator.submitTask({ queue: 'busy', payload: { i } })).task.taskId,
      ),
    );
    await worker.start();
    await Promise.all(ids.map((id) => operator.waitForTask(id, { timeoutMs: 30_000 })));
    await worker.stop();

    const reports = calls.filter((c) => c.path === '/v1/agent/tasks/progress');
    const first = Math.min(...calls.map((c) => c.at));
    const last = Math.max(...calls.map((c) => c.at));
    const seconds = (last - first) / 1_000;
    // Busiest second of all the agent's calls.
    const perSecond = new Map<number, number>();
    for (const call of calls) {
      const second = Math.floor((call.at - first) / 1_000);
      perSecond.set(second, (perSecond.get(second) ?? 0) + 1);
    }
    const busiest = Math.max(...perSecond.values());
    const reported = reports.reduce(
      (sum, c) => sum + ((c.body?.tasks as unknown[] | undefined)?.length ?? 0),
      0,
    );
    figures.busyProgress = {
      calls: reports.length,
      reports: reported,
      seconds: Math.round(seconds * 10) / 10,
      busiest,
    };
    // 750 reports made; at most one call a second went out, each task's latest report in it.
    expect(reported).toBeLessThanOrEqual(25 * Math.ceil(seconds + 1));
    expect(reports.length).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
    expect(busiest).toBeLessThan(50);
    for (const id of ids) expect((await operator.getTask(id)).progress?.message).toMatch(/step \d+$/);
  });

  it('waitForTask hears the end on the socket: no read while waiting, resolved soon after the completion', async () => {
    const { client } = await agent(['watch']);
    let finish = () => {};
    const finished = new Promise<void>((resolve) => {
      finish = resolve;
    });
    let handlerReturnedAt = 0;
    const worker = new Worker({
      client,
      push: { WebSocket: Injected },
      handler: async () => {
        await finished;
        handlerReturnedAt = performance.now();
        return { answer: 42 };
      },
    });
    workers.push(worker);
    let completedAt = 0;
    worker.on('completed', () => {
      completedAt = performance.now();
    });
    await worker.start();

    const calls: Call[] = [];
    const watcher = new AgentSchedulerClient({
      endpoint: server.url,
      token: OPERATOR,
      fetch: recordingFetch(calls),
      push: { WebSocket: Injected },
    });
    const { task } = await operator.submitTask({ queue: 'watch', payload: {} });
    let resolvedAt = 0;
    const waiting = watcher.waitForTask(task.taskId, { timeoutMs: 20_000 }).then((ended) => {
      resolvedAt = performance.now();
      return ended;
    });
    // Leased and subscribed: then let the handler finish.
    await waitFor(async () => (await operator.getTask(task.taskId)).status === 'leased', 10_000);
    await waitFor(() => calls.some((c) => c.path === '/v1/push-ticket'), 5_000);
    await sleep(500);
    finish();
    const ended: Task = await waiting;

    expect(ended).toMatchObject({ taskId: task.taskId, status: 'succeeded', result: { answer: 42 } });
    const reads = calls.filter((c) => c.method === 'GET' && c.path === `/v1/tasks/${task.taskId}`);
    expect(reads.filter((c) => c.at < handlerReturnedAt)).toEqual([]);
    // The end is pushed, then the task read once for its whole record.
    expect(reads).toHaveLength(1);
    const pushed = heard.find((f) => f.type === 'task' && f.taskId === task.taskId);
    expect(pushed).toBeDefined();
    expect(reads[0]?.at ?? 0).toBeGreaterThanOrEqual(pushed?.at ?? Number.POSITIVE_INFINITY);
    figures.completionToWaitResolvedMs = Math.round(resolvedAt - handlerReturnedAt);
    figures.completeAnsweredToWaitResolvedMs = Math.round(resolvedAt - completedAt);
  });

  it('with every socket dropped every two seconds, a stream of tasks all complete and every wait resolves', async () => {
    const before = socketsOpened;
    // The sockets of the two workers and of the waiter, each client's apart.
    const owners = [new Set<WebSocket>(), new Set<WebSocket>(), new Set<WebSocket>()];
    const [firstOwn, secondOwn, watcherOwn] = owners as [Set<WebSocket>, Set<WebSocket>, Set<WebSocket>];
    const everyClientOpen = () =>
      owners.every((own) => [...own].some((socket) => socket.readyState === WebSocket.OPEN));
    const fleet = await Promise.all([agent(['stream']), agent(['stream'])]);
    for (const [i, { client }] of fleet.entries()) {
      const worker = new Worker({
        client,
        concurrency: 2,
        push: { WebSocket: countedWebSocket(i === 0 ? firstOwn : secondOwn) },
        handler: async (task) => {
          // Long enough that waits span the drops.
          await sleep(700);
          return { n: (task.payload as { n: number }).n };
        },
      });
      workers.push(worker);
      await worker.start();
    }
    const calls: Call[] = [];
    const watcher = new AgentSchedulerClient({
      endpoint: server.url,
      token: OPERATOR,
      fetch: recordingFetch(calls),
      push: { WebSocket: countedWebSocket(watcherOwn) },
    });
    // A task nobody serves, waited for throughout: the waiter always has a wait, so it connects again after
    // every drop, whenever the stream's own waits happen to be over.
    const { task: parked } = await operator.submitTask({ queue: 'parked', payload: {} });
    const parkedWait = watcher.waitForTask(parked.taskId, { timeoutMs: 60_000 });
    // Awaited at the end; if the test fails first, its timeout is no unhandled rejection.
    parkedWait.catch(() => undefined);
    // A drop waits until every client has a socket open again (each connects again after a backoff of about half
    // a second), so each drop closes three sockets whatever the machine's speed.
    let drops = 0;
    const drop = async () => {
      await waitFor(everyClientOpen, 15_000);
      const open = owners.flatMap((own) => [...own].filter((socket) => socket.readyState === WebSocket.OPEN));
      drops++;
      sender.dropAll();
      await waitFor(() => open.every((socket) => socket.readyState === WebSocket.CLOSED), 15_000);
    };
    const started = performance.now();
    const waits: Promise<Task>[] = [];
    for (let n = 0; n < 24; n++) {
      // Every sixth task (about two seconds), and once more while the last ones run.
      if (n > 0 && n % 6 === 0) await drop();
      const { task } = await operator.submitTask({ queue: 'stream', payload: { n } });
      waits.push(watcher.waitForTask(task.taskId, { timeoutMs: 30_000 }));
      await sleep(300);
    }
    await drop();
    const ended = await Promise.all(waits);
    expect(ended.map((t) => t.status)).toEqual(ended.map(() => 'succeeded'));
    expect(ended.map((t) => (t.result as { n: number }).n)).toEqual(ended.map((_, n) => n));
    figures.streamSeconds = Math.round((performance.now() - started) / 100) / 10;
    figures.streamDrops = drops;

    // Each client had a socket open at every drop and connects again after the last: a socket each to begin
    // with, and one more per drop.
    await waitFor(everyClientOpen, 15_000);
    for (const own of owners) expect(own.size).toBeGreaterThanOrEqual(drops + 1);
    figures.streamSocketsOpened = socketsOpened - before;
    // The waiter's sockets each took a ticket of their own; its waits read while it was down, and subscribed
    // again once it was back.
    const tickets = () => calls.filter((c) => c.path === '/v1/push-ticket').length;
    expect(tickets()).toBeGreaterThanOrEqual(drops + 1);
    figures.streamTicketsForWaits = tickets();
    figures.streamReadsFor24Waits = calls.filter((c) => c.method === 'GET').length;
    await waitFor(() => workers.slice(-2).every((worker) => worker.listening), 5_000);

    await operator.cancelTask(parked.taskId);
    expect((await parkedWait).status).toBe('cancelled');
  });

  it('a role grant reaches the next holder’s worker on its socket, not at its next heartbeat', async () => {
    const holderCalls: Call[] = [];
    const { client: holderClient } = await agent(['idle'], holderCalls);
    const nextCalls: Call[] = [];
    const { client: nextClient } = await agent(['idle'], nextCalls);
    let giveUp = () => {};
    const givenUp = new Promise<void>((resolve) => {
      giveUp = resolve;
    });
    const holder = new Worker({
      client: holderClient,
      push: { WebSocket: Injected },
      roles: {
        leader: async () => {
          await givenUp;
        },
      },
    });
    const next = new Worker({
      client: nextClient,
      push: { WebSocket: Injected },
      roles: {
        leader: async ({ signal }) =>
          new Promise((resolve) => signal.addEventListener('abort', () => resolve())),
      },
    });
    workers.push(holder, next);
    let holderGot = false;
    let nextGotAt = 0;
    holder.on('gotRole', () => {
      holderGot = true;
    });
    next.on('gotRole', () => {
      nextGotAt = performance.now();
    });
    await holder.start();
    await waitFor(() => holderGot, 10_000);
    await next.start();
    await waitFor(() => next.listening, 10_000);
    // The next volunteer is in line (its volunteer call answered) before the holder lets go.
    await waitFor(async () => {
      const [role] = (await operator.listRoles()).filter((r) => r.role === 'leader');
      return (role?.volunteers.length ?? 0) >= 2;
    }, 10_000);

    giveUp();
    // Heard at the next heartbeat, it could take the whole interval: half of it tells the two apart with room for
    // a loaded machine (quiet: ~60 ms).
    await waitFor(() => nextGotAt > 0, HEARTBEAT_MS / 2);
    const release = holderCalls.find((c) => c.path === '/v1/agent/roles/leader/release');
    const latency = nextGotAt - (release?.at ?? Number.POSITIVE_INFINITY);
    figures.releaseToGrantHeardMs = Math.round(latency);
    // The grant's frame came on the socket, and the heartbeat that brought the grant was sent because of it.
    const frame = heard.find((f) => f.type === 'role' && f.role === 'leader' && f.at >= (release?.at ?? 0));
    expect(frame).toBeDefined();
    const frameAt = frame?.at ?? Number.POSITIVE_INFINITY;
    const beats = nextCalls.filter(
      (c) => c.path === '/v1/agent/heartbeat' && c.at >= frameAt && c.at <= nextGotAt,
    );
    expect(beats.length).toBeGreaterThanOrEqual(1);
  });

  it('submit --wait prints the task as it ended and exits 0', async () => {
    const { client } = await agent(['cli']);
    const worker = new Worker({
      client,
      push: { WebSocket: Injected },
      handler: async (task) => {
        await sleep(200);
        return { echoed: task.payload };
      },
    });
    workers.push(worker);
    await worker.start();
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(
      ['submit', '--queue', 'cli', '--payload', '{"n":7}', '--wait', '--wait-timeout', '20', '--json'],
      (line) => out.push(line),
      {
        writeErr: (line) => err.push(line),
        env: { AGENT_SCHEDULER_ENDPOINT: server.url, AGENT_SCHEDULER_TOKEN: OPERATOR },
      },
    );
    expect(err).toEqual([]);
    expect(code).toBe(0);
    expect(JSON.parse(out.join('\n'))).toMatchObject({ status: 'succeeded', result: { echoed: { n: 7 } } });
  });

  it('submit --wait and get --follow print the progress reports as they come, then the task', async () => {
    // A queue of its own: the worker of the test before serves `cli` still.
    const { client } = await agent(['follow']);
    const worker = new Worker({
      client,
      push: { WebSocket: Injected },
      handler: async (_, ctx) => {
        await sleep(500);
        for (const [percent, message] of [
          [30, 'reading'],
          [70, 'writing'],
        ] as const) {
          ctx.progress({ percent, message, data: { percent } });
          await sleep(1_200);
        }
        return 'written';
      },
    });
    workers.push(worker);
    await worker.start();
    const env = { AGENT_SCHEDULER_ENDPOINT: server.url, AGENT_SCHEDULER_TOKEN: OPERATOR };
    const submitted: string[] = [];
    const followed: string[] = [];
    const run = (args: string[], out: string[]) =>
      main(args, (line) => out.push(line), { writeErr: (line) => out.push(`! ${line}`), env });

    const submitting = run(
      ['submit', '--queue', 'follow', '--payload', '{}', '--wait', '--wait-timeout', '20'],
      submitted,
    );
    await waitFor(() => submitted.some((line) => line.startsWith('submitted ')), 10_000);
    const taskId = /(t_[a-z2-7]{26})/.exec(submitted.join('\n'))?.[1] ?? '';
    const [code, followCode] = await Promise.all([
      submitting,
      run(['get', taskId, '--follow', '--follow-timeout', '20'], followed),
    ]);

    expect(code).toBe(0);
    expect(followCode).toBe(0);
    for (const out of [submitted, followed]) {
      const text = out.join('\n');
      expect(text).toContain('progress  30%  reading  {"percent":30}');
      expect(text).toContain('progress  70%  writing  {"percent":70}');
      expect(text.indexOf('30%')).toBeLessThan(text.indexOf('70%'));
      expect(text).toMatch(/^status\s+succeeded$/m);
    }
  });
});
