/**
 * The local stack of the kill -9 run as a process: `local/start.ts` (the server, DynamoDB Local's JVM and the SQS
 * emulator) started in a process group of its own on a data directory and port, and that group killed with
 * SIGKILL.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { isRunning } from '#local/processes';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));

export interface RunningStack {
  readonly child: ChildProcess;
  readonly startMs: number;
  readonly answeredAt: number;
  readonly banner: Promise<{ javaPid: number; restoredHints: number; readyInMs: number; restoreMs: number }>;
  readonly exited: Promise<void>;
}

/** Where and how the stack runs: the same on every start, so a restart finds the data it left. */
export interface StackPlace {
  readonly dataDir: string;
  readonly port: number;
  readonly endpoint: string;
  readonly leaseTtlSeconds: number;
  readonly heartbeatSeconds: number;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) return false;
    await sleep(50);
  }
  return true;
}

/** Starts the stack and waits for its server to answer `/v1/health`; its banner is read as it comes. */
export async function startStack(place: StackPlace): Promise<RunningStack> {
  const spawnedAt = Date.now();
  // A group of its own: one SIGKILL to the group takes the server and DynamoDB Local's JVM with it.
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'local/start.ts',
      '--data-dir',
      place.dataDir,
      '--port',
      String(place.port),
      '--supervisor-seconds',
      '1',
      '--lease-ttl-seconds',
      String(place.leaseTtlSeconds),
      '--heartbeat-seconds',
      String(place.heartbeatSeconds),
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
  while (!gone && answering === 0 && Date.now() - spawnedAt < 120_000) {
    const ok = await fetch(`${place.endpoint}/v1/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) answering = Date.now();
    else await sleep(100);
  }
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
}

/** SIGKILL to the whole group; whether the JVM outlived it. */
export async function killGroup(stack: RunningStack): Promise<boolean> {
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
}

/** A start only to answer one question: does DynamoDB Local outlive its server killed alone? */
export async function jvmOutlivesServer(place: StackPlace): Promise<boolean> {
  const probe = await startStack(place);
  const { javaPid } = await probe.banner;
  probe.child.kill('SIGKILL');
  await probe.exited;
  const stale = javaPid !== 0 && (await waitUntil(() => !isRunning(javaPid), 2_000)) === false;
  await killGroup(probe);
  return stale;
}
