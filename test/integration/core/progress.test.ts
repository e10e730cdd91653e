/**
 * Progress reports: taken only from the task's holder under its lease, kept as the task's last report in an item of
 * its own, never replaced by a report of an earlier lease; many in one call, each with its own outcome; and what one
 * costs, as AWS bills it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseLostError, PayloadTooLargeError, TaskNotFoundError, ValidationError } from '#domain/errors';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('progress reports', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['report', 'fenced', 'batch', 'costs'],
      settings: { leaseTtlSeconds: 30 },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  const claimed = async (queue: string, count = 1) => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { name: queue, queues: [queue], maxConcurrency: count });
    const tasks = await Promise.all(
      Array.from({ length: count }, async (_, i) => (await scheduler.submit({ queue, payload: { i } })).task),
    );
    const leases = await claimUntil(scheduler, agent, count, 5_000, count);
    if (leases.length !== count) throw new Error('the tasks were not claimed');
    return { agent, tasks, leases: leases.map((l) => ({ taskId: l.taskId, leaseEpoch: l.leaseEpoch })) };
  };

  it('keeps the holder’s last report, which the task then shows with its time and attempt', async () => {
    const { scheduler, clock } = stack;
    const { agent, leases } = await claimed('report');
    const [lease] = leases;
    if (!lease) throw new Error('no lease');

    await scheduler.reportProgress(agent.agentId, { ...lease, percent: 10, message: 'reading' });
    clock.advance(1_000);
    const before = clock.now();
    const last = await scheduler.reportProgress(agent.agentId, {
      ...lease,
      percent: 40,
      message: 'planning',
      data: { step: 2, of: 5 },
    });

    expect(last).toEqual({
      percent: 40,
      message: 'planning',
      dataJson: '{"step":2,"of":5}',
      at: expect.any(Number),
      leaseEpoch: lease.leaseEpoch,
      attempt: 1,
    });
    expect(last.at).toBeGreaterThanOrEqual(before);
    expect(await scheduler.progressOf(lease.taskId)).toEqual(last);
  });

  it('refuses a report from anyone but the holder under its lease, and an earlier lease’s never replaces a later one’s', async () => {
    const { scheduler, clock } = stack;
    const { agent, leases } = await claimed('fenced');
    const [first] = leases;
    if (!first) throw new Error('no lease');
    const other = await startAgent(scheduler, { name: 'other', queues: ['fenced'] });

    await expect(scheduler.reportProgress(other.agentId, { ...first, percent: 1 })).rejects.toThrow(
      TaskNotFoundError,
    );
    await expect(
      scheduler.reportProgress(agent.agentId, { ...first, leaseEpoch: first.leaseEpoch + 1, percent: 1 }),
    ).rejects.toThrow(LeaseLostError);
    await expect(scheduler.reportProgress(agent.agentId, { ...first })).rejects.toThrow(ValidationError);
    await expect(
      scheduler.reportProgress(agent.agentId, { ...first, data: 'x'.repeat(16 * 1024) }),
    ).rejects.toThrow(PayloadTooLargeError);
    expect(await scheduler.progressOf(first.taskId)).toBeUndefined();

    // The lease is lost (past its deadline), the task claimed again; the new holder reports.
    clock.advance(31_000 + 3_600_000);
    await scheduler.supervise();
    const again = await startAgent(scheduler, { name: 'again', queues: ['fenced'] });
    const [second] = await claimUntil(scheduler, again, 1, 5_000);
    if (!second) throw new Error('not claimed again');
    await scheduler.reportProgress(again.agentId, {
      taskId: second.taskId,
      leaseEpoch: second.leaseEpoch,
      percent: 5,
    });
    // As a late completion would be: the task is another agent's now.
    await expect(scheduler.reportProgress(agent.agentId, { ...first, percent: 99 })).rejects.toThrow(
      TaskNotFoundError,
    );
    // Written straight to the store, a report of the first lease is refused by the item's own condition.
    const stale = await stack.ctx.progress.put(
      first.taskId,
      { percent: 99, at: clock.now(), leaseEpoch: first.leaseEpoch, attempt: 1 },
      Math.ceil(clock.now() / 1_000) + 60,
    );

    expect(second.leaseEpoch).toBeGreaterThan(first.leaseEpoch);
    expect(stale).toBe(false);
    expect(await scheduler.progressOf(first.taskId)).toMatchObject({
      percent: 5,
      leaseEpoch: second.leaseEpoch,
      attempt: 2,
    });
  });

  it('takes many reports in one call, each with its own outcome', async () => {
    const { scheduler } = stack;
    const { agent, leases } = await claimed('batch', 3);

    const outcomes = await scheduler.reportProgressBatch(agent.agentId, [
      ...leases.map((lease, i) => ({ ...lease, percent: 10 * (i + 1) })),
      { ...(leases[0] ?? { taskId: '', leaseEpoch: 1 }), leaseEpoch: 99, percent: 1 },
    ]);

    expect(outcomes.map((o) => (o.ok ? o.progress.percent : o.error.code))).toEqual([
      10,
      20,
      30,
      'LeaseLost',
    ]);
    for (const [i, lease] of leases.entries()) {
      expect((await scheduler.progressOf(lease.taskId))?.percent).toBe(10 * (i + 1));
    }
    await expect(scheduler.reportProgressBatch(agent.agentId, [])).rejects.toThrow(ValidationError);
  });

  it('costs, as AWS bills them: a consistent read of the task and a write of the report’s size', async () => {
    const { scheduler, meter } = stack;
    const { agent, leases } = await claimed('costs');
    const [lease] = leases;
    if (!lease) throw new Error('no lease');
    const dynamodb = (r: { service: string }) => r.service === 'dynamodb';

    meter.reset();
    await scheduler.reportProgress(agent.agentId, { ...lease, percent: 50, message: 'half way' });
    const small = meter.totals(dynamodb);
    meter.reset();
    await scheduler.reportProgress(agent.agentId, { ...lease, data: 'd'.repeat(15_000) });
    const large = meter.totals(dynamodb);

    console.log(
      `[progress] a report: ${small.requests} requests, ${small.writeUnits} W, ${small.readUnits} R; with 15 KB of data: ${large.writeUnits} W`,
    );
    expect(small).toMatchObject({ requests: 2, writeUnits: 1, readUnits: 1 });
    expect(large.writeUnits).toBe(15);
  });
});
