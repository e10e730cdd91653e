/**
 * Waitpoints: an agent suspends the task it holds until a person or a system answers (an approval, a webhook, a
 * long external job), and gives up its lease meanwhile: no heartbeats, no slot. Exactly one outcome ends the
 * wait, however many callers race: the waitpoint leaves `open` and the task leaves `suspended` in one transaction,
 * conditional on both. The resumed task is queued again (its attempt was not used) and its claim carries the
 * outcome; a timeout resumes it (`onTimeout: 'resume'`, outcome `timedOut`) or ends it dead
 * (`onTimeout: 'fail'`, a `WaitpointTimeout` error, its `onFailure` submitted).
 *
 * A waitpoint's callback token is `<waitpointId>.<secret>`: 256 random bits, answered once to the agent and kept
 * only as its hash. A suspension retried after its answer was lost gets a new secret for the same waitpoint (the
 * first was never seen).
 *
 * Costs: a suspension is one transaction of three items (the task, the waitpoint, its open-list entry: 6 write
 * units at up to 1 KB each) after a read of the task; a resolution one of three (6 write units, more for large
 * data) after a read of the waitpoint and of the task; the resumed claim reads the waitpoint once more.
 */

import { z } from 'zod';
import {
  LeaseLostError,
  SessionLostError,
  TaskNotFoundError,
  ValidationError,
  WaitpointNotFoundError,
  WaitpointResolvedError,
} from '#domain/errors';
import { newCallbackSecret, newWaitpointId, sha256Base64Url } from '#domain/ids';
import { isHeldUnder, isSessionLive, type Task } from '#domain/task';
import { describeIssues, encodeBoundedJson, LIMITS } from '#domain/task-spec';
import {
  CALLBACK_TOKEN_PATTERN,
  callbackToken,
  type OnTimeout,
  secretMatches,
  WAITPOINT_LIMITS,
  type Waitpoint,
  type WaitpointOutcome,
  waitBodyShape,
} from '#domain/waitpoint';
import type { SchedulerContext } from './context';
import { recordDeath } from './dead-letters';
import { dispatch } from './dispatch';
import { type LeaseRef, ownerSession } from './finish';
import { keepSuspendedPayload } from './lifetimes';
import type { Resolution } from './ports/waitpoint-store';
import { dueNoLaterThanExpiry, ending, requeueAfter } from './timing';
import { freeLeaseSlots } from './turns';

const waitSchema = z.strictObject(waitBodyShape);

export interface Suspended {
  readonly task: Task;
  readonly waitpoint: Waitpoint;
  /** The callback token, shown this once. */
  readonly token: string;
  readonly replayed: boolean;
}

/** Waitpoints write a status functions of releases before `taskLayout` 3 cannot read. */
function assertLayout(ctx: SchedulerContext): void {
  if (ctx.settings.taskLayout < 3) {
    throw new ValidationError(
      'waitpoints need taskLayout 3 (this stack runs an earlier layout for an upgrade)',
    );
  }
}

export async function suspendTask(
  ctx: SchedulerContext,
  lease: LeaseRef,
  input: unknown,
): Promise<Suspended> {
  assertLayout(ctx);
  const parsed = waitSchema.safeParse(input);
  if (!parsed.success) throw new ValidationError(describeIssues(parsed.error));
  const { timeoutSeconds, onTimeout, checkpoint } = parsed.data;
  const checkpointJson =
    checkpoint === undefined
      ? undefined
      : encodeBoundedJson(checkpoint, LIMITS.checkpointBytes, 'checkpoint');
  const { session } = await ownerSession(ctx, lease.agentId);
  const now = ctx.now();
  const task = await ctx.tasks.get(lease.taskId);
  if (!task) throw new TaskNotFoundError(lease.taskId);
  const secret = newCallbackSecret();
  if (
    session &&
    isSessionLive(session, now) &&
    isHeldUnder(task, { ...lease, sessionId: session.sessionId }, now)
  ) {
    const timeoutAt = now + timeoutSeconds * 1_000;
    const waitpoint: Waitpoint = {
      waitpointId: newWaitpointId(),
      taskId: task.taskId,
      leaseEpoch: lease.leaseEpoch,
      status: 'open',
      onTimeout,
      timeoutAt,
      createdAt: now,
      tokenHash: sha256Base64Url(secret),
    };
    // The payload (and the task's other records) must outlast the wait: kept now for an answer before the next look.
    const { task: kept, lookAt } = await keepSuspendedPayload(ctx, task, timeoutAt);
    const purgeAt = Math.ceil(timeoutAt / 1_000) + ctx.settings.taskRetentionSeconds;
    const suspended = await ctx.waitpoints.suspend(
      task.taskId,
      { agentId: lease.agentId, sessionId: session.sessionId, leaseEpoch: lease.leaseEpoch },
      {
        waitpoint,
        dueAt: dueNoLaterThanExpiry(lookAt, task),
        purgeAt,
        ...(checkpointJson ? { checkpointJson } : {}),
      },
      now,
    );
    if (suspended) {
      // The task as the transaction left it: no owner or deadline, its attempt given back.
      const { owner: _owner, leaseDeadline: _deadline, readyAt: _ready, ...rest } = kept;
      const after: Task = {
        ...rest,
        status: 'suspended',
        attempt: kept.attempt - 1,
        waitpointId: waitpoint.waitpointId,
        updatedAt: now,
        ...(checkpoint === undefined ? {} : { checkpoint }),
        lastFinish: {
          kind: 'wait',
          leaseEpoch: lease.leaseEpoch,
          agentId: lease.agentId,
          status: 'suspended',
        },
      };
      await freeLeaseSlots(ctx, task);
      const reservedAt = session.held[task.taskId];
      if (reservedAt !== undefined) {
        await ctx.sessions
          .release(lease.agentId, session.sessionId, new Map([[task.taskId, reservedAt]]))
          .catch(() => undefined);
      }
      return { task: after, waitpoint, token: callbackToken(waitpoint.waitpointId, secret), replayed: false };
    }
  }
  // Not suspended now: a retry of a suspension that landed, or a lease that is gone.
  const current = (await ctx.tasks.get(lease.taskId)) ?? task;
  const last = current.lastFinish;
  if (
    current.status === 'suspended' &&
    current.waitpointId !== undefined &&
    last?.kind === 'wait' &&
    last.leaseEpoch === lease.leaseEpoch &&
    last.agentId === lease.agentId
  ) {
    const waitpoint = await ctx.waitpoints.get(current.waitpointId);
    if (
      waitpoint?.status === 'open' &&
      (await ctx.waitpoints.replaceToken(waitpoint, sha256Base64Url(secret)))
    ) {
      return {
        task: current,
        waitpoint: { ...waitpoint, tokenHash: sha256Base64Url(secret) },
        token: callbackToken(waitpoint.waitpointId, secret),
        replayed: true,
      };
    }
  }
  if (!session) throw new SessionLostError('the session expired or was replaced; open a new session');
  if (current.owner !== lease.agentId && current.lastFinish?.agentId !== lease.agentId) {
    throw new TaskNotFoundError(lease.taskId);
  }
  throw new LeaseLostError(`lease on task ${lease.taskId} at epoch ${lease.leaseEpoch} is lost`, {
    context: { taskId: lease.taskId, leaseEpoch: lease.leaseEpoch, status: current.status },
  });
}

/** What a caller answers a waitpoint with. */
export type Answer =
  | { readonly outcome: 'completed'; readonly data?: unknown }
  | { readonly outcome: 'rejected'; readonly reason: string };

export interface Resolved {
  readonly waitpoint: Waitpoint;
  /** This very answer had already been accepted: nothing changed now. */
  readonly replayed: boolean;
}

/**
 * Ends an open waitpoint with `answer` and resumes its task. The same answer again (the same outcome and the same
 * data or reason) is answered as it was; another answer, to a waitpoint already ended, is refused
 * (`WaitpointResolved`), changing nothing.
 */
export async function resolveWaitpoint(
  ctx: SchedulerContext,
  waitpointId: string,
  answer: Answer,
  read?: Waitpoint,
): Promise<Resolved> {
  const dataJson =
    answer.outcome === 'completed' && answer.data !== undefined
      ? encodeBoundedJson(answer.data, WAITPOINT_LIMITS.dataBytes, 'data')
      : undefined;
  const resolutionHash = sha256Base64Url(
    JSON.stringify([answer.outcome, dataJson ?? null, answer.outcome === 'rejected' ? answer.reason : null]),
  );
  const waitpoint = read ?? (await ctx.waitpoints.get(waitpointId));
  if (!waitpoint) throw new WaitpointNotFoundError(`waitpoint ${waitpointId} does not exist`);
  return end(ctx, waitpoint, {
    outcome: answer.outcome,
    resolutionHash,
    ...(dataJson === undefined ? {} : { dataJson }),
    ...(answer.outcome === 'rejected' ? { reason: answer.reason } : {}),
  });
}

async function end(
  ctx: SchedulerContext,
  waitpoint: Waitpoint,
  how: Omit<Resolution, 'to' | 'error'>,
): Promise<Resolved> {
  const already = (w: Waitpoint): Resolved => {
    if (w.status !== 'open' && w.resolutionHash === how.resolutionHash)
      return { waitpoint: w, replayed: true };
    throw new WaitpointResolvedError(
      `waitpoint ${w.waitpointId} has ended already (${w.status}); this answer changed nothing`,
      { context: { waitpointId: w.waitpointId, status: w.status } },
    );
  };
  if (waitpoint.status !== 'open') return already(waitpoint);
  const now = ctx.now();
  const task = await ctx.tasks.get(waitpoint.taskId);
  if (task?.status !== 'suspended' || task.waitpointId !== waitpoint.waitpointId) {
    // Ended since it was read: perhaps by this same answer from another caller, which is answered as it was.
    const again = await ctx.waitpoints.get(waitpoint.waitpointId);
    if (again && again.status !== 'open') return already(again);
    throw new WaitpointResolvedError(`the task of waitpoint ${waitpoint.waitpointId} no longer waits on it`);
  }
  const fails = how.outcome === 'timedOut' && waitpoint.onTimeout === 'fail';
  const resolution: Resolution = fails
    ? {
        ...how,
        to: ending(ctx, now, 'dead', task),
        error: {
          message: `WaitpointTimeout: waitpoint ${waitpoint.waitpointId} timed out`,
          retryable: false,
        },
      }
    : { ...how, to: requeueAfter(ctx, now, 0, task) };
  if (!(await ctx.waitpoints.resolve(waitpoint, resolution, now))) {
    const again = await ctx.waitpoints.get(waitpoint.waitpointId);
    if (!again) throw new WaitpointNotFoundError(`waitpoint ${waitpoint.waitpointId} does not exist`);
    return already(again);
  }
  const resolved: Waitpoint = {
    ...waitpoint,
    status: how.outcome,
    resolvedAt: now,
    resolutionHash: how.resolutionHash,
    ...(how.dataJson === undefined ? {} : { dataJson: how.dataJson }),
    ...(how.reason === undefined ? {} : { reason: how.reason }),
  };
  if (fails) {
    const dead: Task = {
      ...task,
      status: 'dead',
      updatedAt: now,
      finishedAt: now,
      error: resolution.error,
      // Its onFailure is submitted now, as every death's is; the look left due submits it if this is lost.
      ...('followUpAt' in resolution.to ? { followUpPending: true } : {}),
    };
    await recordDeath(ctx, dead, resolution.error?.message ?? 'waitpoint timed out', undefined);
  } else {
    await dispatch(ctx, task, 0, 'resumed');
  }
  return { waitpoint: resolved, replayed: false };
}

/**
 * The supervisor's look at a suspended task that is due: its waitpoint timed out (resume or fail, as it says), or
 * its look came early (moved to the timeout). A suspended task past its deadline to start expires (`reconcile`).
 */
export async function lookAtSuspended(
  ctx: SchedulerContext,
  task: Task,
  now: number,
): Promise<'timedOut' | undefined> {
  if (task.waitpointId === undefined) return undefined;
  const waitpoint = await ctx.waitpoints.get(task.waitpointId);
  if (waitpoint?.status !== 'open') return undefined;
  if (waitpoint.timeoutAt > now) {
    // A long wait: its payload kept on, until the next look or the timeout.
    const { task: kept, lookAt } = await keepSuspendedPayload(ctx, task, waitpoint.timeoutAt);
    await ctx.tasks.lookAgainAt(kept, dueNoLaterThanExpiry(lookAt, task));
    return undefined;
  }
  // Refused: answered just now, or the task ended otherwise. A failure leaves the look due: the next pass tries again.
  const ended = await end(ctx, waitpoint, {
    outcome: 'timedOut',
    resolutionHash: sha256Base64Url('timedOut'),
  }).catch((error: unknown) => {
    if (!(error instanceof WaitpointResolvedError)) throw error;
    return undefined;
  });
  return ended && !ended.replayed ? 'timedOut' : undefined;
}

/**
 * A callback's answer: `token` (`<waitpointId>.<secret>`) is its only credential. A token that names no waitpoint,
 * or whose secret is not the waitpoint's, is answered as a waitpoint that does not exist, so nothing can be learnt
 * by guessing. Its body, any JSON, completes the waitpoint as its data.
 */
export async function answerCallback(ctx: SchedulerContext, token: string, data: unknown): Promise<Resolved> {
  const unknown = () => new WaitpointNotFoundError('no waitpoint has this callback');
  const parts = CALLBACK_TOKEN_PATTERN.exec(token);
  const [, waitpointId, secret] = parts ?? [];
  if (!waitpointId || !secret) throw unknown();
  const waitpoint = await ctx.waitpoints.get(waitpointId);
  if (!waitpoint || !secretMatches(waitpoint, secret)) throw unknown();
  return resolveWaitpoint(
    ctx,
    waitpointId,
    { outcome: 'completed', ...(data === undefined ? {} : { data }) },
    waitpoint,
  );
}

/** The waitpoint a claim carries to the resumed attempt: how it ended, and its data or reason. */
export interface CarriedWaitpoint {
  readonly id: string;
  readonly outcome: WaitpointOutcome;
  readonly data?: unknown;
  readonly reason?: string;
}

export async function waitpointFor(ctx: SchedulerContext, task: Task): Promise<CarriedWaitpoint | undefined> {
  if (task.waitpointId === undefined) return undefined;
  const waitpoint = await ctx.waitpoints.get(task.waitpointId);
  if (!waitpoint || waitpoint.status === 'open' || waitpoint.status === 'cancelled') return undefined;
  return {
    id: waitpoint.waitpointId,
    outcome: waitpoint.status,
    ...(waitpoint.dataJson === undefined ? {} : { data: JSON.parse(waitpoint.dataJson) }),
    ...(waitpoint.reason === undefined ? {} : { reason: waitpoint.reason }),
  };
}

export type { OnTimeout };
