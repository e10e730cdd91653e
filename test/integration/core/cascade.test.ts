/**
 * A cancel that reaches the tree (`cascade: true`): every open descendant ends cancelled, ended ones are left as
 * they ended (their own children are walked all the same), dependents outside the tree follow their
 * `onDependencyFailure`, holders lose their leases; a walk the call could not finish is finished by the supervisor.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseLostError } from '#domain/errors';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

const OPEN = new Set(['queued', 'waiting', 'leased', 'suspended']);

describe('cancellation down the tree', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['roots', 'steps', 'leaves', 'after'],
      settings: { agentSubmitQueues: ['steps', 'leaves'] },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /**
   * A root, `width` children (held by one agent) and `leaves` children of each (queued): the root's and the
   * children's leases are kept, except that the first child succeeds once its own children are in.
   */
  async function tree(width: number, leaves: number) {
    const { scheduler } = stack;
    const { task: root } = await scheduler.submit({ queue: 'roots', payload: { root: true } });
    const rootAgent = await startAgent(scheduler, { name: 'root', queues: ['roots'] });
    const [rootLease] = await claimUntil(scheduler, rootAgent, 1, 5_000);
    if (rootLease?.taskId !== root.taskId) throw new Error('the root was not claimed');
    const children = await scheduler.submitChildren(
      { agentId: rootAgent.agentId, parentTaskId: root.taskId, leaseEpoch: rootLease.leaseEpoch },
      Array.from({ length: width }, (_, i) => ({ key: `step-${i}`, queue: 'steps', payload: { i } })),
    );
    const stepAgent = await startAgent(scheduler, {
      name: 'steps',
      queues: ['steps'],
      maxConcurrency: width,
    });
    const steps = await claimUntil(scheduler, stepAgent, width, 10_000, 10);
    if (steps.length !== width) throw new Error('the steps were not claimed');
    const leafIds: string[] = [];
    for (const step of steps) {
      const lease = { agentId: stepAgent.agentId, parentTaskId: step.taskId, leaseEpoch: step.leaseEpoch };
      for (let from = 0; from < leaves; from += 25) {
        const batch = Array.from({ length: Math.min(25, leaves - from) }, (_, j) => ({
          key: `leaf-${from + j}`,
          queue: 'leaves',
          payload: { leaf: from + j },
        }));
        for (const item of await scheduler.submitChildren(lease, batch))
          if (item.ok) leafIds.push(item.task.taskId);
      }
    }
    const [finished, ...held] = steps;
    if (!finished) throw new Error('no steps');
    await scheduler.complete({
      agentId: stepAgent.agentId,
      taskId: finished.taskId,
      leaseEpoch: finished.leaseEpoch,
    });
    return {
      root,
      rootLease: { agentId: rootAgent.agentId, taskId: root.taskId, leaseEpoch: rootLease.leaseEpoch },
      childIds: children.flatMap((c) => (c.ok ? [c.task.taskId] : [])),
      finished: finished.taskId,
      held: held.map((s) => ({ agentId: stepAgent.agentId, taskId: s.taskId, leaseEpoch: s.leaseEpoch })),
      leafIds,
    };
  }

  it('cancels every open task of a 3-level tree of 100: none left running or claimable', async () => {
    const { scheduler } = stack;
    const t = await tree(9, 10);
    // Outside the tree, two tasks depend on a leaf: one runs anyway, one is cancelled with it.
    const [leaf] = t.leafIds;
    const { task: runs } = await scheduler.submit({
      queue: 'after',
      payload: {},
      dependsOn: [leaf ?? ''],
      onDependencyFailure: 'run',
    });
    const { task: follows } = await scheduler.submit({
      queue: 'after',
      payload: {},
      dependsOn: [leaf ?? ''],
    });

    // Time enough for the call to walk the whole tree, however loaded the machine.
    const { task, cascade } = await scheduler.cancelTree(t.root.taskId, 60_000);

    const all = [t.root.taskId, ...t.childIds, ...t.leafIds];
    const statuses = await Promise.all(all.map(async (id) => (await scheduler.getTask(id)).status));
    expect(all).toHaveLength(100);
    expect(task.status).toBe('cancelled');
    expect(cascade).toMatchObject({ cancelled: 98, pending: 0, finishedAt: expect.any(Number) });
    expect(statuses.filter((s) => OPEN.has(s))).toEqual([]);
    expect((await scheduler.getTask(t.finished)).status).toBe('succeeded');
    for (const lease of [t.rootLease, ...t.held])
      await expect(scheduler.complete(lease)).rejects.toThrow(LeaseLostError);
    const anyone = await startAgent(scheduler, { name: 'late', queues: ['roots', 'steps', 'leaves'] });
    expect(await claimUntil(scheduler, anyone, 1, 600)).toEqual([]);
    expect((await scheduler.getTask(runs.taskId)).status).toBe('queued');
    expect((await scheduler.getTask(follows.taskId)).status).toBe('cancelled');
  });

  it('a walk the call could not finish is finished by the supervisor, its progress shown on the root', async () => {
    const { scheduler } = stack;
    const t = await tree(3, 30);

    // No time in the call: the root is cancelled, its descendants are the supervisor's.
    const { cascade: atCall } = await scheduler.cancelTree(t.root.taskId, 0);
    const before = await Promise.all(t.leafIds.map(async (id) => (await scheduler.getTask(id)).status));
    await scheduler.supervise();
    const after = await Promise.all(
      [...t.childIds, ...t.leafIds].map(async (id) => (await scheduler.getTask(id)).status),
    );

    expect(atCall).toMatchObject({ cancelled: 0, pending: 1 });
    expect(atCall?.finishedAt).toBeUndefined();
    expect(before.every((s) => s === 'queued')).toBe(true);
    expect(after.filter((s) => OPEN.has(s))).toEqual([]);
    expect(await scheduler.cascadeOf(t.root.taskId)).toMatchObject({
      cancelled: 92,
      pending: 0,
      finishedAt: expect.any(Number),
    });
    // Done: another pass finds nothing to walk.
    expect(await stack.ctx.cascades.open(10)).not.toContain(t.root.taskId);
  });
});
