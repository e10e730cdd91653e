/**
 * A kill -9 run: the whole local stack (`local/start.ts`: the server, DynamoDB Local's JVM and the SQS emulator) in
 * a process group of its own on a scratch data directory, a fleet of SDK Workers in this process, and the group
 * killed with SIGKILL a few times under load, each time started again on the same data and port.
 *
 * Each outage (kill to the restarted server answering) must be shorter than the lease TTL, less a heartbeat
 * interval, less the SDK's margin: a Worker then never sees its lease run out, and no task should run twice.
 *
 * Figures, once every task is terminal (or the drain times out):
 * - lost: tasks never terminal;
 * - finished twice: tasks with more than one `task.completed` in the server's event feed (a success committed
 *   twice);
 * - finished handlers run again: a handler returned for the task, and a handler for the same task started later;
 * - overlapping runs: two runs of one task at once, each from its start to its return or to the abort of its
 *   signal (the handlers here stop when the Worker aborts them, as the SDK asks of every handler).
 *
 * The SQS emulator keeps nothing across a restart: `local/start.ts` re-sends the hint of every queued task before
 * it serves (`reconcile({ everything: true })`), and the report gives how many and how long the start took.
 */

import { mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { findFreePort } from '#local/emulators/dynamodb-local';
import { seededRandom } from '#local/seeded-random';
import { AgentSchedulerClient } from '#sdk/client';
import type { Task } from '#sdk/types';
import { Worker } from '#sdk/worker';
import {
  jvmOutlivesServer,
  killGroup,
  type RunningStack,
  type StackPlace,
  sleep,
  startStack,
  waitUntil,
} from './kill-stack-process';
import {
  completedEventsOf,
  type HandlerRecord,
  type KillRunOutcome,
  type KillStackReport,
  type Outage,
  reportOf,
} from './kill-stack-report';

export type { KillStackReport, Outage } from './kill-stack-report';

const QUEUE = 'research';

export interface KillStackOptions {
  readonly tasks: number;
  readonly workers: number;
  readonly concurrency: number;
  readonly kills: number;
  readonly seed: number;
  /**
   * A restart of the stack takes 15–20 s on two busy cores (tsx, then DynamoDB Local's JVM), so the outage bound
   * (TTL − heartbeat − margin) needs a TTL well above that. @default 30
   */
  readonly leaseTtlSeconds?: number;
  /** @default 3 */
  readonly heartbeatSeconds?: number;
  /** The attempt's length: how long a dropped completion keeps a task leased before it runs again. @default 45 */
  readonly taskTimeoutSeconds?: number;
  /** Handlers take from this to that, drawn from the seed. @default [200, 2000] */
  readonly handlerMs?: readonly [number, number];
  /** Longest wait for every task to end after the last restart. @default task timeout + 60 s */
  readonly drainTimeoutMs?: number;
  /** Progress lines on stderr. */
  readonly verbose?: boolean;
}

/** Sets the stack and the fleet up, runs the work under the kills, reports (`kill-stack-report.ts`). */
export async function runKillStack(options: KillStackOptions): Promise<KillStackReport> {
  const run = await setUp(options);
  const outcome = await runUnderKills(run, options);
  await killGroup(run.stack);
  await rm(run.place.dataDir, { recursive: true, force: true });
  return reportOf(
    {
      workers: options.workers,
      concurrency: options.concurrency,
      seed: options.seed,
      leaseTtlSeconds: run.place.leaseTtlSeconds,
      heartbeatSeconds: run.place.heartbeatSeconds,
      marginMs: run.marginMs,
      outageBoundMs: run.outageBoundMs,
      staleJvmAfterServerKill: run.staleJvmAfterServerKill,
      firstStartMs: run.firstStartMs,
      started: run.started,
      workerErrors: run.fleet.errors,
    },
    outcome,
  );
}

type KillRun = Awaited<ReturnType<typeof setUp>>;

/**
 * The stack started on a scratch data directory (after a first start that only asks whether DynamoDB Local
 * outlives its server killed alone), an operator's client, and the fleet of Workers, not started yet.
 */
async function setUp(options: KillStackOptions) {
  const leaseTtlSeconds = options.leaseTtlSeconds ?? 30;
  const heartbeatSeconds = options.heartbeatSeconds ?? 3;
  // The Worker's default margin (sdk/worker.ts): 1 s, or a fifth of the TTL when that is shorter.
  const marginMs = Math.min(1_000, (leaseTtlSeconds * 1_000) / 5);
  const outageBoundMs = leaseTtlSeconds * 1_000 - heartbeatSeconds * 1_000 - marginMs;
  const say = (line: string) => {
    if (options.verbose) console.error(`[kill-stack] ${line}`);
  };
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-scheduler-kill-'));
  const port = await findFreePort();
  const place: StackPlace = {
    dataDir,
    port,
    endpoint: `http://127.0.0.1:${port}`,
    leaseTtlSeconds,
    heartbeatSeconds,
  };
  const started = Date.now();
  const staleJvmAfterServerKill = await jvmOutlivesServer(place);
  say(`server killed alone: its JVM ${staleJvmAfterServerKill ? 'kept running' : 'went with it'}`);
  const firstStart = Date.now();
  const stack = await startStack(place);
  await stack.banner;
  const firstStartMs = Date.now() - firstStart;
  say(`stack ready in ${firstStartMs} ms on ${place.endpoint}, data in ${dataDir}`);
  const { operatorToken } = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8')) as {
    operatorToken: string;
  };
  const operator = new AgentSchedulerClient({ endpoint: place.endpoint, token: operatorToken });
  const fleet = await fleetOf(operator, place.endpoint, options);
  return {
    place,
    marginMs,
    outageBoundMs,
    say,
    random: seededRandom(options.seed),
    started,
    staleJvmAfterServerKill,
    firstStartMs,
    /** The stack now running: each restart replaces it. */
    stack: stack as RunningStack,
    operator,
    fleet,
  };
}

/** The Workers, each an agent of its own, whose handlers record each run's start and its return or abort. */
async function fleetOf(operator: AgentSchedulerClient, endpoint: string, options: KillStackOptions) {
  const fleet = {
    workers: [] as Worker[],
    records: [] as HandlerRecord[],
    finished: new Set<string>(),
    errors: 0,
  };
  for (let i = 0; i < options.workers; i++) {
    const { token } = await operator.createAgent({
      name: `kill-${i}`,
      queues: [QUEUE],
      maxConcurrency: options.concurrency,
    });
    const worker = new Worker({
      client: new AgentSchedulerClient({ endpoint, token }),
      concurrency: options.concurrency,
      pollIntervalMs: { min: 100, max: 1_000 },
      // Works for the task's time, or until the Worker aborts it (its lease is over by the Worker's reckoning).
      handler: async (task, { signal }) => {
        const record = (kind: HandlerRecord['kind']) =>
          fleet.records.push({
            taskId: task.taskId,
            kind,
            attempt: task.attempt,
            leaseEpoch: task.leaseEpoch,
            at: Date.now(),
          });
        record('start');
        try {
          await delay((task.payload as { ms: number }).ms, undefined, { signal });
        } catch (error) {
          record('abort');
          throw error;
        }
        record('end');
        fleet.finished.add(task.taskId);
        return { ok: true };
      },
    });
    worker.on('error', () => {
      fleet.errors++;
    });
    fleet.workers.push(worker);
  }
  return fleet;
}

/**
 * Submits the work, starts the fleet, kills the stack `kills` times under load (each time started again on the
 * same data and port), then waits for every task to end and stops the fleet.
 */
async function runUnderKills(run: KillRun, options: KillStackOptions): Promise<KillRunOutcome> {
  const taskIds = await submitAll(run, options);
  run.say(`${taskIds.length} tasks submitted`);
  // Submitted before the fleet starts, so the kills fall under load rather than in the tail of the work.
  await Promise.all(run.fleet.workers.map((w) => w.start()));
  const outages: Outage[] = [];
  let finishedWhenUp = 0;
  for (let k = 0; k < options.kills; k++) {
    const restarted = await killAndRestart(run, taskIds.length - finishedWhenUp, finishedWhenUp, k);
    outages.push(restarted.outage);
    finishedWhenUp = restarted.finishedWhenUp;
  }
  const { tasks, drained, drainMs } = await drain(run, taskIds, options);
  await Promise.all(run.fleet.workers.map((w) => w.stop().catch(() => undefined)));
  return {
    taskIds,
    outages,
    tasks,
    drained,
    drainMs,
    records: run.fleet.records,
    completedEvents: completedEventsOf(run.place.dataDir),
  };
}

async function submitAll(run: KillRun, options: KillStackOptions): Promise<string[]> {
  const [minMs, maxMs] = options.handlerMs ?? [200, 2_000];
  const taskIds: string[] = [];
  for (let i = 0; i < options.tasks; i += 25) {
    const batch = Array.from({ length: Math.min(25, options.tasks - i) }, (_, j) => ({
      queue: QUEUE,
      payload: { n: i + j, ms: Math.round(minMs + run.random() * (maxMs - minMs)) },
      timeoutSeconds: options.taskTimeoutSeconds ?? 45,
      maxAttempts: 10,
    }));
    for (const item of await run.operator.submitTasks(batch)) {
      if ('task' in item && item.task) taskIds.push(item.task.taskId);
      else throw new Error(`a submit failed: ${JSON.stringify(item)}`);
    }
  }
  return taskIds;
}

/**
 * The `k`th kill, at a random moment under load: once 15–35 % of what was left (`remaining`) when the stack last
 * answered again is done since. Returns the outage, from the kill to the restarted server answering, and the tasks
 * finished by then.
 */
async function killAndRestart(
  run: KillRun,
  remaining: number,
  finishedWhenUp: number,
  k: number,
): Promise<{ outage: Outage; finishedWhenUp: number }> {
  const { finished } = run.fleet;
  const target = finishedWhenUp + Math.round(remaining * (0.15 + run.random() * 0.2));
  await waitUntil(() => finished.size >= target, 120_000);
  await sleep(run.random() * 1_000);
  const finishedAtKill = finished.size;
  const killedAt = Date.now();
  const staleJvmAfterGroupKill = await killGroup(run.stack);
  run.stack = await startStack(run.place);
  const ms = run.stack.answeredAt - killedAt;
  const up = finished.size;
  const { readyInMs, restoredHints, restoreMs } = await run.stack.banner;
  run.say(
    `kill ${k + 1}: outage ${ms} ms (start ${run.stack.startMs} ms, then ${restoredHints} hints re-sent in ${restoreMs} ms)`,
  );
  return {
    outage: {
      ms,
      startMs: run.stack.startMs,
      readyInMs,
      restoredHints,
      restoreMs,
      finishedAtKill,
      staleJvmAfterGroupKill,
    },
    finishedWhenUp: up,
  };
}

/** Every task terminal, or the timeout (`drainTimeoutMs`, by default the task timeout and a minute). */
async function drain(run: KillRun, taskIds: readonly string[], options: KillStackOptions) {
  const drainStarted = Date.now();
  const drainTimeoutMs = options.drainTimeoutMs ?? (options.taskTimeoutSeconds ?? 45) * 1_000 + 60_000;
  let tasks: Task[] = [];
  let drained = false;
  while (Date.now() - drainStarted < drainTimeoutMs) {
    tasks = await listAll(run.operator).catch(() => tasks);
    if (
      tasks.length >= taskIds.length &&
      tasks.every((t) => t.status !== 'queued' && t.status !== 'leased')
    ) {
      drained = true;
      break;
    }
    await sleep(2_000);
  }
  const drainMs = Date.now() - drainStarted;
  run.say(`drain ${drained ? 'done' : 'timed out'} after ${drainMs} ms`);
  return { tasks, drained, drainMs };
}

async function listAll(client: AgentSchedulerClient): Promise<Task[]> {
  const tasks: Task[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTasks({ queue: QUEUE, limit: 100, ...(cursor ? { cursor } : {}) });
    tasks.push(...page.tasks);
    cursor = page.nextCursor;
  } while (cursor);
  return tasks;
}
