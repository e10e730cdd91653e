/**
 * DynamoDB Local (AWS's own DynamoDB emulator, a Java program) for tests and the local runner.
 *
 * The jar is not a dependency of this project: it is taken from the npm package
 * `amplify-dynamodb-simulator` (folder `package/emulator/`), fetched on first use with `npm pack`,
 * checked against the pinned registry integrity, and cached under `<cache>/dynamodb-local-<version>/` (see
 * `emulatorCacheRoot`).
 *
 * DynamoDB Local has no option to choose the listen address (see `java -jar DynamoDBLocal.jar -help`);
 * its Jetty server listens on all interfaces, with no authentication. Where the JDK can run a Java source file
 * (the `jdk.compiler` module, in every JDK 11+), it is started through `LoopbackDynamoDbLocal.java`, which sets
 * the connector's host to 127.0.0.1 before it starts. With a bare JRE it falls back to `-jar`, listens on every
 * interface, and says so on stderr. Clients always connect through 127.0.0.1.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from './clients';

export const DYNAMODB_LOCAL_PACKAGE = 'amplify-dynamodb-simulator';
export const DYNAMODB_LOCAL_PACKAGE_VERSION = '2.9.30';
/** `dist.integrity` of amplify-dynamodb-simulator@2.9.30 on registry.npmjs.org (bundles DynamoDB Local 1.25.1). */
export const DYNAMODB_LOCAL_PACKAGE_INTEGRITY =
  'sha512-xTeeRLvzEfqyd5lh3bH4c0kHvSHHmmhD5ZDsHFKAQ5g2Zl6JqlFdutaQhCLHzxEp6Ry1o7TB6niIoXuQAnSewQ==';

const JAR = 'DynamoDBLocal.jar';
const NATIVE_LIB_DIR = 'DynamoDBLocal_lib';
const MARKER = '.complete';
const JAVA_HINT = 'DynamoDB Local needs Java 17+ on PATH: apt-get install openjdk-17-jre-headless';
const READY_POLL_MS = 100;
const READY_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 3_000;
const OUTPUT_TAIL_CHARS = 16_384;

/**
 * Parent of every emulator cache directory: `AGENT_SCHEDULER_CACHE_DIR` if set; in this repository
 * `<repo>/.agent-scheduler/emulators`; from the installed package (`agent-scheduler dev`), the user's cache folder,
 * `$XDG_CACHE_HOME/agent-scheduler` or `~/.cache/agent-scheduler`, so every project shares one download.
 */
export function emulatorCacheRoot(
  env: NodeJS.ProcessEnv = process.env,
  // Run from source, this module is a .ts file two folders under the repository; bundled, it is part of dist/.
  fromSource = import.meta.url.endsWith('.ts'),
): string {
  if (env.AGENT_SCHEDULER_CACHE_DIR) return resolve(env.AGENT_SCHEDULER_CACHE_DIR);
  if (fromSource) {
    return join(fileURLToPath(new URL('../../', import.meta.url)), '.agent-scheduler', 'emulators');
  }
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'agent-scheduler');
}

export interface EnsureDynamoDbLocalOptions {
  /** Directory that holds the versioned emulator folder. Defaults to `emulatorCacheRoot()`. */
  cacheRoot?: string;
  /** Progress messages (download, verification, extraction). Silent by default. */
  log?: (message: string) => void;
}

const inFlight = new Map<string, Promise<string>>();

/**
 * Makes sure DynamoDB Local is unpacked in the cache and returns its directory (the one holding
 * `DynamoDBLocal.jar` and `DynamoDBLocal_lib/`). Instant once the cache is complete.
 *
 * Safe to call concurrently, within one process and across processes: each caller extracts into its own
 * temporary directory and publishes it with an atomic rename; a caller that loses the rename race
 * discards its copy and uses the winner's.
 */
export function ensureDynamoDbLocal(options: EnsureDynamoDbLocalOptions = {}): Promise<string> {
  const cacheRoot = resolve(options.cacheRoot ?? emulatorCacheRoot());
  const targetDir = join(cacheRoot, `dynamodb-local-${DYNAMODB_LOCAL_PACKAGE_VERSION}`);
  if (isComplete(targetDir)) return Promise.resolve(targetDir);

  let pending = inFlight.get(targetDir);
  if (!pending) {
    pending = install(cacheRoot, targetDir, options.log ?? (() => {})).finally(() =>
      inFlight.delete(targetDir),
    );
    inFlight.set(targetDir, pending);
  }
  return pending;
}

function isComplete(dir: string): boolean {
  return existsSync(join(dir, MARKER)) && existsSync(join(dir, JAR));
}

async function install(
  cacheRoot: string,
  targetDir: string,
  log: (message: string) => void,
): Promise<string> {
  await mkdir(cacheRoot, { recursive: true });
  const spec = `${DYNAMODB_LOCAL_PACKAGE}@${DYNAMODB_LOCAL_PACKAGE_VERSION}`;
  const downloadDir = await mkdtemp(join(tmpdir(), 'dynamodb-local-pack-'));
  // Same filesystem as targetDir so the final rename is atomic.
  const stagingDir = join(
    cacheRoot,
    `.staging-dynamodb-local-${process.pid}-${randomBytes(4).toString('hex')}`,
  );
  try {
    log(`fetching ${spec} with npm pack`);
    await run(
      npmCommand(),
      ['pack', spec, '--pack-destination', downloadDir, '--ignore-scripts', '--silent'],
      {
        cwd: downloadDir,
      },
    );
    const tarballs = (await readdir(downloadDir)).filter((name) => name.endsWith('.tgz'));
    if (tarballs.length !== 1 || tarballs[0] === undefined) {
      throw new Error(`npm pack ${spec} produced ${tarballs.length} tarballs in ${downloadDir}`);
    }
    const tarball = join(downloadDir, tarballs[0]);

    const actual = await sha512Integrity(tarball);
    if (actual !== DYNAMODB_LOCAL_PACKAGE_INTEGRITY) {
      throw new Error(
        `Integrity mismatch for ${spec}: expected ${DYNAMODB_LOCAL_PACKAGE_INTEGRITY}, got ${actual}. Refusing to use it.`,
      );
    }
    log(`verified ${spec} (${DYNAMODB_LOCAL_PACKAGE_INTEGRITY.slice(0, 20)}...)`);

    await mkdir(stagingDir);
    await run('tar', ['-xzf', tarball, '-C', stagingDir, '--strip-components=2', 'package/emulator'], {});
    if (!existsSync(join(stagingDir, JAR)) || !existsSync(join(stagingDir, NATIVE_LIB_DIR))) {
      throw new Error(`${spec} does not contain package/emulator/${JAR} and ${NATIVE_LIB_DIR}/`);
    }
    await writeFile(
      join(stagingDir, MARKER),
      `${JSON.stringify({ package: spec, integrity: DYNAMODB_LOCAL_PACKAGE_INTEGRITY, extractedAt: new Date().toISOString() })}\n`,
    );

    await publish(stagingDir, targetDir);
    log(`DynamoDB Local ready in ${targetDir}`);
    return targetDir;
  } finally {
    await rm(downloadDir, { recursive: true, force: true });
    await rm(stagingDir, { recursive: true, force: true });
  }
}

/** Atomically moves a complete staging directory into place, tolerating a concurrent winner. */
async function publish(stagingDir: string, targetDir: string): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await rename(stagingDir, targetDir);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'EPERM') throw error;
      if (isComplete(targetDir)) return; // another process got there first
      // Leftover from an interrupted run without the marker: move it aside (atomically) and retry.
      const stale = `${targetDir}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
      try {
        await rename(targetDir, stale);
        await rm(stale, { recursive: true, force: true });
      } catch (moveError) {
        if ((moveError as NodeJS.ErrnoException).code !== 'ENOENT') throw moveError;
      }
    }
  }
  if (!isComplete(targetDir)) throw new Error(`Could not publish DynamoDB Local into ${targetDir}`);
}

async function sha512Integrity(file: string): Promise<string> {
  const hash = createHash('sha512');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return `sha512-${hash.digest('base64')}`;
}

function npmCommand(): string {
  return process.platform === 'win32' ? 'npm.cmd' : 'npm';
}

interface RunResult {
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], options: { cwd?: string }): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      shell: process.platform === 'win32',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolvePromise({ stdout, stderr });
      else
        reject(
          new Error(
            `${command} ${args.join(' ')} failed (${signal ?? `exit ${code}`}): ${stderr.trim() || stdout.trim()}`,
          ),
        );
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// Running the emulator
// ---------------------------------------------------------------------------------------------------------

export interface StartDynamoDbLocalOptions {
  /** TCP port; a free port is picked when omitted. */
  port?: number;
  /** Keep all data in memory (the default unless `dbPath` is given). */
  inMemory?: boolean;
  /** Directory for the SQLite file (`shared-local-instance.db`); implies `inMemory: false`. */
  dbPath?: string;
  /**
   * How long the JVM may take to answer its first request.
   * @default 30 s (about 6 s on two quiet cores)
   */
  readyTimeoutMs?: number;
}

export interface DynamoDbLocal {
  /** e.g. `http://127.0.0.1:41234`. */
  endpoint: string;
  port: number;
  /** The JVM's process id. */
  pid: number;
  /** SIGTERM, then SIGKILL after 3 s; resolves once the JVM has exited. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts DynamoDB Local (`-sharedDb`, telemetry off) and resolves once a `ListTables` call succeeds.
 * The JVM is killed when this process exits.
 */
export async function startDynamoDbLocal(opts: StartDynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  const inMemory = opts.inMemory ?? opts.dbPath === undefined;
  if (inMemory && opts.dbPath !== undefined) {
    throw new Error('startDynamoDbLocal: pass either inMemory: true or dbPath, not both');
  }
  if (!inMemory && opts.dbPath === undefined) {
    throw new Error('startDynamoDbLocal: inMemory: false needs a dbPath');
  }
  const dbPath = opts.dbPath === undefined ? undefined : resolve(opts.dbPath);
  if (dbPath !== undefined) await mkdir(dbPath, { recursive: true });

  const [dir] = await Promise.all([ensureDynamoDbLocal(), assertJava()]);

  if (opts.port !== undefined && !(await isPortFree(opts.port))) {
    // Checked up front: otherwise the readiness probe could be answered by whatever holds the port.
    throw new Error(`startDynamoDbLocal: port ${opts.port} is already in use`);
  }

  // A port picked by us can be taken by someone else before the JVM binds it; retry with a new one.
  const attempts = opts.port === undefined ? 3 : 1;
  for (let attempt = 1; ; attempt++) {
    const port = opts.port ?? (await findFreePort());
    try {
      return await launch(dir, port, dbPath, opts.readyTimeoutMs ?? READY_TIMEOUT_MS);
    } catch (error) {
      if (!(error instanceof PortInUseError) || attempt >= attempts) throw error;
    }
  }
}

class PortInUseError extends Error {}

/** DynamoDB Local does not exit when startup fails (Jetty's threads keep the JVM alive); spot it in the output. */
const FATAL_OUTPUT = /Exception in thread "main"|Failed to bind|BindException/;

const LOOPBACK_LAUNCHER = fileURLToPath(new URL('./LoopbackDynamoDbLocal.java', import.meta.url));

let sourceLauncher: Promise<boolean> | undefined;
/** True when `java` can run a source file (a JDK, not a bare JRE): then DynamoDB Local binds 127.0.0.1 only. */
function canRunJavaSource(): Promise<boolean> {
  sourceLauncher ??= run('java', ['--list-modules'], {}).then(
    (result) => /^jdk\.compiler@/m.test(result.stdout),
    () => false,
  );
  return sourceLauncher;
}

async function launch(
  dir: string,
  port: number,
  dbPath: string | undefined,
  readyTimeoutMs: number,
): Promise<DynamoDbLocal> {
  const loopback = await canRunJavaSource();
  if (!loopback) {
    process.stderr.write(
      `DynamoDB Local listens on every interface of this machine (port ${port}, no authentication): ` +
        'install a JDK (11 or newer) to keep it on 127.0.0.1\n',
    );
  }
  const args = [
    // The client tier of the JIT and one GC thread: on a small machine C2's compiler threads and a parallel
    // collector take the cores the emulator's work needs (the bench ran 35 to 50 % faster on two cores).
    '-XX:TieredStopAtLevel=1',
    '-XX:+UseSerialGC',
    `-Djava.library.path=${join(dir, NATIVE_LIB_DIR)}`,
    // The launcher exits when our end of its stdin closes, so the JVM never outlives this process (kill -9 too).
    ...(loopback ? ['-DexitWhenStdinCloses=true', '-cp', JAR, LOOPBACK_LAUNCHER] : ['-jar', JAR]),
    ...(dbPath === undefined ? ['-inMemory'] : ['-dbPath', dbPath]),
    '-sharedDb',
    '-disableTelemetry',
    '-port',
    String(port),
  ];
  const child = spawn('java', args, { cwd: dir, stdio: [loopback ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  const output = captureOutput(child);
  let spawnError: Error | undefined;
  const exited = new Promise<void>((resolveExit) => {
    child.once('exit', () => resolveExit());
    child.once('error', (error) => {
      spawnError = error;
      resolveExit();
    });
  });
  untilParentExit.add(child);
  void exited.then(() => untilParentExit.delete(child));

  const hasExited = () => spawnError !== undefined || child.exitCode !== null || child.signalCode !== null;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (hasExited()) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      try {
        await exited;
      } finally {
        clearTimeout(timer);
      }
    })();
    return stopping;
  };

  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({
    region: LOCAL_REGION,
    endpoint,
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 1,
  });
  const deadline = Date.now() + readyTimeoutMs;
  let lastError: unknown;
  try {
    for (;;) {
      if (spawnError) throw new Error(`Could not start java: ${describe(spawnError)}. ${JAVA_HINT}`);
      if (hasExited()) {
        throw new Error(
          `DynamoDB Local exited before it was ready (${child.signalCode ?? `exit ${child.exitCode}`}). ` +
            `Output:\n${output.tail()}`,
        );
      }
      if (FATAL_OUTPUT.test(output.tail())) {
        const message = `DynamoDB Local failed to start on port ${port}. Output:\n${output.tail()}`;
        throw /Failed to bind|BindException/.test(output.tail())
          ? new PortInUseError(message)
          : new Error(message);
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Error(
          `DynamoDB Local did not answer ListTables on ${endpoint} within ${readyTimeoutMs} ms ` +
            `(last error: ${describe(lastError)}). Output:\n${output.tail()}`,
        );
      }
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }), {
          abortSignal: AbortSignal.timeout(Math.min(2_000, remaining)),
        });
        return { endpoint, port, pid: child.pid ?? 0, stop };
      } catch (error) {
        lastError = error;
      }
      await sleep(READY_POLL_MS);
    }
  } catch (error) {
    await stop();
    throw error;
  } finally {
    client.destroy();
  }
}

interface OutputTail {
  tail(): string;
}

/** Drains both pipes (so the JVM never blocks on a full pipe) and keeps the last few KiB for errors. */
function captureOutput(child: ChildProcess): OutputTail {
  let buffer = '';
  const append = (chunk: string) => {
    buffer = (buffer + chunk).slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout?.setEncoding('utf8').on('data', append);
  child.stderr?.setEncoding('utf8').on('data', append);
  return { tail: () => buffer.trim() };
}

let javaChecked: Promise<void> | undefined;

/** Throws a clear error unless `java -version` runs and reports Java 17 or newer. */
export function assertJava(): Promise<void> {
  javaChecked ??= (async () => {
    let result: RunResult;
    try {
      result = await run('java', ['-version'], {});
    } catch (error) {
      javaChecked = undefined;
      throw new Error(`${JAVA_HINT} (java -version failed: ${describe(error)})`);
    }
    // `java -version` prints to stderr, e.g. `openjdk version "17.0.15" 2025-04-15` or `"1.8.0_392"`.
    const match = /version "(\d+)(?:\.(\d+))?/.exec(result.stderr + result.stdout);
    if (match?.[1] !== undefined) {
      const major = match[1] === '1' ? Number(match[2]) : Number(match[1]);
      if (major < 17) {
        javaChecked = undefined;
        throw new Error(`${JAVA_HINT} (found Java ${major})`);
      }
    }
  })();
  return javaChecked;
}

/** True when nothing listens on `port` (checked on all interfaces, as DynamoDB Local binds 0.0.0.0). */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolveFree(false));
    server.listen(port, () => server.close(() => resolveFree(true)));
  });
}

/** Asks the OS for a free TCP port on the loopback interface. */
export function findFreePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : undefined;
      server.close(() => (port === undefined ? reject(new Error('No port assigned')) : resolvePort(port)));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolveSleep) => setTimeout(resolveSleep, ms));
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

// ---------------------------------------------------------------------------------------------------------
// Kill running emulators when this process goes away
// ---------------------------------------------------------------------------------------------------------

const untilParentExit = new (class ChildReaper {
  private readonly children = new Set<ChildProcess>();
  private installed = false;

  add(child: ChildProcess): void {
    this.children.add(child);
    this.install();
  }

  delete(child: ChildProcess): void {
    this.children.delete(child);
  }

  private killAll(): void {
    for (const child of this.children) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    this.children.clear();
  }

  private install(): void {
    if (this.installed) return;
    this.installed = true;
    // 'exit' covers normal exit, process.exit() and uncaught exceptions.
    process.once('exit', () => this.killAll());
    // A fatal signal skips 'exit'. Kill the JVMs, then, if nobody else handles the signal,
    // restore the default behaviour by re-raising it. (SIGKILL of this process cannot be handled.)
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      const onSignal = () => {
        this.killAll();
        if (process.listenerCount(signal) === 1) {
          process.removeListener(signal, onSignal);
          process.kill(process.pid, signal);
        }
      };
      process.on(signal, onSignal);
    }
  }
})();
