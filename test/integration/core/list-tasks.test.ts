/**
 * `GET /v1/tasks` newest first, a page at a time, on DynamoDB Local: every task exactly once across pages and queues,
 * those of layout 1 (the `listed` index) and of layout 2 (their payload items) together, a retried submission once, a status filter that still fills pages, and a cursor that was not returned by the
 * API refused with a 400 that says so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Scheduler } from '#core/scheduler';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import type { ListTasksInput, Task } from '#sdk/types';
import { createTestStack, serveStack, type TestStack } from '#test/stack';

const OPERATOR = 'op_list-tasks';
const QUEUES = ['alpha', 'beta'] as const;

interface Submitted {
  readonly taskId: string;
  readonly queue: string;
  readonly createdAt: number;
}

/** Newest first; tasks created in the same millisecond by task id, descending. */
const newestFirst = (a: Submitted, b: Submitted) =>
  b.createdAt - a.createdAt || (a.taskId < b.taskId ? 1 : -1);

describe('listing tasks', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;
  const submitted: Submitted[] = [];
  const cancelled = new Set<string>();

  beforeAll(async () => {
    stack = await createTestStack({ queues: [...QUEUES] });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
    // Every fourth task as functions of layout 1 write it (listed by the `listed` index), beside layout 2's (listed
    // by their payload items): a list made while both kinds are in the table.
    const layoutOne = new Scheduler({ ...stack.ctx, settings: { ...stack.ctx.settings, taskLayout: 1 } });
    // 126 tasks one by one, each a second after the one before, over both queues in an uneven pattern...
    for (let n = 0; n < 126; n++) {
      stack.clock.advance(1_000);
      const queue = n % 5 < 3 ? 'alpha' : 'beta';
      const taskId =
        n % 4 === 1
          ? (await layoutOne.submit({ queue, payload: { n } })).task.taskId
          : (await operator.submitTask({ queue, payload: { n }, idempotencyKey: `list-${n}` })).task.taskId;
      const createdAt = Date.parse((await operator.getTask(taskId)).createdAt);
      submitted.push({ taskId, queue, createdAt });
      if (n % 7 === 3) cancelled.add((await operator.cancelTask(taskId)).taskId);
    }
    // Submissions retried a second later: with layout 2 each retry writes a payload item of its own creation,
    // which the list passes over (its task was created at the first).
    stack.clock.advance(1_000);
    for (const n of [0, 2, 3]) {
      const again = await operator.submitTask({
        queue: n % 5 < 3 ? 'alpha' : 'beta',
        payload: { n },
        idempotencyKey: `list-${n}`,
      });
      expect(again.created).toBe(false);
    }
    // ...and a batch whose six tasks share one millisecond, in both queues.
    stack.clock.advance(1_000);
    for (const result of await operator.submitTasks(
      Array.from({ length: 6 }, (_, n) => ({ queue: QUEUES[n % 2] ?? 'alpha', payload: { batch: n } })),
    )) {
      if (!result.ok) throw new Error(result.error.message);
      submitted.push({
        taskId: result.task.taskId,
        queue: result.task.queue,
        createdAt: Date.parse(result.task.createdAt),
      });
    }
  });
  afterAll(async () => {
    await server?.close();
    await stack?.destroy();
  });

  /** Every page of a list, and how many DynamoDB requests of each kind they took. */
  async function everyPage(filter: ListTasksInput) {
    stack.meter.reset();
    const pages: Task[][] = [];
    let cursor: string | undefined;
    do {
      const page = await operator.listTasks({ ...filter, ...(cursor ? { cursor } : {}) });
      pages.push([...page.tasks]);
      cursor = page.nextCursor;
    } while (cursor);
    const requests = stack.meter.byOperation();
    return {
      pages,
      queries: requests['dynamodb:QueryCommand'] ?? 0,
      gets: requests['dynamodb:BatchGetItemCommand'] ?? 0,
    };
  }

  it('lists every task once, newest first, in pages of 25 across both queues', async () => {
    const { pages, queries, gets } = await everyPage({ limit: 25 });

    const listed = pages.flat().map((t) => t.taskId);
    expect(submitted).toHaveLength(132);
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed).toEqual([...submitted].sort(newestFirst).map((t) => t.taskId));
    expect(pages.map((p) => p.length)).toEqual([25, 25, 25, 25, 25, 7]);
    // One BatchGetItem a page, and one more for the page that read the three retries' items (passed over); each of
    // the 2 queues' 16 shards is read once a page, as a list partition of the table (layout 2) and as a partition of
    // the `listed` index (layout 1).
    expect(gets).toBe(7);
    expect(queries).toBe(6 * 2 * 32);
    console.log(
      `[list] 132 tasks over 2 queues, limit 25: ${pages.length} pages, ${queries} index queries, ${gets} BatchGetItem`,
    );
  });

  it('lists one queue newest first', async () => {
    const { pages, queries } = await everyPage({ queue: 'beta', limit: 25 });

    const expected = submitted.filter((t) => t.queue === 'beta').sort(newestFirst);
    expect(pages.flat().map((t) => t.taskId)).toEqual(expected.map((t) => t.taskId));
    expect(pages.flat().every((t) => t.queue === 'beta')).toBe(true);
    expect(queries).toBe(pages.length * 2 * 16);
  });

  it('filters by status and still fills its pages, newest first', async () => {
    const { pages } = await everyPage({ status: 'cancelled', limit: 5 });

    const expected = submitted.filter((t) => cancelled.has(t.taskId)).sort(newestFirst);
    expect(expected.length).toBe(18);
    expect(pages.flat().map((t) => t.taskId)).toEqual(expected.map((t) => t.taskId));
    expect(pages.flat().every((t) => t.status === 'cancelled')).toBe(true);
    expect(pages.slice(0, -1).every((page) => page.length === 5)).toBe(true);
  });

  it.each([
    ['text that is not a cursor', 'not-a-cursor'],
    [
      'a cursor of the scan it replaced',
      Buffer.from('{"taskId":"t_aaaaaaaaaaaaaaaaaaaaaaaaaa","part":"state"}').toString('base64url'),
    ],
    [
      'a time that is not one',
      Buffer.from('{"createdAt":-1,"taskId":"t_aaaaaaaaaaaaaaaaaaaaaaaaaa"}').toString('base64url'),
    ],
    ['a task id that is not one', Buffer.from('{"createdAt":1,"taskId":"t_x"}').toString('base64url')],
  ])('refuses %s with a 400 that names the cursor', async (_, cursor) => {
    const response = await fetch(`${server.url}/v1/tasks?cursor=${encodeURIComponent(cursor)}`, {
      headers: { authorization: `Bearer ${OPERATOR}` },
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error).toEqual({
      code: 'ValidationError',
      message: 'cursor: not a cursor this API returned (pass the nextCursor of a page as it is)',
    });
  });
});
