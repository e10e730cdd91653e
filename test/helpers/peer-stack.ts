/**
 * The local stack the peer suites run against, as `npm start --supervisor-seconds 1 --lease-ttl-seconds 5` would
 * run it: the HTTP server on the emulators, the supervisor every `SUPERVISOR_PERIOD_MS`, schedules fired on time
 * by the local backend, every event served at `GET /v1/events`. The tests themselves speak only HTTP and the SDK.
 */
import { LocalEventFeed } from '#adapters/event-publishers';
import { LocalScheduleBackend } from '#local/local-schedules';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { createTestStack, fireAsFunction, serveStack, type TestStack } from '#test/stack';

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
  /** `GET /v1/events?since=…`, every page. */
  events(): Promise<{ type: string; taskId?: string; [field: string]: unknown }[]>;
  close(): Promise<void>;
}

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
  const supervisor = setInterval(
    () => void stack.scheduler.supervise().catch(() => undefined),
    SUPERVISOR_PERIOD_MS,
  );
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
  return {
    url: server.url,
    operator,
    agent: async (agentQueues, options = {}) => {
      const { agent, token } = await operator.createAgent({
        name: `peer-${++agents}`,
        queues: [...agentQueues],
        maxConcurrency: options.maxConcurrency ?? 1,
      });
      const cut = options.cut;
      const client = new AgentSchedulerClient({
        endpoint: server.url,
        token,
        retries: { maxAttempts: 2, baseDelayMs: 20, maxDelayMs: 50 },
        ...(cut
          ? {
              fetch: (...[input, init]: Parameters<typeof fetch>) =>
                cut.value ? Promise.reject(new TypeError('network cut')) : fetch(input, init),
            }
          : {}),
      });
      return { agentId: agent.agentId, client };
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
}
