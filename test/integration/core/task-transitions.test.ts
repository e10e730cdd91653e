/**
 * The store moves a task only along the arrows of the domain's transition table. Each status-changing write of the
 * task store is tried against a real record in every status, on DynamoDB Local, with a fence that matches the
 * record in everything but its status: the write lands exactly where the table has the arrow.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Observed, OwnerFence, TaskWrite } from '#core/ports/task-store';
import { ending, requeueAfter } from '#core/transitions';
import { InvalidTransitionError } from '#domain/errors';
import type { Task } from '#domain/task';
import { canTransition, TASK_STATUSES, type TaskEvent, type TaskStatus } from '#domain/task-status';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

const QUEUE = 'arrows';

describe('the task store follows the transition table', () => {
  let stack: TestStack;
  let agent: { agentId: string; sessionId: string };

  beforeAll(async () => {
    stack = await createTestStack({ queues: [QUEUE] });
    agent = await startAgent(stack.scheduler, { queues: [QUEUE], maxConcurrency: 50 });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** A task of its own in `status`, reached through the scheduler's operations. */
  async function taskIn(status: TaskStatus): Promise<Task> {
    const { scheduler } = stack;
    const { task } = await scheduler.submit({
      queue: QUEUE,
      payload: { status },
      ...(status === 'dead' ? { maxAttempts: 1 } : {}),
    });
    if (status === 'queued') return task;
    if (status === 'cancelled') return scheduler.cancel(task.taskId);
    const [held] = await claimUntil(scheduler, agent, 1);
    if (held?.taskId !== task.taskId) throw new Error('claimed another task than the one just submitted');
    const lease = { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: held.leaseEpoch };
    if (status === 'succeeded') await scheduler.complete(lease);
    if (status === 'dead') await scheduler.fail(lease, { message: 'no', retryable: false });
    return scheduler.getTask(task.taskId);
  }

  /** Leaves no queued task behind for the next claim to pick up. */
  async function settle(task: Task): Promise<void> {
    const now = await stack.scheduler.getTask(task.taskId);
    if (now.status === 'queued') await stack.scheduler.cancel(task.taskId);
  }

  const lease = (task: Task): OwnerFence => ({
    agentId: task.owner ?? agent.agentId,
    sessionId: task.sessionId ?? agent.sessionId,
    leaseEpoch: task.leaseEpoch,
  });
  /** What a caller that believes the task is in `status` presents; the epoch is the record's. */
  const believing = (task: Task, status: TaskStatus): Observed => ({
    taskId: task.taskId,
    status,
    leaseEpoch: task.leaseEpoch,
  });

  type Write = {
    readonly name: string;
    readonly event: TaskEvent;
    readonly to: TaskStatus;
    readonly write: (task: Task, now: number) => Promise<TaskWrite>;
  };
  const writes: Write[] = [
    {
      name: 'grant',
      event: 'claim',
      to: 'leased',
      write: (task, now) => stack.ctx.tasks.grant(task.taskId, { queue: QUEUE, ...agent }, now),
    },
    {
      name: 'complete',
      event: 'complete',
      to: 'succeeded',
      write: (task, now) =>
        stack.ctx.tasks.finish(
          task.taskId,
          lease(task),
          { event: 'complete', to: ending(stack.ctx, now, 'succeeded') },
          now,
        ),
    },
    {
      name: 'fail, retried',
      event: 'fail',
      to: 'queued',
      write: (task, now) =>
        stack.ctx.tasks.finish(
          task.taskId,
          lease(task),
          { event: 'fail', to: requeueAfter(stack.ctx, now, 0), error: { message: 'x', retryable: true } },
          now,
        ),
    },
    {
      name: 'release',
      event: 'release',
      to: 'queued',
      write: (task, now) =>
        stack.ctx.tasks.finish(
          task.taskId,
          lease(task),
          { event: 'release', to: requeueAfter(stack.ctx, now, 0) },
          now,
        ),
    },
    ...(['queued', 'dead'] as const).map(
      (to): Write => ({
        name: `reclaim to ${to}`,
        event: 'reclaim',
        to,
        write: (task, now) =>
          stack.ctx.tasks.takeBack(
            believing(task, 'leased'),
            'reclaim',
            to === 'queued' ? requeueAfter(stack.ctx, now, 0) : ending(stack.ctx, now, 'dead'),
            { message: 'lease expired', retryable: true },
            now,
          ),
      }),
    ),
    ...(['queued', 'leased'] as const).map(
      (believed): Write => ({
        name: `cancel, believed ${believed}`,
        event: 'cancel',
        to: 'cancelled',
        write: (task, now) =>
          stack.ctx.tasks.cancel(believing(task, believed), ending(stack.ctx, now, 'cancelled'), now),
      }),
    ),
    {
      name: 'redrive',
      event: 'redrive',
      to: 'queued',
      write: (task, now) =>
        stack.ctx.tasks.redrive(believing(task, 'dead'), requeueAfter(stack.ctx, now, 0), now),
    },
  ];

  const cases = writes.flatMap((w) => TASK_STATUSES.map((status) => ({ ...w, status })));

  it.each(cases)('$name on a $status task lands only if the table has the arrow', async (c) => {
    // Prepare
    const task = await taskIn(c.status);
    expect(task.status).toBe(c.status);
    const believed = c.name.startsWith('cancel, believed') ? c.name.split(' ').pop() : undefined;
    const allowed =
      canTransition(c.status, c.event, c.to) && (believed === undefined || believed === c.status);

    // Act
    const written = await c.write(task, stack.clock.now());

    // Assess
    expect(written.ok).toBe(allowed);
    const after = await stack.scheduler.getTask(task.taskId);
    expect(after.status).toBe(allowed ? c.to : c.status);
    expect(after.updatedAt === task.updatedAt).toBe(!allowed);
    await settle(after);
  });

  it('refuses, before sending anything, a write from a status the table has no arrow from', async () => {
    const task = await taskIn('succeeded');
    const sent = stack.meter.requests.length;
    const now = stack.clock.now();

    const attempts = [
      () => stack.ctx.tasks.cancel(task, ending(stack.ctx, now, 'cancelled'), now),
      () => stack.ctx.tasks.redrive(task, requeueAfter(stack.ctx, now, 0), now),
      () =>
        stack.ctx.tasks.takeBack(
          task,
          'reclaim',
          requeueAfter(stack.ctx, now, 0),
          { message: 'x', retryable: true },
          now,
        ),
    ];

    for (const attempt of attempts) await expect(attempt()).rejects.toBeInstanceOf(InvalidTransitionError);
    expect(stack.meter.requests.length).toBe(sent);
    expect((await stack.scheduler.getTask(task.taskId)).status).toBe('succeeded');
  });
});
