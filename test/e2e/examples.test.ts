/**
 * The TypeScript examples, run as a user runs them: each file in a process of its own (`node --import tsx`, one
 * process where `npx tsx` starts two), against one local stack over HTTP. Short leases and a sweep every half second,
 * so a killed agent's task comes back within seconds.
 * - `examples/typescript-agent/agent.ts`: killed in the middle of a task, its retry on a new process resumes from the
 *   checkpoint the first one saved; SIGTERM drains the task it runs and the process exits 0.
 * - `examples/workflow/workflow.ts`: the fan-out, the fan-in that gets the parts' results, and the waitpoint
 *   answered through its callback URL, driven by the script's own Worker.
 * (`examples/cdk-app` is synthesized from the packed package by `packages.test.ts`; the Python agent runs in the
 * Python SDK's suite.)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { createTestStack, everyUnlessRunning, serveStack, type TestStack, waitFor } from '#test/stack';

const ROOT = resolve(import.meta.dirname, '../..');
const OPERATOR = 'op_examples-operator';
const LEASE_TTL_SECONDS = 3;

/** An example's process, its output kept as it comes. */
interface Running {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

function runExample(file: string, env: Record<string, string>, args: string[] = []): Running {
  const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { child, output: () => output, exited };
}

describe('the TypeScript examples against a local stack', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;
  let sweeper: NodeJS.Timeout;
  const started: ChildProcess[] = [];

  beforeAll(async () => {
    stack = await createTestStack({
      random: () => 0,
      queues: ['research'],
      // An idle worker claims again within half a second: quick enough here, and fewer claims than the test
      // stacks' usual 20 to 200 ms while the agents wait.
      settings: {
        leaseTtlSeconds: LEASE_TTL_SECONDS,
        heartbeatIntervalSeconds: 1,
        idleClaimRetryBaseMs: 250,
        idleClaimRetryMaxMs: 500,
      },
    });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
    sweeper = everyUnlessRunning(() => stack.scheduler.reclaim(), 500);
  });
  afterAll(async () => {
    for (const child of started) child.kill('SIGKILL');
    clearInterval(sweeper);
    await server?.close();
    await stack?.destroy();
  });

  it('agent.ts: a retry resumes from the checkpoint, and SIGTERM drains then exits 0', async () => {
    const { token } = await operator.createAgent({
      name: 'ts-agent',
      queues: ['research'],
      maxConcurrency: 2,
    });
    const env = { AGENT_SCHEDULER_ENDPOINT: server.url, AGENT_SCHEDULER_TOKEN: token };
    const agent = (): Running => {
      const running = runExample('examples/typescript-agent/agent.ts', env);
      started.push(running.child);
      return running;
    };

    // Twenty sources of 200 ms: the heartbeats (every second) carry the notes while it reads, and the kill comes
    // seconds before the end even when a loaded machine's first heartbeat with notes is late.
    const first = agent();
    const { task } = await operator.submitTask({
      queue: 'research',
      payload: { topic: 'tides', sources: 20 },
    });
    // Read four times a second: the heartbeats carry it once a second.
    const deadline = Date.now() + 20_000;
    while ((await operator.getTask(task.taskId)).checkpoint === undefined) {
      if (Date.now() > deadline) throw new Error(`no checkpoint reached the server:\n${first.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    first.child.kill('SIGKILL');
    await first.exited;

    // Its lease runs out, the sweep queues it again, and a new process takes it up where the notes end.
    const second = agent();
    const resumed = await operator.waitForTask(task.taskId, { timeoutMs: 30_000 });
    expect(resumed.status, second.output()).toBe('succeeded');
    const result = resumed.result as {
      notes: string[];
      resumedFrom: number;
      attempt: number;
      summary: string;
    };
    expect(result.attempt).toBe(2);
    expect(result.resumedFrom).toBeGreaterThan(0);
    expect(result.resumedFrom).toBeLessThan(20);
    expect(result.notes).toHaveLength(20);
    expect(new Set(result.notes).size).toBe(20);
    expect(result.summary).toBe('tides: 20 sources read');

    // SIGTERM while a task runs: the task is finished first, then the process ends by itself.
    const { task: drained } = await operator.submitTask({
      queue: 'research',
      payload: { topic: 'moon', sources: 5 },
    });
    await waitFor(() => second.output().includes(`picked ${drained.taskId}`), 20_000);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(await operator.getTask(drained.taskId)).toMatchObject({
      status: 'succeeded',
      result: { summary: 'moon: 5 sources read', resumedFrom: 0 },
    });
  }, 90_000);

  it('workflow.ts: fan-out, a fan-in given the parts’ results, a waitpoint answered by its callback URL', async () => {
    const workflow = runExample(
      'examples/workflow/workflow.ts',
      { AGENT_SCHEDULER_ENDPOINT: server.url, AGENT_SCHEDULER_TOKEN: OPERATOR },
      ['--json'],
    );
    started.push(workflow.child);
    expect(await workflow.exited, workflow.output()).toBe(0);
    const report = JSON.parse(workflow.output().trim().split('\n').at(-1) ?? '{}') as {
      reviewId: string;
      partIds: string[];
      combineId: string;
      status: string;
      result: unknown;
    };
    // "Tides rise twice a day." 5, "The moon pulls the sea." 5, "Spring tides follow a full moon." 6.
    expect(report).toMatchObject({
      status: 'succeeded',
      result: { words: 16, perPart: [5, 5, 6], published: true, approval: { approvedBy: 'workflow.ts' } },
    });
    expect(report.partIds).toHaveLength(3);

    // What the server holds: the parts and the fan-in are the review's children, the fan-in waited on the parts,
    // and its waitpoint was completed.
    const links = await operator.getTaskLinks(report.combineId);
    expect(links.dependencies.map((d) => [d.taskId, d.status]).sort()).toEqual(
      report.partIds.map((id) => [id, 'succeeded']).sort(),
    );
    const combined = await operator.getTask(report.combineId);
    expect(combined.parentTaskId).toBe(report.reviewId);
    expect(await operator.getWaitpoint(combined.waitpointId ?? '')).toMatchObject({ status: 'completed' });
    // The script revoked the agent it registered.
    expect((await operator.listAgents()).find((a) => a.name === 'workflow-example')?.revokedAt).toBeDefined();
  }, 90_000);
});
