/**
 * The fleet scenario (`npm run bench:fleet`): the throughput of agent processes in Python and in TypeScript, the
 * same number of each, the same concurrency, on the same local stack, with no proxy and no faults. Each fleet has a
 * queue of its own and runs alone, one after the other: its processes (`python/scripts/fleet_agent.py`,
 * `chaos/fleet-agent.ts`, the `trivial` workload: a handler that returns at once) are started and wait, the queue
 * is filled, then they all start at one moment (`--go`), and the fleet's time is from then to the last completion
 * its logs tell. Rounds alternate which fleet goes first, so neither always meets a colder emulator or a busier
 * machine; each fleet's tasks/s is its tasks over its time, summed over the rounds.
 *
 * Beside tasks/s it reports, per task, the CPU time of the fleet's processes (from `/proc`), of the server's process
 * while the fleet ran, and the API calls the server answered, by operation: where a slower fleet's time goes.
 * The server's per-agent rate limit is off: it would cap a fleet's rate, not measure it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ServedLocalStack, startLocalStack } from '#local/local-stack';
import { AgentSchedulerClient } from '#sdk/client';
import { LogTail } from '../chaos/fleet-log';
import { type AgentProcess, findPython, type Language, startAgentProcess } from '../chaos/fleet-processes';

export interface FleetBenchOptions {
  /** Agent processes of each language. */
  readonly agents: number;
  /** Tasks each fleet runs per round. */
  readonly tasks: number;
  /** Tasks each process runs at once. */
  readonly concurrency: number;
  /** Tasks each fleet runs first, not measured: the emulator's JIT warms up on both. */
  readonly warmupTasks: number;
  /** Rounds of both fleets, the first of each alternating. */
  readonly rounds: number;
  readonly endpoints?: { readonly dynamodb: string; readonly sqs: string };
}

export interface FleetFigures {
  readonly tasks: number;
  readonly durationMs: number;
  readonly tasksPerSecond: number;
  /** CPU time of the fleet's processes, per task. */
  readonly agentCpuMsPerTask: number;
  /** CPU time of the server's process (the server, the SQS emulator, the bench) while the fleet ran, per task. */
  readonly serverCpuMsPerTask: number;
  /** API calls the server answered per task, by operation. */
  readonly callsPerTask: Readonly<Record<string, number>>;
}

export interface FleetBenchReport {
  readonly scenario: 'fleet';
  readonly agents: number;
  readonly concurrency: number;
  readonly rounds: number;
  readonly warmupTasks: number;
  readonly python: FleetFigures;
  readonly typescript: FleetFigures;
  /** Python's tasks/s over TypeScript's. */
  readonly ratio: number;
}

/** One fleet's run: its time, the CPU its processes and the server spent, the calls the server answered. */
interface Measured {
  readonly tasks: number;
  readonly durationMs: number;
  readonly agentCpuMs: number;
  readonly serverCpuMs: number;
  readonly calls: Readonly<Record<string, number>>;
}

const OPERATOR_TOKEN = `op_${randomBytes(12).toString('base64url')}`;
/** Longest a fleet may take to load, and to run its tasks. */
const LOAD_MS = 120_000;
const RUN_MS = 600_000;
const round = (value: number, digits = 2) => Number(value.toFixed(digits));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runFleetBench(options: FleetBenchOptions): Promise<FleetBenchReport> {
  const python = findPython();
  if (!python) throw new Error('the fleet bench needs Python 3.10 or later on PATH');
  const calls: Record<string, number> = {};
  const stack = await startLocalStack({
    name: 'bench-fleet',
    queues: ['bench-python', 'bench-typescript'],
    endpoints: options.endpoints,
    context: {
      log: { info() {}, warn() {}, error() {} },
      // Idle agents ask again within 20 to 200 ms, so a fleet waiting for its first tasks picks them up at once.
      settings: { idleClaimRetryBaseMs: 20, idleClaimRetryMaxMs: 200 },
    },
    serve: {
      operatorToken: OPERATOR_TOKEN,
      agentRateLimit: false,
      onRequest: ({ operation }) => {
        calls[operation] = (calls[operation] ?? 0) + 1;
      },
    },
  });
  const dir = mkdtempSync(join(tmpdir(), 'agent-scheduler-bench-fleet-'));
  const run = (language: Language, tasks: number, label: string) =>
    runFleet({ stack, python, dir, calls, options, language, tasks, label });
  try {
    if (options.warmupTasks > 0) {
      await run('python', options.warmupTasks, 'warm');
      await run('typescript', options.warmupTasks, 'warm');
    }
    const measured: Record<Language, Measured[]> = { python: [], typescript: [] };
    for (let r = 0; r < options.rounds; r++) {
      const order: Language[] = r % 2 === 0 ? ['python', 'typescript'] : ['typescript', 'python'];
      for (const language of order) measured[language].push(await run(language, options.tasks, `r${r}`));
    }
    const py = figuresOf(measured.python);
    const ts = figuresOf(measured.typescript);
    return {
      scenario: 'fleet',
      agents: options.agents,
      concurrency: options.concurrency,
      rounds: options.rounds,
      warmupTasks: options.warmupTasks,
      python: py,
      typescript: ts,
      ratio: round(py.tasksPerSecond / ts.tasksPerSecond, 3),
    };
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A fleet of `options.agents` processes of `language` on its queue: loaded, given the work, started at once. */
async function runFleet(bench: {
  readonly stack: ServedLocalStack;
  readonly python: string;
  readonly dir: string;
  readonly calls: Record<string, number>;
  readonly options: FleetBenchOptions;
  readonly language: Language;
  readonly tasks: number;
  readonly label: string;
}): Promise<Measured> {
  const { stack, options, language, tasks, label } = bench;
  const queue = `bench-${language}`;
  const go = join(bench.dir, `go-${language}-${label}`);
  const operator = new AgentSchedulerClient({ endpoint: stack.server.url, token: OPERATOR_TOKEN });
  const fleet: { process: AgentProcess; tail: LogTail }[] = [];
  try {
    for (let i = 0; i < options.agents; i++) {
      const name = `${language}-${label}-${i}`;
      const created = await operator.createAgent({
        name,
        queues: [queue],
        maxConcurrency: options.concurrency,
      });
      const logPath = join(bench.dir, `${name}.jsonl`);
      const agent = startAgentProcess({
        language,
        python: bench.python,
        endpoint: stack.server.url,
        token: created.token,
        queue,
        concurrency: options.concurrency,
        logPath,
        workload: 'trivial',
        seed: i,
        go,
        timeoutMs: 10_000,
      });
      fleet.push({ process: agent, tail: new LogTail(logPath) });
    }
    for (let i = 0; i < tasks; i += 25)
      await stack.scheduler.submitBatch(
        Array.from({ length: Math.min(25, tasks - i) }, (_, k) => ({ queue, payload: { n: i + k } })),
      );
    const loaded = new Set<number>();
    const loadBy = Date.now() + LOAD_MS;
    while (loaded.size < fleet.length) {
      fleet.forEach(({ tail }, i) => {
        if (tail.lines().some((line) => line.type === 'loaded')) loaded.add(i);
      });
      const dead = fleet.find(({ process }) => process.child.exitCode !== null);
      if (dead || Date.now() > loadBy)
        throw new Error(`a ${language} agent did not load: ${dead?.process.output()}`);
      await sleep(50);
    }
    const callsBefore = { ...bench.calls };
    const cpuBefore = process.cpuUsage();
    const agentCpuBefore = fleet.reduce((sum, { process }) => sum + cpuMsOf(process.child.pid), 0);
    const started = Date.now();
    writeFileSync(go, '');
    let completed = 0;
    let last = started;
    const runBy = started + RUN_MS;
    while (completed < tasks) {
      for (const { tail } of fleet)
        for (const line of tail.lines())
          if (line.type === 'completed') {
            completed++;
            last = Math.max(last, line.at);
          }
      if (Date.now() > runBy)
        throw new Error(`the ${language} fleet completed ${completed} of ${tasks} tasks`);
      if (completed < tasks) await sleep(50);
    }
    const cpu = process.cpuUsage(cpuBefore);
    const agentCpuMs =
      fleet.reduce((sum, { process }) => sum + cpuMsOf(process.child.pid), 0) - agentCpuBefore;
    return {
      tasks,
      durationMs: last - started,
      agentCpuMs,
      serverCpuMs: (cpu.user + cpu.system) / 1_000,
      calls: Object.fromEntries(
        Object.entries(bench.calls).map(([operation, n]) => [operation, n - (callsBefore[operation] ?? 0)]),
      ),
    };
  } finally {
    await Promise.all(fleet.map(({ process }) => process.stop(10_000)));
  }
}

/** A process's CPU time so far (user and system, ms), from `/proc`; 0 where there is none. */
function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th, in ticks of 10 ms.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/** A fleet's figures over its rounds. */
function figuresOf(runs: readonly Measured[]): FleetFigures {
  const tasks = runs.reduce((sum, r) => sum + r.tasks, 0);
  const durationMs = runs.reduce((sum, r) => sum + r.durationMs, 0);
  const calls: Record<string, number> = {};
  for (const run of runs)
    for (const [operation, n] of Object.entries(run.calls)) calls[operation] = (calls[operation] ?? 0) + n;
  return {
    tasks,
    durationMs,
    tasksPerSecond: round((tasks * 1_000) / durationMs, 1),
    agentCpuMsPerTask: round(runs.reduce((sum, r) => sum + r.agentCpuMs, 0) / tasks),
    serverCpuMsPerTask: round(runs.reduce((sum, r) => sum + r.serverCpuMs, 0) / tasks),
    callsPerTask: Object.fromEntries(
      Object.entries(calls)
        .filter(([, n]) => n > 0)
        .map(([operation, n]) => [operation, round(n / tasks, 3)]),
    ),
  };
}
