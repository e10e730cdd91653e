/**
 * Batches over HTTP through the SDK: a submit batch and a complete batch are one call each, every item has its own
 * outcome, and a bad item changes nothing for the others.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { isAgentSchedulerError } from '#sdk/errors';
import type { ClaimedTask } from '#sdk/types';
import { claimUntil, createTestStack, serveStack, startAgent, type TestStack } from '#test/stack';

const OPERATOR = 'op_batches';

describe('batches', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;

  beforeAll(async () => {
    stack = await createTestStack({ queues: ['work', 'bulk'] });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
  });
  afterAll(async () => {
    await server.close();
    await stack.destroy();
  });

  it('submits a batch in one call, item by item, and a retried batch creates nothing twice', async () => {
    const specs = [
      { queue: 'work', payload: { n: 1 }, idempotencyKey: 'batch-1' },
      { queue: 'nowhere', payload: { n: 2 }, idempotencyKey: 'batch-2' },
      { queue: 'work', payload: { n: 3 }, idempotencyKey: 'batch-3' },
    ];
    const first = await operator.submitTasks(specs);
    expect(first.map((r) => (r.ok ? 'ok' : `${r.status} ${r.error.code}`))).toEqual([
      'ok',
      '400 ValidationError',
      'ok',
    ]);
    expect(first.map((r) => r.ok && r.created)).toEqual([true, false, true]);
    const again = await operator.submitTasks(specs);
    expect(again.map((r) => r.ok && r.created)).toEqual([false, false, false]);
    expect(again[0]?.ok && again[0].task.taskId).toBe(first[0]?.ok && first[0].task.taskId);
  });

  it('a batch of 25 sends its hints ten to an SQS request, and every task can be claimed', async () => {
    const { meter, scheduler } = stack;
    meter.reset();
    const results = await operator.submitTasks(
      Array.from({ length: 25 }, (_, n) => ({ queue: 'bulk', payload: { n } })),
    );
    const sends = meter.requests.filter((r) => r.service === 'sqs').map((r) => r.operation);
    expect(sends).toEqual(['SendMessageBatchCommand', 'SendMessageBatchCommand', 'SendMessageBatchCommand']);
    // The 25 payloads in one request; each state item is its own conditional put.
    const writes = meter.byOperation();
    expect(writes['dynamodb:BatchWriteItemCommand']).toBe(1);
    expect(writes['dynamodb:PutItemCommand']).toBe(25);
    const submitted = results.map((r) => (r.ok ? r.task.taskId : ''));
    const agent = await startAgent(scheduler, { queues: ['bulk'], maxConcurrency: 25 });
    const claimed = await claimUntil(scheduler, agent, 25, 5_000, 10);
    expect(claimed.map((t) => t.taskId).sort()).toEqual([...submitted].sort());
  });

  it('one key twice in a batch: the same task once, or a conflict when the payloads differ', async () => {
    const same = await operator.submitTasks([
      { queue: 'bulk', payload: { n: 1 }, idempotencyKey: 'twice-1' },
      { queue: 'bulk', payload: { n: 1 }, idempotencyKey: 'twice-1' },
    ]);
    expect(same.map((r) => r.ok && r.created).sort()).toEqual([false, true]);
    const different = await operator.submitTasks([
      { queue: 'bulk', payload: { n: 1 }, idempotencyKey: 'twice-2' },
      { queue: 'bulk', payload: { n: 2 }, idempotencyKey: 'twice-2' },
    ]);
    expect(different.map((r) => (r.ok ? String(r.created) : r.error.code)).sort()).toEqual([
      'IdempotencyConflict',
      'true',
    ]);
  });

  it('refuses a batch that is not 1 to 25 tasks, writing nothing', async () => {
    const before = (await operator.listTasks({ limit: 100 })).tasks.length;
    for (const tasks of [[], Array.from({ length: 26 }, (_, n) => ({ queue: 'work', payload: { n } }))]) {
      const error = await operator.submitTasks(tasks).catch((e: unknown) => e);
      expect(isAgentSchedulerError(error, 'ValidationError')).toBe(true);
    }
    expect((await operator.listTasks({ limit: 100 })).tasks.length).toBe(before);
  });

  it('claims several tasks and completes them in one call; a stale lease is that item’s LeaseLost', async () => {
    const submitted = await operator.submitTasks(
      Array.from({ length: 5 }, (_, n) => ({ queue: 'work', payload: { n }, idempotencyKey: `claim-${n}` })),
    );
    expect(submitted.every((r) => r.ok)).toBe(true);
    const { token } = await operator.createAgent({ name: 'batcher', queues: ['work'], maxConcurrency: 10 });
    const agent = new AgentSchedulerClient({ endpoint: server.url, token });
    const { sessionId } = await agent.openSession();
    const claimed: ClaimedTask[] = [];
    const deadline = Date.now() + 5_000;
    while (claimed.length < 7 && Date.now() < deadline) {
      claimed.push(...(await agent.claim({ sessionId, max: 10 })).tasks);
    }
    // Two from the first test, five from this one.
    expect(claimed).toHaveLength(7);
    const [stale, ...rest] = claimed;
    stack.meter.reset();
    const results = await agent.completeTasks([
      ...rest.map((t) => ({ taskId: t.taskId, leaseEpoch: t.leaseEpoch, result: { done: t.taskId } })),
      { taskId: stale?.taskId ?? '', leaseEpoch: (stale?.leaseEpoch ?? 0) + 1 },
    ]);
    expect(results.map((r) => (r.ok ? r.task.status : r.error.code))).toEqual([
      ...rest.map(() => 'succeeded'),
      'LeaseLost',
    ]);
    // The agent's session is read once for the batch; each completion is its own conditional write.
    // (The other read is the local server's check of the agent's token.)
    expect(stack.meter.byOperation()).toEqual({
      'dynamodb:GetItemCommand': 2,
      'dynamodb:UpdateItemCommand': 7,
    });
    expect((await operator.getTask(stale?.taskId ?? '')).status).toBe('leased');
    // A repeated batch answers with what was committed.
    const replay = await agent.completeTasks(
      rest.map((t) => ({ taskId: t.taskId, leaseEpoch: t.leaseEpoch })),
    );
    expect(replay.every((r) => r.ok && r.task.status === 'succeeded')).toBe(true);
  });
});
