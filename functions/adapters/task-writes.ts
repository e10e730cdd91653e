/**
 * The clauses of the writes to a task's state item: the status condition of each transition, taken from the
 * domain's transition table, the fences, and what the record becomes on the way back to the queue or to an end.
 * The status clause always comes first in a condition.
 */
import type { Ending, Observed, OwnerFence, Requeue } from '#core/ports/task-store';
import { InvalidTransitionError } from '#domain/errors';
import { statusesFrom, type TaskEvent, type TaskStatus } from '#domain/task-status';
import type { Expression } from './expression';
import { dueShardOf } from './task-items';

export interface Clauses {
  readonly set: string[];
  readonly remove: string[];
}

/**
 * The status part of the condition of a write of `event` that leads to `to`: the task must be in one of the
 * statuses the transition table allows it from; with `observed`, in that one, which the table must allow.
 */
export function statusCondition(
  e: Expression,
  event: TaskEvent,
  to: TaskStatus,
  observed?: Pick<Observed, 'taskId' | 'status'>,
): string {
  const from = statusesFrom(event, to);
  const allowed = observed ? from.filter((status) => status === observed.status) : from;
  if (allowed.length === 0) {
    const what = observed ? `task ${observed.taskId} is ${observed.status}; ` : '';
    throw new InvalidTransitionError(`${what}${event} cannot lead to ${to}`, {
      context: { event, to, ...(observed ? { taskId: observed.taskId, from: observed.status } : {}) },
    });
  }
  const [only] = allowed;
  return allowed.length === 1 && only
    ? `${e.n('status')} = ${e.v(only)}`
    : `${e.n('status')} IN (${allowed.map((status) => e.v(status)).join(', ')})`;
}

/** The fence of an owner's write: still leased to this agent's session, at this epoch, inside its deadline. */
export function ownerFence(e: Expression, lease: OwnerFence, now: number): string[] {
  return [
    `${e.n('owner')} = ${e.v(lease.agentId)}`,
    `${e.n('sessionId')} = ${e.v(lease.sessionId)}`,
    `${e.n('leaseEpoch')} = ${e.v(lease.leaseEpoch)}`,
    `${e.n('leaseDeadline')} > ${e.v(now)}`,
  ];
}

/** The fence of a write by someone who read the task: still at the epoch observed. */
export const epochFence = (e: Expression, observed: Pick<Observed, 'leaseEpoch'>): string =>
  `${e.n('leaseEpoch')} = ${e.v(observed.leaseEpoch)}`;

/** A write that keeps the status: the task is still at the status and epoch observed. */
export const stillAsObserved = (e: Expression, observed: Pick<Observed, 'status' | 'leaseEpoch'>): string =>
  `${e.n('status')} = ${e.v(observed.status)} AND ${epochFence(e, observed)}`;

/**
 * The task's next look in the `due` index at `dueAt`: both keys, since a task of layout 2 has no entry until it
 * needs one (`list-walk.ts`). Its partition never changes, so setting it again writes nothing more to the index.
 */
export const dueClauses = (
  e: Expression,
  taskId: string,
  dueAt: number,
  shard = dueShardOf(taskId),
): string[] => [`${e.n('dueShard')} = ${e.v(shard)}`, `${e.n('dueAt')} = ${e.v(dueAt)}`];

/**
 * Back to `queued`. `sessionId` and `leasedAt` stay: with them the last holder's session sees that its slot is
 * free.
 */
export function requeueClauses(e: Expression, now: number, taskId: string, requeue: Requeue): Clauses {
  const set = [
    `${e.n('status')} = ${e.v('queued')}`,
    `${e.n('updatedAt')} = ${e.v(now)}`,
    ...dueClauses(e, taskId, requeue.dueAt),
    // Back in its lane, if it has one (the `lanes` index needs `laneId` too).
    `${e.n('readyAt')} = ${e.v(requeue.claimableAt)}`,
  ];
  // Claimable anew: the starvation ladder starts again from `readyAt`, so a task that starves again is announced again.
  const remove: string[] = [
    e.n('owner'),
    e.n('leaseDeadline'),
    e.n('starvationLevel'),
    e.n('needsAttention'),
  ];
  if (requeue.claimableAt > now) set.push(`${e.n('notBefore')} = ${e.v(requeue.claimableAt)}`);
  else remove.push(e.n('notBefore'));
  if (requeue.sentNow) {
    set.push(`${e.n('dispatchedAt')} = ${e.v(requeue.claimableAt)}`);
    set.push(`${e.n('dispatchCount')} = ${e.n('dispatchCount')} + ${e.v(1)}`);
  } else {
    remove.push(e.n('dispatchedAt'));
  }
  return { set, remove };
}

/**
 * A terminal status: the task leaves the due index (unless something is to follow from its end), and DynamoDB may
 * purge it after the retention period. The owner, its session and the grant time stay on the record, as the last
 * lease it had.
 */
export function endingClauses(e: Expression, now: number, taskId: string, ending: Ending): Clauses {
  const set = [
    `${e.n('status')} = ${e.v(ending.status)}`,
    `${e.n('updatedAt')} = ${e.v(now)}`,
    `${e.n('finishedAt')} = ${e.v(now)}`,
    `${e.n('purgeAt')} = ${e.v(ending.purgeAt)}`,
  ];
  const remove = [e.n('notBefore'), e.n('leaseDeadline'), e.n('readyAt')];
  if (ending.followUpAt === undefined) remove.push(e.n('dueShard'), e.n('dueAt'));
  else set.push(...dueClauses(e, taskId, ending.followUpAt), `${e.n('followUp')} = ${e.v(true)}`);
  return { set, remove };
}

export const destinationClauses = (
  e: Expression,
  now: number,
  taskId: string,
  to: Requeue | Ending,
): Clauses =>
  to.status === 'queued' ? requeueClauses(e, now, taskId, to) : endingClauses(e, now, taskId, to);
