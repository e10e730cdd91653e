/**
 * The Worker against the server's body limits: grouped completions and heartbeats sized to fit, and a group the
 * server refuses whole never taken for a refusal of each of its tasks.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AgentSchedulerClient } from '#sdk/client';
import { Worker, type WorkerOptions } from '#sdk/worker';
import type { LostReason, TaskHandler } from '#sdk/worker-events';
import { MAX_BODY_BYTES } from '../../../functions/http/http-api';
import { deferred, FakeScheduler } from './fake-scheduler';

const workers: Worker[] = [];

function setup(handler: TaskHandler, options: Partial<WorkerOptions> = {}) {
  const server = new FakeScheduler();
  const client = new AgentSchedulerClient({
    endpoint: 'http://fake',
    token: 'tok',
    fetch: server.fetch,
    retries: { maxAttempts: 1 },
  });
  const worker = new Worker({ client, handler, pollIntervalMs: { min: 5, max: 20 }, ...options });
  workers.push(worker);
  const events = {
    picked: [] as string[],
    completed: [] as string[],
    failed: [] as [string, unknown][],
    lost: [] as [string, LostReason][],
    sessions: [] as string[],
    errors: [] as unknown[],
  };
  worker.on('picked', (task) => events.picked.push(task.taskId));
  worker.on('completed', (task) => events.completed.push(task.taskId));
  worker.on('failed', (task, error) => events.failed.push([task.taskId, error]));
  worker.on('lost', (task, reason) => events.lost.push([task.taskId, reason]));
  worker.on('session', (session) => events.sessions.push(session.sessionId));
  worker.on('error', (error) => events.errors.push(error));
  return { server, worker, events };
}

/** A value nested `depth` arrays deep. */
const nested = (depth: number): unknown => {
  let value: unknown = 'core';
  for (let i = 0; i < depth; i++) value = [value];
  return value;
};

const until = async (check: () => boolean, timeoutMs = 10_000): Promise<void> => {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ drain: false })));
});

describe('Worker completions within the body limit', () => {
  it('eight results of 60 KB finishing together all complete, in calls the server takes', async () => {
    const result = 'r'.repeat(60 * 1024);
    const { server, worker, events } = setup(async () => result, { concurrency: 8 });
    // The first completion is held until the other seven have finished and wait to go together.
    const hold = deferred();
    server.holdFirst('/complete', hold.promise);
    const ids = Array.from({ length: 8 }, (_, i) => server.add(i));
    await worker.start();
    await until(() => events.picked.length === 8);
    await new Promise((resolve) => setTimeout(resolve, 30));
    hold.resolve();
    await until(() => events.completed.length + events.failed.length === 8);

    expect(events.failed).toEqual([]);
    expect(ids.map((id) => server.task(id).status)).toEqual(Array(8).fill('succeeded'));
    const completions = server.calls.filter((call) => call.path.endsWith('/complete'));
    for (const call of completions) expect(call.bytes).toBeLessThanOrEqual(MAX_BODY_BYTES);
    // Grouped as far as the limit allows: the seven waiting results take two calls, not seven.
    expect(completions).toHaveLength(3);
    expect(events.errors).toEqual([]);
  });

  it('a group refused whole for one result nested too deep fails only that task; the others complete', async () => {
    // 62 deep fits a single call's body (64) but not a group's; 70 deep fits neither.
    const results: Record<string, unknown> = { deep: nested(70), fits: nested(62), a: 'a', b: 'b' };
    const { server, worker, events } = setup(async (task) => results[task.payload as string], {
      concurrency: 5,
    });
    const hold = deferred();
    server.holdFirst('/complete', hold.promise);
    const first = server.add('a');
    const deep = server.add('deep');
    const fits = server.add('fits');
    const second = server.add('b');
    await worker.start();
    await until(() => events.picked.length === 4);
    await new Promise((resolve) => setTimeout(resolve, 30));
    hold.resolve();
    await until(() => events.completed.length + events.failed.length === 4);

    expect(events.completed.sort()).toEqual([first, fits, second].sort());
    expect(events.failed.map(([id]) => id)).toEqual([deep]);
    expect(String(events.failed[0]?.[1])).toContain('nested deeper than 64');
    expect(server.task(deep).status).toBe('dead');
    expect(server.task(fits).status).toBe('succeeded');
    // The group was tried once; each of its tasks then went alone.
    expect(server.callsTo('/v1/agent/tasks/complete')).toHaveLength(1);
    expect(events.errors).toEqual([]);
  });

  it('results of exactly the largest size, grown by JSON escaping, are sent alone and complete', async () => {
    // Every `"` takes two bytes in JSON: each result's JSON is exactly the server's 256 KB, though its string is
    // half that long, so two of them would pass a count of characters and not the server's count of bytes.
    const escaped = '"'.repeat((256 * 1024 - 2) / 2);
    expect(Buffer.byteLength(JSON.stringify(escaped))).toBe(256 * 1024);
    const { server, worker, events } = setup(async (task) => (task.payload === 'big' ? escaped : 'small'), {
      concurrency: 3,
    });
    const hold = deferred();
    server.holdFirst('/complete', hold.promise);
    const ids = [server.add('small'), server.add('big'), server.add('big')];
    await worker.start();
    await until(() => events.picked.length === 3);
    await new Promise((resolve) => setTimeout(resolve, 30));
    hold.resolve();
    await until(() => events.completed.length + events.failed.length === 3);

    expect(events.failed).toEqual([]);
    expect(ids.map((id) => server.task(id).status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    for (const call of server.calls) expect(call.bytes).toBeLessThanOrEqual(MAX_BODY_BYTES);
  });
});

describe('Worker heartbeats within the body limit', () => {
  it('25 tasks checkpointing 15 KB each all complete, and the session never lapses', async () => {
    const { server, worker, events } = setup(
      async (task, context) => {
        context.checkpoint({ step: 1, notes: 'n'.repeat(15 * 1024) });
        // Done once the server has the checkpoint: a beat that never lands ends the session first.
        await until(() => server.task(task.taskId).checkpoint !== undefined);
        return 'done';
      },
      { concurrency: 25 },
    );
    server.heartbeatIntervalSeconds = 0.2;
    server.leaseTtlSeconds = 2;
    const ids = Array.from({ length: 25 }, (_, i) => server.add(i));
    await worker.start();
    await until(() => events.completed.length + events.lost.length === 25);

    expect(events.lost).toEqual([]);
    expect(events.completed.sort()).toEqual([...ids].sort());
    expect(events.sessions).toHaveLength(1);
    const beats = server.callsTo('/heartbeat');
    for (const beat of beats) expect(beat.bytes).toBeLessThanOrEqual(MAX_BODY_BYTES);
    // Each checkpoint went once: the oldest first, the rest with the next beat.
    const carried = beats.flatMap(
      (beat) => (beat.body.checkpoints as { taskId: string }[] | undefined) ?? [],
    );
    expect(carried.map((c) => c.taskId).sort()).toEqual([...ids].sort());
    expect(events.errors).toEqual([]);
  });

  it('a beat refused for a checkpoint is sent again without it: the session holds, the others land', async () => {
    const { server, worker, events } = setup(
      async (task, context) => {
        // Small, but nested deeper than any body may be: the server refuses every beat that carries it.
        context.checkpoint(task.payload === 'deep' ? nested(70) : { ok: true });
        if (task.payload !== 'deep') await until(() => server.task(task.taskId).checkpoint !== undefined);
        else await new Promise((resolve) => setTimeout(resolve, 2_500));
        return 'done';
      },
      { concurrency: 3 },
    );
    server.heartbeatIntervalSeconds = 0.2;
    server.leaseTtlSeconds = 1;
    const deep = server.add('deep');
    const others = [server.add('a'), server.add('b')];
    await worker.start();
    await until(() => events.completed.length + events.lost.length === 3);

    expect(events.lost).toEqual([]);
    expect(events.sessions).toHaveLength(1);
    expect(events.completed.sort()).toEqual([deep, ...others].sort());
    for (const id of others) expect(server.task(id).checkpoint).toEqual({ ok: true });
    expect(server.task(deep).checkpoint).toBeUndefined();
    // The refused checkpoint is reported once, naming its task, and not sent again and again.
    expect(events.errors).toHaveLength(1);
    expect(String(events.errors[0])).toContain(deep);
    const carryingDeep = server
      .callsTo('/heartbeat')
      .filter((beat) =>
        ((beat.body.checkpoints as { taskId: string }[] | undefined) ?? []).some((c) => c.taskId === deep),
      );
    expect(carryingDeep.length).toBeLessThanOrEqual(2);
  });

  it('checkpoint() refuses at once a value the server would refuse alone: too large, or not JSON', async () => {
    const thrown: unknown[] = [];
    const { server, worker, events } = setup(async (_task, context) => {
      for (const value of ['x'.repeat(16 * 1024), 10n, { ok: true }]) {
        try {
          context.checkpoint(value);
        } catch (error) {
          thrown.push(error);
        }
      }
      await context.heartbeatNow();
      return 'done';
    });
    const taskId = server.add('x');
    await worker.start();
    await until(() => events.completed.length === 1);

    expect(thrown).toHaveLength(2);
    expect(thrown[0]).toBeInstanceOf(RangeError);
    expect(String(thrown[0])).toContain(`${16 * 1024 + 2} bytes`);
    expect(thrown[1]).toBeInstanceOf(TypeError);
    expect(server.task(taskId).checkpoint).toEqual({ ok: true });
    expect(events.errors).toEqual([]);
  });
});
