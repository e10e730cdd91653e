/**
 * On time in AWS settings: a task held back (a delay, a retry's backoff, a schedule's fire delivered ahead of its
 * time) reaches an idle agent listening on the push channel within a second of its time. No supervisor pass runs
 * (in AWS it passes once a minute) and the agents' safety poll is a minute: only the wake timer can wake them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalPushSender } from '#local/push-server';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { Worker } from '#sdk/worker';
import { createTestStack, fireAsFunction, serveStack, type TestStack, waitFor } from '#test/stack';

const OPERATOR = 'op_e2e-on-time-operator';
const QUEUE = 'ontime';
const SAFETY_POLL_MS = 60_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('held-back tasks start on time', () => {
  const sender = new LocalPushSender();
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;
  const workers: Worker[] = [];
  /** When each task's attempts started, by task id. */
  const started = new Map<string, number[]>();

  beforeAll(async () => {
    let serverUrl = '';
    stack = await createTestStack({
      queues: [QUEUE],
      push: { sender, url: () => `${serverUrl.replace(/^http/, 'ws')}/v1/push`, timer: true },
      settings: { pushSafetyPollMs: SAFETY_POLL_MS, leaseTtlSeconds: 30, heartbeatIntervalSeconds: 10 },
    });
    server = await serveStack(stack, OPERATOR, { push: sender });
    serverUrl = server.url;
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
    // A fleet of eight: a woken agent is not woken again for a second (`wakeCooldownMs`); with two agents the
    // test would be about the cooldown, not the timer.
    for (let i = 0; i < 8; i++) {
      const { token } = await operator.createAgent({
        name: `on-time-${i}`,
        queues: [QUEUE],
        maxConcurrency: 4,
      });
      const worker = new Worker({
        client: new AgentSchedulerClient({ endpoint: server.url, token }),
        handler: async (task) => {
          started.set(task.taskId, [...(started.get(task.taskId) ?? []), Date.now()]);
          // A retry's first attempt fails: its second waits out the backoff.
          if ((task.payload as { failFirst?: boolean }).failFirst && task.attempt === 1)
            throw new Error('provider answered 429');
          return 'ok';
        },
      });
      workers.push(worker);
      await worker.start();
    }
    // All listening: once idle, every later claim needs a wake (or a poll a minute on).
    await waitFor(() => workers.every((w) => w.listening), 10_000);
    await sleep(300);
  });
  afterAll(async () => {
    await Promise.allSettled(workers.map((worker) => worker.stop({ drain: false })));
    sender.dropAll();
    await server?.close();
    await stack?.destroy();
  });

  it('20 delayed tasks, 2 retries and 5 early schedule fires: p90 of (start - time) at most 1 s', async () => {
    /** Each task and the moment it may start. */
    const due: { taskId: string; at: number; attempt: number; kind: string }[] = [];
    const delayed = async (delaySeconds: number) => {
      const { task } = await operator.submitTask({ queue: QUEUE, payload: {}, delaySeconds });
      due.push({ taskId: task.taskId, at: Date.parse(task.notBefore ?? ''), attempt: 1, kind: 'delay' });
    };
    // One at a time, with delays of 2 to 6 s, and four in one batch: each hint and its wake ride on SQS delays.
    for (let i = 0; i < 16; i++) await delayed(2 + (i % 5));
    const batch = await operator.submitTasks(
      Array.from({ length: 4 }, () => ({ queue: QUEUE, payload: {}, delaySeconds: 3 })),
    );
    for (const entry of batch)
      if (entry.ok)
        due.push({
          taskId: entry.task.taskId,
          at: Date.parse(entry.task.notBefore ?? ''),
          attempt: 1,
          kind: 'batch',
        });
    // Two retries two seconds after their first attempt fails.
    const retries = await Promise.all(
      [0, 1].map(async () => {
        const { task } = await operator.submitTask({
          queue: QUEUE,
          payload: { failFirst: true },
          maxAttempts: 2,
          backoffBaseSeconds: 2,
          backoffMaxSeconds: 2,
        });
        return task.taskId;
      }),
    );
    // Five schedule fires delivered ahead of their time, as an early fire is, a fraction of a second off the
    // second: the task waits for exactly its time.
    for (let i = 0; i < 5; i++) {
      const scheduledTime = Date.now() + 1_300 + i * 470;
      const fired = await fireAsFunction(stack.ctx, {
        schedule: `cron-${i}`,
        scheduledTime: new Date(scheduledTime).toISOString(),
        task: { queue: QUEUE },
      });
      if (fired.taskId) due.push({ taskId: fired.taskId, at: scheduledTime, attempt: 1, kind: 'fire' });
    }
    // Each retry's second attempt is due at the backoff its failure set.
    for (const taskId of retries) {
      await waitFor(async () => {
        const task = await operator.getTask(taskId);
        return task.status === 'queued' && task.attempt === 1 && task.notBefore !== undefined;
      }, 10_000);
      const task = await operator.getTask(taskId);
      due.push({ taskId, at: Date.parse(task.notBefore ?? ''), attempt: 2, kind: 'retry' });
    }
    expect(due).toHaveLength(27);

    await waitFor(() => due.every((d) => (started.get(d.taskId)?.length ?? 0) >= d.attempt), 20_000);
    const lateMs = due.map((d) => (started.get(d.taskId)?.[d.attempt - 1] ?? Number.NaN) - d.at);
    const sorted = [...lateMs].sort((a, b) => a - b);
    const p90 = sorted[Math.ceil(sorted.length * 0.9) - 1] ?? Number.NaN;
    console.info(
      `[timing] held-back starts, ${sorted.length} tasks: p50 ${sorted[Math.floor(sorted.length / 2)]} ms, p90 ${p90} ms, max ${sorted.at(-1)} ms; by kind`,
      JSON.stringify(
        Object.fromEntries(
          ['delay', 'batch', 'retry', 'fire'].map((kind) => [
            kind,
            due.flatMap((d, i) => (d.kind === kind ? [Math.round(lateMs[i] ?? Number.NaN)] : [])),
          ]),
        ),
      ),
    );
    // Never early: a task waits for its time.
    expect(sorted[0]).toBeGreaterThanOrEqual(0);
    expect(p90).toBeLessThanOrEqual(1_000);
  });
});
