/**
 * The owner's writes: complete, fail, release. Each is one conditional write fenced by the lease the owner
 * presents (task id + epoch) and its live session. A stale owner gets `LeaseLostError` and changes nothing.
 * A call retried after its first attempt committed (the response was lost) finds its own finish record on the
 * task and gets the same outcome instead of an error.
 */
import { z } from 'zod';
import type { Expression } from '#adapters/expression';
import { errorName, LeaseLostError, TaskNotFoundError, ValidationError } from '#domain/errors';
import { decideRetry } from '#domain/retry-policy';
import { type AgentSession, type FinishRecord, isSessionLive, type Task } from '#domain/task';
import { describeIssues, encodeBoundedJson, LIMITS } from '#domain/task-spec';
import type { TaskStatus } from '#domain/task-status';
import type { SchedulerContext } from './context';
import { recordDeath } from './dead-letters';
import { dispatch } from './dispatch';
import { emit } from './events';
import { type Clauses, ownerCondition, requeueClauses, sendsNow, terminalClauses } from './transitions';

export interface LeaseRef {
  readonly agentId: string;
  readonly taskId: string;
  readonly leaseEpoch: number;
}

export interface FinishResult {
  readonly task: Task;
  /** True when this call repeated one that had already committed. */
  readonly replayed: boolean;
}

type FinishKind = FinishRecord['kind'];

/**
 * The shared path. `plan` sees the task as read (when it needs it) and returns the resulting status and the
 * clauses of the write.
 */
async function finish(
  ctx: SchedulerContext,
  kind: FinishKind,
  lease: LeaseRef,
  plan: (e: Expression, now: number, task: Task | undefined) => { status: TaskStatus; clauses: Clauses },
  needsTask: boolean,
  sessionRead?: Promise<AgentSession | undefined>,
): Promise<FinishResult & { status: TaskStatus }> {
  const now = ctx.now();
  const session = await (sessionRead ?? ctx.sessions.get(lease.agentId));
  let current: Task | undefined;
  if (session && isSessionLive(session, now)) {
    const known = needsTask ? await ctx.tasks.get(lease.taskId) : undefined;
    if (needsTask && !known) throw new TaskNotFoundError(lease.taskId);
    if (!needsTask || isOwnedBy(known, lease, session.sessionId)) {
      let status = 'leased' as TaskStatus;
      const written = await ctx.tasks.update(lease.taskId, (e) => {
        const planned = plan(e, now, known);
        status = planned.status;
        const finishRecord: FinishRecord = {
          kind,
          leaseEpoch: lease.leaseEpoch,
          agentId: lease.agentId,
          status,
        };
        return {
          set: [...planned.clauses.set, `${e.n('lastFinish')} = ${e.v(finishRecord)}`],
          remove: planned.clauses.remove,
          condition: ownerCondition(e, { ...lease, sessionId: session.sessionId }, now),
        };
      });
      if (written.ok) {
        // A requeued task no longer names this session, so its slot must be freed here; a finished one is
        // recognised and freed by the next claim that needs the room.
        const reservedAt = session.held[lease.taskId];
        if (status === 'queued' && reservedAt !== undefined) {
          await ctx.sessions
            .release(lease.agentId, session.sessionId, new Map([[lease.taskId, reservedAt]]))
            .catch(() => undefined);
        }
        if (status === 'dead') {
          await recordDeath(ctx, written.task, written.task.error?.message ?? 'failed', lease.agentId);
        }
        // A task that succeeded never runs again: its S3 payload can go now rather than at the bucket's expiry.
        if (status === 'succeeded' && written.task.payloadInObject) {
          await ctx.tasks.deletePayloadObject(written.task).catch((error: unknown) =>
            ctx.log.warn('could not delete a payload object', {
              taskId: lease.taskId,
              error: errorName(error),
            }),
          );
        }
        const type = kind === 'complete' ? 'task.completed' : kind === 'fail' ? 'task.failed' : undefined;
        if (type) {
          await emit(ctx, [
            {
              type,
              fields: {
                taskId: lease.taskId,
                agentId: lease.agentId,
                queue: written.task.queue,
                data: { leaseEpoch: lease.leaseEpoch, attempt: written.task.attempt, status },
              },
            },
          ]);
        }
        return { task: written.task, replayed: false, status };
      }
      current = written.current;
    } else {
      current = known;
    }
  } else {
    current = await ctx.tasks.get(lease.taskId);
  }
  if (!current) throw new TaskNotFoundError(lease.taskId);
  const last = current.lastFinish;
  if (last && last.kind === kind && last.leaseEpoch === lease.leaseEpoch && last.agentId === lease.agentId) {
    return { task: current, replayed: true, status: last.status };
  }
  // Only the task's holder learns why its lease is gone; anyone else hears what a missing task answers, so an
  // agent cannot probe which tasks exist or at which epoch.
  if (!wasHeldBy(current, lease.agentId, session?.sessionId)) throw new TaskNotFoundError(lease.taskId);
  throw leaseLost(current, lease, now);
}

/** The agent holds the task, or held its last lease (a requeue keeps the session; a finish names the agent). */
const wasHeldBy = (task: Task, agentId: string, sessionId: string | undefined): boolean =>
  task.owner === agentId ||
  task.lastFinish?.agentId === agentId ||
  (sessionId !== undefined && task.sessionId === sessionId);

const isOwnedBy = (task: Task | undefined, lease: LeaseRef, sessionId: string): task is Task =>
  task !== undefined &&
  task.status === 'leased' &&
  task.owner === lease.agentId &&
  task.sessionId === sessionId &&
  task.leaseEpoch === lease.leaseEpoch;

function leaseLost(task: Task, lease: LeaseRef, now: number): LeaseLostError {
  const why =
    task.status === 'cancelled'
      ? 'the task was cancelled'
      : task.leaseEpoch !== lease.leaseEpoch
        ? `the lease is at epoch ${task.leaseEpoch}`
        : task.status !== 'leased'
          ? `the task is ${task.status}`
          : (task.leaseDeadline ?? 0) <= now
            ? 'the attempt ran past its deadline'
            : 'the session that held it has ended';
  return new LeaseLostError(`lease on task ${task.taskId} at epoch ${lease.leaseEpoch} is lost: ${why}`, {
    context: {
      taskId: task.taskId,
      leaseEpoch: lease.leaseEpoch,
      currentEpoch: task.leaseEpoch,
      status: task.status,
    },
  });
}

/**
 * `sessionRead`: the owner's session as a batch read it once for all its completions. Each write is still fenced
 * by its own condition; the session only has to have been live when read, as for a single call.
 */
export async function completeTask(
  ctx: SchedulerContext,
  lease: LeaseRef,
  result?: unknown,
  sessionRead?: Promise<AgentSession | undefined>,
): Promise<FinishResult> {
  const resultJson =
    result === undefined ? undefined : encodeBoundedJson(result, LIMITS.resultBytes, 'result');
  return finish(
    ctx,
    'complete',
    lease,
    (e, now) => {
      const clauses = terminalClauses(ctx, e, now, 'succeeded');
      return {
        status: 'succeeded',
        clauses: {
          set:
            resultJson === undefined
              ? clauses.set
              : [...clauses.set, `${e.n('result')} = ${e.v(resultJson)}`],
          remove: clauses.remove,
        },
      };
    },
    false,
    sessionRead,
  );
}

export const taskErrorSchema = z.strictObject({
  message: z.string().min(1).max(LIMITS.errorMessageChars),
  retryable: z.boolean().default(true),
});

/**
 * The owner reports a failed attempt. A retryable error goes back to the queue after a backoff while attempts
 * remain; otherwise the task is dead.
 */
export async function failTask(
  ctx: SchedulerContext,
  lease: LeaseRef,
  error: unknown,
): Promise<FinishResult> {
  const parsed = taskErrorSchema.safeParse(error);
  if (!parsed.success) throw new ValidationError(`error.${describeIssues(parsed.error)}`);
  const taskError = parsed.data;
  let delayMs = 0;
  const outcome = await finish(
    ctx,
    'fail',
    lease,
    (e, now, task) => {
      if (!task) throw new Error('fail needs the task');
      const decision = decideRetry(task.attempt, task.retryPolicy, taskError.retryable, ctx.random());
      const clauses = decision.retry
        ? requeueClauses(ctx, e, now, decision.delayMs)
        : terminalClauses(ctx, e, now, 'dead');
      delayMs = decision.retry ? decision.delayMs : 0;
      return {
        status: decision.retry ? 'queued' : 'dead',
        clauses: { set: [...clauses.set, `${e.n('error')} = ${e.v(taskError)}`], remove: clauses.remove },
      };
    },
    true,
  );
  if (!outcome.replayed && outcome.status === 'queued' && sendsNow(delayMs)) {
    await dispatch(ctx, outcome.task, delayMs / 1_000);
  }
  return outcome;
}

/**
 * The owner gives the task back without it counting as an attempt (as a client releases a task in Fluid's
 * AgentScheduler): it is queued again at once.
 */
export async function releaseTask(ctx: SchedulerContext, lease: LeaseRef): Promise<FinishResult> {
  const outcome = await finish(
    ctx,
    'release',
    lease,
    (e, now) => {
      const clauses = requeueClauses(ctx, e, now, 0);
      return {
        status: 'queued',
        clauses: {
          set: [...clauses.set, `${e.n('attempt')} = ${e.n('attempt')} - ${e.v(1)}`],
          remove: clauses.remove,
        },
      };
    },
    false,
  );
  if (!outcome.replayed) await dispatch(ctx, outcome.task, 0);
  return outcome;
}
