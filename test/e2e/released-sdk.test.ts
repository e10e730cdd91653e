/**
 * The SDK as it was released, against the server as it is now: a deployed fleet keeps running the SDK it was
 * built with while its stack is upgraded under it. The released SDK's sources are taken from the repository's
 * history at test time (`git archive`) and bundled with esbuild; no build output is kept in the repository. Its
 * Worker and client then drive the local server on the emulators through every call an agent makes: submit,
 * claim, checkpoint through a heartbeat, complete, fail and retry, fail for good, release, a role, and a session
 * opened twice, as a client whose first open's answer was lost opens it again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { LocalServer } from '#local/server';
import { loadReleasedSdk, RELEASED_SDK_COMMIT } from '#test/released-sdk';
import { createTestStack, serveStack, type TestStack, waitFor } from '#test/stack';

const OPERATOR = 'op_e2e-released-sdk';
const QUEUE = 'released';
/** The client test's own queue: no Worker of the other test takes its task. */
const BY_HAND = 'released-by-hand';
const ROLE = 'released-leader';

/**
 * What this test uses of the released SDK, as it was then (its own types are not this repository's any more once
 * the SDK changes).
 */
interface ReleasedTask {
  readonly taskId: string;
  readonly status: string;
  readonly attempt: number;
  readonly result?: unknown;
  readonly checkpoint?: unknown;
  readonly error?: { readonly message: string; readonly retryable: boolean };
}
interface ReleasedClaimedTask {
  readonly taskId: string;
  readonly payload: unknown;
  readonly attempt: number;
  readonly leaseEpoch: number;
  readonly checkpoint?: unknown;
}
interface ReleasedClient {
  createAgent(input: { name: string; queues: string[]; maxConcurrency?: number }): Promise<{
    token: string;
    agent: { agentId: string };
  }>;
  submitTask(input: Record<string, unknown>): Promise<{ task: ReleasedTask }>;
  getTask(taskId: string): Promise<ReleasedTask>;
  waitForTask(taskId: string, options?: { timeoutMs?: number }): Promise<ReleasedTask>;
  listRoles(): Promise<{ role: string; holder?: string | null; leaseEpoch?: number }[]>;
  openSession(): Promise<{ sessionId: string; leaseTtlSeconds: number }>;
  getSession(): Promise<{ tasks: readonly unknown[] }>;
  claim(input: { sessionId: string; max?: number }): Promise<{ tasks: ReleasedClaimedTask[] }>;
  heartbeat(input: {
    sessionId: string;
    checkpoints?: { taskId: string; leaseEpoch: number; checkpoint: unknown }[];
  }): Promise<{ lost: readonly string[]; cancelled: readonly string[] }>;
  release(taskId: string, input: { leaseEpoch: number }): Promise<ReleasedTask>;
  complete(taskId: string, input: { leaseEpoch: number; result?: unknown }): Promise<ReleasedTask>;
}
interface ReleasedTaskContext {
  checkpoint(value: unknown): void;
  heartbeatNow(): Promise<void>;
}
interface ReleasedWorker {
  start(): Promise<void>;
  stop(options?: { drain?: boolean }): Promise<void>;
  on(event: 'gotRole', listener: (lease: { role: string; leaseEpoch: number }) => void): void;
}
interface ReleasedSdk {
  AgentSchedulerClient: new (options: {
    endpoint: string;
    token: string;
    push?: { WebSocket: unknown };
  }) => ReleasedClient;
  Worker: new (options: {
    client: ReleasedClient;
    concurrency?: number;
    pollIntervalMs?: { min: number; max: number };
    push?: { WebSocket: unknown };
    handler?: (task: ReleasedClaimedTask, context: ReleasedTaskContext) => Promise<unknown>;
    roles?: Record<string, (context: { signal: AbortSignal }) => Promise<void>>;
  }) => ReleasedWorker;
  NonRetryableError: new (message: string) => Error;
}

describe(`the SDK released at ${RELEASED_SDK_COMMIT.slice(0, 7)} against the current server`, () => {
  let dir: string;
  let sdk: ReleasedSdk;
  let stack: TestStack;
  let server: LocalServer;
  let operator: ReleasedClient;
  const workers: ReleasedWorker[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'released-sdk-'));
    [sdk, stack] = await Promise.all([
      loadReleasedSdk<ReleasedSdk>(dir),
      // No backoff between attempts (random 0), so a retried failure runs again at once.
      createTestStack({
        random: () => 0,
        queues: [QUEUE, BY_HAND],
        settings: { leaseTtlSeconds: 10, heartbeatIntervalSeconds: 2 },
      }),
    ]);
    server = await serveStack(stack, OPERATOR);
    operator = new sdk.AgentSchedulerClient({ endpoint: server.url, token: OPERATOR, push: { WebSocket } });
  });
  afterAll(async () => {
    await Promise.allSettled(workers.map((worker) => worker.stop({ drain: false })));
    await server?.close();
    await stack?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function agentClient(
    name: string,
    queue: string,
  ): Promise<{ client: ReleasedClient; agentId: string }> {
    const { token, agent } = await operator.createAgent({ name, queues: [queue], maxConcurrency: 4 });
    return {
      client: new sdk.AgentSchedulerClient({ endpoint: server.url, token, push: { WebSocket } }),
      agentId: agent.agentId,
    };
  }

  it('its Worker completes, checkpoints through a heartbeat, retries a failure, gives up on a fatal one and holds a role', async () => {
    const { client, agentId } = await agentClient('released-worker', QUEUE);
    const checkpointSeen: unknown[] = [];
    const worker = new sdk.Worker({
      client,
      concurrency: 4,
      pollIntervalMs: { min: 20, max: 200 },
      push: { WebSocket },
      handler: async (task, context) => {
        const { kind, n } = task.payload as { kind: string; n: number };
        if (kind === 'fatal') throw new sdk.NonRetryableError('cannot be done');
        if (kind === 'resumable') {
          // First attempt: save a checkpoint, see it on the server, then fail retryably; the retry resumes from it.
          if (task.attempt === 1) {
            context.checkpoint({ step: n });
            await context.heartbeatNow();
            checkpointSeen.push((await operator.getTask(task.taskId)).checkpoint);
            throw new Error('interrupted');
          }
          return { resumedFrom: task.checkpoint, attempt: task.attempt };
        }
        return { doubled: n * 2 };
      },
      roles: {
        [ROLE]: ({ signal }) => new Promise<void>((done) => signal.addEventListener('abort', () => done())),
      },
    });
    workers.push(worker);
    let gotRole = false;
    worker.on('gotRole', ({ role }) => {
      if (role === ROLE) gotRole = true;
    });
    await worker.start();

    const submit = async (payload: object) =>
      (await operator.submitTask({ queue: QUEUE, payload, maxAttempts: 2 })).task.taskId;
    const plain = await submit({ kind: 'plain', n: 21 });
    const resumable = await submit({ kind: 'resumable', n: 7 });
    const fatal = await submit({ kind: 'fatal', n: 0 });
    const [plainEnd, resumableEnd, fatalEnd] = await Promise.all(
      [plain, resumable, fatal].map((taskId) => operator.waitForTask(taskId, { timeoutMs: 15_000 })),
    );

    expect(plainEnd).toMatchObject({ status: 'succeeded', attempt: 1, result: { doubled: 42 } });
    expect(checkpointSeen).toEqual([{ step: 7 }]);
    expect(resumableEnd).toMatchObject({
      status: 'succeeded',
      attempt: 2,
      result: { resumedFrom: { step: 7 }, attempt: 2 },
    });
    expect(fatalEnd).toMatchObject({ status: 'dead', attempt: 1, error: { message: 'cannot be done' } });

    await waitFor(() => gotRole, 10_000);
    const holding = async () => (await operator.listRoles()).find((r) => r.role === ROLE);
    expect(await holding()).toMatchObject({ holder: agentId });
    // Stopping gives the role up at once.
    await worker.stop();
    expect((await holding())?.holder ?? undefined).toBeUndefined();
  });

  it('its client by hand: a session opened twice, a claim, a checkpoint, a release and a completion', async () => {
    const { client } = await agentClient('released-client', BY_HAND);
    // An open sent again after its answer was lost: the agent goes on with the session the second one gave.
    await client.openSession();
    const { sessionId } = await client.openSession();
    const { task } = await operator.submitTask({ queue: BY_HAND, payload: { kind: 'by-hand' } });

    const claimIt = async (): Promise<ReleasedClaimedTask> => {
      let got: ReleasedClaimedTask | undefined;
      await waitFor(async () => {
        got = (await client.claim({ sessionId, max: 1 })).tasks.find((t) => t.taskId === task.taskId);
        return got !== undefined;
      }, 10_000);
      return got as ReleasedClaimedTask;
    };
    const first = await claimIt();
    const beat = await client.heartbeat({
      sessionId,
      checkpoints: [{ taskId: task.taskId, leaseEpoch: first.leaseEpoch, checkpoint: { page: 3 } }],
    });
    expect(beat).toMatchObject({ lost: [], cancelled: [] });
    expect((await operator.getTask(task.taskId)).checkpoint).toEqual({ page: 3 });

    expect(await client.release(task.taskId, { leaseEpoch: first.leaseEpoch })).toMatchObject({
      status: 'queued',
    });
    const second = await claimIt();
    expect(second.leaseEpoch).toBeGreaterThan(first.leaseEpoch);
    expect(second.checkpoint).toEqual({ page: 3 });
    expect(
      await client.complete(task.taskId, { leaseEpoch: second.leaseEpoch, result: { pages: 3 } }),
    ).toMatchObject({ status: 'succeeded', result: { pages: 3 } });
    expect((await client.getSession()).tasks).toEqual([]);
  });
});
