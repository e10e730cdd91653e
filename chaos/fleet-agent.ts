/**
 * An agent process of the fleet chaos run (`run-fleet-chaos.ts`) and of the fleet bench (`bench/run-fleet.ts`):
 * the TypeScript SDK's `Worker`, the twin of `python/scripts/fleet_agent.py`. Both take the same options, run the
 * same workload and write the same execution log (`fleet-log.ts`).
 *
 * `tsx chaos/fleet-agent.ts --endpoint URL --token TOKEN --queue Q --concurrency N --log PATH [--workload chaos|trivial]
 * [--seed S] [--role NAME] [--timeout-ms MS] [--go PATH]`, each also read from the environment when absent
 * (`AGENT_SCHEDULER_ENDPOINT`, `AGENT_SCHEDULER_TOKEN`, `FLEET_QUEUE`, `FLEET_CONCURRENCY`, `FLEET_LOG`,
 * `FLEET_WORKLOAD`, `FLEET_SEED`, `FLEET_ROLE`, `FLEET_TIMEOUT_MS`, `FLEET_GO`). With `--go`, the process logs
 * `loaded` and starts its Worker only once that file exists: a bench starts a whole fleet at one moment.
 *
 * The `chaos` workload is the HTTP chaos run's (`http-workload.ts`) less what only an in-process fleet can do to
 * itself (cut itself off, crash, give a task back: here the proxy cuts agents off and the run kills processes): a
 * tenth of the top-level tasks submit one or two children by key, a third of those again as a retry does (the same
 * keys must give the same tasks); one handler in twenty works 3 s (60 steps of 50 ms, a checkpoint carrying its
 * lease's epoch at each), the others 5 to 50 ms; a task submitted with `doomable` fails for good, a tenth of the
 * others fail and are retried. Every handler stops at its Worker's abort. The `trivial` workload returns at once.
 * `--role` volunteers for that role and holds it 0.5 to 2 s each time, logging each holding.
 *
 * Stops (draining) on SIGTERM, and when its agent is revoked; then logs `stopped` and exits 0.
 */
import { existsSync, openSync, writeSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { seededRandom } from '#local/seeded-random';
import { AgentSchedulerClient } from '#sdk/client';
import { NonRetryableError } from '#sdk/errors';
import type { ClaimedTask } from '#sdk/types';
import { Worker } from '#sdk/worker';
import type { TaskContext } from '#sdk/worker-events';
import type { FleetLogLine } from './fleet-log';

/** As the chaos runs' `RETRYING` (`committed-writes.ts`), without loading the server's modules into an agent. */
const RETRYING = {
  maxAttempts: 50,
  timeoutSeconds: 20,
  backoffBaseSeconds: 1,
  backoffMaxSeconds: 1,
} as const;
const LONG_SHARE = 0.05;
const FAIL_SHARE = 0.1;
const CHILD_SHARE = 0.1;

const { values } = parseArgs({
  options: {
    endpoint: { type: 'string', default: process.env.AGENT_SCHEDULER_ENDPOINT },
    token: { type: 'string', default: process.env.AGENT_SCHEDULER_TOKEN },
    queue: { type: 'string', default: process.env.FLEET_QUEUE },
    concurrency: { type: 'string', default: process.env.FLEET_CONCURRENCY ?? '4' },
    log: { type: 'string', default: process.env.FLEET_LOG },
    workload: { type: 'string', default: process.env.FLEET_WORKLOAD ?? 'chaos' },
    seed: { type: 'string', default: process.env.FLEET_SEED ?? '1' },
    role: { type: 'string', default: process.env.FLEET_ROLE },
    'timeout-ms': { type: 'string', default: process.env.FLEET_TIMEOUT_MS ?? '1000' },
    go: { type: 'string', default: process.env.FLEET_GO },
  },
});
/** A required option's value; absent, the process ends with status 2. */
const required = (name: string, value: string | undefined): string => {
  if (value) return value;
  console.error(`fleet-agent: --${name} is required`);
  process.exit(2);
};
const endpoint = required('endpoint', values.endpoint);
const token = required('token', values.token);
const queue = required('queue', values.queue);
const logPath = required('log', values.log);
const { role } = values;
const concurrency = Number(values.concurrency);
const random = seededRandom(Number(values.seed));

const logFile = openSync(logPath, 'a');
/** One line, written through before the process goes on: a SIGKILL loses none. */
const log = (line: FleetLogLine) => writeSync(logFile, `${JSON.stringify(line)}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Submits one or two children of `task` by key, and a third of the time submits them again as a retry would. */
async function submitChildren(task: ClaimedTask, context: TaskContext): Promise<void> {
  const keys = random() < 0.5 ? ['a'] : ['a', 'b'];
  const children = keys.map((key) => ({ key, queue, payload: { childOf: task.taskId }, ...RETRYING }));
  const again = random() < 1 / 3;
  const first = await context.submit(children).catch(() => undefined);
  if (!first) return;
  const ids = first.flatMap((outcome) => (outcome.ok ? [outcome.task.taskId] : []));
  log({ type: 'children', at: Date.now(), taskId: task.taskId, ids });
  if (!again || ids.length < keys.length) return;
  const second = await context.submit(children).catch(() => undefined);
  const idsAgain = second?.flatMap((outcome) => (outcome.ok ? [outcome.task.taskId] : []));
  if (idsAgain && idsAgain.length === ids.length && idsAgain.some((id, i) => id !== ids[i]))
    log({
      type: 'childMismatch',
      at: Date.now(),
      detail: `${task.taskId}: ${ids.join(',')} then ${idsAgain.join(',')}`,
    });
}

async function chaosWork(task: ClaimedTask, context: TaskContext): Promise<unknown> {
  const payload = task.payload as { n?: number; doomable?: boolean };
  if (payload.n !== undefined && random() < CHILD_SHARE) await submitChildren(task, context);
  const steps = random() < LONG_SHARE ? 60 : 1;
  for (let step = 0; step < steps && !context.signal.aborted; step++) {
    context.checkpoint({ step, leaseEpoch: task.leaseEpoch });
    await sleep(steps > 1 ? 50 : 5 + random() * 45);
  }
  if (payload.doomable) throw new NonRetryableError('chaos says never');
  if (random() < FAIL_SHARE) throw new Error('chaos says no');
  return { n: task.taskId };
}

async function handler(task: ClaimedTask, context: TaskContext): Promise<unknown> {
  const lease = { taskId: task.taskId, leaseEpoch: task.leaseEpoch };
  log({ type: 'start', at: Date.now(), ...lease, attempt: task.attempt });
  let ended = false;
  const end = (how: 'returned' | 'threw' | 'aborted', result?: unknown) => {
    if (ended) return;
    ended = true;
    log({ type: 'end', at: Date.now(), ...lease, how, ...(how === 'returned' ? { result } : {}) });
  };
  context.signal.addEventListener('abort', () => end('aborted'), { once: true });
  try {
    const result = values.workload === 'trivial' ? { n: task.taskId } : await chaosWork(task, context);
    end('returned', result);
    return result;
  } catch (error) {
    end('threw');
    throw error;
  }
}

/** Holds the role until aborted, or gives it up after 0.5 to 2 s so it moves between holders. */
async function holdRole({ leaseEpoch, signal }: { leaseEpoch: number; signal: AbortSignal }): Promise<void> {
  log({ type: 'roleStart', at: Date.now(), role: role as string, leaseEpoch });
  await new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
    setTimeout(resolve, 500 + random() * 1_500);
  });
  log({ type: 'roleEnd', at: Date.now(), role: role as string, leaseEpoch });
}

const client = new AgentSchedulerClient({
  endpoint,
  token,
  timeoutMs: Number(values['timeout-ms']),
  retries: { maxAttempts: 4, baseDelayMs: 20, maxDelayMs: 200 },
  push: false,
});
const told = (type: 'completed' | 'failed' | 'lost') => (task: ClaimedTask, reason?: unknown) =>
  log({
    type,
    at: Date.now(),
    taskId: task.taskId,
    leaseEpoch: task.leaseEpoch,
    ...(type === 'lost' ? { reason: String(reason) } : {}),
  });

// Loaded; with --go, the Worker starts once that file exists, when every process of a fleet has loaded.
if (values.go) {
  log({ type: 'loaded', at: Date.now() });
  while (!existsSync(values.go)) await sleep(10);
}
// A session that cannot open under the faults is tried again with a new Worker (one starts only once).
let worker: Worker | undefined;
for (let attempt = 0; !worker; attempt++) {
  const candidate = new Worker({
    client,
    handler,
    concurrency,
    queues: [queue],
    pollIntervalMs: { min: 20, max: 200 },
    // Polling, as the Python agent: the proxy forwards HTTP requests, not the push channel's socket.
    push: false,
    ...(role ? { roles: { [role]: holdRole } } : {}),
  });
  candidate.on('error', () => undefined);
  candidate.on('completed', told('completed'));
  candidate.on('failed', told('failed'));
  candidate.on('lost', told('lost'));
  try {
    await candidate.start();
    worker = candidate;
  } catch (error) {
    if (attempt >= 20) throw error;
    await sleep(100);
  }
}
worker.installSignalHandlers();
log({ type: 'ready', at: Date.now(), language: 'typescript', pid: process.pid });
while (!worker.stopped) await sleep(100);
log({ type: 'stopped', at: Date.now() });
process.exit(0);
