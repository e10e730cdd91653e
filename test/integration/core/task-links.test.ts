/**
 * A task's links on the emulators, as the console's flow graph reads them: parent and root, children, the tasks it
 * depends on (ended or not) and those that depend on it, its failure hook before and after it died; a task with
 * none has none, and an unknown one is not found.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskNotFoundError } from '#domain/errors';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('a task’s links', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['roots', 'steps', 'deps', 'hooks'],
      settings: { agentSubmitQueues: ['steps'] },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('names the parent, root and children of a tree, each with its status', async () => {
    const { scheduler } = stack;
    const { task: root } = await scheduler.submit({ queue: 'roots', payload: {} });
    const agent = await startAgent(scheduler, { queues: ['roots'] });
    const [lease] = await claimUntil(scheduler, agent, 1, 5_000);
    if (lease?.taskId !== root.taskId) throw new Error('the root was not claimed');
    const fence = { agentId: agent.agentId, parentTaskId: root.taskId, leaseEpoch: lease.leaseEpoch };
    const made = await scheduler.submitChildren(fence, [
      { key: 'a', queue: 'steps', payload: {} },
      { key: 'b', queue: 'steps', payload: {}, delaySeconds: 600 },
    ]);
    const childIds = made.map((item) => (item.ok ? item.task.taskId : ''));

    const links = await scheduler.taskLinks(root.taskId);
    // Oldest first; the two of one batch share their creation time, so either may come first.
    expect([...links.children].sort()).toEqual([...childIds].sort());
    expect(links.childrenTruncated).toBe(false);
    expect(childIds.map((id) => links.found.get(id)?.status)).toEqual(['queued', 'queued']);

    const [first] = childIds;
    const ofChild = await scheduler.taskLinks(first ?? '');
    expect(ofChild.task.parentTaskId).toBe(root.taskId);
    expect(ofChild.found.get(root.taskId)?.status).toBe('leased');
    expect(ofChild.children).toEqual([]);
  });

  it('names the dependencies it waits on and those that ended, and the tasks waiting for it', async () => {
    const { scheduler } = stack;
    const { task: early } = await scheduler.submit({ queue: 'deps', payload: { n: 1 } });
    const { task: late } = await scheduler.submit({ queue: 'deps', payload: { n: 2 }, delaySeconds: 600 });
    const { task: fanIn } = await scheduler.submit({
      queue: 'deps',
      payload: {},
      dependsOn: [early.taskId, late.taskId],
    });
    const agent = await startAgent(scheduler, { queues: ['deps'], maxConcurrency: 10 });
    const claimed = await claimUntil(scheduler, agent, 1, 5_000);
    const held = claimed.find((t) => t.taskId === early.taskId);
    if (!held) throw new Error('the first dependency was not claimed');
    await scheduler.complete({ agentId: agent.agentId, taskId: early.taskId, leaseEpoch: held.leaseEpoch });

    await expect
      .poll(async () => {
        const links = await scheduler.taskLinks(fanIn.taskId);
        return [...links.dependencies].sort();
      })
      .toEqual([early.taskId, late.taskId].sort());
    const links = await scheduler.taskLinks(fanIn.taskId);
    expect(links.found.get(early.taskId)?.status).toBe('succeeded');
    expect(links.found.get(late.taskId)?.status).toBe('queued');
    expect((await scheduler.taskLinks(late.taskId)).dependents).toEqual([fanIn.taskId]);
  });

  it('names its failure hook, not there before it dies and there after; and nothing for a task alone', async () => {
    const { scheduler } = stack;
    const { task } = await scheduler.submit({
      queue: 'hooks',
      payload: {},
      maxAttempts: 1,
      onFailure: { queue: 'hooks', payload: { cleanup: true } },
    });
    const before = await scheduler.taskLinks(task.taskId);
    expect(before.onFailure).toEqual(expect.any(String));
    expect(before.found.has(before.onFailure ?? '')).toBe(false);

    const agent = await startAgent(scheduler, { queues: ['hooks'] });
    const [lease] = await claimUntil(scheduler, agent, 1, 5_000);
    if (lease?.taskId !== task.taskId) throw new Error('the task was not claimed');
    await scheduler.fail(
      { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: lease.leaseEpoch },
      { message: 'no', retryable: false },
    );
    const after = await scheduler.taskLinks(task.taskId);
    expect(after.found.get(after.onFailure ?? '')?.status).toBe('queued');
    const hook = await scheduler.taskLinks(after.onFailure ?? '');
    expect(hook.task.failureOf?.taskId).toBe(task.taskId);
    expect(hook.found.get(task.taskId)?.status).toBe('dead');
    expect(hook).toMatchObject({ children: [], dependencies: [], dependents: [] });

    await expect(scheduler.taskLinks('t_aaaaaaaaaaaaaaaaaaaaaaaaaa')).rejects.toBeInstanceOf(
      TaskNotFoundError,
    );
  });
});
