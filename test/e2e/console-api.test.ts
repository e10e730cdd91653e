/**
 * What the console reads that the API gave no way to read before, over HTTP on the emulators: a task's payload
 * (inline, from its S3 object, or gone), the tasks of a time window served by the `listed` index (and of one
 * concurrency key), a schedule's next fire times, and a suspended task's waitpoint among the open ones. Each answer
 * is checked against the published response schemas.
 */
import { DeleteObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DUE_SHARDS } from '#adapters/tables';
import { randomTextPayload, seededRandom } from '#local/seeded-random';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { claimUntil, createTestStack, serveStack, startAgent, type TestStack } from '#test/stack';
import {
  schedulePageSchema,
  scheduleResponseSchema,
  taskPageSchema,
  taskResponseSchema,
  waitpointPageSchema,
} from '../../functions/http/response-schemas';

const OPERATOR = 'op_console-api';

describe('the API the console reads', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;
  const get = async (path: string) => {
    const response = await fetch(`${server.url}${path}`, {
      headers: { authorization: `Bearer ${OPERATOR}` },
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  /** What reading each view's paths once costs, in AWS requests and read units; nothing may be written. */
  const refreshCosts = async (views: Record<string, string[]>) => {
    const figures: Record<string, { requests: number; readUnits: number }> = {};
    for (const [view, paths] of Object.entries(views)) {
      stack.meter.reset();
      for (const path of paths) expect((await get(path)).status, path).toBe(200);
      const { requests, readUnits, writeUnits } = stack.meter.totals();
      expect(writeUnits, view).toBe(0);
      figures[view] = { requests, readUnits };
    }
    console.log(`[console] one refresh: ${JSON.stringify(figures)}`);
    return figures;
  };

  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['work', 'other'],
      payloadBucket: true,
      scheduleBackend: { put: async () => undefined, remove: async () => undefined },
    });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
  });
  afterAll(async () => {
    await server?.close();
    await stack?.destroy();
  });

  it('a task with include=payload carries its payload, inline or from S3, and says when it is gone', async () => {
    const small = { topic: 'tides', n: [1, 2, 3] };
    const large = randomTextPayload(60_000, seededRandom(7));
    const { task: inline } = await operator.submitTask({ queue: 'work', payload: small });
    const { task: offloaded } = await operator.submitTask({ queue: 'work', payload: large });

    const plain = await get(`/v1/tasks/${inline.taskId}`);
    expect(plain.body.task).not.toHaveProperty('payload');
    for (const [task, payload] of [
      [inline, small],
      [offloaded, large],
    ] as const) {
      const read = await get(`/v1/tasks/${task.taskId}?include=payload`);
      expect(read.status).toBe(200);
      taskResponseSchema.parse(read.body);
      expect(read.body.task).toMatchObject({ taskId: task.taskId, payload });
    }
    expect((await operator.getTask(offloaded.taskId, { includePayload: true })).payload).toEqual(large);

    // The object past its retention: the task is still shown, its payload said to be gone.
    const objects = stack.ctx.payloads.payloadObjects?.objects;
    if (!objects) throw new Error('the stack has no payload bucket');
    const listed = await objects.s3.send(
      new ListObjectsV2Command({ Bucket: objects.bucketName, Prefix: 'payloads/' }),
    );
    for (const object of listed.Contents ?? [])
      await objects.s3.send(new DeleteObjectCommand({ Bucket: objects.bucketName, Key: object.Key }));
    const gone = await get(`/v1/tasks/${offloaded.taskId}?include=payload`);
    expect(gone.status).toBe(200);
    expect(gone.body.task).toMatchObject({ taskId: offloaded.taskId, payloadGone: true });
    expect(gone.body.task).not.toHaveProperty('payload');

    const refused = await get(`/v1/tasks/${inline.taskId}?include=everything`);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: { code: 'ValidationError' } });
  });

  it('tasks of a time window, newest first, with paging inside it', async () => {
    const submitted: { taskId: string; createdAt: string }[] = [];
    for (let i = 0; i < 6; i++) {
      stack.clock.advance(60_000);
      submitted.push((await operator.submitTask({ queue: 'other', payload: { i } })).task);
    }
    const at = (i: number) => submitted[i]?.createdAt ?? '';
    const ids = (from: number, to: number) =>
      submitted
        .slice(from, to)
        .map((t) => t.taskId)
        .reverse();

    const window = await get(
      `/v1/tasks?queue=other&createdAfter=${encodeURIComponent(at(1))}&createdBefore=${encodeURIComponent(at(5))}`,
    );
    expect(window.status).toBe(200);
    taskPageSchema.parse(window.body);
    expect((window.body.tasks as { taskId: string }[]).map((t) => t.taskId)).toEqual(ids(1, 5));
    expect(window.body).not.toHaveProperty('nextCursor');

    // Paged two at a time, the window is walked to its end and no further.
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await operator.listTasks({
        queue: 'other',
        limit: 2,
        createdAfter: at(1),
        createdBefore: at(5),
        ...(cursor ? { cursor } : {}),
      });
      seen.push(...page.tasks.map((t) => t.taskId));
      cursor = page.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(seen).toEqual(ids(1, 5));
    // Four tasks two at a time: two pages, the second without a cursor to an empty third.
    expect(pages).toBe(2);

    // An offset other than Z names the same instant.
    const shifted = new Date(Date.parse(at(4)) + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
    const before = await operator.listTasks({ queue: 'other', createdBefore: shifted });
    expect(before.tasks.map((t) => t.taskId)).toEqual(ids(0, 4));

    // A key is a filter on the tasks read, as a status is, and goes with the window.
    const keyed: string[] = [];
    for (const key of ['tenant-a', 'tenant-b', 'tenant-a']) {
      stack.clock.advance(60_000);
      keyed.push(
        (await operator.submitTask({ queue: 'other', payload: {}, concurrencyKey: key })).task.taskId,
      );
    }
    const tenantA = await operator.listTasks({ queue: 'other', concurrencyKey: 'tenant-a' });
    expect(tenantA.tasks.map((t) => t.taskId)).toEqual([keyed[2], keyed[0]]);
    const none = await operator.listTasks({ concurrencyKey: 'tenant-a', createdBefore: at(5) });
    expect(none.tasks).toEqual([]);
    const badKey = await get(`/v1/tasks?concurrencyKey=${encodeURIComponent('x'.repeat(129))}`);
    expect(badKey.status).toBe(400);

    for (const bad of ['yesterday', '2026-11-25', '2026-11-25T10:00:00']) {
      const refused = await get(`/v1/tasks?createdAfter=${encodeURIComponent(bad)}`);
      expect(refused.status, bad).toBe(400);
    }
  });

  it('schedules list their next fire times, computed in their time zone; a disabled one lists none', async () => {
    await operator.createSchedule({
      name: 'paris-morning',
      expression: 'cron(0 9 * * ? *)',
      timeZone: 'Europe/Paris',
      task: { queue: 'work', payload: {} },
    });
    await operator.createSchedule({
      name: 'paused-one',
      expression: 'rate(5 minutes)',
      enabled: false,
      task: { queue: 'work', payload: {} },
    });
    const one = await get('/v1/schedules/paris-morning');
    scheduleResponseSchema.parse(one.body);
    const fires = (one.body.schedule as { nextFires: string[] }).nextFires;
    expect(fires).toHaveLength(5);
    const parisHour = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', hour: '2-digit' });
    for (const [i, fire] of fires.entries()) {
      expect(parisHour.format(new Date(fire))).toBe('09');
      expect(Date.parse(fire)).toBeGreaterThan(stack.clock.now());
      if (i > 0)
        expect(Date.parse(fire) - Date.parse(fires[i - 1] ?? '')).toBeGreaterThanOrEqual(23 * 3_600_000);
    }
    const list = await get('/v1/schedules');
    schedulePageSchema.parse(list.body);
    const byName = new Map(
      (list.body.schedules as { name: string; nextFires: string[] }[]).map((s) => [s.name, s.nextFires]),
    );
    expect(byName.get('paris-morning')).toEqual(fires);
    expect(byName.get('paused-one')).toEqual([]);
  });

  it('what one refresh of each console view costs in AWS requests and read units, with nothing written', async () => {
    // Each view reads once every 2 s while shown: these are its requests, as the page makes them.
    const { task } = await operator.submitTask({ queue: 'work', payload: {} });
    await operator.setRateLimit('console.calls', { limit: 5, per: 'hour' });
    await operator.setRateLimit('console.tenants', { limit: 10, per: 'day', perKey: true });
    const views: Record<string, string[]> = {
      queues: ['/v1/queues', '/v1/scheduler', '/v1/scheduler/stats'],
      tasks: ['/v1/tasks?limit=50'],
      task: [`/v1/tasks/${task.taskId}`],
      taskLinks: [`/v1/tasks/${task.taskId}/links`],
      agents: ['/v1/agents?limit=50', '/v1/roles'],
      roles: ['/v1/roles'],
      schedules: ['/v1/schedules?limit=50'],
      schedule: ['/v1/schedules/paris-morning/occurrences'],
      deadLetters: ['/v1/tasks?status=dead&limit=50'],
      rateLimits: ['/v1/rate-limits'],
      rateLimit: ['/v1/rate-limits/console.tenants'],
    };
    const figures = await refreshCosts(views);
    // Two queues of 16 shards each, each shard a list partition of the table (taskLayout 2) and one of the `listed`
    // index (layout 1): a page of tasks reads each once, then the page's tasks at once.
    expect(figures.tasks?.requests).toBeLessThanOrEqual(2 * 2 * 16 + 1);
    // The queue figures: the queue controls, each of the 32 due shards, and the open tasks found in them; then, for
    // each of the two queues, where the list walk stands, its 16 list partitions past that, and the tasks there;
    // and the scheduler's control and the supervisor's figures, each read once.
    expect(figures.queues?.requests).toBeLessThanOrEqual(1 + 2 * DUE_SHARDS + 2 * (1 + 2 * 16) + 2);
    // A task's links (its flow, read at most every 30 s): the task, its children and its dependents; nothing linked,
    // nothing more read.
    expect(figures.taskLinks?.requests).toBeLessThanOrEqual(3);
    for (const view of ['task', 'agents', 'roles', 'schedules', 'schedule'])
      expect(figures[view]?.requests, view).toBeLessThanOrEqual(2);
    // The limits in force, then the window open now of each limit not per key (a per-key one's keys are on its page).
    expect(figures.rateLimits?.requests).toBeLessThanOrEqual(2);
    // The limits in force, then the limit's window: its keys.
    expect(figures.rateLimit?.requests).toBeLessThanOrEqual(2);
  });

  it('a suspended task names its waitpoint, which the open waitpoints list with its task and timeout', async () => {
    const agent = await startAgent(stack.scheduler, { name: 'waiter', queues: ['work'] });
    const [lease] = await claimUntil(stack.scheduler, agent, 1, 10_000);
    if (!lease) throw new Error('no task was claimed');
    await stack.scheduler.wait(
      { taskId: lease.taskId, agentId: agent.agentId, leaseEpoch: lease.leaseEpoch },
      { timeoutSeconds: 600, onTimeout: 'fail' },
    );

    const listed = await get('/v1/waitpoints?status=open&limit=50');
    expect(listed.status).toBe(200);
    const { waitpoints } = waitpointPageSchema.parse(listed.body);
    expect(waitpoints).toEqual([
      expect.objectContaining({ taskId: lease.taskId, status: 'open', onTimeout: 'fail' }),
    ]);
    const [waitpoint] = waitpoints;
    expect(Date.parse(waitpoint?.timeoutAt ?? '') - Date.parse(waitpoint?.createdAt ?? '')).toBe(600_000);
    const read = await get(`/v1/tasks/${lease.taskId}`);
    taskResponseSchema.parse(read.body);
    expect(read.body.task).toMatchObject({ status: 'suspended', waitpointId: waitpoint?.waitpointId });

    // One refresh of the Waitpoints view, and the first of a suspended task's page (which reads its waitpoint once;
    // later refreshes read the task alone): the task's state and last progress report, then the waitpoint.
    const views: Record<string, string[]> = {
      waitpoints: ['/v1/waitpoints?status=open&limit=50'],
      suspendedTask: [`/v1/tasks/${lease.taskId}`, `/v1/waitpoints/${waitpoint?.waitpointId}`],
    };
    const figures = await refreshCosts(views);
    expect(figures.waitpoints?.requests).toBeLessThanOrEqual(1);
    expect(figures.suspendedTask?.requests).toBeLessThanOrEqual(3);
  });
});
