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
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { findFreePort } from '#local/emulators/dynamodb-local';
import { isRunning } from '#local/processes';
import { seededRandom } from '#local/seeded-random';
import { AgentSchedulerClient } from '#sdk/client';
import type { Task } from '#sdk/types';
import { Worker } from '#sdk/worker';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
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

export interface Outage {
  /** Kill to the restarted server answering `/v1/health`. */
  readonly ms: number;
  /** The restart alone: spawn to the server answering `/v1/health`. */
  readonly startMs: number;
  /**
   * What `local/start.ts` itself took (its banner's "ready in"): both emulators, the tables, and re-sending the
   * hints of queued tasks; the rest of `startMs` is loading the TypeScript.
   */
  readonly readyInMs: number;
  readonly restoredHints: number;
  /** Re-sending those hints, after the server answers. */
  readonly restoreMs: number;
  /** Tasks finished (by the handlers' record) when the stack was killed. */
  readonly finishedAtKill: number;
  /** The DynamoDB Local JVM of the killed stack was still running after the group kill. */
  readonly staleJvmAfterGroupKill: boolean;
}

export interface KillStackReport {
  readonly tasks: number;
  readonly workers: number;
  readonly concurrency: number;
  readonly seed: number;
  readonly leaseTtlSeconds: number;
  readonly heartbeatSeconds: number;
  readonly marginMs: number;
  /** TTL − heartbeat − margin: every outage must be shorter. */
  readonly outageBoundMs: number;
  readonly outages: readonly Outage[];
  readonly outagesWithinBound: boolean;
  /** After a SIGKILL of the server process alone, its DynamoDB Local JVM kept running. */
  readonly staleJvmAfterServerKill: boolean | undefined;
  readonly firstStartMs: number;
  readonly durationMs: number;
  readonly drainMs: number;
  readonly drained: boolean;
  readonly byStatus: Readonly<Record<string, number>>;
  readonly lost: number;
  /** Tasks with more than one `task.completed` in the server's event feed. */
  readonly finishedTwice: number;
  /** Tasks whose handler returned more than once (the Worker's side of a re-run). */
  readonly handlerReturnedTwice: number;
  /** Handlers stopped by their signal: the Worker reckoned their lease over (the stack was down too long). */
  readonly handlerAborts: number;
  /** Pairs of runs of one task that overlapped in time, each from its start to its return or abort. */
  readonly overlappingRuns: number;
  /** `task.completed` events in the feed: one per task when nothing finished twice. */
  readonly completedEvents: number;
  readonly rerunAfterFinish: number;
  /** For each re-run: the task, and seconds from its handler's first return to the next start. */
  readonly reruns: readonly { taskId: string; afterSeconds: number }[];
  /** The handler records (ms from the first start) of every task run twice at once or again after it finished. */
  readonly twiceRun: Readonly<Record<string, readonly string[]>>;
  readonly handlerStarts: number;
  readonly handlerEnds: number;
  /** `error` events of the Workers: heartbeats, claims and completions that failed while the stack was down. */
  readonly workerErrors: number;
  readonly violations: number;
}

interface HandlerRecord {
  readonly taskId: string;
  readonly kind: 'start' | 'end' | 'abort';
  readonly attempt: number;
  readonly leaseEpoch: number;
  readonly at: number;
}

interface RunningStack {
  readonly child: ChildProcess;
  readonly startMs: number;
  readonly answeredAt: number;
  readonly banner: Promise<{ javaPid: number; restoredHints: number; readyInMs: number; restoreMs: number }>;
  readonly exited: Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Pairs of one task's runs that overlap in time: a run lasts from its start to its return or abort (the next
 * record of the same lease), and one never ended lasts to the end.
 */
function overlapsOf(records: readonly HandlerRecord[]): number {
  const runs = records
    .filter((r) => r.kind === 'start')
    .map((start) => ({
      start: start.at,
      end:
        records.find((r) => r.kind !== 'start' && r.leaseEpoch === start.leaseEpoch && r.at >= start.at)
          ?.at ?? Number.POSITIVE_INFINITY,
    }));
  let pairs = 0;
  runs.forEach((run, i) => {
    for (const other of runs.slice(i + 1)) if (run.start < other.end && other.start < run.end) pairs++;
  });
  return pairs;
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) return false;
    await sleep(50);
  }
  return true;
}

export async function runKillStack(options: KillStackOptions): Promise<KillStackReport> {
  const leaseTtlSeconds = options.leaseTtlSeconds ?? 30;
  const heartbeatSeconds = options.heartbeatSeconds ?? 3;
  const taskTimeoutSeconds = options.taskTimeoutSeconds ?? 45;
  const [minMs, maxMs] = options.handlerMs ?? [200, 2_000];
  // The Worker's default margin (sdk/worker.ts): 1 s, or a fifth of the TTL when that is shorter.
  const marginMs = Math.min(1_000, (leaseTtlSeconds * 1_000) / 5);
  const outageBoundMs = leaseTtlSeconds * 1_000 - heartbeatSeconds * 1_000 - marginMs;
  const random = seededRandom(options.seed);
  const say = (line: string) => {
    if (options.verbose) console.error(`[kill-stack] ${line}`);
  };

  const dataDir = mkdtempSync(join(tmpdir(), 'agent-scheduler-kill-'));
  const port = await findFreePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const started = Date.now();

  const start = async (): Promise<RunningStack> => {
    const spawnedAt = Date.now();
    // A group of its own: one SIGKILL to the group takes the server and DynamoDB Local's JVM with it.
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'local/start.ts',
        '--data-dir',
        dataDir,
        '--port',
        String(port),
        '--supervisor-seconds',
        '1',
        '--lease-ttl-seconds',
        String(leaseTtlSeconds),
        '--heartbeat-seconds',
        String(heartbeatSeconds),
      ],
      {
        cwd: REPO_ROOT,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, CI: 'true' },
      },
    );
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-20_000);
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-20_000);
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    let gone = false;
    void exited.then(() => {
      gone = true;
    });
    let answering = 0;
    const probe = async () => {
      while (!gone && answering === 0 && Date.now() - spawnedAt < 120_000) {
        const ok = await fetch(`${endpoint}/v1/health`).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) answering = Date.now();
        else await sleep(100);
      }
    };
    await probe();
    if (answering === 0 || gone) {
      if (!gone && child.pid) process.kill(-child.pid, 'SIGKILL');
      throw new Error(`the local stack did not start:\n${output.slice(-4_000)}`);
    }
    // The banner follows the re-sent hints, which the server answers during.
    const banner = waitUntil(() => gone || output.includes('Ctrl-C stops everything'), 120_000).then(() => ({
      javaPid: Number(/\(pid (\d+)\)/.exec(output)?.[1] ?? 0),
      restoredHints: Number(/restored hints:\s+(\d+)/.exec(output)?.[1] ?? 0),
      readyInMs: Number(/ready in (\d+) ms/.exec(output)?.[1] ?? 0),
      restoreMs: Number(/restored hints:\s+\d+ \(in (\d+) ms/.exec(output)?.[1] ?? 0),
    }));
    return { child, startMs: answering - spawnedAt, answeredAt: answering, banner, exited };
  };

  /** SIGKILL to the whole group; whether the JVM outlived it. */
  const killGroup = async (stack: RunningStack): Promise<boolean> => {
    try {
      if (stack.child.pid) process.kill(-stack.child.pid, 'SIGKILL');
    } catch {
      // The group is already gone.
    }
    await stack.exited;
    const { javaPid } = await stack.banner;
    const jvmGone = javaPid === 0 || (await waitUntil(() => !isRunning(javaPid), 2_000));
    if (!jvmGone) process.kill(javaPid, 'SIGKILL');
    return !jvmGone;
  };

  // A first start only to answer one question: does DynamoDB Local outlive its server killed alone?
  let staleJvmAfterServerKill: boolean | undefined;
  {
    const probe = await start();
    const { javaPid } = await probe.banner;
    probe.child.kill('SIGKILL');
    await probe.exited;
    staleJvmAfterServerKill = javaPid !== 0 && (await waitUntil(() => !isRunning(javaPid), 2_000)) === false;
    say(`server killed alone: its JVM ${staleJvmAfterServerKill ? 'kept running' : 'went with it'}`);
    await killGroup(probe);
  }

  const firstStart = Date.now();
  let stack = await start();
  await stack.banner;
  const firstStartMs = Date.now() - firstStart;
  say(`stack ready in ${firstStartMs} ms on ${endpoint}, data in ${dataDir}`);
  const { operatorToken } = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8')) as {
    operatorToken: string;
  };
  const operator = new AgentSchedulerClient({ endpoint, token: operatorToken });

  const records: HandlerRecord[] = [];
  const finished = new Set<string>();
  let workerErrors = 0;
  const workers: Worker[] = [];
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
          records.push({
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
        finished.add(task.taskId);
        return { ok: true };
      },
    });
    worker.on('error', () => {
      workerErrors++;
    });
    workers.push(worker);
  }

  const taskIds: string[] = [];
  for (let i = 0; i < options.tasks; i += 25) {
    const batch = Array.from({ length: Math.min(25, options.tasks - i) }, (_, j) => ({
      queue: QUEUE,
      payload: { n: i + j, ms: Math.round(minMs + random() * (maxMs - minMs)) },
      timeoutSeconds: taskTimeoutSeconds,
      maxAttempts: 10,
    }));
    for (const item of await operator.submitTasks(batch)) {
      if ('task' in item && item.task) taskIds.push(item.task.taskId);
      else throw new Error(`a submit failed: ${JSON.stringify(item)}`);
    }
  }
  say(`${taskIds.length} tasks submitted`);
  // Submitted before the fleet starts, so the kills fall under load rather than in the tail of the work.
  await Promise.all(workers.map((w) => w.start()));

  const outages: Outage[] = [];
  let finishedWhenUp = 0;
  for (let k = 0; k < options.kills; k++) {
    // A random moment under load: 15–35 % of what was left when the stack answered again done since.
    const remaining = taskIds.length - finishedWhenUp;
    const target = finishedWhenUp + Math.round(remaining * (0.15 + random() * 0.2));
    await waitUntil(() => finished.size >= target, 120_000);
    await sleep(random() * 1_000);
    const finishedAtKill = finished.size;
    const killedAt = Date.now();
    const staleJvmAfterGroupKill = await killGroup(stack);
    stack = await start();
    const ms = stack.answeredAt - killedAt;
    finishedWhenUp = finished.size;
    const { readyInMs, restoredHints, restoreMs } = await stack.banner;
    outages.push({
      ms,
      startMs: stack.startMs,
      readyInMs,
      restoredHints,
      restoreMs,
      finishedAtKill,
      staleJvmAfterGroupKill,
    });
    say(
      `kill ${k + 1}: outage ${ms} ms (start ${stack.startMs} ms, then ${restoredHints} hints re-sent in ${restoreMs} ms)`,
    );
  }

  // Drain: every task terminal, or the timeout.
  const drainStarted = Date.now();
  const drainTimeoutMs = options.drainTimeoutMs ?? taskTimeoutSeconds * 1_000 + 60_000;
  let tasks: Task[] = [];
  let drained = false;
  while (Date.now() - drainStarted < drainTimeoutMs) {
    tasks = await listAll(operator).catch(() => tasks);
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
  say(`drain ${drained ? 'done' : 'timed out'} after ${drainMs} ms`);
  await Promise.all(workers.map((w) => w.stop().catch(() => undefined)));

  // The server's record of successes: `task.completed` in the event feed, kept across restarts.
  const completedEvents = new Map<string, number>();
  for (const line of readFileSync(join(dataDir, 'events.jsonl'), 'utf8').split('\n')) {
    if (!line) continue;
    const event = JSON.parse(line) as { type?: string; detail?: { taskId?: string }; taskId?: string };
    const taskId = event.taskId ?? event.detail?.taskId;
    if (event.type === 'task.completed' && taskId)
      completedEvents.set(taskId, (completedEvents.get(taskId) ?? 0) + 1);
  }
  await killGroup(stack);
  await rm(dataDir, { recursive: true, force: true });

  const byTask = new Map<string, HandlerRecord[]>();
  for (const r of records) byTask.set(r.taskId, [...(byTask.get(r.taskId) ?? []), r]);
  const reruns: { taskId: string; afterSeconds: number }[] = [];
  let finishedTwice = 0;
  let handlerReturnedTwice = 0;
  let overlappingRuns = 0;
  /** Tasks run twice at once or again after they finished: their records go into the report. */
  const twice = new Set<string>();
  for (const taskId of taskIds) {
    const own = byTask.get(taskId) ?? [];
    const atOnce = overlapsOf(own);
    overlappingRuns += atOnce;
    if (atOnce > 0) twice.add(taskId);
    const firstEnd = own.find((r) => r.kind === 'end');
    const startAfter = firstEnd && own.find((r) => r.kind === 'start' && r.at > firstEnd.at);
    if (firstEnd && startAfter) {
      reruns.push({ taskId, afterSeconds: Math.round((startAfter.at - firstEnd.at) / 100) / 10 });
      twice.add(taskId);
    }
    if ((completedEvents.get(taskId) ?? 0) > 1) finishedTwice++;
    if (own.filter((r) => r.kind === 'end').length > 1) handlerReturnedTwice++;
  }
  const byStatus: Record<string, number> = {};
  for (const t of tasks) byStatus[t.status] = (byStatus[t.status] ?? 0) + 1;
  const terminal = new Set(
    tasks.filter((t) => t.status !== 'queued' && t.status !== 'leased').map((t) => t.taskId),
  );
  const lost = taskIds.filter((id) => !terminal.has(id)).length;
  const outagesWithinBound = outages.every((o) => o.ms < outageBoundMs);
  const violations =
    lost +
    finishedTwice +
    reruns.length +
    overlappingRuns +
    (byStatus.dead ?? 0) +
    (outagesWithinBound ? 0 : 1);
  return {
    tasks: taskIds.length,
    workers: options.workers,
    concurrency: options.concurrency,
    seed: options.seed,
    leaseTtlSeconds,
    heartbeatSeconds,
    marginMs,
    outageBoundMs,
    outages,
    outagesWithinBound,
    staleJvmAfterServerKill,
    firstStartMs,
    durationMs: Date.now() - started,
    drainMs,
    drained,
    byStatus,
    lost,
    finishedTwice,
    handlerReturnedTwice,
    handlerAborts: records.filter((r) => r.kind === 'abort').length,
    overlappingRuns,
    completedEvents: [...completedEvents.values()].reduce((sum, n) => sum + n, 0),
    rerunAfterFinish: reruns.length,
    reruns,
    twiceRun: Object.fromEntries(
      [...twice].map((id) => {
        const own = byTask.get(id) ?? [];
        const first = own[0]?.at ?? 0;
        return [
          id,
          own.map((r) => `${r.kind} epoch ${r.leaseEpoch} attempt ${r.attempt} +${r.at - first} ms`),
        ];
      }),
    ),
    handlerStarts: records.filter((r) => r.kind === 'start').length,
    handlerEnds: records.filter((r) => r.kind === 'end').length,
    workerErrors,
    violations,
  };
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
