/**
 * The Worker on the push channel, against the fake agent API and fake sockets: claims say `listening` only while
 * a socket is up, a wake ends the idle wait (even one that came while the claim was in flight), a role frame brings
 * the grant at once, and a socket that breaks leaves the worker polling until it is back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AgentSchedulerClient } from '#sdk/client';
import { Worker, type WorkerOptions } from '#sdk/worker';
import { deferred, FakeScheduler } from './fake-scheduler';
import { fakeSockets, pushFrame } from './fake-socket';

const SAFETY_POLL_MS = 60_000;
const workers: Worker[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ drain: false })));
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function setup(options: Partial<WorkerOptions> & { claimAnswer?: () => Promise<unknown> } = {}) {
  const server = new FakeScheduler();
  server.pushSafetyPollMs = SAFETY_POLL_MS;
  const sockets = fakeSockets();
  const { claimAnswer, ...workerOptions } = options;
  const client = new AgentSchedulerClient({
    endpoint: 'http://fake',
    token: 'tok',
    retries: { maxAttempts: 1 },
    fetch: async (input, init) => {
      const response = await server.fetch(input, init);
      // The claim was handled; its answer may be held on the way back.
      if (claimAnswer && String(input instanceof Request ? input.url : input).endsWith('/claim'))
        await claimAnswer();
      return response;
    },
  });
  const picked: { taskId: string; at: number }[] = [];
  const errors: unknown[] = [];
  const worker = new Worker({
    client,
    handler: async () => 'ok',
    pollIntervalMs: { min: 20, max: 40 },
    push: { WebSocket: sockets.WebSocket, reconnectDelayMs: { min: 20, max: 40 } },
    ...workerOptions,
  });
  workers.push(worker);
  worker.on('picked', (task) => picked.push({ taskId: task.taskId, at: Date.now() }));
  worker.on('error', (error) => errors.push(error));
  const claims = () => server.callsTo('/claim');
  /** Resolves once a listening claim was answered and the worker waits for its safety poll. */
  const idle = async () => {
    await expect.poll(() => claims().some((c) => c.body.listening === true)).toBe(true);
    await sleep(30);
  };
  return { server, sockets, worker, picked, errors, claims, idle };
}

describe('Worker on the push channel', () => {
  it('says `listening` only while its socket is up, and polls as before while it is not', async () => {
    const { sockets, worker, claims, errors } = setup();
    sockets.autoOpen = false;
    await worker.start();
    // No socket yet: claims at the poll interval, none listening.
    await expect.poll(() => claims().length).toBeGreaterThanOrEqual(3);
    expect(claims().every((c) => c.body.listening === undefined)).toBe(true);
    expect(worker.listening).toBe(false);

    sockets.last().open();
    await expect.poll(() => claims().some((c) => c.body.listening === true)).toBe(true);
    expect(worker.listening).toBe(true);
    // Idle until a wake or the safety poll: no more claims.
    const whileListening = claims().length;
    await sleep(200);
    expect(claims()).toHaveLength(whileListening);

    // The socket breaks: a claim at once, not listening, then polling again.
    sockets.autoOpen = false;
    sockets.last().drop();
    await expect.poll(() => claims().length).toBeGreaterThanOrEqual(whileListening + 3);
    expect(
      claims()
        .slice(whileListening)
        .every((c) => c.body.listening === undefined),
    ).toBe(true);

    // Back: it listens again, and is quiet.
    await expect.poll(() => sockets.all.length).toBe(2);
    sockets.last().open();
    await expect.poll(() => claims().at(-1)?.body.listening).toBe(true);
    const back = claims().length;
    await sleep(200);
    expect(claims()).toHaveLength(back);
    expect(errors).toEqual([]);
  });

  it('a wake ends the idle wait at once', async () => {
    const { server, sockets, worker, picked, idle } = setup();
    await worker.start();
    await idle();

    const taskId = server.add('work');
    const wokenAt = Date.now();
    sockets.last().receive(pushFrame({ type: 'wake', queue: 'q', reason: 'submitted' }));

    await expect.poll(() => picked.map((p) => p.taskId)).toEqual([taskId]);
    expect((picked[0]?.at ?? Number.POSITIVE_INFINITY) - wokenAt).toBeLessThan(100);
  });

  it('a wake for a queue it does not claim from leaves it waiting', async () => {
    const { sockets, worker, claims, idle } = setup({ queues: ['mine'] });
    await worker.start();
    await idle();
    const before = claims().length;

    sockets.last().receive(pushFrame({ type: 'wake', queue: 'theirs', reason: 'submitted' }));
    await sleep(150);
    expect(claims()).toHaveLength(before);

    sockets.last().receive(pushFrame({ type: 'wake', queue: 'mine', reason: 'submitted' }));
    await expect.poll(() => claims().length).toBe(before + 1);
    expect(claims().at(-1)?.body.queues).toEqual(['mine']);
  });

  it('a wake that arrives while a claim is in flight is not lost', async () => {
    let gate: ReturnType<typeof deferred<undefined>> | undefined;
    const { server, sockets, worker, picked, claims, idle } = setup({
      claimAnswer: async () => gate?.promise,
    });
    await worker.start();
    await idle();

    // A wake starts a claim that finds nothing; its answer (wait a minute) is held on the way back.
    gate = deferred<undefined>();
    const before = claims().length;
    sockets.last().receive(pushFrame({ type: 'wake', queue: 'q', reason: 'submitted' }));
    await expect.poll(() => claims().length).toBe(before + 1);
    // Meanwhile a task arrives, and its wake.
    const taskId = server.add('work');
    sockets.last().receive(pushFrame({ type: 'wake', queue: 'q', reason: 'submitted' }));
    const wokenAt = Date.now();
    const held = gate;
    gate = undefined;
    held.resolve(undefined);

    await expect.poll(() => picked.map((p) => p.taskId)).toEqual([taskId]);
    expect((picked[0]?.at ?? Number.POSITIVE_INFINITY) - wokenAt).toBeLessThan(100);
  });

  it('a role frame brings a heartbeat at once, and with it the grant', async () => {
    const { server, sockets, worker } = setup({
      handler: undefined,
      roles: {
        leader: async ({ signal }) =>
          new Promise((resolve) => signal.addEventListener('abort', () => resolve())),
      },
    });
    server.scripted.set('/roles/leader/volunteer', [{ status: 200, body: { picked: false } }]);
    const got: { leaseEpoch: number; at: number }[] = [];
    worker.on('gotRole', (lease) => got.push({ leaseEpoch: lease.leaseEpoch, at: Date.now() }));
    await worker.start();
    await expect.poll(() => worker.listening).toBe(true);
    await expect.poll(() => server.callsTo('/volunteer')).toHaveLength(1);
    expect(server.callsTo('/heartbeat')).toEqual([]);

    server.scripted.set('/heartbeat', [
      {
        status: 200,
        body: {
          cancelled: [],
          lost: [],
          roles: { picked: [{ role: 'leader', leaseEpoch: 7 }], lost: [] },
          held: [],
        },
      },
    ]);
    const pushedAt = Date.now();
    sockets.last().receive(pushFrame({ type: 'role', role: 'leader', event: 'granted', leaseEpoch: 7 }));

    await expect.poll(() => got.map((g) => g.leaseEpoch)).toEqual([7]);
    expect(server.callsTo('/heartbeat')).toHaveLength(1);
    // The heartbeat interval is a minute: this came from the push.
    expect((got[0]?.at ?? Number.POSITIVE_INFINITY) - pushedAt).toBeLessThan(100);
  });

  it('with `push: false` asks for no ticket and opens no socket', async () => {
    const { server, sockets, worker, claims } = setup({ push: false });
    await worker.start();
    await expect.poll(() => claims().length).toBeGreaterThanOrEqual(2);
    expect(server.callsTo('/push-ticket')).toEqual([]);
    expect(sockets.all).toEqual([]);
    expect(claims().every((c) => c.body.listening === undefined)).toBe(true);
  });

  it('on a deployment without a push channel asks once, reports nothing, and polls', async () => {
    const { server, sockets, worker, claims, errors } = setup();
    server.pushSafetyPollMs = undefined;
    await worker.start();
    await expect.poll(() => claims().length).toBeGreaterThanOrEqual(4);
    expect(server.callsTo('/push-ticket')).toHaveLength(1);
    expect(sockets.all).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('closes its socket when it stops', async () => {
    const { sockets, worker } = setup();
    await worker.start();
    await expect.poll(() => worker.listening).toBe(true);
    await worker.stop();
    expect(sockets.last().closedByClient).toBe(true);
    expect(worker.listening).toBe(false);
  });
});
