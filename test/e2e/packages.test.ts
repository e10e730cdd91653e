/**
 * The packages as a team gets them: packed (which builds them), each installed from its tarball into an empty
 * project, and used there by plain `node`.
 * - `agent-scheduler`, beside aws-cdk-lib and constructs in a CDK project: `examples/cdk-app` (a CommonJS project,
 *   as `npm init -y` and `cdk init` make them) synthesizes offline with the prebuilt functions (no esbuild, no Docker,
 *   no lock file of ours) and the outputs the deploy instructions read, the CLI answers, the SDK is at
 *   `agent-scheduler/sdk` (imported or required), and `agent-scheduler dev` runs the whole stack with its data in the
 *   project, and serves the console's files built at pack time.
 * - `@agent-scheduler/sdk`, alone in an agent's project: no dependency, under 5 MB, and a `Worker` there finishes a
 *   task against that `agent-scheduler dev`.
 * Consumers' TypeScript checks under `moduleResolution: nodenext`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRunning } from '#local/processes';
import { typeCheckConsumer } from '#test/packages';
import { waitFor } from '#test/stack';
import { FUNCTION_ENTRIES } from '../../infra/scheduler-function';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

/** Packs the package at `folder` into `destination`; the tarball's path. */
async function pack(folder: string, destination: string): Promise<string> {
  const { stdout } = await run('npm', ['pack', folder, '--pack-destination', destination, '--silent'], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  return join(destination, stdout.trim().split('\n').at(-1) ?? '');
}

/** An empty ES module project with `packages` installed from the disk only. */
async function projectWith(prefix: string, packages: string[]): Promise<string> {
  const project = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: prefix.replace(/-$/, ''), private: true, type: 'module' }),
  );
  await run('npm', ['install', ...packages, '--offline', '--no-audit', '--no-fund', '--silent'], {
    cwd: project,
  });
  return project;
}

/** Bytes under `dir`, files only. */
function sizeOf(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((sum, entry) => {
    const path = join(dir, entry.name);
    return sum + (entry.isDirectory() ? sizeOf(path) : statSync(path).size);
  }, 0);
}

describe('agent-scheduler and @agent-scheduler/sdk, packed and installed', () => {
  let project: string;
  let agentProject: string;
  let dev: ChildProcess | undefined;

  beforeAll(async () => {
    const tarballs = mkdtempSync(join(tmpdir(), 'tarballs-'));
    const [root, sdk] = await Promise.all([pack(ROOT, tarballs), pack(join(ROOT, 'sdk'), tarballs)]);
    [project, agentProject] = await Promise.all([
      // The peers, as this repository has them (linked, so nothing is fetched).
      projectWith('cdk-consumer-', [
        root,
        join(ROOT, 'node_modules', 'aws-cdk-lib'),
        join(ROOT, 'node_modules', 'constructs'),
      ]),
      projectWith('agent-project-', [sdk]),
    ]);
    rmSync(tarballs, { recursive: true, force: true });
  }, 400_000);
  afterAll(() => {
    dev?.kill('SIGINT');
    for (const folder of [project, agentProject]) {
      if (folder) rmSync(folder, { recursive: true, force: true });
    }
  });

  it('synthesizes examples/cdk-app offline with the prebuilt functions and its outputs, and bundles nothing', async () => {
    // The example as a user copies it: its own package.json (no "type": CommonJS, so its imports become requires),
    // run as its cdk.json says (`tsx bin/app.ts`), the packages found in the project's node_modules above it.
    const app = join(project, 'cdk-app');
    cpSync(join(ROOT, 'examples', 'cdk-app'), app, { recursive: true });
    expect(JSON.parse(readFileSync(join(app, 'cdk.json'), 'utf8'))).toEqual({ app: 'npx tsx bin/app.ts' });
    const tsx = createRequire(join(ROOT, 'package.json')).resolve('tsx');
    await run(process.execPath, ['--import', pathToFileURL(tsx).href, 'bin/app.ts'], {
      cwd: app,
      // What `cdk synth` gives the app; no AWS credentials, nothing fetched.
      env: {
        PATH: process.env.PATH,
        HOME: project,
        CDK_OUTDIR: 'cdk.out',
        CDK_DEFAULT_ACCOUNT: '123456789012',
        CDK_DEFAULT_REGION: 'eu-west-1',
      },
    });

    const out = join(app, 'cdk.out');
    const template = JSON.parse(readFileSync(join(out, 'AgentScheduler.template.json'), 'utf8')) as {
      Resources: Record<
        string,
        { Type: string; Properties: { Handler?: string; Code?: { S3Key?: string } } }
      >;
      Outputs: Record<string, { Value: unknown }>;
    };
    // "After `cdk deploy`" reads ApiUrl from the stack AgentScheduler; PushUrl is the push channel's.
    expect(Object.keys(template.Outputs).sort()).toEqual(['ApiUrl', 'PushUrl']);
    expect(JSON.stringify(template.Outputs.ApiUrl?.Value)).toMatch(/execute-api/);
    const functions = Object.values(template.Resources).filter(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Handler === 'index.handler',
    );
    expect(functions).toHaveLength(FUNCTION_ENTRIES.length);
    const keys = new Set(functions.map((f) => f.Properties.Code?.S3Key));
    expect(keys.size).toBe(FUNCTION_ENTRIES.length);
    const assets = readdirSync(out).filter((name) => name.startsWith('asset.'));
    for (const asset of assets) {
      if (existsSync(join(out, asset, 'index.mjs'))) {
        expect(readFileSync(join(out, asset, 'index.mjs'), 'utf8')).toMatch(/handler/);
        // Source maps only when asked for (`sourceMaps`): the package is packed without them.
        expect(readdirSync(join(out, asset)).filter((name) => name.endsWith('.map'))).toEqual([]);
      }
    }
    const installed = join(project, 'node_modules', 'agent-scheduler', 'dist', 'functions');
    for (const entry of FUNCTION_ENTRIES) expect(readdirSync(join(installed, entry))).toEqual(['index.mjs']);
    expect(existsSync(join(project, 'node_modules', 'esbuild'))).toBe(false);
  }, 120_000);

  it('depends on nothing but its peers', () => {
    const installed = JSON.parse(
      readFileSync(join(project, 'node_modules', 'agent-scheduler', 'package.json'), 'utf8'),
    ) as { dependencies?: object; peerDependencies?: object };
    expect(installed.dependencies ?? {}).toEqual({});
    expect(Object.keys(installed.peerDependencies ?? {}).sort()).toEqual(['aws-cdk-lib', 'constructs']);
  });

  it('the CLI runs from the tarball: --version and submit --help exit 0', async () => {
    const cli = join(project, 'node_modules', '.bin', 'agent-scheduler');
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect((await run(cli, ['--version'], { cwd: project })).stdout.trim()).toBe(version);
    const { stdout } = await run(cli, ['submit', '--help'], { cwd: project });
    expect(stdout).toMatch(/--queue/);
  });

  it('the SDK is at agent-scheduler/sdk, under plain node', async () => {
    const { stdout } = await run(
      'node',
      [
        '--input-type=module',
        '-e',
        "const sdk = await import('agent-scheduler/sdk'); console.log([typeof sdk.Worker, typeof sdk.AgentSchedulerClient, typeof sdk.awsSigV4].join())",
      ],
      { cwd: project },
    );
    expect(stdout.trim()).toBe('function,function,function');
    // Required too, from CommonJS (a fresh `npm init -y` project): Node 20.19 and later load an ES module that way.
    const required = await run(
      'node',
      ['-e', "const sdk = require('agent-scheduler/sdk'); console.log(typeof sdk.Worker)"],
      { cwd: project },
    );
    expect(required.stdout.trim()).toBe('function');
  });

  it('type-checks a consumer of the construct and the SDK, and examples/cdk-app, under moduleResolution nodenext', async () => {
    const checked = await typeCheckConsumer(
      project,
      `import { App, Duration, Stack } from 'aws-cdk-lib';
import { AgentScheduler, type AgentSchedulerProps } from 'agent-scheduler';
import { AgentSchedulerClient, type ClaimedTask, Worker } from 'agent-scheduler/sdk';
const props: AgentSchedulerProps = { queues: ['work'], leaseTtl: Duration.seconds(60) };
export const scheduler = new AgentScheduler(new Stack(new App(), 'S'), 'Scheduler', props);
export const table: string = scheduler.tables.tasks.tableName;
const client = new AgentSchedulerClient({ endpoint: 'http://localhost:3000', token: 'a_x' });
export const worker = new Worker({ client, handler: async (task: ClaimedTask) => ({ ok: task.attempt > 0 }) });
`,
      // Copied by the synth test above: a CommonJS module importing the ES module packages.
      [join('cdk-app', 'bin', 'app.ts')],
    );
    expect(checked).toBe('ok');
  }, 120_000);
  it('@agent-scheduler/sdk installs with no dependency of its own, in well under 5 MB', () => {
    const installed = readdirSync(join(agentProject, 'node_modules'), { withFileTypes: true })
      .filter((e) => !e.name.startsWith('.'))
      .map((e) => e.name);
    expect(installed).toEqual(['@agent-scheduler']);
    expect(sizeOf(join(agentProject, 'node_modules'))).toBeLessThan(5 * 1024 * 1024);
  });

  it('@agent-scheduler/sdk is required from CommonJS too', async () => {
    const { stdout } = await run(
      'node',
      ['-e', "const sdk = require('@agent-scheduler/sdk'); console.log(typeof sdk.AgentSchedulerClient)"],
      { cwd: agentProject },
    );
    expect(stdout.trim()).toBe('function');
  });

  it('agent-scheduler dev runs the stack from the project, and an SDK-only project’s Worker finishes a task', async () => {
    const cli = join(project, 'node_modules', '.bin', 'agent-scheduler');
    const started = performance.now();
    let output = '';
    // DynamoDB Local from this repository's cache: the download is tested on its own.
    const env = { ...process.env, AGENT_SCHEDULER_CACHE_DIR: join(ROOT, '.agent-scheduler', 'emulators') };
    const stack = spawn(cli, ['dev', '--in-memory', '--port', '0', '--queue', 'work'], { cwd: project, env });
    dev = stack;
    stack.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    stack.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const localFile = join(project, '.agent-scheduler', 'local.json');
    await waitFor(() => /is running at/.test(output) && existsSync(localFile), 60_000).catch(
      (error: unknown) => {
        throw new Error(`agent-scheduler dev did not start: ${String(error)}\n${output.slice(-2_000)}`);
      },
    );
    const { endpoint } = JSON.parse(readFileSync(localFile, 'utf8')) as { endpoint: string };
    console.log(
      `[packages] agent-scheduler dev served ${endpoint} ${Math.round(performance.now() - started)} ms after launch`,
    );

    // The console's files were built at pack time: the project has no esbuild to build them with.
    expect(existsSync(join(project, 'node_modules', 'esbuild'))).toBe(false);
    const page = await fetch(`${endpoint}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('/console/app.js');
    const script = await fetch(`${endpoint}/console/app.js`);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await script.arrayBuffer()).byteLength).toBeGreaterThan(1_000);

    // The operator's commands find the stack from the project folder, as a user runs them.
    const json = async (args: string[]) =>
      JSON.parse((await run(cli, [...args, '--json'], { cwd: project })).stdout);
    const { token } = (await json(['agents', 'create', '--name', 'packaged', '--queue', 'work'])) as {
      token: string;
    };
    const { task } = (await json(['submit', '--queue', 'work', '--payload', '{"n":21}'])) as {
      task: { taskId: string };
    };
    writeFileSync(
      join(agentProject, 'worker.mjs'),
      `import { AgentSchedulerClient, Worker } from '@agent-scheduler/sdk';
const client = new AgentSchedulerClient({ endpoint: process.env.ENDPOINT, token: process.env.TOKEN });
const worker = new Worker({ client, handler: async (task) => ({ doubled: task.payload.n * 2 }) });
const done = new Promise((resolve) => worker.on('completed', resolve));
await worker.start();
const finished = await done;
await worker.stop();
console.log(JSON.stringify({ taskId: finished.taskId }));
`,
    );
    const { stdout } = await run('node', ['worker.mjs'], {
      cwd: agentProject,
      env: { ...process.env, ENDPOINT: endpoint, TOKEN: token },
      timeout: 30_000,
    });

    expect(JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}')).toEqual({ taskId: task.taskId });
    expect(await json(['get', task.taskId])).toMatchObject({ status: 'succeeded', result: { doubled: 42 } });

    // Ctrl-C stops it all: the server and DynamoDB Local's JVM.
    const pid = Number(/\(pid (\d+)\)/.exec(output)?.[1]);
    const exited = new Promise((resolve) => stack.once('exit', resolve));
    stack.kill('SIGINT');
    expect(await exited).toBe(0);
    dev = undefined;
    await waitFor(() => !isRunning(pid), 10_000);
  }, 120_000);

  it('@agent-scheduler/sdk type-checks in a consumer under moduleResolution nodenext', async () => {
    const checked = await typeCheckConsumer(
      agentProject,
      `import { AgentSchedulerClient, type ClaimedTask, Worker } from '@agent-scheduler/sdk';
const client = new AgentSchedulerClient({ endpoint: 'http://localhost:8787', token: 'a_x' });
const handler = async (task: ClaimedTask): Promise<{ ok: boolean }> => ({ ok: task.attempt > 0 });
export const worker = new Worker({ client, handler, concurrency: 2 });
`,
    );
    expect(checked).toBe('ok');
  }, 120_000);
});
