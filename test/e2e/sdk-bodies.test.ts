/**
 * End to end over HTTP, at the sizes agents produce: results of tens of KB finishing together, and many tasks
 * checkpointing near the limit at once. Every call must fit the server's body limit, and no task may die of a
 * refusal meant for a group.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { Worker } from '#sdk/worker';
import { createTestStack, everyUnlessRunning, serveStack, type TestStack, waitFor } from '#test/stack';

const OPERATOR = 'op_e2e-operator-token';
// Long enough that a heartbeat carrying 19 checkpoints of 15 KB lands within one interval on a loaded machine.
const LEASE_TTL_SECONDS = 6;

describe('SDK Worker end to end at agent sizes', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;
  let sweeper: NodeJS.Timeout;

  beforeAll(async () => {
    stack = await createTestStack({
      random: () => 0,
      queues: ['results', 'checkpoints'],
      settings: { leaseTtlSeconds: LEASE_TTL_SECONDS, heartbeatIntervalSeconds: 2 },
    });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
    sweeper = everyUnlessRunning(() => stack.scheduler.reclaim(), 1_000);
  });
  afterAll(async () => {
    clearInterval(sweeper);
    await server.close();
    await stack.destroy();
  });

  async function agentWorker(
    queue: string,
    concurrency: number,
    handler: ConstructorParameters<typeof Worker>[0]['handler'],
  ) {
    const { token } = await operator.createAgent({
      name: `e2e-${queue}`,
      queues: [queue],
      maxConcurrency: concurrency,
    });
    const worker = new Worker({
      client: new AgentSchedulerClient({ endpoint: server.url, token }),
      handler,
      concurrency,
      pollIntervalMs: { min: 20, max: 100 },
    });
    const events = {
      completed: 0,
      failed: [] as unknown[],
      lost: [] as string[],
      sessionsLost: 0,
      errors: [] as string[],
    };
    worker.on('error', (error) =>
      events.errors.push(`${Date.now()} ${String(error)} ${String((error as Error).cause ?? '')}`),
    );
    worker.on('completed', () => events.completed++);
    worker.on('failed', (_task, error) => events.failed.push(error));
    worker.on('lost', (task, reason) => events.lost.push(`${task.taskId}: ${reason}`));
    worker.on('sessionLost', () => events.sessionsLost++);
    return { worker, events };
  }

  it('eight handlers returning 60 KB each at the same moment all succeed', async () => {
    const ids = await Promise.all(
      Array.from(
        { length: 8 },
        async (_, i) => (await operator.submitTask({ queue: 'results', payload: { i } })).task.taskId,
      ),
    );
    // Every handler returns once all eight run: their completions finish together and go in groups.
    let running = 0;
    let allRunning: () => void = () => undefined;
    const together = new Promise<void>((resolve) => (allRunning = resolve));
    const { worker, events } = await agentWorker('results', 8, async (task) => {
      if (++running === 8) allRunning();
      await together;
      return { taskId: task.taskId, text: 'r'.repeat(60 * 1024) };
    });
    await worker.start();
    await waitFor(() => events.completed + events.failed.length === 8, 30_000);
    await worker.stop();

    expect(events.failed).toEqual([]);
    for (const taskId of ids) {
      const task = await operator.getTask(taskId);
      expect(task.status).toBe('succeeded');
      expect(task.result).toEqual({ taskId, text: 'r'.repeat(60 * 1024) });
    }
  });

  it('25 tasks checkpointing 15 KB at once all succeed at their first attempt; the session never lapses', async () => {
    const ids = await Promise.all(
      Array.from(
        { length: 25 },
        async (_, i) => (await operator.submitTask({ queue: 'checkpoints', payload: { i } })).task.taskId,
      ),
    );
    const { worker, events } = await agentWorker('checkpoints', 25, async (task, context) => {
      context.checkpoint({ taskId: task.taskId, notes: 'n'.repeat(15 * 1024) });
      // Run longer than a lease: only heartbeats carrying these checkpoints keep the session alive meanwhile.
      await new Promise((resolve) => setTimeout(resolve, (LEASE_TTL_SECONDS + 2) * 1_000));
      return 'done';
    });
    await worker.start();
    await waitFor(() => events.completed + events.failed.length + events.lost.length >= 25, 60_000);
    await worker.stop();

    expect({ lost: events.lost, errors: events.errors }).toEqual({ lost: [], errors: [] });
    expect(events.failed).toEqual([]);
    expect(events.sessionsLost).toBe(0);
    for (const taskId of ids) {
      const task = await operator.getTask(taskId);
      expect(task).toMatchObject({ status: 'succeeded', attempt: 1 });
    }
  });
});
