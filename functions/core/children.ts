/**
 * Agents submit follow-up tasks: an agent running a task (the parent) submits children, fenced by its lease on the
 * parent. Each child is created in one transaction with a check that the lease still holds, so a parent whose lease
 * is gone (taken back, expired, finished) creates nothing. A child is named by its parent and a key the agent
 * chooses: a parent that runs again after a crash submits the same children and gets them back, not new ones.
 * Children go only to the queues the deployment lets agents submit to (`agentSubmitQueues`). A fan-in is a child
 * that `dependsOn` its siblings.
 */
import { z } from 'zod';
import {
  errorName,
  ForbiddenError,
  LeaseLostError,
  TaskNotFoundError,
  ValidationError,
} from '#domain/errors';
import { TASK_ID_PATTERN } from '#domain/ids';
import { isHeldUnder, isSessionLive, type Task } from '#domain/task';
import { describeIssues, idempotencyKeySchema } from '#domain/task-spec';
import { type ItemOutcome, outcomeOf } from './batches';
import type { SchedulerContext } from './context';
import { checkDependencies } from './dependencies';
import { dispatchMany, type PendingDispatch } from './dispatch';
import type { WrittenPayloads } from './ports/payload-store';
import type { OwnerFence } from './ports/task-store';
import { checkTaskRateLimits } from './rate-limits';
import { confirmSession } from './session-reads';
import { commitSubmission, type PreparedSubmission, prepareSubmission } from './submit';

/** Most children in one call, as for an operator's batch. */
export const CHILDREN_LIMIT = 25;

export const childKeySchema = idempotencyKeySchema.max(128);

export interface ParentLease {
  readonly agentId: string;
  readonly parentTaskId: string;
  readonly leaseEpoch: number;
}

/** A child's idempotency key: its parent and the key its agent chose. */
export const childIdempotencyKey = (parentTaskId: string, key: string): string =>
  `child:${parentTaskId}:${key}`;

const childSchema = z.looseObject({ key: childKeySchema, queue: z.string() });

/**
 * The parent as its agent holds it, and the fence every child's creation presents. The session is read eventually
 * consistent first, as a claim's is (`session-reads.ts`), and again consistently unless that copy shows it live and,
 * when the parent is the agent's, the session the parent names: no child is accepted under a session past its
 * expiry, even before the sweep has ended it.
 */
async function parentOf(ctx: SchedulerContext, lease: ParentLease) {
  if (!TASK_ID_PATTERN.test(lease.parentTaskId)) throw new ValidationError('parentTaskId: a task id');
  const now = ctx.now();
  const [copy, parent] = await Promise.all([
    ctx.sessions.get(lease.agentId, { consistent: false }),
    ctx.tasks.get(lease.parentTaskId),
  ]);
  const { session } = await confirmSession(
    ctx,
    lease.agentId,
    copy,
    (s) => isSessionLive(s, now) && (parent?.owner !== lease.agentId || parent.sessionId === s.sessionId),
  );
  const live = session !== undefined && isSessionLive(session, now);
  // Only its holder learns more than that the task does not exist (as for a finish).
  const heldIt =
    parent !== undefined &&
    (parent.owner === lease.agentId ||
      parent.lastFinish?.agentId === lease.agentId ||
      (session !== undefined && parent.sessionId === session.sessionId));
  if (!parent || !heldIt) {
    throw new TaskNotFoundError(lease.parentTaskId);
  }
  const fence = {
    taskId: parent.taskId,
    agentId: lease.agentId,
    // A session that is not the holder's fails the fence in the transaction, as a stale one should.
    sessionId: session?.sessionId ?? '-',
    leaseEpoch: lease.leaseEpoch,
  };
  return {
    lineage: { parentTaskId: parent.taskId, rootTaskId: parent.rootTaskId ?? parent.taskId },
    fence,
    // The transaction checks the fence again; read now, it refuses before anything is written (the payload
    // first), so that a refusal leaves nothing behind.
    fenceHeld: live && isHeldUnder(parent, fence, now),
  };
}

const lostFence = (fence: OwnerFence & { readonly taskId: string }) =>
  new LeaseLostError(`the lease on task ${fence.taskId} at epoch ${fence.leaseEpoch} is lost`, {
    context: { taskId: fence.taskId, leaseEpoch: fence.leaseEpoch },
  });

/**
 * Checks a child as far as it can before anything is written: its specification, its queues, and its dependencies,
 * which must exist and belong to its parent's tree.
 */
async function checkChild(
  ctx: SchedulerContext,
  spec: unknown,
  lineage: { parentTaskId: string; rootTaskId: string },
): Promise<PreparedSubmission> {
  const prepared = prepareChild(ctx, spec, lineage);
  await checkTaskRateLimits(ctx, prepared.task.rateLimits);
  const { waitingOn } = prepared.task;
  if (waitingOn) {
    await checkDependencies(ctx, waitingOn, {
      dependentId: prepared.task.taskId,
      rootTaskId: lineage.rootTaskId,
    });
  }
  return prepared;
}

function prepareChild(
  ctx: SchedulerContext,
  spec: unknown,
  lineage: { parentTaskId: string; rootTaskId: string },
): PreparedSubmission {
  const checked = childSchema.safeParse(spec);
  if (!checked.success) throw new ValidationError(describeIssues(checked.error));
  const { key } = checked.data;
  // The specification as sent, not the loose schema's output (which drops `__proto__`): its strict check is next.
  const rest = Object.fromEntries(
    Object.entries(spec as Record<string, unknown>).filter(([name]) => name !== 'key'),
  ) as { queue: string } & Record<string, unknown>;
  if (Object.hasOwn(rest, 'idempotencyKey')) {
    throw new ValidationError('idempotencyKey: a child is named by its parent and its key');
  }
  if (!ctx.settings.agentSubmitQueues.includes(rest.queue)) {
    throw new ForbiddenError(`queue: agents may not submit to ${rest.queue}`, {
      context: { queue: rest.queue },
    });
  }
  const prepared = prepareSubmission(
    ctx,
    { ...rest, idempotencyKey: childIdempotencyKey(lineage.parentTaskId, key) },
    { lineage },
  );
  // Its `onFailure` is submitted by the scheduler later, into the queue it names: that queue is checked now.
  const onFailureJson = prepared.payload.onFailureJson;
  const onFailureQueue = onFailureJson && (JSON.parse(onFailureJson) as { queue: string }).queue;
  if (onFailureQueue && !ctx.settings.agentSubmitQueues.includes(onFailureQueue)) {
    throw new ForbiddenError(`onFailure.queue: agents may not submit to ${onFailureQueue}`, {
      context: { queue: onFailureQueue },
    });
  }
  return prepared;
}

/**
 * Creates a child whose payload is written. A lease lost between the checks and the transaction refuses it there:
 * its payload is taken back, unless the child exists (an earlier call created it while the lease held), so that the
 * refusal leaves nothing behind.
 */
async function commitChild(
  ctx: SchedulerContext,
  prepared: PreparedSubmission,
  written: WrittenPayloads,
  pending: PendingDispatch[] | undefined,
  fence: OwnerFence & { readonly taskId: string },
): Promise<{ task: Task; created: boolean }> {
  try {
    return await commitSubmission(ctx, prepared, written, pending, fence);
  } catch (error) {
    if (error instanceof LeaseLostError && !(await ctx.tasks.get(prepared.task.taskId))) {
      await ctx.payloads.deletePayload(prepared.task).catch((cause: unknown) =>
        ctx.log.warn('could not take back the payload of a refused child', {
          taskId: prepared.task.taskId,
          error: errorName(cause),
        }),
      );
    }
    throw error;
  }
}

/** Submits one child of the parent its agent holds. */
export async function submitChild(
  ctx: SchedulerContext,
  lease: ParentLease,
  spec: unknown,
): Promise<{ task: Task; created: boolean }> {
  const { lineage, fence, fenceHeld } = await parentOf(ctx, lease);
  const prepared = await checkChild(ctx, spec, lineage);
  if (!fenceHeld) throw lostFence(fence);
  const written = await ctx.payloads.putPayloads([prepared.payload]);
  return commitChild(ctx, prepared, written, undefined, fence);
}

/**
 * Submits children of the parent its agent holds. Each item's mistakes are its own outcome (as in a batch); a lost
 * parent lease fails each item with `LeaseLost`.
 */
export async function submitChildren(
  ctx: SchedulerContext,
  lease: ParentLease,
  specs: unknown,
): Promise<ItemOutcome<{ task: Task; created: boolean }>[]> {
  if (!Array.isArray(specs) || specs.length === 0 || specs.length > CHILDREN_LIMIT) {
    throw new ValidationError(`tasks: an array of 1 to ${CHILDREN_LIMIT} items`);
  }
  const { lineage, fence, fenceHeld } = await parentOf(ctx, lease);
  const prepared = await Promise.all(
    specs.map((spec: unknown) =>
      outcomeOf(
        Promise.resolve().then(async () => {
          const submission = await checkChild(ctx, spec, lineage);
          if (!fenceHeld) throw lostFence(fence);
          return { submission };
        }),
      ),
    ),
  );
  const written = await ctx.payloads.putPayloads(
    prepared.flatMap((p) => (p.ok ? [p.submission.payload] : [])),
  );
  const pending: PendingDispatch[] = [];
  // One after another: each child's transaction checks the same parent item, and DynamoDB refuses transactions
  // on one item that overlap.
  const settled: PromiseSettledResult<ItemOutcome<{ task: Task; created: boolean }>>[] = [];
  for (const p of prepared) {
    settled.push(
      await Promise.resolve(
        p.ok ? outcomeOf(commitChild(ctx, p.submission, written, pending, fence)) : p,
      ).then(
        (value) => ({ status: 'fulfilled' as const, value }),
        (reason: unknown) => ({ status: 'rejected' as const, reason }),
      ),
    );
  }
  await dispatchMany(ctx, pending, 'submitted');
  return settled.map((outcome) => {
    if (outcome.status === 'rejected') throw outcome.reason;
    return outcome.value;
  });
}
