/**
 * Taking back leases that expired: the session went silent (or was replaced), or the attempt ran past its
 * deadline. The task goes back to the queue with a backoff, or to `dead` once its attempts are used up.
 *
 * Every take-back is fenced by the epoch observed, so two sweeps running at once take a lease back once,
 * and an owner that completes at the same instant either wins before the sweep or gets `LeaseLost` after it.
 */
import { errorName } from '#domain/errors';
import { decideRetry } from '#domain/retry-policy';
import { type AgentSession, leaseExpiry, type Task } from '#domain/task';
import { eachConcurrently, SWEEP_CONCURRENCY } from './concurrently';
import { type DueScan, queryEveryDueShard, type SchedulerContext } from './context';
import { recordDeath } from './dead-letters';
import { dispatch } from './dispatch';
import { emit } from './events';
import { keepPayloadFor } from './lifetimes';
import { walkNewTasks } from './list-walk';
import { noteError, type PassError } from './pass-errors';
import { ending, requeueAfter, retryInTime, sendsNow } from './timing';
import { freeLeaseSlots } from './turns';

export type ReclaimReason = 'deadline' | 'session' | 'revoked';
export type ReclaimOutcome = 'requeued' | 'dead' | 'notLeased' | 'raced';

/**
 * Takes one task back. With `session`, only if the task is still leased to that session; the task's own
 * record is read unless given.
 */
export async function reclaimTask(
  ctx: SchedulerContext,
  taskId: string,
  options: { reason: ReclaimReason; session?: AgentSession; task?: Task },
): Promise<ReclaimOutcome> {
  const task = options.task ?? (await ctx.tasks.get(taskId));
  if (task?.status !== 'leased') return 'notLeased';
  if (options.session && task.sessionId !== options.session.sessionId) return 'notLeased';
  const now = ctx.now();
  const retry = decideRetry(task.attempt, task.retryPolicy, true, ctx.random());
  // Taken from a revoked agent whose session had not run out, the task waits out that session's lease: the
  // agent's own reckoning aborts its handler by then (it hears of the revocation only at its next call), so no
  // other agent runs the task while the revoked one may still be running it. A session the same agent replaced
  // hands its tasks back at once: it is that agent's own restart.
  const heldUntil = options.reason === 'revoked' ? (options.session?.expiresAt ?? now) : now;
  const decision = retryInTime(
    retry.retry ? { ...retry, delayMs: Math.max(retry.delayMs, heldUntil - now) } : retry,
    now,
    task,
  );
  await keepPayloadFor(ctx, task, now + (decision.retry ? decision.delayMs : 0));
  const written = await ctx.tasks.takeBack(
    task,
    {
      event: 'reclaim',
      to: decision.retry ? requeueAfter(ctx, now, decision.delayMs, task) : ending(ctx, now, 'dead', task),
      error: { message: `lease expired (${options.reason})`, retryable: true },
    },
    now,
  );
  if (!written.ok) return 'raced';
  // Its queue's slots go before its hint is sent again.
  await freeLeaseSlots(ctx, task);
  if (task.owner && task.sessionId) {
    // Best effort: the owner hears of it at its next heartbeat; a stale write of its would fail anyway.
    await ctx.sessions
      .notify(task.owner, task.sessionId, {
        kind: 'lost',
        taskId,
        leaseEpoch: task.leaseEpoch,
        ...(task.leasedAt === undefined ? {} : { reservedAt: task.leasedAt }),
      })
      .catch(() => undefined);
  }
  if (decision.retry && sendsNow(decision.delayMs)) {
    await dispatch(ctx, written.task, decision.delayMs / 1_000, 'reclaimed');
  }
  const fields = {
    taskId,
    queue: task.queue,
    ...(task.owner ? { agentId: task.owner } : {}),
    data: { leaseEpoch: task.leaseEpoch, attempt: task.attempt, reason: options.reason },
  };
  await emit(ctx, [{ type: 'task.lost', fields }]);
  if (!decision.retry) await recordDeath(ctx, written.task, `lease expired (${options.reason})`, task.owner);
  return decision.retry ? 'requeued' : 'dead';
}

/**
 * Ends a session found over before anything it holds is taken back (see `SessionStore.end`), so that an agent's
 * heartbeat or claim decided before the expiry but landing after it cannot revive the session once its leases
 * or roles are someone else's. False when the session turned out to be alive: a write of the agent's changed it
 * since it was read.
 */
async function endSession(ctx: SchedulerContext, session: AgentSession, now: number): Promise<boolean> {
  if (session.endedAt !== undefined) return true;
  const ended = await ctx.sessions.end(session, now);
  if (ended.ok) return true;
  // Replaced by a newer session, or gone: the one seen cannot be extended any more either.
  return ended.current?.sessionId !== session.sessionId;
}

/**
 * Takes back every task of a session already ended, then turns its `held` entries into `lost` notices so later
 * sweeps skip it (`SessionStore.retire`), and announces the agent offline.
 */
export async function takeBackTasks(
  ctx: SchedulerContext,
  session: AgentSession,
  reason: 'session' | 'revoked' = 'session',
): Promise<{ outcomes: [string, ReclaimOutcome][]; retired: boolean }> {
  const outcomes: [string, ReclaimOutcome][] = [];
  const entries = Object.entries(session.held);
  const tasks =
    entries.length === 0 ? new Map<string, Task>() : await ctx.tasks.getMany(entries.map(([id]) => id));
  for (const [taskId, reservedAt] of entries) {
    outcomes.push([taskId, await giveBack(ctx, session, reason, taskId, reservedAt, tasks.get(taskId))]);
  }
  const retired = await ctx.sessions.retire(session, ctx.now());
  if (retired.ok) {
    await emit(ctx, [
      { type: 'agent.offline', fields: { agentId: session.agentId, data: { sessionId: session.sessionId } } },
    ]);
  }
  return { outcomes, retired: retired.ok };
}

/**
 * One entry of an ended session: its lease taken back, or, when no grant has landed for the reservation, that grant
 * barred, so a claim still between its reservation and its grant cannot lease the task to a session no one holds
 * (a grant that lands first is found by the bar's refusal and taken back). An entry whose grant landed and ended
 * costs nothing more.
 */
async function giveBack(
  ctx: SchedulerContext,
  session: AgentSession,
  reason: 'session' | 'revoked',
  taskId: string,
  reservedAt: number,
  task: Task | undefined,
): Promise<ReclaimOutcome> {
  if (task?.status === 'leased' && task.sessionId === session.sessionId)
    return reclaimTask(ctx, taskId, { session, reason, task });
  if (!task || (task.sessionId === session.sessionId && task.leasedAt === reservedAt)) return 'notLeased';
  const barred = await ctx.tasks.barGrant(taskId, { sessionId: session.sessionId, reservedAt });
  if (barred.ok || barred.current?.status !== 'leased') return 'notLeased';
  return reclaimTask(ctx, taskId, { session, reason, task: barred.current });
}

/** Gives up on a leased task that cannot run (e.g. its payload is gone), fenced by the epoch observed. */
export async function markDead(ctx: SchedulerContext, task: Task, message: string): Promise<boolean> {
  const now = ctx.now();
  const written = await ctx.tasks.takeBack(
    task,
    { event: 'fail', to: ending(ctx, now, 'dead', task), error: { message, retryable: false } },
    now,
  );
  if (!written.ok) return false;
  await freeLeaseSlots(ctx, task);
  await recordDeath(ctx, written.task, message, task.owner);
  return true;
}

export interface ReclaimSummary {
  readonly expiredSessions: number;
  /** Sessions found over and still holding tasks (each then ended and emptied, unless found alive after all). */
  readonly sessionsFound: number;
  /**
   * Leased tasks looked at: those the due index named, and those still leased to the sessions found over (an entry
   * of such a session whose task had ended, or whose grant never landed, is not one).
   */
  readonly looked: number;
  readonly requeued: string[];
  readonly dead: string[];
  /** Leased tasks looked at whose lease was still good; their next look is moved to their deadline. */
  readonly deferred: number;
  readonly errors: number;
  /** The first few errors met, as a pass keeps them (`pass-errors.ts`). */
  readonly failures: readonly PassError[];
}

/**
 * One reclaim pass: sessions that expired holding tasks, then leased tasks the due index says are worth a look.
 * Work is bounded by `sweepLimit`; what is left waits for the next pass. One failing item does not stop the pass.
 */
export async function reclaimExpiredLeases(ctx: SchedulerContext): Promise<ReclaimSummary> {
  // Standalone, as a pass does first: new tasks still open get their look in the due index.
  await walkNewTasks(ctx);
  return (await sweepExpiredLeases(ctx)).summary;
}

/** The reclaim pass, and the due index as it read it, for the rest of a supervisor pass. */
export async function sweepExpiredLeases(
  ctx: SchedulerContext,
): Promise<{ readonly summary: ReclaimSummary; readonly scan: DueScan }> {
  const summary = {
    expiredSessions: 0,
    sessionsFound: 0,
    looked: 0,
    requeued: [] as string[],
    dead: [] as string[],
    deferred: 0,
    errors: 0,
    failures: [] as PassError[],
  };
  const record = (taskId: string, outcome: ReclaimOutcome) => {
    if (outcome === 'requeued') summary.requeued.push(taskId);
    if (outcome === 'dead') summary.dead.push(taskId);
  };
  const attempt = async (work: () => Promise<void>, item: Record<string, unknown>) => {
    try {
      await work();
    } catch (error) {
      noteError(summary, 'reclaim', error);
      ctx.log.error('reclaim failed for one item', {
        ...item,
        error: errorName(error),
      });
    }
  };

  const now = ctx.now();
  const expired = await ctx.sessions.findExpiredHolding(now, ctx.settings.sweepLimit);
  summary.sessionsFound = expired.length;
  await eachConcurrently(expired, SWEEP_CONCURRENCY, (session) =>
    attempt(
      async () => {
        if (!(await endSession(ctx, session, now))) return;
        const taken = await takeBackTasks(ctx, session);
        for (const [taskId, outcome] of taken.outcomes) {
          if (outcome !== 'notLeased') summary.looked++;
          record(taskId, outcome);
        }
        if (taken.retired) summary.expiredSessions++;
      },
      { agentId: session.agentId },
    ),
  );

  // One read per owner, shared by the owner's tasks looked at together, with the shard it was made for. The shards
  // are read one after another, so a read made for an earlier shard may predate the grant of a task read since: the
  // agent may have opened a new session and been granted the task in it, and its agent answered (the HTTP chaos
  // run's lease overlaps). Such a read can keep a lease, but not end one: a task it finds over for its session is
  // looked at again with a read made after the task's (one more read per owner and shard, only then).
  const sessions = new Map<string, { read: Promise<AgentSession | undefined>; shard: string }>();
  const sessionOf = (agentId: string, shard: string, since: boolean) => {
    const known = sessions.get(agentId);
    if (known && (!since || known.shard === shard)) return known.read;
    const read = ctx.sessions.get(agentId);
    sessions.set(agentId, { read, shard });
    return read;
  };
  const dueIn = queryEveryDueShard(ctx, now, ctx.settings.sweepLimit);
  const handled = new Set<string>();
  for (const shard of ctx.tasks.dueShards) {
    await attempt(
      async () => {
        const ids = await dueIn(shard);
        if (ids.length === 0) return;
        const leased = [...(await ctx.tasks.getMany(ids)).values()].filter(
          (task) => task.status === 'leased' && task.owner,
        );
        for (const task of leased) handled.add(task.taskId);
        summary.looked += leased.length;
        await eachConcurrently(leased, SWEEP_CONCURRENCY, (task) =>
          attempt(
            async () => {
              let session = await sessionOf(task.owner ?? '', shard, false);
              let reason = leaseExpiry(task, session, now);
              if (reason === 'session') {
                session = await sessionOf(task.owner ?? '', shard, true);
                reason = leaseExpiry(task, session, now);
              }
              if (reason === 'session' && session && session.sessionId === task.sessionId) {
                // Its session expired: end it first, or find it alive after all.
                if (!(await endSession(ctx, session, now))) {
                  sessions.delete(task.owner ?? '');
                  return;
                }
              }
              if (reason) {
                record(task.taskId, await reclaimTask(ctx, task.taskId, { reason, task }));
                return;
              }
              // Still good: look again at its deadline (a session that dies first is found by the session scan).
              const moved = await ctx.tasks.lookAgainAt(task, task.leaseDeadline ?? now);
              if (moved.ok) summary.deferred++;
            },
            { taskId: task.taskId },
          ),
        );
      },
      { shard },
    );
  }
  return { summary, scan: { dueIn, handled } };
}
