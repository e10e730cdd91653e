/**
 * A holder pushes its attempt's deadline forward on a heartbeat (`extend`), never past the task's
 * `maxTimeoutSeconds` from the attempt's start; the deadline's enforcement follows the new time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseLostError } from '#domain/errors';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('deadline extensions', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['extended', 'capped', 'fixed', 'gone'],
      settings: { leaseTtlSeconds: 300 },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  const claimed = async (queue: string, spec: Record<string, unknown>) => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { name: queue, queues: [queue] });
    const { task } = await scheduler.submit({ queue, payload: {}, ...spec });
    const [lease] = await claimUntil(scheduler, agent, 1, 3_000);
    if (lease?.taskId !== task.taskId) throw new Error('the task was not claimed');
    return { agent, lease: { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: lease.leaseEpoch } };
  };

  it('three extensions carry an attempt of 10 s past three times its timeout of 10 s, to success', async () => {
    const { scheduler, clock } = stack;
    const { agent, lease } = await claimed('extended', { timeoutSeconds: 10, maxTimeoutSeconds: 60 });
    const leasedAt = (await scheduler.getTask(lease.taskId)).leasedAt ?? 0;

    const answers = [];
    for (let i = 0; i < 3; i++) {
      clock.advance(8_000);
      answers.push(
        await scheduler.heartbeat(agent.agentId, agent.sessionId, undefined, [
          { taskId: lease.taskId, leaseEpoch: lease.leaseEpoch, seconds: 10 },
        ]),
      );
      await scheduler.supervise();
    }
    clock.advance(8_000);
    const done = await scheduler.complete(lease, { ok: true });

    expect(answers.map((a) => a.extended.map((e) => e.seconds))).toEqual([[10], [10], [10]]);
    expect(answers.flatMap((a) => a.lostLeases)).toEqual([]);
    expect(done.task.status).toBe('succeeded');
    expect(clock.now() - leasedAt).toBeGreaterThan(30_000);
  });

  it('never past maxTimeoutSeconds from the attempt’s start; the lease is taken back then', async () => {
    const { scheduler, clock } = stack;
    const { agent, lease } = await claimed('capped', { timeoutSeconds: 5, maxTimeoutSeconds: 12 });
    const leasedAt = (await scheduler.getTask(lease.taskId)).leasedAt ?? 0;

    const beat = await scheduler.heartbeat(agent.agentId, agent.sessionId, undefined, [
      { taskId: lease.taskId, leaseEpoch: lease.leaseEpoch, seconds: 3_600 },
    ]);
    clock.advance(12_500);
    await scheduler.supervise();

    expect(beat.extended).toEqual([
      expect.objectContaining({ taskId: lease.taskId, leaseDeadline: leasedAt + 12_000 }),
    ]);
    expect(beat.extended[0]?.seconds).toBeLessThanOrEqual(12);
    await expect(scheduler.complete(lease, { late: true })).rejects.toThrow(LeaseLostError);
    expect((await scheduler.getTask(lease.taskId)).status).toBe('queued');
  });

  it('moves nothing for a task that declares no maxTimeoutSeconds', async () => {
    const { scheduler } = stack;
    const { agent, lease } = await claimed('fixed', { timeoutSeconds: 30 });
    const before = await scheduler.getTask(lease.taskId);

    const beat = await scheduler.heartbeat(agent.agentId, agent.sessionId, undefined, [
      { taskId: lease.taskId, leaseEpoch: lease.leaseEpoch, seconds: 600 },
    ]);

    expect(beat.extended.map((e) => e.leaseDeadline)).toEqual([before.leaseDeadline]);
    expect((await scheduler.getTask(lease.taskId)).leaseDeadline).toBe(before.leaseDeadline);
  });

  it('tells a holder whose lease is over that it is lost, and writes nothing', async () => {
    const { scheduler } = stack;
    const { agent, lease } = await claimed('gone', { timeoutSeconds: 30, maxTimeoutSeconds: 600 });
    await scheduler.release(lease);
    const before = await scheduler.getTask(lease.taskId);

    const beat = await scheduler.heartbeat(agent.agentId, agent.sessionId, undefined, [
      { taskId: lease.taskId, leaseEpoch: lease.leaseEpoch, seconds: 60 },
    ]);

    expect(beat.extended).toEqual([]);
    expect(beat.lostLeases).toEqual([{ taskId: lease.taskId, leaseEpoch: lease.leaseEpoch }]);
    expect(await scheduler.getTask(lease.taskId)).toEqual(before);
  });
});
