/**
 * A small payload rides on its task's hint: the claim that grants the task hands it over without reading the
 * payload item. Only a payload of the specification the task was granted under is taken from a hint.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HINT_PAYLOAD_BYTES } from '#domain/hint';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('payloads carried by hints', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['small', 'large', 'forged', 'batch'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** Reads of the tasks table during `work`: the payload items a claim reads. */
  const taskTableReads = async (work: () => Promise<unknown>) => {
    const reads: string[] = [];
    const name = `countTaskReads${Math.random()}`;
    stack.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { TableName?: string; RequestItems?: Record<string, unknown> };
        const tables = [input.TableName, ...Object.keys(input.RequestItems ?? {})];
        if (/Get/.test(context.commandName ?? '') && tables.includes(stack.wiring.tables.tasks))
          reads.push(context.commandName ?? '');
        return next(args);
      },
      { step: 'initialize', name },
    );
    try {
      await work();
    } finally {
      stack.dynamodb.middlewareStack.remove(name);
    }
    return reads;
  };

  it('a claim takes a small payload from the hint, and reads a large one', async () => {
    const { scheduler } = stack;
    const small = { text: 'x'.repeat(1_000) };
    const large = { text: 'y'.repeat(HINT_PAYLOAD_BYTES) };
    await scheduler.submit({ queue: 'small', payload: small });
    await scheduler.submit({ queue: 'large', payload: large });
    for (const [queue, payload, expectedReads] of [
      ['small', small, 0],
      ['large', large, 1],
    ] as const) {
      const agent = await startAgent(scheduler, { queues: [queue] });
      let claimed: unknown;
      const reads = await taskTableReads(async () => {
        [claimed] = await claimUntil(scheduler, agent, 1);
      });
      expect(claimed, queue).toMatchObject({ payload });
      expect(reads, queue).toHaveLength(expectedReads);
    }
  });

  it('a submission in a batch carries its payload too', async () => {
    const { scheduler } = stack;
    await scheduler.submitBatch(Array.from({ length: 3 }, (_, n) => ({ queue: 'batch', payload: { n } })));
    const agent = await startAgent(scheduler, { queues: ['batch'], maxConcurrency: 3 });
    let claimed: { payload: unknown }[] = [];
    const reads = await taskTableReads(async () => {
      claimed = await claimUntil(scheduler, agent, 3, 5_000, 3);
    });
    expect(claimed.map((t) => t.payload)).toEqual(expect.arrayContaining([{ n: 0 }, { n: 1 }, { n: 2 }]));
    expect(reads).toEqual([]);
  });

  it('a hint’s payload of another specification, or not JSON, is not believed: the payload item is read', async () => {
    const { scheduler, ctx } = stack;
    const agent = await startAgent(scheduler, { queues: ['forged'] });
    for (const forged of [
      (specHash: string) => ({ specHash: `${specHash}x`, json: '{"real":false}' }),
      (specHash: string) => ({ specHash, json: '{"real":' }),
    ]) {
      const { task } = await scheduler.submit({ queue: 'forged', payload: { real: true } });
      // Drain the submission's own hint, so the claim below sees only the one sent next.
      const received = await ctx.queues.receive('forged', 'normal', {
        max: 10,
        visibilityTimeoutSeconds: 0,
        waitTimeSeconds: 1,
      });
      await ctx.queues.delete(received.hints);
      await ctx.queues.send('forged', 'normal', {
        taskId: task.taskId,
        leaseEpoch: task.leaseEpoch,
        payload: forged(task.specHash),
      });
      const [claimed] = await claimUntil(scheduler, agent, 1);
      expect(claimed?.payload).toEqual({ real: true });
      await scheduler.complete({
        agentId: agent.agentId,
        taskId: task.taskId,
        leaseEpoch: claimed?.leaseEpoch ?? 0,
      });
    }
  });
});
