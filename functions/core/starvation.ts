/**
 * The starvation ladder, after the lease-sweeping daemon we learned from: a claimable task that has waited past
 * each threshold is (1) promoted one priority, (2) announced with a `task.starved` event, (3) marked as needing
 * attention, which raises an alarm. Each step is a conditional write on the step reached, so passes that
 * overlap take each step once. A starving queue that no live agent serves is announced as `queue.noCapableAgent`,
 * and a worker is asked for with `agent.spawnRequested`, once per queue and requirement set per `announceAfter`.
 * An operator clears the mark (`clearAttention`); the next requeue (or a suspension) resets the ladder and the mark.
 */
import { TaskNotFoundError } from '#domain/errors';
import { type Requirements, requirementsKey } from '#domain/labels';
import { inLane } from '#domain/lanes';
import { promote } from '#domain/priority';
import type { Task } from '#domain/task';
import type { SchedulerContext } from './context';
import { emit } from './events';

export type LadderStep = 'promoted' | 'starved' | 'attention';

const thresholdsMs = (ctx: SchedulerContext) => [
  ctx.settings.starvation.promoteAfterSeconds * 1_000,
  ctx.settings.starvation.announceAfterSeconds * 1_000,
  ctx.settings.starvation.attentionAfterSeconds * 1_000,
];

/**
 * Since when the task has been claimable: from the last transition that made it queued. A record written before that
 * time was kept counts from its submit or its delay, as it did then.
 */
const waitingSince = (task: Task) => task.readyAt ?? Math.max(task.createdAt, task.notBefore ?? 0);

/** Whether the task has waited past `announceAfter`: starving, whatever steps of the ladder it has taken. */
export const isStarving = (ctx: SchedulerContext, task: Task, now: number) =>
  now - waitingSince(task) >= ctx.settings.starvation.announceAfterSeconds * 1_000;

/**
 * What a pass saw of one queue's starving work of one requirement set: how many tasks it looked at, which, and the one
 * waiting longest.
 */
export interface StarvingWork {
  readonly queue: string;
  readonly require: Requirements;
  count: number;
  readonly taskIds: string[];
  oldest: { readonly taskId: string; readonly since: number };
}

/** Counts a starving task into what the pass saw of its queue and requirement set. */
export function noteStarving(seen: Map<string, StarvingWork>, task: Task): void {
  const since = waitingSince(task);
  const require = task.require ?? {};
  const key = `${task.queue} ${requirementsKey(require)}`;
  const work = seen.get(key);
  if (!work)
    seen.set(key, {
      queue: task.queue,
      require,
      count: 1,
      taskIds: [task.taskId],
      oldest: { taskId: task.taskId, since },
    });
  else {
    work.count++;
    work.taskIds.push(task.taskId);
    if (since < work.oldest.since) work.oldest = { taskId: task.taskId, since };
  }
}

/**
 * Asks for a worker for starving work that no live agent can serve: an `agent.spawnRequested` event, at most one per
 * queue and requirement set per `announceAfter` however many passes (or function instances) see it, by one
 * conditional write of a small mark in the leases table. True if this call asked.
 */
export async function requestSpawn(
  ctx: SchedulerContext,
  queue: string,
  work: StarvingWork,
  now: number,
  requirements: Requirements = {},
): Promise<boolean> {
  const windowMs = ctx.settings.starvation.announceAfterSeconds * 1_000;
  const asked = await ctx.queueControls.noteSpawnRequest(queue, requirementsKey(requirements), {
    at: now,
    since: now - windowMs,
    // Kept a window past its use, then DynamoDB's TTL removes it.
    purgeAt: Math.ceil((now + 2 * windowMs) / 1_000),
  });
  if (!asked) return false;
  await emit(ctx, [
    {
      type: 'agent.spawnRequested',
      fields: {
        queue,
        // The task that has waited longest: the event's one task.
        taskId: work.oldest.taskId,
        data: {
          requirements,
          waiting: work.count,
          oldestWaitedSeconds: Math.round((now - work.oldest.since) / 1_000),
          reason: 'noCapableAgent',
        },
      },
    },
  ]);
  return true;
}

/** When the task will cross its next threshold, or undefined at the top of the ladder. */
export function nextStepAt(ctx: SchedulerContext, task: Task): number | undefined {
  const level = task.starvationLevel ?? 0;
  const threshold = thresholdsMs(ctx)[level];
  return threshold === undefined ? undefined : waitingSince(task) + threshold;
}

/** Takes the steps `task` has earned by `now`; returns them and the task as it now is. */
export async function climbLadder(
  ctx: SchedulerContext,
  task: Task,
  now: number,
): Promise<{ steps: LadderStep[]; task: Task }> {
  const waited = now - waitingSince(task);
  const level = task.starvationLevel ?? 0;
  const reached = thresholdsMs(ctx).filter((t) => waited >= t).length;
  if (reached <= level) return { steps: [], task };
  // A task in a lane (a key's, a requirement set's) stays there (its priority names it): its lane's turns, not a
  // higher tier, are its way out.
  const promoting = level < 1 && reached >= 1 && task.priority !== 'critical' && !inLane(task);
  const priority = promoting ? promote(task.priority) : task.priority;
  const written = await ctx.tasks.climbLadder(
    { taskId: task.taskId, status: 'queued', leaseEpoch: task.leaseEpoch },
    {
      fromLevel: level,
      toLevel: reached,
      ...(promoting ? { priority } : {}),
      needsAttention: reached >= 3,
    },
  );
  if (!written.ok) return { steps: [], task: written.current ?? task };
  const steps: LadderStep[] = [];
  if (level < 1 && reached >= 1) {
    steps.push('promoted');
    // A hint in the more urgent queue; the old one is merely stale now.
    if (promoting) {
      await ctx.queues
        .send(task.queue, priority, { taskId: task.taskId, leaseEpoch: task.leaseEpoch })
        .catch(() => undefined);
    }
  }
  const fields = {
    taskId: task.taskId,
    queue: task.queue,
    data: { waitedSeconds: Math.round(waited / 1_000), priority, level: reached },
  };
  if (level < 2 && reached >= 2) {
    steps.push('starved');
    await emit(ctx, [{ type: 'task.starved', fields }]);
  }
  if (level < 3 && reached >= 3) steps.push('attention');
  return { steps, task: written.task };
}

/**
 * An operator clears the mark of the last step: one conditional write of the flag alone, whatever the task's status.
 * Nothing else depends on the flag: the level stays 3 (the top, so the ladder neither marks it again for this wait
 * nor asks for another look at it), and the alarm counts marks as each pass makes them (the supervisor's
 * `NeedsAttention` metric), so there is nothing to take back there. A task not marked is answered as it is.
 */
export async function clearAttention(ctx: SchedulerContext, taskId: string): Promise<Task> {
  const written = await ctx.tasks.clearAttention(taskId);
  if (written.ok) return written.task;
  if (written.current) return written.current;
  throw new TaskNotFoundError(taskId);
}
