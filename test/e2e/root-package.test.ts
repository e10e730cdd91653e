/**
 * The `agent-scheduler` package as a team gets it: packed (which builds it), installed from its tarball into an
 * empty CDK project beside aws-cdk-lib and constructs, and used there by plain `node`: the construct synthesizes
 * offline with the prebuilt functions (no esbuild, no Docker, no lock file of ours), the CLI answers, the SDK is
 * at `agent-scheduler/sdk`, and a TypeScript consumer checks under `moduleResolution: nodenext`.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { typeCheckConsumer } from '#test/packages';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

describe('agent-scheduler, packed and installed', () => {
  let project: string;

  beforeAll(async () => {
    project = mkdtempSync(join(tmpdir(), 'cdk-consumer-'));
    const { stdout } = await run('npm', ['pack', ROOT, '--pack-destination', project, '--silent'], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
    const tarball = stdout.trim().split('\n').at(-1) ?? '';
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'infra', private: true, type: 'module' }),
    );
    await run(
      'npm',
      [
        'install',
        join(project, tarball),
        // The peers, as this repository has them (linked, so nothing is fetched).
        join(ROOT, 'node_modules', 'aws-cdk-lib'),
        join(ROOT, 'node_modules', 'constructs'),
        '--offline',
        '--no-audit',
        '--no-fund',
        '--silent',
      ],
      { cwd: project },
    );
  }, 400_000);
  afterAll(() => {
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it('synthesizes a CDK app offline with the prebuilt functions, and bundles nothing', async () => {
    writeFileSync(
      join(project, 'app.mjs'),
      `import { App, Stack } from 'aws-cdk-lib';
import { AgentScheduler } from 'agent-scheduler';
const app = new App({ outdir: 'cdk.out' });
const stack = new Stack(app, 'Team', { env: { account: '123456789012', region: 'eu-west-1' } });
new AgentScheduler(stack, 'Scheduler', { queues: ['work'] });
app.synth();
`,
    );
    await run('node', ['app.mjs'], { cwd: project, env: { PATH: process.env.PATH, HOME: project } });

    const template = JSON.parse(readFileSync(join(project, 'cdk.out', 'Team.template.json'), 'utf8')) as {
      Resources: Record<
        string,
        { Type: string; Properties: { Handler?: string; Code?: { S3Key?: string } } }
      >;
    };
    const functions = Object.values(template.Resources).filter(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Handler === 'index.handler',
    );
    expect(functions).toHaveLength(5);
    const keys = new Set(functions.map((f) => f.Properties.Code?.S3Key));
    expect(keys.size).toBe(5);
    const assets = readdirSync(join(project, 'cdk.out')).filter((name) => name.startsWith('asset.'));
    for (const asset of assets) {
      if (existsSync(join(project, 'cdk.out', asset, 'index.mjs'))) {
        expect(readFileSync(join(project, 'cdk.out', asset, 'index.mjs'), 'utf8')).toMatch(/handler/);
      }
    }
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
  });

  it('type-checks a consumer of the construct and the SDK under moduleResolution nodenext', async () => {
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
    );
    expect(checked).toBe('ok');
  }, 120_000);
});
