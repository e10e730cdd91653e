/**
 * BullMQ's test suite (`tests/` of taskforcesh/bullmq: flow, retry/backoff, delay, priority, remove, stalled jobs,
 * concurrency, rate limiter, pause, job ids, events) expressed as a user of agent-scheduler would check the same
 * promises, through the HTTP API and the SDK only, on the local stack (`#test/peer-stack`).
 *
 * Covered, BullMQ's scenario → ours:
 * - flows: a parent waits for its children and gets their return values → `dependsOn`, the claim's `dependencies`;
 *   `failParentOnFailure` → `onDependencyFailure: 'cancel'` (the default), through two levels;
 *   `ignoreDependencyOnFailure` → `onDependencyFailure: 'run'`.
 * - retrying a failed job by hand (`job.retry()`) → `redriveTask`.
 * - retries with fixed and exponential backoff → `backoffBaseSeconds`/`backoffMaxSeconds` (full jitter: this stack
 *   draws every jitter at half its cap, so each delay is exactly half of its cap); a retry is never handed out
 *   before its `notBefore`.
 * - delayed jobs → `delaySeconds`; priorities → `priority` (the stack's draw looks at `critical` first, so the
 *   order is strict here; in general a lower tier gets 5 % of first looks); removing a waiting, delayed or active job
 *   → `cancelTask`.
 * - stalled jobs (a worker dies; the job is taken back and run again; past `maxStalledCount` it fails) → a Worker
 *   cut off the network: its task is finished by another within the lease TTL and a supervisor period, and a task
 *   with `maxAttempts: 1` ends `dead`.
 * - worker and queue concurrency → `Worker.concurrency`, the queue's `maxConcurrency`; the rate limiter → the
 *   queue's `ratePerSecond`/`burst`; pause/resume → `pauseQueue`/`resumeQueue`.
 * - custom job ids (the same id added twice is one job) → `idempotencyKey`, sequential and concurrent.
 * - queue events (waiting, active, completed, failed) → `GET /v1/events` (`task.submitted|claimed|completed|failed`).
 *
 * Not covered, no analogue: sandboxed processors (a handler runs in the agent's own process), job progress and
 * job logs (progress reports are a future issue), manual job fetching with lock tokens (our claim and lease epoch
 * are that API, covered elsewhere), repeatable jobs (schedules: see the Hatchet file), the Redis connection tests.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentSchedulerClient } from '#sdk/client';
import type { ClaimedTask, Task, TaskStatus } from '#sdk/types';
import type { Worker } from '#sdk/worker';
import type { TaskHandler } from '#sdk/worker-events';
import {
  grantedAt,
  LEASE_TTL_SECONDS,
  type PeerStack,
  SUPERVISOR_PERIOD_MS,
  startPeerStack,
} from '#test/peer-stack';
import { waitFor } from '#test/stack';

const QUEUES = [
  'flow',
  'retry',
  'delay',
  'priority',
  'remove',
  'stalled',
  'conc',
  'conc-limited',
  'rate',
  'pause',
  'ids',
  'events',
];

describe('BullMQ scenarios on agent-scheduler', () => {
  let stack: PeerStack;
  let operator: AgentSchedulerClient;

  beforeAll(async () => {
    stack = await startPeerStack(QUEUES, 'op_peers-bullmq');
    operator = stack.operator;
  });
  // Each scenario's workers stop with it, so none of them takes the next scenario's jobs.
  afterEach(() => stack.stopWorkers());
  afterAll(async () => {
    await stack.close();
  });

  const startWorker = async (
    queue: string,
    handler: TaskHandler,
    options: { concurrency?: number; cut?: { value: boolean } } = {},
  ): Promise<Worker> => (await stack.worker([queue], handler, options)).worker;

  const settled = (taskId: string, status: TaskStatus, timeoutMs?: number): Promise<Task> =>
    stack.settled(taskId, status, timeoutMs);

  /** Claims through `client` until one task comes back. */
  async function claimOne(client: AgentSchedulerClient, sessionId: string, timeoutMs = 15_000) {
    let claimed: ClaimedTask | undefined;
    await waitFor(async () => {
      [claimed] = (await client.claim({ sessionId })).tasks;
      return claimed !== undefined;
    }, timeoutMs);
    return claimed as ClaimedTask;
  }

  describe('flows', () => {
    it('a parent waits for all its children and receives their results', async () => {
      const children = await Promise.all(
        [1, 2, 3].map(
          async (n) => (await operator.submitTask({ queue: 'flow', payload: { n } })).task.taskId,
        ),
      );
      const { task: parent } = await operator.submitTask({
        queue: 'flow',
        payload: { parent: true },
        dependsOn: children,
      });
      expect(parent.status).toBe('waiting');

      let parentGrantedAt = 0;
      await startWorker(
        'flow',
        async (task) => {
          const payload = task.payload as { n?: number; parent?: boolean };
          if (!payload.parent) return { value: (payload.n ?? 0) * 10 };
          parentGrantedAt = grantedAt(task);
          const values = Object.values(task.dependencies ?? {}).map(
            (d) => (d.result as { value: number }).value,
          );
          return {
            sum: values.reduce((a, b) => a + b, 0),
            from: Object.keys(task.dependencies ?? {}).sort(),
          };
        },
        { concurrency: 3 },
      );

      const done = await settled(parent.taskId, 'succeeded');
      // On the server's clock: the parent was granted only after the last of its children had succeeded.
      const childrenDone = await Promise.all(children.map((id) => operator.getTask(id)));
      expect(childrenDone.map((c) => c.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
      expect(parentGrantedAt).toBeGreaterThanOrEqual(
        Math.max(...childrenDone.map((c) => Date.parse(c.finishedAt ?? ''))),
      );
      expect(done.result).toEqual({ sum: 60, from: [...children].sort() });
    });

    it('a child that fails for good fails its parent and the parent above it, which never run', async () => {
      const { task: child } = await operator.submitTask({
        queue: 'flow',
        payload: { doomed: true },
        maxAttempts: 1,
      });
      const { task: parent } = await operator.submitTask({
        queue: 'flow',
        payload: {},
        dependsOn: [child.taskId],
      });
      const { task: grandparent } = await operator.submitTask({
        queue: 'flow',
        payload: {},
        dependsOn: [parent.taskId],
      });
      const ran: string[] = [];
      await startWorker('flow', async (task) => {
        ran.push(task.taskId);
        if ((task.payload as { doomed?: boolean }).doomed) throw new Error('child broke');
        return 'ran';
      });

      expect(await settled(child.taskId, 'dead')).toMatchObject({ error: { message: 'child broke' } });
      expect(await settled(parent.taskId, 'cancelled')).toMatchObject({ failedDependency: child.taskId });
      expect(await settled(grandparent.taskId, 'cancelled')).toMatchObject({
        failedDependency: parent.taskId,
      });
      expect(ran).not.toContain(parent.taskId);
      expect(ran).not.toContain(grandparent.taskId);
    });

    it('a parent that ignores its failed child runs with that child’s error', async () => {
      const { task: ok } = await operator.submitTask({ queue: 'flow', payload: { value: 'fine' } });
      const { task: bad } = await operator.submitTask({
        queue: 'flow',
        payload: { doomed: true },
        maxAttempts: 1,
      });
      const { task: parent } = await operator.submitTask({
        queue: 'flow',
        payload: { parent: true },
        dependsOn: [ok.taskId, bad.taskId],
        onDependencyFailure: 'run',
      });
      await startWorker('flow', async (task) => {
        const payload = task.payload as { doomed?: boolean; parent?: boolean; value?: string };
        if (payload.doomed) throw Object.assign(new Error('broken for good'), { retryable: false });
        if (payload.parent) return task.dependencies;
        return payload.value;
      });

      const done = await settled(parent.taskId, 'succeeded');
      expect(done.result).toEqual({
        [ok.taskId]: { status: 'succeeded', result: 'fine' },
        [bad.taskId]: { status: 'dead', error: expect.objectContaining({ message: 'broken for good' }) },
      });
    });
  });

  describe('retries', () => {
    /** Fails every attempt of one task by hand and returns each retry's delay as the server set it. */
    async function retryDelays(spec: { backoffBaseSeconds: number; backoffMaxSeconds: number }) {
      const { client } = await stack.agent(['retry']);
      const { sessionId } = await client.openSession();
      const { task } = await operator.submitTask({ queue: 'retry', payload: {}, maxAttempts: 3, ...spec });
      const delays: number[] = [];
      let claimed = await claimOne(client, sessionId);
      for (let attempt = 1; attempt <= 3; attempt++) {
        expect(claimed).toMatchObject({ taskId: task.taskId, attempt });
        const failed = await client.fail(task.taskId, {
          leaseEpoch: claimed.leaseEpoch,
          error: { message: `attempt ${attempt} failed` },
        });
        if (attempt === 3) {
          expect(failed).toMatchObject({ status: 'dead', attempt: 3 });
          break;
        }
        expect(failed.status).toBe('queued');
        const notBefore = Date.parse(failed.notBefore ?? '');
        delays.push(notBefore - Date.parse(failed.updatedAt));
        claimed = await claimOne(client, sessionId);
        // No retry is handed out before its backoff ends.
        expect(grantedAt(claimed)).toBeGreaterThanOrEqual(notBefore);
        await client.heartbeat({ sessionId });
      }
      return delays;
    }

    it('with a fixed backoff every retry waits the same', async () => {
      expect(await retryDelays({ backoffBaseSeconds: 1, backoffMaxSeconds: 1 })).toEqual([500, 500]);
    });

    it('with an exponential backoff each retry waits twice the one before', async () => {
      expect(await retryDelays({ backoffBaseSeconds: 1, backoffMaxSeconds: 60 })).toEqual([500, 1_000]);
    });

    it('a failed job retried by hand runs again and can succeed', async () => {
      const { task } = await operator.submitTask({ queue: 'retry', payload: {}, maxAttempts: 1 });
      let runs = 0;
      await startWorker('retry', async () => {
        if (++runs === 1) throw new Error('first run fails');
        return 'second run';
      });
      expect(await settled(task.taskId, 'dead')).toMatchObject({ attempt: 1 });
      expect((await operator.redriveTask(task.taskId)).status).toBe('queued');
      expect(await settled(task.taskId, 'succeeded')).toMatchObject({ result: 'second run' });
      expect(runs).toBe(2);
    });

    it('a job that throws is retried until it succeeds, and its attempts are counted', async () => {
      const { task } = await operator.submitTask({
        queue: 'retry',
        payload: {},
        maxAttempts: 3,
        backoffBaseSeconds: 1,
      });
      let runs = 0;
      await startWorker('retry', async () => {
        runs++;
        if (runs < 3) throw new Error(`flaky ${runs}`);
        return 'third time';
      });
      expect(await settled(task.taskId, 'succeeded')).toMatchObject({ attempt: 3, result: 'third time' });
      expect(runs).toBe(3);
    });
  });

  it('a delayed job is not processed before its delay', async () => {
    const submittedAt = Date.now();
    const { task } = await operator.submitTask({ queue: 'delay', payload: {}, delaySeconds: 2 });
    const notBefore = Date.parse(task.notBefore ?? '');
    expect(notBefore - Date.parse(task.createdAt)).toBe(2_000);
    let started: ClaimedTask | undefined;
    await startWorker('delay', async (claimed) => {
      started = claimed;
      return 'late';
    });
    await settled(task.taskId, 'succeeded');
    expect(grantedAt(started as ClaimedTask)).toBeGreaterThanOrEqual(notBefore);
    expect(Date.now() - submittedAt).toBeGreaterThanOrEqual(2_000);
  });

  it('jobs of higher priority are processed first', async () => {
    const tiers = ['low', 'normal', 'high', 'critical'] as const;
    const ids = new Map<string, string>();
    for (const priority of tiers) {
      for (let i = 0; i < 2; i++) {
        const { task } = await operator.submitTask({ queue: 'priority', payload: { priority }, priority });
        ids.set(task.taskId, priority);
      }
    }
    const order: string[] = [];
    await startWorker('priority', async (task) => {
      order.push(String(ids.get(task.taskId)));
      return null;
    });
    await waitFor(() => order.length === 8);
    expect(order).toEqual(['critical', 'critical', 'high', 'high', 'normal', 'normal', 'low', 'low']);
  });

  describe('removing jobs', () => {
    it('a waiting or delayed job removed is never processed', async () => {
      const { task: waiting } = await operator.submitTask({ queue: 'remove', payload: { which: 'waiting' } });
      const { task: delayed } = await operator.submitTask({
        queue: 'remove',
        payload: { which: 'delayed' },
        delaySeconds: 1,
      });
      expect((await operator.cancelTask(waiting.taskId)).status).toBe('cancelled');
      expect((await operator.cancelTask(delayed.taskId)).status).toBe('cancelled');
      const { task: marker } = await operator.submitTask({
        queue: 'remove',
        payload: { which: 'marker' },
        delaySeconds: 2,
      });
      const ran: string[] = [];
      await startWorker('remove', async (task) => {
        ran.push((task.payload as { which: string }).which);
        return null;
      });
      // The marker became claimable after both removed jobs would have: by then either would have run.
      await settled(marker.taskId, 'succeeded');
      expect(ran).toEqual(['marker']);
      expect((await operator.getTask(delayed.taskId)).status).toBe('cancelled');
    });

    it('an active job removed is aborted and stays removed', async () => {
      const { task } = await operator.submitTask({
        queue: 'remove',
        payload: { which: 'active' },
        maxAttempts: 3,
      });
      let aborted = false;
      const started = new Promise<void>((resolve) => {
        void startWorker('remove', (_claimed, { signal }) => {
          resolve();
          return new Promise((_, reject) =>
            signal.addEventListener('abort', () => {
              aborted = true;
              reject(signal.reason);
            }),
          );
        });
      });
      await started;
      expect((await operator.cancelTask(task.taskId)).status).toBe('cancelled');
      await waitFor(() => aborted);
      const after = await operator.getTask(task.taskId);
      expect(after).toMatchObject({ status: 'cancelled', attempt: 1 });
    });
  });

  it('a job whose worker dies is taken back and run again; past its attempts it fails', async () => {
    const cut = { value: false };
    const { task: again } = await operator.submitTask({
      queue: 'stalled',
      payload: { n: 1 },
      maxAttempts: 2,
    });
    const { task: once } = await operator.submitTask({ queue: 'stalled', payload: { n: 2 }, maxAttempts: 1 });
    const picked = new Set<string>();
    const a = await startWorker(
      'stalled',
      async (task) => {
        picked.add(task.taskId);
        return new Promise(() => undefined);
      },
      { concurrency: 2, cut },
    );
    await waitFor(() => picked.size === 2);
    const diedAt = Date.now();
    cut.value = true;

    await startWorker('stalled', async () => 'second worker');

    // The session ends a lease TTL after its last heartbeat; the next supervisor pass takes its tasks back.
    const bound = (LEASE_TTL_SECONDS + 1) * 1_000 + SUPERVISOR_PERIOD_MS + 5_000;
    const finished = await settled(again.taskId, 'succeeded', bound);
    expect(finished).toMatchObject({ result: 'second worker', attempt: 2, leaseEpoch: 2 });
    expect(Date.parse(finished.finishedAt ?? '') - diedAt).toBeLessThanOrEqual(bound);
    expect(await settled(once.taskId, 'dead', bound)).toMatchObject({
      attempt: 1,
      error: { message: 'lease expired (session)' },
    });
    await a.stop({ drain: false, timeoutMs: 500 });
  });

  describe('concurrency', () => {
    it('a worker runs at most its concurrency at once, and uses all of it', async () => {
      const ids = await Promise.all(
        Array.from(
          { length: 8 },
          async () => (await operator.submitTask({ queue: 'conc', payload: {} })).task.taskId,
        ),
      );
      let running = 0;
      let most = 0;
      await startWorker(
        'conc',
        async () => {
          running++;
          most = Math.max(most, running);
          await new Promise((resolve) => setTimeout(resolve, 300));
          running--;
          return null;
        },
        { concurrency: 3 },
      );
      await Promise.all(ids.map((id) => settled(id, 'succeeded')));
      expect(most).toBe(3);
    });

    it('a queue’s concurrency limit holds across workers', async () => {
      await operator.setQueueLimits('conc-limited', { maxConcurrency: 2 });
      const ids = await Promise.all(
        Array.from(
          { length: 8 },
          async () => (await operator.submitTask({ queue: 'conc-limited', payload: {} })).task.taskId,
        ),
      );
      let running = 0;
      let most = 0;
      const handler: TaskHandler = async () => {
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 200));
        running--;
        return null;
      };
      await Promise.all([0, 1, 2].map(() => startWorker('conc-limited', handler, { concurrency: 3 })));
      await Promise.all(ids.map((id) => settled(id, 'succeeded')));
      expect(most).toBeLessThanOrEqual(2);
    });
  });

  it('the rate limiter lets through at most its burst plus its rate over the time passed', async () => {
    await operator.setQueueLimits('rate', { ratePerSecond: 4, burst: 2 });
    const ids = await Promise.all(
      Array.from(
        { length: 6 },
        async () => (await operator.submitTask({ queue: 'rate', payload: {} })).task.taskId,
      ),
    );
    const starts: number[] = [];
    const handler: TaskHandler = async (claimed) => {
      starts.push(grantedAt(claimed));
      return null;
    };
    await Promise.all([0, 1].map(() => startWorker('rate', handler, { concurrency: 4 })));
    // A claim the limit refused hides its hints for a second, so the grants come slower than the rate allows.
    await Promise.all(ids.map((id) => settled(id, 'succeeded', 60_000)));
    starts.sort((x, y) => x - y);
    const first = starts[0] as number;
    // Every prefix of the grants: at most the burst, plus the rate times the seconds since the first.
    for (const [i, at] of starts.entries()) {
      expect(i + 1).toBeLessThanOrEqual(2 + Math.floor(((at - first) / 1_000) * 4) + 1);
    }
    // Six grants at 4 a second with a burst of 2 take 1 s at least (the burst at once, 4 more at 4/s), less a
    // quarter second for the bucket’s clock between two claim functions.
    expect((starts.at(-1) as number) - first).toBeGreaterThanOrEqual(750);
  });

  it('a paused queue hands out nothing until it is resumed', async () => {
    await operator.pauseQueue('pause');
    const { task } = await operator.submitTask({ queue: 'pause', payload: {} });
    const { client } = await stack.agent(['pause']);
    const { sessionId } = await client.openSession();
    for (let i = 0; i < 5; i++) {
      expect((await client.claim({ sessionId })).tasks).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await operator.getTask(task.taskId)).status).toBe('queued');
    await operator.resumeQueue('pause');
    const claimed = await claimOne(client, sessionId);
    expect(claimed.taskId).toBe(task.taskId);
  });

  describe('job ids', () => {
    it('a job added twice with the same id is one job', async () => {
      const first = await operator.submitTask({
        queue: 'ids',
        payload: { v: 1 },
        idempotencyKey: 'order-42',
      });
      const second = await operator.submitTask({
        queue: 'ids',
        payload: { v: 1 },
        idempotencyKey: 'order-42',
      });
      expect(first.created).toBe(true);
      expect(second).toMatchObject({ created: false, task: { taskId: first.task.taskId } });
    });

    it('ten concurrent adds of one id make one job, run once', async () => {
      const answers = await Promise.all(
        Array.from({ length: 10 }, () =>
          operator.submitTask({ queue: 'ids', payload: { v: 2 }, idempotencyKey: 'order-43' }),
        ),
      );
      expect(new Set(answers.map((a) => a.task.taskId)).size).toBe(1);
      expect(answers.filter((a) => a.created)).toHaveLength(1);
      const taskId = answers[0]?.task.taskId as string;
      const runs: string[] = [];
      await startWorker('ids', async (task) => runs.push(task.taskId));
      await settled(taskId, 'succeeded');
      const listed = (await operator.listTasks({ queue: 'ids', limit: 100 })).tasks;
      expect(listed.filter((t) => t.taskId === taskId)).toHaveLength(1);
      expect(runs.filter((id) => id === taskId)).toEqual([taskId]);
    });
  });

  it('emits waiting, active, failed and completed events in order for a job', async () => {
    const { task } = await operator.submitTask({
      queue: 'events',
      payload: {},
      maxAttempts: 2,
      backoffBaseSeconds: 1,
    });
    let runs = 0;
    await startWorker('events', async () => {
      if (++runs === 1) throw new Error('first try');
      return 'ok';
    });
    await settled(task.taskId, 'succeeded');
    await waitFor(async () =>
      (await stack.events()).some((e) => e.type === 'task.completed' && e.taskId === task.taskId),
    );
    const mine = (await stack.events()).filter((e) => e.taskId === task.taskId);
    expect(mine.map((e) => e.type)).toEqual([
      'task.submitted',
      'task.claimed',
      'task.failed',
      'task.claimed',
      'task.completed',
    ]);
    expect(mine.map((e) => (e.data as { attempt?: number } | undefined)?.attempt)).toEqual([
      undefined,
      1,
      1,
      2,
      2,
    ]);
  });
});
