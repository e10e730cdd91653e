/**
 * Hatchet's e2e examples (`sdks/python/examples/**\/test_*.py` and `sdks/typescript/src/v1/examples/**\/*.e2e.ts`
 * of hatchet-dev/hatchet) expressed as a user of agent-scheduler would check the same promises, through the HTTP
 * API and the SDK only, on the local stack (`#test/peer-stack`, supervisor every second, 10-second leases).
 *
 * Covered, Hatchet's example → ours:
 * - timeout (execution timeout): an attempt past its `timeoutSeconds` is stopped (the Worker aborts its handler)
 *   and taken back by the server within the supervisor period + 5 s of its deadline, then retried.
 * - retries / non_retryable: retried to `maxAttempts`, then `dead`; an error with `retryable: false` is not retried
 *   while another error in the same run is.
 * - on_failure: `onFailure` runs once the task is dead, carrying its id and error (`failureOf`).
 * - dag: steps get their parents' outputs (`dependsOn`, the claim's `dependencies`).
 * - fanout / child spawning: a task spawns children (`context.submit`) and a join child collects their results;
 *   children carry their parent and root; a parent run again gets the same children back (durable child keys).
 * - cancellation: a running step cancelled is aborted, and the steps after it are cancelled.
 * - concurrency_limit_rr / multiple keys: `concurrencyKey` + `perKeyConcurrency`: at most the limit of a key runs,
 *   and a key submitted behind another's backlog is served before that backlog is done.
 * - delayed / scheduled / cron: `delaySeconds` (see the BullMQ file), a one-time `at()` schedule fires one task at
 *   its time, a `cron()` schedule's next fires follow its expression.
 * - runtime_affinity / sticky (worker labels): a task goes only to an agent serving its queue.
 * - idempotency / dedupe: the same key gives back the same run, finished or not, and never runs it again.
 * - worker_pause_on_sigterm / worker_shutdown_no_premature_reassignment: a Worker stopping (as on SIGTERM) claims
 *   nothing more and finishes what it runs, which is not handed to another meanwhile.
 *
 * Not covered, no analogue: refreshing a running task's timeout (`refresh_timeout`: an attempt's deadline is fixed
 * at its grant), durable tasks and their event waits, waits for a person (a future issue), streaming and progress
 * (future issues), concurrency strategies that cancel the newest or in-progress runs (`cancel_in_progress`,
 * `cancel_newest`), worker labels with weights, webhooks, bulk replay, priority within a key, lifespans and
 * dependency injection (SDK-side Python features).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentSchedulerClient } from '#sdk/client';
import type { ClaimedTask, Task, TaskStatus } from '#sdk/types';
import type { Worker } from '#sdk/worker';
import type { TaskHandler } from '#sdk/worker-events';
import { grantedAt, type PeerStack, SUPERVISOR_PERIOD_MS, startPeerStack } from '#test/peer-stack';
import { waitFor } from '#test/stack';

const QUEUES = [
  'timeout',
  'retry',
  'onfail',
  'onfail-hook',
  'dag',
  'fanout',
  'cancel',
  'keys',
  'sched',
  'gpu',
  'cpu',
  'dedupe',
  'shutdown',
];

describe('Hatchet scenarios on agent-scheduler', () => {
  let stack: PeerStack;
  let operator: AgentSchedulerClient;

  beforeAll(async () => {
    // Leases of 10 s: no scenario here kills an agent, and a session that a loaded machine lets lapse must not
    // stand in for the deadline the timeout scenario is about.
    stack = await startPeerStack(QUEUES, 'op_peers-hatchet', { leaseTtlSeconds: 10 });
    operator = stack.operator;
  });
  afterEach(() => stack.stopWorkers());
  afterAll(async () => {
    await stack.close();
  });

  const startWorker = (
    queues: readonly string[],
    handler: TaskHandler,
    concurrency = 1,
    /** Runs before the worker starts: listeners that must hear its first claims. */
    before: (worker: Worker) => void = () => undefined,
  ) => stack.worker(queues, handler, { concurrency, before });

  const settled = (taskId: string, status: TaskStatus, timeoutMs?: number): Promise<Task> =>
    stack.settled(taskId, status, timeoutMs);

  it('a task past its execution timeout is stopped, taken back within the supervisor period + 5 s, and retried', async () => {
    const { task } = await operator.submitTask({
      queue: 'timeout',
      payload: {},
      timeoutSeconds: 2,
      maxAttempts: 2,
      backoffBaseSeconds: 1,
      backoffMaxSeconds: 1,
    });
    const attempts: ClaimedTask[] = [];
    const lost: string[] = [];
    await startWorker(
      ['timeout'],
      (claimed, { signal }) => {
        attempts.push(claimed);
        if (claimed.attempt === 2) return Promise.resolve('in time');
        // The first attempt hangs until it is stopped.
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      },
      2,
      (worker) => worker.on('lost', (_t, reason) => lost.push(reason)),
    );

    const done = await settled(task.taskId, 'succeeded', 30_000);
    const [first, second] = attempts as [ClaimedTask, ClaimedTask];
    expect(lost).toContain('deadline');
    expect(done).toMatchObject({ attempt: 2, result: 'in time' });
    // Taken back within the period + 5 s of its deadline (the server's `task.lost`), and run again only after that.
    const lostEvent = (await stack.events()).find((e) => e.type === 'task.lost' && e.taskId === task.taskId);
    expect(lostEvent?.data).toMatchObject({ reason: 'deadline' });
    const takenBackAt = Date.parse(String(lostEvent?.time));
    expect(takenBackAt).toBeGreaterThanOrEqual(Date.parse(first.leaseDeadline));
    expect(takenBackAt - Date.parse(first.leaseDeadline)).toBeLessThanOrEqual(SUPERVISOR_PERIOD_MS + 5_000);
    expect(grantedAt(second)).toBeGreaterThanOrEqual(takenBackAt);
  });

  describe('retries', () => {
    it('a task that always fails runs exactly its attempts, then is dead with its last error', async () => {
      const { task } = await operator.submitTask({
        queue: 'retry',
        payload: {},
        maxAttempts: 3,
        backoffBaseSeconds: 1,
      });
      let runs = 0;
      await startWorker(['retry'], async () => {
        throw new Error(`failure ${++runs}`);
      });
      expect(await settled(task.taskId, 'dead')).toMatchObject({
        attempt: 3,
        error: { message: 'failure 3', retryable: true },
      });
      expect(runs).toBe(3);
    });

    it('a non-retryable error is not retried, while another error of the same run is', async () => {
      const { task: permanent } = await operator.submitTask({
        queue: 'retry',
        payload: { permanent: true },
        maxAttempts: 3,
        backoffBaseSeconds: 1,
      });
      const { task: transient } = await operator.submitTask({
        queue: 'retry',
        payload: { permanent: false },
        maxAttempts: 2,
        backoffBaseSeconds: 1,
      });
      const runs = new Map<string, number>();
      await startWorker(
        ['retry'],
        async (claimed) => {
          runs.set(claimed.taskId, (runs.get(claimed.taskId) ?? 0) + 1);
          if ((claimed.payload as { permanent: boolean }).permanent) {
            throw Object.assign(new Error('this task should not retry'), { retryable: false });
          }
          throw new Error('this task should retry');
        },
        2,
      );
      expect(await settled(permanent.taskId, 'dead')).toMatchObject({
        attempt: 1,
        error: { message: 'this task should not retry', retryable: false },
      });
      expect(await settled(transient.taskId, 'dead')).toMatchObject({ attempt: 2 });
      expect(runs.get(permanent.taskId)).toBe(1);
      expect(runs.get(transient.taskId)).toBe(2);
      const failures = (await stack.events()).filter((e) => e.type === 'task.failed');
      expect(failures.filter((e) => e.taskId === permanent.taskId)).toHaveLength(1);
      expect(failures.filter((e) => e.taskId === transient.taskId)).toHaveLength(2);
    });
  });

  it('the on-failure task runs once its task is dead, with that task’s id and error', async () => {
    const { task } = await operator.submitTask({
      queue: 'onfail',
      payload: {},
      maxAttempts: 1,
      onFailure: { queue: 'onfail-hook', payload: { notify: 'ops' } },
    });
    await startWorker(['onfail', 'onfail-hook'], async (claimed) => {
      if (claimed.queue === 'onfail') throw new Error('step1 failed');
      return { handled: claimed.failureOf, payload: claimed.payload };
    });
    const dead = await settled(task.taskId, 'dead');
    expect(dead.onFailureTaskId).toBeDefined();
    // Named in advance: it exists once the death's follow-up is submitted (by the failing call, or the supervisor).
    await waitFor(
      async () => (await operator.getTask(dead.onFailureTaskId as string).catch(() => null)) !== null,
    );
    const hook = await settled(dead.onFailureTaskId as string, 'succeeded');
    expect(hook).toMatchObject({
      queue: 'onfail-hook',
      failureOf: { taskId: task.taskId },
      result: {
        handled: { taskId: task.taskId, error: expect.objectContaining({ message: 'step1 failed' }) },
        payload: { notify: 'ops' },
      },
    });
    const hooks = (await operator.listTasks({ queue: 'onfail-hook', limit: 100 })).tasks;
    expect(hooks).toHaveLength(1);
  });

  it('a DAG’s steps receive their parents’ outputs', async () => {
    const step1 = (await operator.submitTask({ queue: 'dag', payload: { step: 1 } })).task.taskId;
    const step2 = (await operator.submitTask({ queue: 'dag', payload: { step: 2 } })).task.taskId;
    const step3 = (
      await operator.submitTask({ queue: 'dag', payload: { step: 3 }, dependsOn: [step1, step2] })
    ).task.taskId;
    const step4 = (
      await operator.submitTask({ queue: 'dag', payload: { step: 4 }, dependsOn: [step1, step3] })
    ).task.taskId;
    const numbers = new Map<number, number>();
    await startWorker(
      ['dag'],
      async (claimed) => {
        const { step } = claimed.payload as { step: number };
        const deps = claimed.dependencies ?? {};
        if (step <= 2) {
          const n = Math.floor(Math.random() * 100) + step * 1_000;
          numbers.set(step, n);
          return { randomNumber: n };
        }
        if (step === 3) {
          const sum = [step1, step2].reduce(
            (s, id) =>
              s + ((deps[id]?.result as { randomNumber: number } | undefined)?.randomNumber ?? Number.NaN),
            0,
          );
          return { sum };
        }
        return {
          step4: 'step4',
          sawSum: (deps[step3]?.result as { sum: number } | undefined)?.sum,
          deps: Object.keys(deps).sort(),
        };
      },
      2,
    );
    const three = await settled(step3, 'succeeded');
    const four = await settled(step4, 'succeeded');
    expect(three.result).toEqual({ sum: (numbers.get(1) ?? 0) + (numbers.get(2) ?? 0) });
    expect(four.result).toEqual({
      step4: 'step4',
      sawSum: (three.result as { sum: number }).sum,
      deps: [step1, step3].sort(),
    });
  });

  it('a task spawns children and a join collects their results; a parent run again gets the same children', async () => {
    const { task: parent } = await operator.submitTask({
      queue: 'fanout',
      payload: { n: 3 },
      maxAttempts: 2,
      backoffBaseSeconds: 1,
    });
    const spawned: string[][] = [];
    await startWorker(
      ['fanout'],
      async (claimed, context) => {
        const payload = claimed.payload as { n?: number; i?: number; join?: boolean };
        if (payload.i !== undefined) return { child: payload.i, squared: payload.i * payload.i };
        if (payload.join) {
          return Object.values(claimed.dependencies ?? {})
            .map((d) => (d.result as { squared: number }).squared)
            .sort((a, b) => a - b);
        }
        const n = payload.n ?? 0;
        const children = await context.submit(
          Array.from({ length: n }, (_, i) => ({
            key: `child-${i}`,
            queue: 'fanout',
            payload: { i: i + 1 },
          })),
        );
        const ids = children.map((c) => (c.ok ? c.task.taskId : 'refused'));
        const [join] = await context.submit([
          { key: 'join', queue: 'fanout', payload: { join: true }, dependsOn: ids },
        ]);
        spawned.push([...ids, join?.ok ? join.task.taskId : 'refused']);
        // The first run fails after spawning: its retry must find the same children, not make more.
        if (claimed.attempt === 1) throw new Error('parent crashed after spawning');
        return { spawned: ids.length };
      },
      4,
    );
    await settled(parent.taskId, 'succeeded');
    expect(spawned).toHaveLength(2);
    expect(spawned[1]).toEqual(spawned[0]);
    const joinId = spawned[0]?.at(-1) as string;
    const join = await settled(joinId, 'succeeded');
    expect(join).toMatchObject({ result: [1, 4, 9], parentTaskId: parent.taskId, rootTaskId: parent.taskId });
    const children = (await operator.listTasks({ queue: 'fanout', limit: 100 })).tasks.filter(
      (t) => t.parentTaskId === parent.taskId,
    );
    expect(children).toHaveLength(4);
    expect(children.every((c) => c.rootTaskId === parent.taskId)).toBe(true);
  });

  it('cancelling a running step aborts it and cancels the steps after it', async () => {
    const { task: first } = await operator.submitTask({ queue: 'cancel', payload: { first: true } });
    const { task: after } = await operator.submitTask({
      queue: 'cancel',
      payload: {},
      dependsOn: [first.taskId],
    });
    let ranAfter = false;
    let started = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const { worker } = await startWorker(['cancel'], (claimed, { signal }) => {
      if (!(claimed.payload as { first?: boolean }).first) {
        ranAfter = true;
        return Promise.resolve(null);
      }
      started();
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    });
    const lost = new Promise<string>((resolve) => worker.once('lost', (_t, reason) => resolve(reason)));
    await running;
    await operator.cancelTask(first.taskId);
    expect(await lost).toBe('cancelled');
    expect(await settled(after.taskId, 'cancelled')).toMatchObject({ failedDependency: first.taskId });
    expect((await operator.getTask(first.taskId)).status).toBe('cancelled');
    expect(ranAfter).toBe(false);
  });

  it('a key’s runs are limited, and a key behind another’s backlog is served before that backlog ends', async () => {
    await operator.setQueueLimits('keys', { perKeyConcurrency: 1 });
    const backlog: string[] = [];
    for (let i = 0; i < 6; i++) {
      backlog.push(
        (await operator.submitTask({ queue: 'keys', payload: { i }, concurrencyKey: 'tenant-a' })).task
          .taskId,
      );
    }
    const late: string[] = [];
    for (let i = 0; i < 2; i++) {
      late.push(
        (await operator.submitTask({ queue: 'keys', payload: { i }, concurrencyKey: 'tenant-b' })).task
          .taskId,
      );
    }
    const running = new Map<string, number>();
    const most = new Map<string, number>();
    const grants = new Map<string, number>();
    await startWorker(
      ['keys'],
      async (claimed) => {
        const key = backlog.includes(claimed.taskId) ? 'tenant-a' : 'tenant-b';
        grants.set(claimed.taskId, grantedAt(claimed));
        running.set(key, (running.get(key) ?? 0) + 1);
        most.set(key, Math.max(most.get(key) ?? 0, running.get(key) ?? 0));
        await new Promise((resolve) => setTimeout(resolve, 60));
        running.set(key, (running.get(key) ?? 0) - 1);
        return null;
      },
      4,
    );
    await Promise.all([...backlog, ...late].map((id) => settled(id, 'succeeded', 30_000)));
    expect(most.get('tenant-a')).toBe(1);
    expect(most.get('tenant-b')).toBe(1);
    const lastOfBacklog = Math.max(...backlog.map((id) => grants.get(id) ?? 0));
    expect(Math.max(...late.map((id) => grants.get(id) ?? 0))).toBeLessThan(lastOfBacklog);
  });

  describe('scheduled and cron runs', () => {
    it('a run scheduled at a moment is created once, at that moment, and runs', async () => {
      const at = new Date(Math.ceil((Date.now() + 2_000) / 1_000) * 1_000);
      const expression = `at(${at.toISOString().slice(0, 19)})`;
      await operator.createSchedule({
        name: 'once',
        expression,
        task: { queue: 'sched', payload: { when: 'once' } },
      });
      const ran: ClaimedTask[] = [];
      await startWorker(['sched'], async (claimed) => {
        ran.push(claimed);
        return 'scheduled';
      });
      await waitFor(async () => (await operator.listOccurrences('once')).length === 1, 10_000);
      const [occurrence] = await operator.listOccurrences('once');
      expect(occurrence).toMatchObject({ status: 'fired', scheduledTime: at.toISOString() });
      const task = await settled(occurrence?.taskId as string, 'succeeded');
      expect(Date.parse(task.createdAt)).toBeGreaterThanOrEqual(at.getTime());
      expect(grantedAt(ran[0] as ClaimedTask)).toBeGreaterThanOrEqual(at.getTime());
      expect(ran.map((c) => c.taskId)).toEqual([task.taskId]);
    });

    it('a cron schedule’s next runs follow its expression', async () => {
      const schedule = await operator.createSchedule({
        name: 'every-5-min',
        expression: 'cron(0/5 * * * ? *)',
        task: { queue: 'sched', payload: {} },
      });
      expect(schedule.nextFires).toHaveLength(5);
      const fires = schedule.nextFires.map((iso) => Date.parse(iso));
      for (const [i, fire] of fires.entries()) {
        expect(fire % (5 * 60_000)).toBe(0);
        if (i > 0) expect(fire - (fires[i - 1] as number)).toBe(5 * 60_000);
      }
      expect((fires[0] as number) - Date.now()).toBeLessThanOrEqual(5 * 60_000);
      await operator.deleteSchedule('every-5-min');
    });
  });

  it('tasks go only to agents serving their queue', async () => {
    const gpuIds: string[] = [];
    const cpuIds: string[] = [];
    for (let i = 0; i < 4; i++) {
      gpuIds.push((await operator.submitTask({ queue: 'gpu', payload: { i } })).task.taskId);
      cpuIds.push((await operator.submitTask({ queue: 'cpu', payload: { i } })).task.taskId);
    }
    const ranOn = new Map<string, string>();
    const gpu = await startWorker(['gpu'], async (c) => ranOn.set(c.taskId, 'gpu').size, 2);
    const cpu = await startWorker(['cpu'], async (c) => ranOn.set(c.taskId, 'cpu').size, 2);
    await Promise.all([...gpuIds, ...cpuIds].map((id) => settled(id, 'succeeded')));
    expect(gpuIds.map((id) => ranOn.get(id))).toEqual(['gpu', 'gpu', 'gpu', 'gpu']);
    expect(cpuIds.map((id) => ranOn.get(id))).toEqual(['cpu', 'cpu', 'cpu', 'cpu']);
    const owners = await Promise.all(gpuIds.map(async (id) => (await operator.getTask(id)).owner));
    expect(new Set(owners)).toEqual(new Set([gpu.agentId]));
    expect(cpu.agentId).not.toBe(gpu.agentId);
  });

  it('a stopping worker claims nothing more and finishes its running task, which no one else is given', async () => {
    const { task: running } = await operator.submitTask({ queue: 'shutdown', payload: { n: 1 } });
    let finish = () => {};
    const ran: string[] = [];
    const { worker } = await startWorker(['shutdown'], (claimed) => {
      ran.push(claimed.taskId);
      return new Promise((resolve) => {
        finish = () => resolve('finished while stopping');
      });
    });
    await waitFor(() => ran.length === 1);
    const stopped = worker.stop();
    const { task: queued } = await operator.submitTask({ queue: 'shutdown', payload: { n: 2 } });
    // Longer than a claim poll and a heartbeat: a worker still claiming would have taken it by now.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await operator.getTask(running.taskId)).status).toBe('leased');
    finish();
    await stopped;
    expect(await operator.getTask(running.taskId)).toMatchObject({
      status: 'succeeded',
      attempt: 1,
      result: 'finished while stopping',
    });
    expect(ran).toEqual([running.taskId]);
    expect((await operator.getTask(queued.taskId)).status).toBe('queued');
  });

  it('the same idempotency key gives back the same run, before and after it finished, and never runs it again', async () => {
    const first = await operator.submitTask({ queue: 'dedupe', payload: { id: 1 }, idempotencyKey: 'run-7' });
    const whileQueued = await operator.submitTask({
      queue: 'dedupe',
      payload: { id: 1 },
      idempotencyKey: 'run-7',
    });
    expect(whileQueued).toMatchObject({ created: false, task: { taskId: first.task.taskId } });
    const runs: string[] = [];
    await startWorker(['dedupe'], async (c) => runs.push(c.taskId));
    await settled(first.task.taskId, 'succeeded');
    const afterwards = await operator.submitTask({
      queue: 'dedupe',
      payload: { id: 1 },
      idempotencyKey: 'run-7',
    });
    expect(afterwards).toMatchObject({
      created: false,
      task: { taskId: first.task.taskId, status: 'succeeded' },
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(runs).toEqual([first.task.taskId]);
  });
});
