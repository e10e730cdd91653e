/**
 * The agent processes of the fleet runs (`run-fleet-chaos.ts`, `bench/run-fleet.ts`): Python
 * (`python/scripts/fleet_agent.py` with `PYTHONPATH=python/src`, on the first Python 3.10 or later on PATH, found as
 * the Python SDK's tests find it) and TypeScript (`fleet-agent.ts` under tsx), each given its endpoint, token,
 * queue, concurrency and log. A process is killed with SIGKILL (the time of the kill is what its handlers' ends are
 * taken to be), or stopped with SIGTERM and waited for, then killed if it outlives the wait.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));

export type Language = 'python' | 'typescript';

/** The first of these on PATH that is Python 3.10 or later (as `test/e2e/python-sdk.test.ts` looks). */
export function findPython(): string | undefined {
  for (const name of ['python3', 'python3.13', 'python3.12', 'python3.11', 'python3.10', 'python']) {
    const probe = spawnSync(name, ['-c', 'import sys; print(sys.version_info >= (3, 10))'], {
      encoding: 'utf8',
    });
    if (probe.status === 0 && probe.stdout.trim() === 'True') return name;
  }
  return undefined;
}

export interface AgentProcessOptions {
  readonly language: Language;
  /** The Python to run a Python agent with (`findPython`). */
  readonly python?: string;
  readonly endpoint: string;
  readonly token: string;
  readonly queue: string;
  readonly concurrency: number;
  readonly logPath: string;
  /** @default 'chaos' */
  readonly workload?: 'chaos' | 'trivial';
  readonly seed: number;
  /** A role to volunteer for. @default none */
  readonly role?: string;
  /** The client's timeout of one attempt. @default 1000 ms */
  readonly timeoutMs?: number;
  /** The Worker starts once this file exists (the process logs `loaded` first). @default at once */
  readonly go?: string;
}

export interface AgentProcess {
  readonly language: Language;
  readonly child: ChildProcess;
  /** Settles with the exit code (null when killed by a signal) once the process has exited. */
  readonly exited: Promise<number | null>;
  /** The last 4 KB it wrote on stderr and stdout. */
  output(): string;
  /** SIGKILL; returns the time of the kill. */
  kill(): number;
  /** SIGTERM, then SIGKILL if it has not exited after `timeoutMs`; whether it exited on its own. */
  stop(timeoutMs: number): Promise<boolean>;
}

export function startAgentProcess(options: AgentProcessOptions): AgentProcess {
  const args = [
    '--endpoint',
    options.endpoint,
    '--token',
    options.token,
    '--queue',
    options.queue,
    '--concurrency',
    String(options.concurrency),
    '--log',
    options.logPath,
    '--workload',
    options.workload ?? 'chaos',
    '--seed',
    String(options.seed),
    '--timeout-ms',
    String(options.timeoutMs ?? 1_000),
    ...(options.role ? ['--role', options.role] : []),
    ...(options.go ? ['--go', options.go] : []),
  ];
  const child =
    options.language === 'python'
      ? spawn(options.python ?? 'python3', ['python/scripts/fleet_agent.py', ...args], {
          cwd: REPO_ROOT,
          env: { ...process.env, PYTHONPATH: 'python/src', PYTHONDONTWRITEBYTECODE: '1' },
          stdio: ['ignore', 'pipe', 'pipe'],
        })
      : spawn(process.execPath, ['--import', 'tsx', 'chaos/fleet-agent.ts', ...args], {
          cwd: REPO_ROOT,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-4_096);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
  });
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  return {
    language: options.language,
    child,
    exited,
    output: () => output,
    kill() {
      if (!gone) child.kill('SIGKILL');
      return Date.now();
    },
    async stop(timeoutMs) {
      if (gone) return true;
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const inTime = await Promise.race([
        exited.then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (!inTime) {
        child.kill('SIGKILL');
        await exited;
      }
      return inTime;
    },
  };
}
