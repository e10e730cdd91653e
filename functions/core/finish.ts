/**
 * The owner's writes: complete, fail, release. Each is one conditional write fenced by the lease the owner
 * presents (task id + epoch) and its live session. A stale owner gets `LeaseLostError` and changes nothing.
 * A call retried after its first attempt committed (the response was lost) finds its own finish record on the
 * task and gets the same outcome instead of an error.
 */
import {
  errorName,
  LeaseLostError,
  SnoozeLimitError,
  TaskNotFoundError,
  ValidationError,
} from '#domain/errors';
import { type RateUsage, usageSchema } from '#domain/rate-limits';
import { decideRetry } from '#domain/retry-policy';
import { type AgentSession, isSessionLive, type Task } from '#domain/task';
import {
  DEFAULT_MAX_SNOOZES,
  describeIssues,
  encodeBoundedJson,
  LIMITS,
  taskErrorSchema,
} from '#domain/task-spec';
import type { TaskStatus } from '#domain/task-status';
import type { SchedulerContext } from './context';
import { recordDeath } from './dead-letters';
import { tellOfEnd } from './dependencies';
import { dispatch } from './dispatch';
import { emit } from './events';
import { keepPayloadFor } from './lifetimes';
import type { OwnerFinish, SettledFinish, WindowSettlement } from './ports/task-store';
import { type RateLimitInForce, rateLimitsInForce, settlementsFor } from './rate-limits';
import { readSessionFor, type SessionRead } from './session-reads';
import { ending, requeueAfter, retryInTime } from './timing';
import { freeLeaseSlots } from './turns';

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

/** How one of the owner's writes is made. */
interface FinishPlan {
  readonly event: OwnerFinish['event'];
  /** Where the write leaves the task, and what it records; decided from the task as read when `needsTask`. */
  readonly decide: (now: number, task: Task | undefined) => SettledFinish;
  /** Whether `decide` needs the task read first (a failure's retry depends on the attempts left). */
  readonly needsTask?: boolean;
  /** The owner's session, as a batch read it once for all its completions. */
  readonly sessionRead?: Promise<SessionRead>;
}

/** What the shared path answers: the status written (or replayed), and the requeue it wrote, if it did. */
type Finished = FinishResult & { status: TaskStatus; requeued?: { delayMs: number; sentNow: boolean } };

/**
 * The owner's session for its writes, read eventually consistent first (see `session-reads.ts`); the write is
 * fenced by the session and epoch of the lease as they are.
 */
export const ownerSession = (ctx: SchedulerContext, agentId: string): Promise<SessionRead> => {
  const now = ctx.now();
  return readSessionFor(ctx, agentId, (session) => isSessionLive(session, now));
};

/**
 * The shared path of the owner's writes. A write refused because an old copy of the session named an earlier
 * session of the agent, which holds the lease in its next one, is decided again on a consistent read.
 */
async function finish(ctx: SchedulerContext, lease: LeaseRef, plan: FinishPlan): Promise<Finished> {
  const read = await (plan.sessionRead ?? ownerSession(ctx, lease.agentId));
  const finished = await finishUnder(ctx, lease, plan, read.session);
  if (!('heldInAnotherSession' in finished)) return finished;
  const session = read.consistent ? undefined : await ctx.sessions.get(lease.agentId);
  if (session && session.sessionId !== read.session?.sessionId) {
    const again = await finishUnder(ctx, lease, plan, session);
    if (!('heldInAnotherSession' in again)) return again;
  }
  throw finished.heldInAnotherSession;
}

async function finishUnder(
  ctx: SchedulerContext,
  lease: LeaseRef,
  plan: FinishPlan,
  session: AgentSession | undefined,
): Promise<Finished | { heldInAnotherSession: LeaseLostError }> {
  const { event: kind, needsTask = false } = plan;
  const now = ctx.now();
  let current: Task | undefined;
  if (session && isSessionLive(session, now)) {
    const known = needsTask ? await ctx.tasks.get(lease.taskId) : undefined;
    if (needsTask && !known) throw new TaskNotFoundError(lease.taskId);
    if (!needsTask || isOwnedBy(known, lease, session.sessionId)) {
      const decided = plan.decide(now, known);
      const status = decided.to.status;
      // A retry's backoff, or a death a redrive may follow: the payload must last until the task runs again.
      if (known && (decided.to.status === 'queued' || decided.to.status === 'dead')) {
        await keepPayloadFor(ctx, known, decided.to.status === 'queued' ? decided.to.claimableAt : now);
      }
      const written = await ctx.tasks.finish(
        lease.taskId,
        { agentId: lease.agentId, sessionId: session.sessionId, leaseEpoch: lease.leaseEpoch },
        decided,
        now,
      );
      if (written.ok) {
        // Its queue's slots go now, before a requeued task's hint can reach a claim.
        await freeLeaseSlots(ctx, written.task);
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
        if (status === 'succeeded') await tellOfEnd(ctx, written.task);
        // A task that succeeded never runs again: its S3 payload can go now rather than at the bucket's expiry.
        if (status === 'succeeded' && written.task.payloadInObject) {
          await ctx.payloads.deletePayloadObject(written.task).catch((error: unknown) =>
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
        const to = decided.to;
        return {
          task: written.task,
          replayed: false,
          status,
          ...(to.status === 'queued'
            ? { requeued: { delayMs: to.claimableAt - now, sentNow: to.sentNow } }
            : {}),
        };
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
  // Leased to this agent at this epoch, in a session other than the one read: the read may be an old copy.
  const heldElsewhere =
    session !== undefined &&
    current.status === 'leased' &&
    current.owner === lease.agentId &&
    current.leaseEpoch === lease.leaseEpoch &&
    current.sessionId !== session.sessionId;
  if (heldElsewhere) return { heldInAnotherSession: leaseLost(current, lease, now) };
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
  { sessionRead, usage }: { sessionRead?: Promise<SessionRead>; usage?: RateUsage } = {},
): Promise<FinishResult> {
  const resultJson =
    result === undefined ? undefined : encodeBoundedJson(result, LIMITS.resultBytes, 'result');
  const limits = await limitsFor(ctx, usage);
  return finish(ctx, lease, {
    event: 'complete',
    // Usage settles what the grant took, which the task records: it is read first (a read unit), only then.
    needsTask: limits !== undefined,
    decide: (now, task) => ({
      event: 'complete',
      to: ending(ctx, now, 'succeeded'),
      ...(resultJson === undefined ? {} : { result: resultJson }),
      ...settling(limits, task, usage, now),
    }),
    ...(sessionRead ? { sessionRead } : {}),
  });
}

/** The limits in force, for a call that reports usage (checked here: a 400 before anything is read). */
async function limitsFor(
  ctx: SchedulerContext,
  usage: unknown,
): Promise<Map<string, RateLimitInForce> | undefined> {
  if (usage === undefined) return undefined;
  const parsed = usageSchema.safeParse(usage);
  if (!parsed.success) throw new ValidationError(`usage.${describeIssues(parsed.error)}`);
  return rateLimitsInForce(ctx);
}

/** What a finish settles of `usage`, on the task as read. */
function settling(
  limits: Map<string, RateLimitInForce> | undefined,
  task: Task | undefined,
  usage: RateUsage | undefined,
  now: number,
): { settle?: WindowSettlement[] } {
  if (!limits || !task || !usage) return {};
  const settle = settlementsFor(limits, task, usage, now);
  return settle.length > 0 ? { settle } : {};
}

/**
 * The owner reports a failed attempt. A retryable error goes back to the queue after a backoff while attempts
 * remain; otherwise the task is dead.
 */
export async function failTask(
  ctx: SchedulerContext,
  lease: LeaseRef,
  error: unknown,
  options: { readonly retryAfterSeconds?: number; readonly usage?: RateUsage } = {},
): Promise<FinishResult> {
  const parsed = taskErrorSchema.safeParse(error);
  if (!parsed.success) throw new ValidationError(`error.${describeIssues(parsed.error)}`);
  const taskError = { message: parsed.data.message, retryable: parsed.data.retryable ?? true };
  const limits = await limitsFor(ctx, options.usage);
  const outcome = await finish(ctx, lease, {
    event: 'fail',
    needsTask: true,
    decide: (now, task) => {
      if (!task) throw new Error('fail needs the task');
      const decided = decideRetry(task.attempt, task.retryPolicy, taskError.retryable, ctx.random());
      // The agent knows when a retry can succeed (a provider's Retry-After): that, in place of the backoff.
      const { retryAfterSeconds } = options;
      const decision = retryInTime(
        decided.retry && retryAfterSeconds !== undefined
          ? { retry: true, delayMs: retryAfterSeconds * 1_000 }
          : decided,
        now,
        task,
      );
      return {
        event: 'fail',
        to: decision.retry ? requeueAfter(ctx, now, decision.delayMs, task) : ending(ctx, now, 'dead', task),
        error: taskError,
        ...settling(limits, task, options.usage, now),
      };
    },
  });
  if (outcome.requeued?.sentNow) await dispatch(ctx, outcome.task, outcome.requeued.delayMs / 1_000, 'retry');
  return outcome;
}

/**
 * A release writes without reading the task first, so its due time may fall after the task's deadline to start:
 * the supervisor is asked to look by then, so that it expires on time.
 */
async function lookByExpiry(ctx: SchedulerContext, task: Task): Promise<void> {
  if (task.expiresAt === undefined || task.status !== 'queued') return;
  const dueAt = requeueAfter(ctx, task.updatedAt, 0).dueAt;
  if (dueAt <= task.expiresAt) return;
  await ctx.tasks
    .lookAgainAt(task, task.expiresAt)
    .catch((error: unknown) =>
      ctx.log.warn('could not move the look at a released task', { error: errorName(error) }),
    );
}

/**
 * The owner gives the task back without it counting as an attempt (as a client releases a task in Fluid's
 * AgentScheduler): it is queued again at once, or after `delaySeconds` (a snooze: a provider's 429, a resource not
 * ready yet). A task takes at most its `maxSnoozes` snoozes: one more is refused and changes nothing, so that a
 * task cannot be put off for ever without its attempts counting. A snooze reads the task first (half a read unit)
 * for its count; a release at once does not.
 */
export async function releaseTask(
  ctx: SchedulerContext,
  lease: LeaseRef,
  options: { readonly delaySeconds?: number } = {},
): Promise<FinishResult> {
  const delayMs = (options.delaySeconds ?? 0) * 1_000;
  const snooze = delayMs > 0;
  const outcome = await finish(ctx, lease, {
    event: 'release',
    needsTask: snooze,
    decide: (now, task) => {
      if (!snooze) return { event: 'release', to: requeueAfter(ctx, now, 0) };
      const allowed = task?.maxSnoozes ?? DEFAULT_MAX_SNOOZES;
      if ((task?.snoozes ?? 0) >= allowed) {
        throw new SnoozeLimitError(
          `task ${lease.taskId} has taken the ${allowed} snoozes it may take; fail it instead (an attempt is used)`,
          { context: { taskId: lease.taskId, maxSnoozes: allowed } },
        );
      }
      return { event: 'release', to: requeueAfter(ctx, now, delayMs, task), snooze: true };
    },
  });
  if (!outcome.replayed) {
    if (outcome.requeued?.sentNow !== false)
      await dispatch(ctx, outcome.task, (outcome.requeued?.delayMs ?? 0) / 1_000, 'released');
    await lookByExpiry(ctx, outcome.task);
  }
  return outcome;
}
