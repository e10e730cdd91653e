/**
 * The update clauses of the transitions that several operations share: putting a task back in the queue
 * and finishing it. Every caller adds its own condition (the fence); these only say what the record becomes.
 */
import type { Expression } from '#adapters/expression';
import type { Task } from '#domain/task';
import { LIMITS } from '#domain/task-spec';
import type { TaskStatus } from '#domain/task-status';
import type { SchedulerContext } from './context';

export interface Clauses {
  readonly set: string[];
  readonly remove: string[];
}

/** Whether a hint for a task claimable after `delayMs` can ride on an SQS message now. */
export const sendsNow = (delayMs: number): boolean => delayMs <= LIMITS.sqsMaxDelaySeconds * 1_000;

/**
 * When `reconcile` should first look at a task claimable at `notBefore`: shortly after its hint should have
 * been claimed or, when SQS cannot carry the delay, when the longest delay SQS can carry will end at `notBefore`.
 */
export function dueAtAfterDispatch(ctx: SchedulerContext, notBefore: number, now = 0): number {
  const sqsMaxDelayMs = LIMITS.sqsMaxDelaySeconds * 1_000;
  return sendsNow(notBefore - now)
    ? notBefore + ctx.settings.reconcileAfterSeconds * 1_000
    : notBefore - sqsMaxDelayMs;
}

/**
 * Back to `queued`, claimable after `delayMs`. The due time is when `reconcile` should look again: a little
 * after the hint should have been claimed, or, for a delay longer than SQS can hold, when it is time to send.
 */
export function requeueClauses(ctx: SchedulerContext, e: Expression, now: number, delayMs: number): Clauses {
  const notBefore = now + delayMs;
  const immediate = sendsNow(delayMs);
  const set = [
    `${e.n('status')} = ${e.v('queued')}`,
    `${e.n('updatedAt')} = ${e.v(now)}`,
    `${e.n('dueAt')} = ${e.v(dueAtAfterDispatch(ctx, notBefore, now))}`,
  ];
  // `sessionId` and `leasedAt` stay: with them the last holder's session sees that its slot is free.
  const remove: string[] = [e.n('owner'), e.n('leaseDeadline')];
  if (delayMs > 0) set.push(`${e.n('notBefore')} = ${e.v(notBefore)}`);
  else remove.push(e.n('notBefore'));
  if (immediate) {
    set.push(`${e.n('dispatchedAt')} = ${e.v(notBefore)}`);
    set.push(`${e.n('dispatchCount')} = ${e.n('dispatchCount')} + ${e.v(1)}`);
  } else {
    remove.push(e.n('dispatchedAt'));
  }
  return { set, remove };
}

/**
 * A terminal status: the task leaves the due index, and DynamoDB may purge it after the retention period.
 * The owner, its session and the grant time stay on the record, as the last lease it had.
 */
export function terminalClauses(
  ctx: SchedulerContext,
  e: Expression,
  now: number,
  status: Extract<TaskStatus, 'succeeded' | 'dead' | 'cancelled'>,
): Clauses {
  return {
    set: [
      `${e.n('status')} = ${e.v(status)}`,
      `${e.n('updatedAt')} = ${e.v(now)}`,
      `${e.n('finishedAt')} = ${e.v(now)}`,
      `${e.n('purgeAt')} = ${e.v(Math.ceil(now / 1_000) + ctx.settings.retentionSeconds)}`,
    ],
    // `sessionId` and `leasedAt` stay: they let the holder's session see that its slot for this task is free.
    remove: [e.n('dueShard'), e.n('dueAt'), e.n('notBefore'), e.n('leaseDeadline')],
  };
}

/** The fence of an owner's write: still leased to this agent's session, at this epoch, inside its deadline. */
export function ownerCondition(
  e: Expression,
  lease: { agentId: string; sessionId: string; leaseEpoch: number },
  now: number,
): string {
  return [
    `${e.n('status')} = ${e.v('leased')}`,
    `${e.n('owner')} = ${e.v(lease.agentId)}`,
    `${e.n('sessionId')} = ${e.v(lease.sessionId)}`,
    `${e.n('leaseEpoch')} = ${e.v(lease.leaseEpoch)}`,
    `${e.n('leaseDeadline')} > ${e.v(now)}`,
  ].join(' AND ');
}

/** The fence of the supervisor's write: still leased at the epoch it observed. */
export const epochCondition = (e: Expression, task: Pick<Task, 'leaseEpoch'>): string =>
  `${e.n('status')} = ${e.v('leased')} AND ${e.n('leaseEpoch')} = ${e.v(task.leaseEpoch)}`;
