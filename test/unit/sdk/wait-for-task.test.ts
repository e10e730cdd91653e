/**
 * `waitForTask` and `submitAndWait` against a fake operator API and fake sockets: on the push channel nothing is
 * read while waiting; without it (or while it is down) the task is read with backoff; one connection serves every
 * wait of a client and closes with the last.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AgentSchedulerClient, type AgentSchedulerClientOptions } from '#sdk/client';
import { isAgentSchedulerError } from '#sdk/errors';
import { TaskWaitTimeoutError } from '#sdk/task-waiter';
import type { Task, TaskStatus } from '#sdk/types';
import { type FakeSocket, fakeSockets, pushFrame } from './fake-socket';

const taskId = (n: number) => `t_${String(n).padStart(26, 'a')}`;

const record = (id: string, status: TaskStatus, extra: Partial<Task> = {}): Task => ({
  taskId: id,
  queue: 'q',
  priority: 'normal',
  status,
  attempt: 1,
  maxAttempts: 3,
  timeoutSeconds: 900,
  maxSnoozes: 100,
  leaseEpoch: 1,
  payloadBytes: 2,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  ...extra,
});

/** The operator routes a wait uses: tasks by id, submit, push tickets; every call recorded. */
function operatorApi() {
  const tasks = new Map<string, Task>();
  const calls: { method: string; path: string; at: number }[] = [];
  let submitted = 0;
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = input instanceof Request ? input : new Request(input, init);
    const path = new URL(request.url).pathname;
    calls.push({ method: request.method, path, at: Date.now() });
    const json = (status: number, body: unknown) =>
      new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
    if (request.method === 'POST' && path === '/v1/push-ticket')
      return json(201, { ticket: 'pt_x', url: `ws://fake/v1/push?ticket=pt_${calls.length}`, expiresAt: '' });
    if (request.method === 'POST' && path === '/v1/tasks') {
      const task = record(taskId(900 + ++submitted), 'queued');
      tasks.set(task.taskId, task);
      return json(201, { task });
    }
    const id = /^\/v1\/tasks\/([^/]+)$/.exec(path)?.[1];
    if (request.method === 'GET' && id) {
      const task = tasks.get(id);
      return task
        ? json(200, { task })
        : json(404, { error: { code: 'TaskNotFound', message: `no task ${id}` } });
    }
    return json(404, { error: { code: 'RouteNotFound', message: path } });
  };
  const reads = (id?: string) =>
    calls.filter((c) => c.method === 'GET' && (id === undefined || c.path === `/v1/tasks/${id}`));
  return { tasks, calls, fetch, reads };
}

function setup(options: Partial<AgentSchedulerClientOptions> = {}) {
  const api = operatorApi();
  const sockets = fakeSockets();
  const client = new AgentSchedulerClient({
    endpoint: 'http://fake',
    token: 'op_x',
    fetch: api.fetch,
    retries: { maxAttempts: 1 },
    push: { WebSocket: sockets.WebSocket, reconnectDelayMs: { min: 20, max: 40 } },
    ...options,
  });
  return { api, sockets, client };
}

/** The subscribe frames a socket sent. */
const subscribes = (socket: FakeSocket) =>
  socket.frames().filter((f) => f.type === 'subscribe') as { id: string; taskIds: string[] }[];

afterEach(() => {
  vi.useRealTimers();
});

describe('waitForTask', () => {
  it('on the push channel: subscribes, reads nothing while waiting, resolves on the pushed end', async () => {
    const { api, sockets, client } = setup();
    const id = taskId(1);
    api.tasks.set(id, record(id, 'leased'));
    const waiting = client.waitForTask(id, { timeoutMs: 10_000 });
    await vi.waitFor(() => expect(subscribes(sockets.last())).toHaveLength(1));
    const socket = sockets.last();
    const [subscribe] = subscribes(socket);
    expect(subscribe).toEqual({ type: 'subscribe', version: 1, id: subscribe?.id, taskIds: [id] });
    socket.receive(
      pushFrame({ type: 'subscribed', id: subscribe?.id, tasks: [{ taskId: id, status: 'leased' }] }),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(api.reads()).toEqual([]);

    api.tasks.set(id, record(id, 'succeeded', { result: { answer: 42 } }));
    socket.receive(pushFrame({ type: 'task', taskId: id, status: 'succeeded', result: { answer: 42 } }));
    await expect(waiting).resolves.toMatchObject({ taskId: id, status: 'succeeded', result: { answer: 42 } });
    // Read once, after the push, for the whole record; and the socket closed with the last wait.
    expect(api.reads(id)).toHaveLength(1);
    expect(socket.closedByClient).toBe(true);
  });

  it('a task that ended before the subscription is read at once from the `subscribed` answer', async () => {
    const { api, sockets, client } = setup();
    const id = taskId(2);
    api.tasks.set(id, record(id, 'dead', { error: { message: 'boom' } as Task['error'] }));
    const waiting = client.waitForTask(id);
    await vi.waitFor(() => expect(subscribes(sockets.last())).toHaveLength(1));
    const [subscribe] = subscribes(sockets.last());
    sockets
      .last()
      .receive(pushFrame({ type: 'subscribed', id: subscribe?.id, tasks: [{ taskId: id, status: 'dead' }] }));
    await expect(waiting).resolves.toMatchObject({ status: 'dead' });
  });

  it('a task that does not exist rejects with the server’s error', async () => {
    const { sockets, client } = setup();
    const id = taskId(3);
    const waiting = client.waitForTask(id);
    await vi.waitFor(() => expect(subscribes(sockets.last())).toHaveLength(1));
    const [subscribe] = subscribes(sockets.last());
    sockets
      .last()
      .receive(pushFrame({ type: 'subscribed', id: subscribe?.id, tasks: [{ taskId: id, status: null }] }));
    const error = await waiting.catch((e: unknown) => e);
    expect(isAgentSchedulerError(error, 'TaskNotFound')).toBe(true);
  });

  it('one connection serves every wait, subscribing in frames of at most 25, and closes with the last wait', async () => {
    const { api, sockets, client } = setup();
    const ids = Array.from({ length: 30 }, (_, i) => taskId(100 + i));
    for (const id of ids) api.tasks.set(id, record(id, 'queued'));
    const waits = ids.map((id) => client.waitForTask(id));
    await vi.waitFor(() => expect(subscribes(sockets.last())).toHaveLength(2));
    expect(sockets.all).toHaveLength(1);
    const socket = sockets.last();
    const frames = subscribes(socket);
    expect(frames.map((f) => f.taskIds.length)).toEqual([25, 5]);
    expect(frames.flatMap((f) => f.taskIds)).toEqual(ids);
    for (const frame of frames)
      socket.receive(
        pushFrame({
          type: 'subscribed',
          id: frame.id,
          tasks: frame.taskIds.map((t) => ({ taskId: t, status: 'queued' })),
        }),
      );
    for (const id of ids.slice(0, 29)) {
      api.tasks.set(id, record(id, 'cancelled'));
      socket.receive(pushFrame({ type: 'task', taskId: id, status: 'cancelled' }));
    }
    await Promise.all(waits.slice(0, 29));
    expect(socket.closedByClient).toBe(false);
    const last = ids[29] ?? '';
    api.tasks.set(last, record(last, 'succeeded'));
    socket.receive(pushFrame({ type: 'task', taskId: last, status: 'succeeded' }));
    await waits[29];
    await vi.waitFor(() => expect(socket.closedByClient).toBe(true));
  });

  it('while the socket is down it reads with backoff (250 ms doubling to 5 s), and subscribes again once back', async () => {
    vi.useFakeTimers();
    const { api, sockets, client } = setup();
    const id = taskId(4);
    api.tasks.set(id, record(id, 'leased'));
    const waiting = client.waitForTask(id, { timeoutMs: 60_000 });
    await vi.advanceTimersByTimeAsync(0);
    const first = sockets.last();
    expect(subscribes(first)).toHaveLength(1);
    first.receive(
      pushFrame({
        type: 'subscribed',
        id: subscribes(first)[0]?.id,
        tasks: [{ taskId: id, status: 'leased' }],
      }),
    );

    // Dropped, and the reconnects fail for a while.
    sockets.autoRefuse = true;
    const droppedAt = Date.now();
    first.drop();
    await vi.advanceTimersByTimeAsync(20_000);
    const readsAt = api.reads(id).map((c) => c.at - droppedAt);
    expect(readsAt.slice(0, 6)).toEqual([250, 750, 1750, 3750, 7750, 12750]);
    expect(readsAt[6]).toBe(17750);

    // Back: subscribed again on the new socket, no more reads.
    sockets.autoRefuse = false;
    await vi.waitUntil(
      async () => {
        await vi.advanceTimersByTimeAsync(10);
        return sockets.last().readyState === 1;
      },
      { interval: 0 },
    );
    const again = sockets.last();
    expect(subscribes(again)).toHaveLength(1);
    again.receive(
      pushFrame({
        type: 'subscribed',
        id: subscribes(again)[0]?.id,
        tasks: [{ taskId: id, status: 'leased' }],
      }),
    );
    const reads = api.reads(id).length;
    await vi.advanceTimersByTimeAsync(20_000);
    expect(api.reads(id)).toHaveLength(reads);

    api.tasks.set(id, record(id, 'succeeded'));
    again.receive(pushFrame({ type: 'task', taskId: id, status: 'succeeded' }));
    await vi.advanceTimersByTimeAsync(0);
    await expect(waiting).resolves.toMatchObject({ status: 'succeeded' });
  });

  it('a task that ends while the socket is down is found by a read', async () => {
    const { api, sockets, client } = setup();
    const id = taskId(5);
    api.tasks.set(id, record(id, 'leased'));
    const waiting = client.waitForTask(id);
    await vi.waitFor(() => expect(subscribes(sockets.last())).toHaveLength(1));
    sockets.autoOpen = false;
    sockets.last().drop();
    api.tasks.set(id, record(id, 'succeeded'));
    await expect(waiting).resolves.toMatchObject({ status: 'succeeded' });
    expect(api.reads(id)).toHaveLength(1);
  });

  it('without push, reads at once and then with backoff', async () => {
    vi.useFakeTimers();
    const { api, client } = setup({ push: false });
    const id = taskId(6);
    api.tasks.set(id, record(id, 'queued'));
    const startedAt = Date.now();
    const waiting = client.waitForTask(id);
    await vi.advanceTimersByTimeAsync(2_000);
    api.tasks.set(id, record(id, 'succeeded'));
    await vi.advanceTimersByTimeAsync(2_000);
    await expect(waiting).resolves.toMatchObject({ status: 'succeeded' });
    expect(api.reads(id).map((c) => c.at - startedAt)).toEqual([0, 250, 750, 1750, 3750]);
    expect(api.calls.filter((c) => c.path === '/v1/push-ticket')).toEqual([]);
  });

  it('without a push channel on the deployment, reads the task', async () => {
    const api = operatorApi();
    const fetch = api.fetch;
    let tickets = 0;
    const noPush: typeof globalThis.fetch = async (input, init) => {
      if (!String(input instanceof Request ? input.url : input).endsWith('/v1/push-ticket'))
        return fetch(input, init);
      tickets++;
      return new Response(JSON.stringify({ error: { code: 'PushUnavailable', message: 'poll' } }), {
        status: 404,
      });
    };
    const polling = new AgentSchedulerClient({ endpoint: 'http://fake', token: 'op_x', fetch: noPush });
    const id = taskId(7);
    api.tasks.set(id, record(id, 'succeeded'));
    await expect(polling.waitForTask(id)).resolves.toMatchObject({ status: 'succeeded' });
    // Asked once: later waits of the client read without asking again.
    await expect(polling.waitForTask(id)).resolves.toMatchObject({ status: 'succeeded' });
    expect(tickets).toBe(1);
    expect(api.reads(id)).toHaveLength(2);
  });

  it('reads while a subscription goes unanswered, and stops once the answer comes', async () => {
    vi.useFakeTimers();
    const { api, sockets, client } = setup();
    const id = taskId(10);
    api.tasks.set(id, record(id, 'leased'));
    const waiting = client.waitForTask(id);
    await vi.advanceTimersByTimeAsync(0);
    const socket = sockets.last();
    expect(subscribes(socket)).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(5_000 + 1_000);
    // Unanswered for 5 s: read at once, then after 250 and 500 ms.
    expect(api.reads(id)).toHaveLength(3);
    socket.receive(
      pushFrame({
        type: 'subscribed',
        id: subscribes(socket)[0]?.id,
        tasks: [{ taskId: id, status: 'leased' }],
      }),
    );
    await vi.advanceTimersByTimeAsync(30_000);
    expect(api.reads(id)).toHaveLength(3);
    api.tasks.set(id, record(id, 'succeeded'));
    socket.receive(pushFrame({ type: 'task', taskId: id, status: 'succeeded' }));
    await vi.advanceTimersByTimeAsync(0);
    await expect(waiting).resolves.toMatchObject({ status: 'succeeded' });
  });

  it('a subscription the server refuses falls back to reading the task', async () => {
    const { api, sockets, client } = setup();
    const id = taskId(11);
    api.tasks.set(id, record(id, 'succeeded'));
    const waiting = client.waitForTask(id);
    await vi.waitFor(() => expect(subscribes(sockets.last())).toHaveLength(1));
    const [subscribe] = subscribes(sockets.last());
    sockets.last().receive(pushFrame({ type: 'error', code: 'BadFrame', message: 'no', id: subscribe?.id }));
    await expect(waiting).resolves.toMatchObject({ status: 'succeeded' });
  });

  it('rejects with a clear timeout error naming the task and its last status', async () => {
    const { api, sockets, client } = setup();
    const id = taskId(8);
    api.tasks.set(id, record(id, 'leased'));
    const waiting = client.waitForTask(id, { timeoutMs: 200 }).catch((e: unknown) => e);
    await vi.waitFor(() => expect(subscribes(sockets.last())).toHaveLength(1));
    const [subscribe] = subscribes(sockets.last());
    sockets
      .last()
      .receive(
        pushFrame({ type: 'subscribed', id: subscribe?.id, tasks: [{ taskId: id, status: 'leased' }] }),
      );
    const error = await waiting;
    expect(error).toBeInstanceOf(TaskWaitTimeoutError);
    expect(error).toMatchObject({ code: 'WaitTimeout', taskId: id, lastStatus: 'leased' });
    expect((error as Error).message).toBe(`task ${id} did not end within 200 ms (it was leased)`);
    await vi.waitFor(() => expect(sockets.last().closedByClient).toBe(true));
  });

  it('is abandoned by its signal', async () => {
    const { api, client } = setup({ push: false });
    const id = taskId(9);
    api.tasks.set(id, record(id, 'queued'));
    const controller = new AbortController();
    const waiting = client.waitForTask(id, { signal: controller.signal }).catch((e: unknown) => e);
    controller.abort();
    expect(isAgentSchedulerError(await waiting, 'Aborted')).toBe(true);
  });

  it('submitAndWait submits, then waits', async () => {
    const { api, sockets, client } = setup();
    const waiting = client.submitAndWait({ queue: 'q', payload: {} }, { timeoutMs: 5_000 });
    await vi.waitFor(() => expect(subscribes(sockets.all.at(-1) as FakeSocket)).toHaveLength(1));
    const socket = sockets.last();
    const [subscribe] = subscribes(socket);
    const id = subscribe?.taskIds[0] ?? '';
    expect(api.tasks.has(id)).toBe(true);
    socket.receive(
      pushFrame({ type: 'subscribed', id: subscribe?.id, tasks: [{ taskId: id, status: 'queued' }] }),
    );
    api.tasks.set(id, record(id, 'succeeded', { result: 'done' }));
    socket.receive(pushFrame({ type: 'task', taskId: id, status: 'succeeded', result: 'done' }));
    await expect(waiting).resolves.toMatchObject({ taskId: id, status: 'succeeded', result: 'done' });
  });
});

describe('pushTicket', () => {
  it('asks the agent route with an agent token and the operator route otherwise, unless told', async () => {
    const paths: string[] = [];
    const fetch: typeof globalThis.fetch = async (input) => {
      paths.push(new URL(input instanceof Request ? input.url : String(input)).pathname);
      return new Response(JSON.stringify({ ticket: 'pt_x', url: 'ws://x', expiresAt: '' }), { status: 201 });
    };
    const agentToken = `a_${'b'.repeat(26)}.${'C'.repeat(43)}`;
    await new AgentSchedulerClient({ endpoint: 'http://fake', token: agentToken, fetch }).pushTicket();
    await new AgentSchedulerClient({ endpoint: 'http://fake', token: 'op_x', fetch }).pushTicket();
    await new AgentSchedulerClient({ endpoint: 'http://fake', fetch }).pushTicket();
    await new AgentSchedulerClient({ endpoint: 'http://fake', token: 'op_x', fetch }).pushTicket('agent');
    await new AgentSchedulerClient({ endpoint: 'http://fake', token: agentToken, fetch }).pushTicket(
      'operator',
    );
    expect(paths).toEqual([
      '/v1/agent/push-ticket',
      '/v1/push-ticket',
      '/v1/push-ticket',
      '/v1/agent/push-ticket',
      '/v1/push-ticket',
    ]);
  });
});
