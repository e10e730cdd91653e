/**
 * Sending a task's hint to SQS after its state was committed, and, for a task claimable now, waking idle agents
 * of its queue (with a push channel). A failure here is logged, not thrown: the task
 * is safe in DynamoDB, and is marked so that the supervisor's next `reconcile` sends it again (if that mark
 * fails too, `reconcile` finds it when its due time passes).
 */
import { errorName } from '#domain/errors';
import { type HintPayload, hintFieldsOf } from '#domain/hint';
import { inLane } from '#domain/lanes';
import type { WakeReason } from '#domain/push';
import type { Task } from '#domain/task';
import type { SchedulerContext } from './context';
import { wakeFor, wakeLater } from './push';
import { offerTurn } from './turns';

type Dispatched = Pick<
  Task,
  'taskId' | 'queue' | 'priority' | 'leaseEpoch' | 'concurrencyKey' | 'rateLimits' | 'require'
>;

/**
 * Sends a task's hint (with `payload`, the hint carries it: its submission's) and wakes for it; false if the send
 * failed, and the task was marked for `reconcile` to send it again.
 */
export async function dispatch(
  ctx: SchedulerContext,
  task: Dispatched,
  delaySeconds: number,
  reason: WakeReason,
  payload?: HintPayload,
): Promise<boolean> {
  try {
    // A keyed task, or one that requires labels, waits in a lane: its lane's turn, not a hint of its own, goes in line.
    if (inLane(task)) await offerTurn(ctx, task, delaySeconds);
    else
      await ctx.queues.send(
        task.queue,
        task.priority,
        {
          taskId: task.taskId,
          leaseEpoch: task.leaseEpoch,
          ...(payload ? { payload } : {}),
          ...hintFieldsOf(task),
        },
        delaySeconds,
      );
    if (delaySeconds <= 0) await wakeFor(ctx, [task], reason);
    else await wakeLater(ctx, [task], delaySeconds);
    return true;
  } catch (error) {
    ctx.log.warn('dispatch failed; reconcile will send the task again', {
      taskId: task.taskId,
      queue: task.queue,
      error: errorName(error),
    });
    await markUnsent(ctx, task);
    return false;
  }
}

/** The task's hint is not in SQS: without `dispatchedAt`, and due now, the next `reconcile` sends it. */
async function markUnsent(ctx: SchedulerContext, task: Pick<Task, 'taskId' | 'leaseEpoch'>): Promise<void> {
  await ctx.tasks
    .markUnsent({ taskId: task.taskId, status: 'queued', leaseEpoch: task.leaseEpoch }, ctx.now())
    .catch((error: unknown) =>
      ctx.log.warn('marking an unsent task failed; reconcile finds it when it is due', {
        taskId: task.taskId,
        error: errorName(error),
      }),
    );
}

/** A hint to send once several submissions are written, so they share `SendMessageBatch` requests. */
export interface PendingDispatch {
  readonly task: Dispatched;
  readonly delaySeconds: number;
  /** The payload its hint carries, if any. */
  readonly payload?: HintPayload;
}

/**
 * `dispatch` for many tasks at once: ten hints per SQS request. Failures are logged, as for one. The number of tasks
 * whose hint (or lane's offer) went out.
 */
export async function dispatchMany(
  ctx: SchedulerContext,
  all: readonly PendingDispatch[],
  reason: WakeReason,
): Promise<number> {
  let pending = all;
  if (pending.length === 0) return 0;
  let offered = 0;
  const laned = pending.filter(({ task }) => inLane(task));
  if (laned.length > 0) {
    const sent = await Promise.all(
      laned.map(({ task, delaySeconds }) => dispatch(ctx, task, delaySeconds, reason)),
    );
    offered = sent.filter(Boolean).length;
    pending = pending.filter(({ task }) => !inLane(task));
    if (pending.length === 0) return offered;
  }
  const failed = await ctx.queues.sendMany(
    pending.map(({ task, delaySeconds, payload }) => ({
      queue: task.queue,
      priority: task.priority,
      hint: {
        taskId: task.taskId,
        leaseEpoch: task.leaseEpoch,
        ...(payload ? { payload } : {}),
        ...hintFieldsOf(task),
      },
      delaySeconds,
    })),
  );
  for (const hint of failed) {
    ctx.log.warn('dispatch failed; reconcile will send the task again', { taskId: hint.taskId });
  }
  const unsent = new Set(failed.map((hint) => hint.taskId));
  const sent = pending.filter(({ task }) => !unsent.has(task.taskId));
  // Hints held back for the same whole seconds share one timed wake per queue.
  const later = new Map<number, Dispatched[]>();
  for (const { task, delaySeconds } of sent) {
    if (delaySeconds <= 0) continue;
    const seconds = Math.ceil(delaySeconds);
    const same = later.get(seconds);
    if (same) same.push(task);
    else later.set(seconds, [task]);
  }
  await Promise.all([
    ...failed.map((hint) => markUnsent(ctx, hint)),
    wakeFor(
      ctx,
      sent.filter(({ delaySeconds }) => delaySeconds <= 0).map((p) => p.task),
      reason,
    ),
    ...[...later].map(([seconds, tasks]) => wakeLater(ctx, tasks, seconds)),
  ]);
  return offered + sent.length;
}
