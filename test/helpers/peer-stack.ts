/**
 * The local stack the peer suites run against, as `npm start --supervisor-seconds 1 --lease-ttl-seconds 5` would
 * run it: the HTTP server on the emulators, the supervisor every `SUPERVISOR_PERIOD_MS`, schedules fired on time
 * by the local backend, every event served at `GET /v1/events`. The tests themselves speak only HTTP and the SDK.
 */
import { LocalEventFeed } from '#adapters/event-publishers';
import { LocalScheduleBackend } from '#local/local-schedules';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import type { ClaimedTask, Task, TaskStatus } from '#sdk/types';
import { Worker } from '#sdk/worker';
import type { TaskHandler } from '#sdk/worker-events';
import {
  createTestStack,
  cuttableAgentClient,
  everyUnlessRunning,
  fireAsFunction,
  serveStack,
  type TestStack,
  waitFor,
} from '#test/stack';

/** How often the supervisor runs here (60 s in AWS). */
export const SUPERVISOR_PERIOD_MS = 1_000;
/** A session, and every lease it holds, lives this long after its last heartbeat, unless a suite says otherwise. */
export const LEASE_TTL_SECONDS = 5;

export interface PeerStack {
  readonly url: string;
  readonly operator: AgentSchedulerClient;
  /** Registers an agent serving `queues` and gives a client with its token. */
  agent(
    queues: readonly string[],
    options?: { maxConcurrency?: number; cut?: { value: boolean } },
  ): Promise<{ agentId: string; client: AgentSchedulerClient }>;
  /**
   * A Worker of a new agent serving `queues`, started (after `before`, for listeners that must hear its first
   * claims), polling briefly and without push; `stopWorkers` stops every one started.
   */
  worker(
    queues: readonly string[],
    handler: TaskHandler,
    options?: { concurrency?: number; cut?: { value: boolean }; before?: (worker: Worker) => void },
  ): Promise<{ worker: Worker; agentId: string }>;
  stopWorkers(): Promise<void>;
  /** Waits until the task has `status`, and reads it. */
  settled(taskId: string, status: TaskStatus, timeoutMs?: number): Promise<Task>;
  /** `GET /v1/events?since=…`, every page. */
  events(): Promise<{ type: string; taskId?: string; [field: string]: unknown }[]>;
  close(): Promise<void>;
}

/** The moment the server granted a claimed attempt, on the server's clock. */
export const grantedAt = (claimed: ClaimedTask): number =>
  Date.parse(claimed.leaseDeadline) - claimed.timeoutSeconds * 1_000;

const silent = { info() {}, warn() {}, error() {}, debug() {} };

export async function startPeerStack(
  queues: readonly string[],
  operatorToken: string,
  options: { leaseTtlSeconds?: number } = {},
): Promise<PeerStack> {
  const feed = new LocalEventFeed();
  const schedules = new LocalScheduleBackend(silent);
  const stack: TestStack = await createTestStack({
    queues,
    events: feed,
    scheduleBackend: schedules,
    settings: {
      leaseTtlSeconds: options.leaseTtlSeconds ?? LEASE_TTL_SECONDS,
      heartbeatIntervalSeconds: 1,
      routineEvents: true,
      missedRunGraceSeconds: 5,
    },
  });
  const server: LocalServer = await serveStack(stack, operatorToken, { events: feed });
  const supervisor = everyUnlessRunning(() => stack.scheduler.supervise(), SUPERVISOR_PERIOD_MS);
  schedules.start(
    (record, scheduledTime) =>
      fireAsFunction(stack.ctx, {
        schedule: record.name,
        scheduledTime: new Date(scheduledTime).toISOString(),
        overlap: record.overlap,
        missedRuns: record.missedRuns,
        task: record.task,
      }),
    [],
  );
  const operator = new AgentSchedulerClient({ endpoint: server.url, token: operatorToken });
  let agents = 0;
  const workers: Worker[] = [];
  const peer: PeerStack = {
    url: server.url,
    operator,
    agent: async (agentQueues, options = {}) => {
      const { agent, token } = await operator.createAgent({
        name: `peer-${++agents}`,
        queues: [...agentQueues],
        maxConcurrency: options.maxConcurrency ?? 1,
      });
      const client = cuttableAgentClient(server.url, token, options.cut);
      return { agentId: agent.agentId, client };
    },
    worker: async (agentQueues, handler, options = {}) => {
      const concurrency = options.concurrency ?? 1;
      const { client, agentId } = await peer.agent(agentQueues, {
        maxConcurrency: concurrency,
        ...(options.cut ? { cut: options.cut } : {}),
      });
      const worker = new Worker({
        client,
        handler,
        concurrency,
        pollIntervalMs: { min: 20, max: 100 },
        push: false,
      });
      workers.push(worker);
      options.before?.(worker);
      await worker.start();
      return { worker, agentId };
    },
    stopWorkers: async () => {
      await Promise.all(workers.splice(0).map((w) => w.stop({ drain: false, timeoutMs: 1_000 })));
    },
    settled: async (taskId, status, timeoutMs = 30_000) => {
      await waitFor(async () => (await operator.getTask(taskId)).status === status, timeoutMs);
      return operator.getTask(taskId);
    },
    events: async () => {
      const all: { type: string; taskId?: string; [field: string]: unknown }[] = [];
      let since = 0;
      for (;;) {
        const response = await fetch(`${server.url}/v1/events?since=${since}&limit=1000`, {
          headers: { authorization: `Bearer ${operatorToken}` },
        });
        const page = (await response.json()) as { events: typeof all; next: number };
        all.push(...page.events);
        if (page.events.length === 0 || page.next === since) return all;
        since = page.next;
      }
    },
    close: async () => {
      clearInterval(supervisor);
      schedules.stop();
      await server.close();
      await stack.destroy();
    },
  };
  return peer;
}
