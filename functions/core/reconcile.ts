/**
 * Finding queued tasks whose hint never reached SQS or was lost there (a send that failed after the write
 * committed, a purged or restarted queue, a message dead-lettered by SQS), and sending them again. Also sends
 * tasks whose delay was longer than SQS can hold, once it is time.
 *
 * A second hint for a task whose first one still exists is harmless (the claim is conditional, and the losing
 * hint is dropped as stale) but not free. A task whose hint is merely waiting in line, behind a backlog, looks
 * just like one whose hint is gone; so while its SQS queue still holds hints ready to be received, a task is
 * sent again only once its hint is much older (`BACKLOG_PATIENCE` looks), and a deep queue is not sent twice
 * over every few minutes. A send known to have failed is sent again at the next pass.
 */
import { errorName } from '#domain/errors';
import { hintFieldsOf } from '#domain/hint';
import { meets, type Requirements, requirementsKey, requiresAny } from '#domain/labels';
import { inLane } from '#domain/lanes';
import type { Priority } from '#domain/priority';
import type { AgentSession, Task } from '#domain/task';
import { LIMITS } from '#domain/task-spec';
import { eachConcurrently, SWEEP_CONCURRENCY } from './concurrently';
import { type DueScan, queryEveryDueShard, type SchedulerContext } from './context';
import { recheckWaiting } from './dependencies';
import { emit } from './events';
import { expireTask, followUpEnd } from './follow-ups';
import { keepPayloadFor } from './lifetimes';
import { walkNewTasks } from './list-walk';
import { noteError, type PassError } from './pass-errors';
import { wake, wakeFor, wakeLater } from './push';
import { getQueueControl } from './queue-controls';
import { isSchedulerPaused } from './scheduler-control';
import {
  climbLadder,
  isStarving,
  nextStepAt,
  noteStarving,
  requestSpawn,
  type StarvingWork,
} from './starvation';
import { dueNoLaterThanExpiry } from './timing';
import { offerTurn } from './turns';
import { lookAtSuspended } from './waitpoints';

export interface ReconcileSummary {
  readonly redispatched: string[];
  /** Tasks the starvation ladder promoted, announced as starved, or marked as needing attention. */
  readonly promoted: string[];
  readonly starved: string[];
  readonly needsAttention: string[];
  /** Queues with starving work and no live agent serving them. */
  readonly noCapableAgent: string[];
  /** Queues this pass asked a worker for (`agent.spawnRequested`). */
  readonly spawnRequested: string[];
  /** The task each of those requests named: the queue's starving task that has waited longest. */
  readonly spawnRequestedFor: string[];
  /** Starving tasks looked at whose queue no live session serves: no agent can claim them as things stand. */
  readonly noMatchingSession: string[];
  /** Queued tasks looked at (of every queue, paused or not). */
  readonly pending: number;
  /** Queued tasks of paused queues (of every queue while the scheduler is paused), left alone by the ladder. */
  readonly pausedSkipped: number;
  /** The same tasks: no claim can take them until their queue (or the scheduler) is resumed. */
  readonly unclaimable: string[];
  /** Queued tasks looked at whose hint was recent enough; their next look was moved later. */
  readonly deferred: number;
  /**
   * Of those, the tasks whose hint went out (or whose agents were woken) recently enough that nothing was sent: its
   * hint younger than `reconcileAfterSeconds`, or still in line behind a backlog. Not those held back by a delay
   * longer than SQS's, nor those whose hint just became visible (they were woken).
   */
  readonly recentlyNotified: string[];
  /**
   * Wakes: what the pass did to bring a queued task to an agent, one per task. A hint sent again (a turn put in
   * line, for a keyed task) with the push wake that follows it, or, for a task whose hint just became visible after
   * its delay, a push wake of the queue's idle agents. Succeeded when nothing of it met an error (a wake that
   * finds no agent idle succeeds: the hint waits for the next claim); failed when the send or the push wake did.
   */
  readonly wakeAttempts: number;
  readonly wakesSucceeded: number;
  readonly wakesFailed: string[];
  /** Tasks that ended `expired`, not claimed by their deadline to start. */
  readonly expired: string[];
  /** Ended tasks whose follow-up (an `onFailure`) was made by this pass. */
  readonly followedUp: string[];
  /** Waiting tasks whose dependencies this pass looked at. */
  readonly rechecked: string[];
  /** Suspended tasks whose waitpoint timed out: resumed, or dead for `onTimeout: 'fail'`. */
  readonly timedOut: string[];
  readonly errors: number;
  /** The first few errors met, as a pass keeps them (`pass-errors.ts`). */
  readonly failures: readonly PassError[];
}

/** The wait before the n-th re-send is looked at again: doubling, so a deep backlog is not re-sent every pass. */
const nextLookMs = (ctx: SchedulerContext, dispatchCount: number) =>
  ctx.settings.reconcileAfterSeconds * 1_000 * 2 ** Math.min(6, Math.max(0, dispatchCount - 1));

/** How many of its usual looks a hint may wait in a queue that still has hints ready before it is sent again. */
export const BACKLOG_PATIENCE = 16;

/** Whether an SQS queue holds hints ready to be received, read once per pass; an unreadable count says no. */
type Backlogged = (queue: string, priority: Priority) => Promise<boolean>;

function backlogReader(ctx: SchedulerContext): Backlogged {
  const counts = new Map<string, Promise<boolean>>();
  return (queue, priority) => {
    const key = `${queue}/${priority}`;
    let count = counts.get(key);
    if (!count) {
      count = ctx.queues.readyCount(queue, priority).then(
        (ready) => ready > 0,
        (error: unknown) => {
          ctx.log.warn('reading a queue backlog failed; overdue hints are sent again', {
            queue,
            priority,
            error: errorName(error),
          });
          return false;
        },
      );
      counts.set(key, count);
    }
    return count;
  };
}

export async function reconcileDispatch(
  ctx: SchedulerContext,
  options: {
    everything?: boolean;
    /** The due index as this pass's reclaim sweep read it: taken instead of querying it again. */
    after?: DueScan;
  } = {},
): Promise<ReconcileSummary> {
  const summary = {
    redispatched: [] as string[],
    promoted: [] as string[],
    starved: [] as string[],
    needsAttention: [] as string[],
    noCapableAgent: [] as string[],
    spawnRequested: [] as string[],
    spawnRequestedFor: [] as string[],
    noMatchingSession: [] as string[],
    pending: 0,
    pausedSkipped: 0,
    unclaimable: [] as string[],
    deferred: 0,
    recentlyNotified: [] as string[],
    wakeAttempts: 0,
    wakesSucceeded: 0,
    wakesFailed: [] as string[],
    expired: [] as string[],
    followedUp: [] as string[],
    rechecked: [] as string[],
    timedOut: [] as string[],
    errors: 0,
    failures: [] as PassError[],
  };
  // A push wake logs and swallows its errors (it is a hint); the pass counts and keeps them.
  const wakeFailed = (error: unknown) => noteError(summary, 'wake', error);
  const taskFailed = (task: Task, notice: Notice, error: unknown) => {
    // A send that threw is a wake that failed.
    notice.failed ||= notice.attempted;
    noteError(summary, 'reconcile', error);
    ctx.log.error('reconcile failed for a task', { taskId: task.taskId, error: errorName(error) });
  };
  const countWake = (task: Task, notice: Notice) => {
    if (!notice.attempted) return;
    summary.wakeAttempts++;
    if (notice.failed) summary.wakesFailed.push(task.taskId);
    else summary.wakesSucceeded++;
  };
  // Work held back by a pause of the whole scheduler is not starving: read once a pass, when a queued task is looked
  // at. A control that cannot be read counts as running (the ladder climbs, as it did before any pause).
  let pausedEverywhere: Promise<boolean> | undefined;
  const schedulerPaused = () => {
    pausedEverywhere ??= isSchedulerPaused(ctx).catch(() => false);
    return pausedEverywhere;
  };
  // The live sessions, read once a pass when starving work is seen: whether one serves a queue and meets a set.
  let liveSessions: Promise<readonly AgentSession[]> | undefined;
  const isServed = async (queue: string, require: Requirements = {}) => {
    liveSessions ??= ctx.sessions.listLive(now);
    return (await liveSessions).some(
      (session) => session.queues.includes(queue) && meets(session.labels, require),
    );
  };
  // Standalone (not after this pass's sweep, which the walk came before), new tasks still open get their look
  // first; to send everything again, every open task, however new.
  if (options.everything) await walkNewTasks(ctx, { upTo: ctx.now() });
  else if (!options.after) await walkNewTasks(ctx);
  const now = ctx.now();
  const backlogged = backlogReader(ctx);
  const fannedOut = new Set<string>();
  const servedChecked = new Set<string>();
  // Starving work the pass looked at, by queue: a worker is asked for once the pass has seen it all.
  const starving = new Map<string, StarvingWork>();
  const shared = options.everything ? undefined : options.after;
  const dueIn =
    shared?.dueIn ??
    queryEveryDueShard(ctx, options.everything ? Number.MAX_SAFE_INTEGER : now, ctx.settings.sweepLimit);
  // Hints overdue: sent together once every due task has been looked at, ten to a request.
  const resends: Resend[] = [];
  for (const shard of ctx.tasks.dueShards) {
    try {
      const ids = (await dueIn(shard)).filter((id) => !shared?.handled.has(id));
      if (ids.length === 0) continue;
      const found = [...(await ctx.tasks.getMany(ids)).values()];
      await eachConcurrently(found, SWEEP_CONCURRENCY, async (task) => {
        const notice: Notice = { attempted: false, failed: false };
        try {
          if (task.followUpPending) {
            await followUpEnd(ctx, task);
            summary.followedUp.push(task.taskId);
          }
          if (task.status !== 'queued' && task.status !== 'waiting' && task.status !== 'suspended') return;
          if (task.expiresAt !== undefined && task.expiresAt <= now) {
            if (await expireTask(ctx, task)) summary.expired.push(task.taskId);
            return;
          }
          if (task.status === 'suspended') {
            if (await lookAtSuspended(ctx, task, now)) summary.timedOut.push(task.taskId);
            return;
          }
          if (task.status === 'waiting') {
            await recheckWaiting(ctx, task);
            summary.rechecked.push(task.taskId);
            return;
          }
          summary.pending++;
          // A queued task may wait long (a paused queue, no agent): its payload is kept as long as it waits.
          let current = await keepPayloadFor(ctx, task, Math.max(now, task.notBefore ?? now));
          if ((await schedulerPaused()) || (await getQueueControl(ctx, task.queue)).paused) {
            summary.pausedSkipped++;
            summary.unclaimable.push(task.taskId);
          } else {
            const climbed = await climbLadder(ctx, current, now);
            const steps = climbed.steps;
            current = climbed.task;
            if (steps.includes('promoted')) {
              summary.promoted.push(task.taskId);
              // The ladder's first rung wakes every idle agent of the queue once, cooldown or not.
              if (!fannedOut.has(task.queue)) {
                fannedOut.add(task.queue);
                await wake(ctx, task.queue, {
                  reason: 'starving',
                  count: Number.POSITIVE_INFINITY,
                  ignoreCooldown: true,
                  failed: wakeFailed,
                });
              }
            }
            if (steps.includes('attention')) summary.needsAttention.push(task.taskId);
            if (current.status === 'queued' && isStarving(ctx, current, now)) noteStarving(starving, current);
            if (steps.includes('starved')) {
              summary.starved.push(task.taskId);
              const require = task.require ?? {};
              const set = `${task.queue} ${requirementsKey(require)}`;
              if (!servedChecked.has(set)) {
                servedChecked.add(set);
                if (!(await isServed(task.queue, require))) {
                  summary.noCapableAgent.push(task.queue);
                  await emit(ctx, [
                    {
                      type: 'queue.noCapableAgent',
                      fields: {
                        queue: task.queue,
                        taskId: task.taskId,
                        ...(requiresAny(task.require) ? { data: { requirements: task.require } } : {}),
                      },
                    },
                  ]);
                }
              }
            }
          }
          const look = await reconcileTask(ctx, current, now, {
            everything: options.everything === true,
            backlogged,
            notice,
            failed: (error) => {
              notice.failed = true;
              wakeFailed(error);
            },
          });
          if (typeof look === 'object') {
            // Its hint goes with the pass's others; what the send did is counted once it is made.
            resends.push({ ...look, notice });
            return;
          }
          summary.deferred++;
          if (look === 'recent') summary.recentlyNotified.push(task.taskId);
        } catch (error) {
          taskFailed(task, notice, error);
        }
        countWake(task, notice);
      });
    } catch (error) {
      noteError(summary, 'reconcile', error);
      ctx.log.error('reconcile failed for a shard', {
        shard,
        error: errorName(error),
      });
    }
  }
  const sent = await sendHints(ctx, resends);
  await eachConcurrently(resends, SWEEP_CONCURRENCY, async (resend) => {
    const { task, notice } = resend;
    try {
      const refused = sent.get(task.taskId);
      if (refused) throw refused;
      await recordResend(ctx, resend, now, (error) => {
        notice.failed = true;
        wakeFailed(error);
      });
      summary.redispatched.push(task.taskId);
    } catch (error) {
      taskFailed(task, notice, error);
    }
    countWake(task, notice);
  });
  // One conditional write per starving queue that no live agent serves, whatever the number of its tasks.
  for (const work of starving.values()) {
    try {
      if (await isServed(work.queue, work.require)) continue;
      summary.noMatchingSession.push(...work.taskIds);
      if (await requestSpawn(ctx, work.queue, work, now, work.require)) {
        summary.spawnRequested.push(work.queue);
        summary.spawnRequestedFor.push(work.oldest.taskId);
      }
    } catch (error) {
      noteError(summary, 'spawnRequest', error);
      ctx.log.error('asking for a worker failed', { queue: work.queue, error: errorName(error) });
    }
  }
  return summary;
}

/**
 * Whether a queued task's hint is to be sent again now, or else when to look at it next. A hint never sent (or
 * whose send failed) is sent at once; one sent `reconcileAfterSeconds` ago, if its queue has no hints ready (the
 * line moved past it, so it is gone) or once it has waited `BACKLOG_PATIENCE` times its usual look.
 */
async function whenToSend(
  ctx: SchedulerContext,
  task: Task,
  now: number,
  everything: boolean,
  backlogged: Backlogged,
): Promise<{ resend: true; lookAt?: undefined } | { resend: false; lookAt: number }> {
  if (everything || task.dispatchedAt === undefined) return { resend: true };
  const look = nextLookMs(ctx, task.dispatchCount);
  const waited = now - task.dispatchedAt;
  if (waited < ctx.settings.reconcileAfterSeconds * 1_000)
    return { resend: false, lookAt: task.dispatchedAt + look };
  const patience = look * BACKLOG_PATIENCE;
  // A keyed task's lane has one turn in line, which its slot dates: whether it is lost is the slot's to say.
  if (waited >= patience || inLane(task) || !(await backlogged(task.queue, task.priority)))
    return { resend: true };
  // Still in line, perhaps: look again when it has waited twice as long, and send at the latest at `patience`.
  return { resend: false, lookAt: task.dispatchedAt + Math.min(2 * waited, patience) };
}

/** Whether a look at a queued task made a wake (see `ReconcileSummary.wakeAttempts`), and whether it failed. */
interface Notice {
  attempted: boolean;
  failed: boolean;
}

/**
 * What a look at a queued task did: sent its hint again; woke agents for a hint that just became visible; left it,
 * its hint recent (or in line behind a backlog); or left it, its delay longer than SQS holds.
 */
type Look = 'woken' | 'recent' | 'notYet';

/** A queued task whose hint is to be sent again, visible after `delayMs`. */
interface Resend {
  readonly task: Task;
  readonly delayMs: number;
  readonly notice: Notice;
}

/**
 * Whether a queued task's last hint is overdue: if so, what to send (the caller sends the pass's hints together);
 * otherwise its next look is moved.
 */
async function reconcileTask(
  ctx: SchedulerContext,
  task: Task,
  now: number,
  options: {
    readonly everything: boolean;
    readonly backlogged: Backlogged;
    /** Set once a wake starts: a send that throws after it is a wake that failed. */
    readonly notice: Notice;
    /** Told of an error a push wake met (it does not throw). */
    readonly failed: (error: unknown) => void;
  },
): Promise<Look | Omit<Resend, 'notice'>> {
  const { notice, failed } = options;
  const claimableAt = task.notBefore ?? 0;
  const delayMs = Math.max(0, claimableAt - now);
  const { resend, lookAt } = await whenToSend(ctx, task, now, options.everything, options.backlogged);
  // Held back until now, its hint just became visible: nothing woke anyone for it (see `dueAtAfterDispatch`). Without a
  // push channel there is no one to wake: its hint waits for the agents' polls, as a recent one does.
  const woken =
    ctx.push !== undefined &&
    !resend &&
    task.notBefore !== undefined &&
    task.notBefore <= now &&
    task.dispatchedAt !== undefined &&
    now - task.dispatchedAt < ctx.settings.reconcileAfterSeconds * 1_000;
  if (woken) {
    notice.attempted = true;
    await wakeFor(ctx, [task], 'due', failed);
  }
  if (!resend || delayMs > LIMITS.sqsMaxDelaySeconds * 1_000) {
    const dueAt = Math.min(
      resend ? claimableAt - LIMITS.sqsMaxDelaySeconds * 1_000 : lookAt,
      nextStepAt(ctx, task) ?? Number.MAX_SAFE_INTEGER,
    );
    await ctx.tasks.lookAgainAt(
      { taskId: task.taskId, status: 'queued', leaseEpoch: task.leaseEpoch },
      Math.max(dueNoLaterThanExpiry(dueAt, task), now + 1),
    );
    return resend ? 'notYet' : woken ? 'woken' : 'recent';
  }
  return { task, delayMs };
}

/**
 * Sends the hints of `resends`, ten to a request per SQS queue; a keyed task's lane gets a turn in line instead,
 * whatever its slot says (the turn may be what was lost). Answers, by task, the error of each send that failed.
 */
async function sendHints(ctx: SchedulerContext, resends: readonly Resend[]): Promise<Map<string, unknown>> {
  const failed = new Map<string, unknown>();
  for (const { notice } of resends) notice.attempted = true;
  const plain = resends.filter(({ task }) => !inLane(task));
  await Promise.all([
    ...resends
      .filter(({ task }) => inLane(task))
      .map(({ task, delayMs }) =>
        offerTurn(ctx, task, delayMs / 1_000, {
          staleAfterMs: ctx.settings.reconcileAfterSeconds * 1_000,
        }).catch((error: unknown) => failed.set(task.taskId, error)),
      ),
    plain.length === 0
      ? undefined
      : ctx.queues
          .sendMany(
            plain.map(({ task, delayMs }) => ({
              queue: task.queue,
              priority: task.priority,
              hint: { taskId: task.taskId, leaseEpoch: task.leaseEpoch, ...hintFieldsOf(task) },
              delaySeconds: delayMs / 1_000,
            })),
          )
          .then(
            (refused) => {
              for (const hint of refused) failed.set(hint.taskId, new Error('SQS did not take the hint'));
            },
            (error: unknown) => {
              for (const { task } of plain) failed.set(task.taskId, error);
            },
          ),
  ]);
  return failed;
}

/**
 * After its hint was sent: the task's agents woken (now, or when the hint's delay ends), and the send recorded. Send
 * first, then record: if the record fails the task was claimed meanwhile and the hint is merely stale.
 */
async function recordResend(
  ctx: SchedulerContext,
  { task, delayMs }: Resend,
  now: number,
  failed: (error: unknown) => void,
): Promise<void> {
  if (delayMs <= 0) await wakeFor(ctx, [task], 'resent', failed);
  else await wakeLater(ctx, [task], delayMs / 1_000, failed);
  await ctx.tasks.recordDispatch(
    { taskId: task.taskId, status: 'queued', leaseEpoch: task.leaseEpoch },
    {
      dispatchedAt: now + delayMs,
      dueAt: dueNoLaterThanExpiry(
        Math.min(
          now + delayMs + nextLookMs(ctx, task.dispatchCount + 1),
          nextStepAt(ctx, task) ?? Number.MAX_SAFE_INTEGER,
        ),
        task,
      ),
    },
  );
}
