/**
 * The SDK as a user gets it: packed, installed from its tarball into an empty project, and run there by plain
 * `node` (no tsx) against the local server; a consumer's TypeScript checks under `moduleResolution: nodenext`.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { typeCheckConsumer } from '#test/packages';
import { createTestStack, serveStack, type TestStack } from '#test/stack';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const OPERATOR = 'op_e2e-sdk-package';

/** Bytes under `dir`, files only. */
function sizeOf(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((sum, entry) => {
    const path = join(dir, entry.name);
    return sum + (entry.isDirectory() ? sizeOf(path) : statSync(path).size);
  }, 0);
}

describe('@agent-scheduler/sdk, packed and installed', () => {
  let stack: TestStack;
  let server: LocalServer;
  let project: string;

  beforeAll(async () => {
    stack = await createTestStack();
    server = await serveStack(stack, OPERATOR);
    project = mkdtempSync(join(tmpdir(), 'sdk-consumer-'));
    const { stdout } = await run(
      'npm',
      ['pack', join(ROOT, 'sdk'), '--pack-destination', project, '--silent'],
      {
        cwd: ROOT,
      },
    );
    const tarball = stdout.trim().split('\n').at(-1) ?? '';
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    );
    await run(
      'npm',
      ['install', join(project, tarball), '--offline', '--no-audit', '--no-fund', '--silent'],
      {
        cwd: project,
      },
    );
  }, 120_000);
  afterAll(async () => {
    await server.close();
    await stack.destroy();
    rmSync(project, { recursive: true, force: true });
  });

  it('installs with no dependency of its own, in well under 5 MB', () => {
    const installed = readdirSync(join(project, 'node_modules'), { withFileTypes: true })
      .filter((e) => !e.name.startsWith('.'))
      .map((e) => e.name);
    expect(installed).toEqual(['@agent-scheduler']);
    expect(sizeOf(join(project, 'node_modules'))).toBeLessThan(5 * 1024 * 1024);
  });

  it('runs a Worker under plain node that finishes a task', async () => {
    const operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
    const { token } = await operator.createAgent({ name: 'packaged', queues: ['work'] });
    const { task } = await operator.submitTask({ queue: 'work', payload: { n: 21 } });
    writeFileSync(
      join(project, 'worker.mjs'),
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
      cwd: project,
      env: { ...process.env, ENDPOINT: server.url, TOKEN: token ?? '' },
      timeout: 30_000,
    });

    expect(JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}')).toEqual({ taskId: task.taskId });
    expect(await operator.getTask(task.taskId)).toMatchObject({
      status: 'succeeded',
      result: { doubled: 42 },
    });
  });

  it('type-checks a consumer under moduleResolution nodenext', async () => {
    const checked = await typeCheckConsumer(
      project,
      `import { AgentSchedulerClient, type ClaimedTask, Worker } from '@agent-scheduler/sdk';
const client = new AgentSchedulerClient({ endpoint: 'http://localhost:8787', token: 'a_x' });
const handler = async (task: ClaimedTask): Promise<{ ok: boolean }> => ({ ok: task.attempt > 0 });
export const worker = new Worker({ client, handler, concurrency: 2 });
`,
    );
    expect(checked).toBe('ok');
  });
});
