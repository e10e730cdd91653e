/**
 * The starvation ladder's last mark as operators see and clear it, through the local HTTP server on the emulators:
 * `needsAttention` in a task's view, `GET /v1/tasks?attention=true`, and `POST /v1/tasks/{taskId}/attention` with
 * `{ "needsAttention": false }`, one conditional write of the flag alone. Hostile requests are refused with a 4xx
 * and leave the state item as it was; a page of the filter reads no more than any filtered page does.
 */
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stateKey } from '#adapters/task-items';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import type { Task } from '#sdk/types';
import { claimUntil, createTestStack, serveStack, startAgent, type TestStack } from '#test/stack';
import { taskPageSchema, taskResponseSchema } from '../../../functions/http/response-schemas';

const OPERATOR = 'op_attention';

interface Answer {
  readonly status: number;
  readonly json: {
    readonly task?: Record<string, unknown>;
    readonly tasks?: Record<string, unknown>[];
    readonly nextCursor?: string;
    readonly error?: { readonly code: string; readonly message: string };
  };
}

const idsOf = (tasks: readonly { readonly taskId?: unknown }[] | undefined) =>
  (tasks ?? []).map((t) => t.taskId);

describe('the attention mark', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;

  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['starving', 'cleared', 'hostile', 'crowd'],
      settings: {
        reconcileAfterSeconds: 5,
        starvation: { promoteAfterSeconds: 10, announceAfterSeconds: 20, attentionAfterSeconds: 30 },
      },
    });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
  });
  afterAll(async () => {
    await server?.close();
    await stack?.destroy();
  });

  const call = async (
    method: string,
    path: string,
    options: { body?: string; contentType?: string; token?: string | null } = {},
  ): Promise<Answer> => {
    const token = options.token === undefined ? OPERATOR : options.token;
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        ...(token === null ? {} : { authorization: `Bearer ${token}` }),
        ...(options.body === undefined ? {} : { 'content-type': options.contentType ?? 'application/json' }),
      },
      ...(options.body === undefined ? {} : { body: options.body }),
    });
    return { status: response.status, json: (await response.json()) as Answer['json'] };
  };
  /** The state item as the table holds it: what a clear may change, attribute by attribute. */
  const stateItem = async (taskId: string) =>
    (
      await DynamoDBDocumentClient.from(stack.dynamodb).send(
        new GetCommand({ TableName: stack.ctx.tasks.tableName, Key: stateKey(taskId), ConsistentRead: true }),
      )
    ).Item;
  /** Supervisor passes over 31 s of waiting: past the ladder's thresholds of 10, 20 and 30 s. */
  const starve = async () => {
    const passes = [];
    for (const seconds of [5, 6, 10, 10]) {
      stack.clock.advance(seconds * 1_000);
      passes.push(await stack.scheduler.supervise());
    }
    return passes;
  };

  it('a task the ladder marks shows needsAttention in its view and in attention=true; others show neither', async () => {
    const { task: starved } = await operator.submitTask({ queue: 'starving', payload: {} });
    const passes = await starve();
    // The pass that marked it counted it for the alarm.
    expect(passes.map((p) => p.escalated)).toEqual([0, 0, 0, 1]);
    const { task: fresh } = await operator.submitTask({ queue: 'starving', payload: {} });

    const read = await call('GET', `/v1/tasks/${starved.taskId}`);
    expect(read.status).toBe(200);
    taskResponseSchema.parse(read.json);
    expect(read.json.task).toMatchObject({ taskId: starved.taskId, status: 'queued', needsAttention: true });
    const unmarked = await call('GET', `/v1/tasks/${fresh.taskId}`);
    expect(unmarked.json.task).not.toHaveProperty('needsAttention');

    const marked = await call('GET', '/v1/tasks?queue=starving&attention=true');
    expect(marked.status).toBe(200);
    taskPageSchema.parse(marked.json);
    expect(idsOf(marked.json.tasks)).toEqual([starved.taskId]);
    expect(marked.json.tasks?.[0]).toMatchObject({ needsAttention: true });
    // The plain list has both; what it has beyond the filter's page is not marked.
    const all = await operator.listTasks({ queue: 'starving' });
    expect(idsOf(all.tasks)).toEqual([fresh.taskId, starved.taskId]);
    const rest = all.tasks.filter((t) => !idsOf(marked.json.tasks).includes(t.taskId));
    expect(rest.map((t) => t.needsAttention)).toEqual([undefined]);
    // With the other filters, and over every queue.
    const both = await operator.listTasks({ queue: 'starving', status: 'queued', attention: true });
    expect(idsOf(both.tasks)).toEqual([starved.taskId]);
    expect(
      (await operator.listTasks({ queue: 'starving', status: 'leased', attention: true })).tasks,
    ).toEqual([]);
    const everywhere = idsOf((await operator.listTasks({ attention: true })).tasks);
    expect(everywhere).toContain(starved.taskId);
    expect(everywhere).not.toContain(fresh.taskId);

    // Claimed since, it keeps the mark until an operator clears it: the wait happened.
    const agent = await startAgent(stack.scheduler, { queues: ['starving'] });
    const [claimed] = await claimUntil(stack.scheduler, agent, 1);
    expect(claimed?.taskId).toBe(starved.taskId);
    expect(await operator.getTask(starved.taskId)).toMatchObject({ status: 'leased', needsAttention: true });
    expect(idsOf((await operator.listTasks({ queue: 'starving', attention: true })).tasks)).toEqual([
      starved.taskId,
    ]);
  });

  it('a clear writes the flag alone, once; the task leaves the filter, and the ladder does not mark it again for that wait', async () => {
    const { task } = await operator.submitTask({ queue: 'cleared', payload: {} });
    await starve();
    const before = await stateItem(task.taskId);
    expect(before).toMatchObject({ needsAttention: true, starvationLevel: 3 });
    const { needsAttention: _mark, ...unmarked } = before ?? {};

    stack.meter.reset();
    const cleared = await call('POST', `/v1/tasks/${task.taskId}/attention`, {
      body: JSON.stringify({ needsAttention: false }),
    });
    expect(cleared.status).toBe(200);
    taskResponseSchema.parse(cleared.json);
    expect(cleared.json.task).toMatchObject({ taskId: task.taskId, status: 'queued' });
    expect(cleared.json.task).not.toHaveProperty('needsAttention');
    // One conditional write, nothing else read or written.
    expect(stack.meter.byOperation()).toEqual({ 'dynamodb:UpdateItemCommand': 1 });
    expect(stack.meter.totals().writeUnits).toBe(1);
    expect(await stateItem(task.taskId)).toEqual(unmarked);

    expect(await operator.getTask(task.taskId)).not.toHaveProperty('needsAttention');
    expect((await operator.listTasks({ queue: 'cleared', attention: true })).tasks).toEqual([]);
    expect(idsOf((await operator.listTasks({ queue: 'cleared' })).tasks)).toEqual([task.taskId]);

    // Again, through the SDK: 200 with the task as it is, and nothing changed.
    const again: Task = await operator.clearAttention(task.taskId);
    expect(again).toEqual(cleared.json.task);
    expect(await stateItem(task.taskId)).toEqual(unmarked);

    // The level stays at the top: passes after the clear leave it unmarked while it waits on.
    await starve();
    expect(await stateItem(task.taskId)).toMatchObject({ starvationLevel: 3 });
    expect(await stateItem(task.taskId)).not.toHaveProperty('needsAttention');

    // Queued again, it climbs the ladder again, and a new wait that long is marked again.
    const agent = await startAgent(stack.scheduler, { queues: ['cleared'] });
    const [claimed] = await claimUntil(stack.scheduler, agent, 1);
    expect(claimed?.taskId).toBe(task.taskId);
    await stack.scheduler.release({
      agentId: agent.agentId,
      taskId: task.taskId,
      leaseEpoch: claimed?.leaseEpoch ?? 0,
    });
    await starve();
    expect(await operator.getTask(task.taskId)).toMatchObject({ status: 'queued', needsAttention: true });
  });

  it('hostile requests are refused with a 4xx and the error shape, and change nothing', async () => {
    const { task } = await operator.submitTask({ queue: 'hostile', payload: {} });
    await starve();
    const before = await stateItem(task.taskId);
    expect(before?.needsAttention).toBe(true);
    const { token: agentToken } = await operator.createAgent({
      name: 'not-an-operator',
      queues: ['hostile'],
    });
    const url = `/v1/tasks/${task.taskId}/attention`;

    const refusals: [string, Promise<Answer>, number][] = [
      ['no body', call('POST', url), 400],
      ['an empty object', call('POST', url, { body: '{}' }), 400],
      ['true', call('POST', url, { body: '{"needsAttention":true}' }), 400],
      ['a string', call('POST', url, { body: '{"needsAttention":"false"}' }), 400],
      ['zero', call('POST', url, { body: '{"needsAttention":0}' }), 400],
      ['null', call('POST', url, { body: '{"needsAttention":null}' }), 400],
      ['a server-owned field', call('POST', url, { body: '{"needsAttention":false,"status":"dead"}' }), 400],
      ['a repeated key', call('POST', url, { body: '{"needsAttention":false,"needsAttention":false}' }), 400],
      ['__proto__', call('POST', url, { body: '{"__proto__":{"x":1},"needsAttention":false}' }), 400],
      ['a body of null', call('POST', url, { body: 'null' }), 400],
      ['an array', call('POST', url, { body: '[{"needsAttention":false}]' }), 400],
      ['false alone', call('POST', url, { body: 'false' }), 400],
      ['malformed JSON', call('POST', url, { body: '{"needsAttention":false' }), 400],
      ['not JSON', call('POST', url, { body: 'needsAttention=false', contentType: 'text/plain' }), 415],
      ['no token', call('POST', url, { body: '{"needsAttention":false}', token: null }), 401],
      ['an agent’s token', call('POST', url, { body: '{"needsAttention":false}', token: agentToken }), 403],
    ];
    for (const [what, answered, status] of refusals) {
      const { status: got, json } = await answered;
      expect(got, what).toBe(status);
      expect(json.error, what).toMatchObject({ code: expect.any(String), message: expect.any(String) });
    }
    // Tasks that are not there, or could not be: 404, whatever the body.
    for (const taskId of [`t_${'q'.repeat(26)}`, 't_x', encodeURIComponent('t_../../state'), '%E2%80%AE']) {
      const absent = await call('POST', `/v1/tasks/${taskId}/attention`, {
        body: '{"needsAttention":false}',
      });
      expect(absent.status, taskId).toBe(404);
      expect(absent.json.error?.code).toBe('TaskNotFound');
    }
    // The filter takes `true` and nothing else.
    for (const value of ['false', '1', 'TRUE', 'yes', '', 'true%00']) {
      const listed = await call('GET', `/v1/tasks?attention=${value}`);
      expect(listed.status, value).toBe(400);
      expect(listed.json.error?.code).toBe('ValidationError');
    }

    expect(await stateItem(task.taskId)).toEqual(before);
    expect(idsOf((await operator.listTasks({ queue: 'hostile', attention: true })).tasks)).toEqual([
      task.taskId,
    ]);
  });

  it('a page of the filter reads as a filtered page does: ten rounds of the page at most, and says where to go on', async () => {
    const specs = Array.from({ length: 25 }, (_, n) => ({ queue: 'crowd', payload: { n } }));
    expect((await operator.submitTasks(specs)).every((r) => r.ok)).toBe(true);
    expect((await operator.submitTasks(specs.slice(0, 5))).every((r) => r.ok)).toBe(true);

    stack.meter.reset();
    const page = await operator.listTasks({ queue: 'crowd', attention: true, limit: 2 });
    const reads = stack.meter.requests.filter((r) => r.operation === 'BatchGetItemCommand');
    const totals = stack.meter.totals();
    console.log(
      `[attention] a page of 2 over 30 unmarked tasks: ${totals.requests} requests, ${totals.readUnits} read units (${reads.length} reads of state items, ${reads.reduce((sum, r) => sum + r.readUnits, 0)} units)`,
    );
    // Nothing marked among the 20 newest read: an empty page, and a cursor to the 10 older.
    expect(page.tasks).toEqual([]);
    expect(page.nextCursor).toEqual(expect.any(String));
    expect(totals.writeUnits).toBe(0);
    expect(reads.length).toBeLessThanOrEqual(10);
    // A consistent read unit for each state item read, at most: 10 rounds of 2.
    expect(reads.reduce((sum, r) => sum + r.readUnits, 0)).toBeLessThanOrEqual(20);
    expect(stack.meter.requests.every((r) => r.operation !== 'ScanCommand')).toBe(true);

    const next = await operator.listTasks({
      queue: 'crowd',
      attention: true,
      limit: 2,
      cursor: page.nextCursor ?? '',
    });
    expect(next).toEqual({ tasks: [] });
  });
});
