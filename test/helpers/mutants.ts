/**
 * Deliberate bugs for negative controls: each wraps a table of a test's scheduler context so that one rule is
 * broken, and the chaos checker must notice. They live here, in test code only: no configuration of the
 * deployed functions or of `npm start` can reach them.
 */
import type { Expression } from '#adapters/expression';
import type { SchedulerContext } from '#core/context';
import type { Scheduler } from '#core/scheduler';

export type Mutant =
  | 'completeWithoutEpoch'
  | 'heartbeatRevivesExpiredLease'
  | 'sweepWithoutEpoch'
  | 'terminalThenRequeueInTwoWrites';

type Clauses = { set?: string[]; remove?: string[]; condition: string };

/** The value a `SET name = :v` clause writes, if the clause set writes `name`. */
export function written(e: Expression, set: readonly string[] | undefined, name: string): unknown {
  for (const clause of set ?? []) {
    const [left, right] = clause.split(' = ');
    if (left && right && e.names[left] === name && right in e.values) return e.values[right];
  }
  return undefined;
}

/** The first clause of a condition: for the fences here, `status = leased`. */
const firstClause = (condition: string) => condition.split(' AND ')[0] ?? condition;

type TaskUpdate = SchedulerContext['tasks']['update'];

function rewriteTaskUpdates(
  ctx: SchedulerContext,
  rewrite: (e: Expression, clauses: Clauses) => Clauses,
): void {
  const update: TaskUpdate = ctx.tasks.update.bind(ctx.tasks);
  ctx.tasks.update = (taskId, build) => update(taskId, (e) => rewrite(e, build(e) as Clauses));
}

export function applyMutant(ctx: SchedulerContext, mutant: Mutant): void {
  switch (mutant) {
    case 'completeWithoutEpoch':
      // A completion checks only that the task is leased, not whose lease it is.
      rewriteTaskUpdates(ctx, (e, clauses) =>
        written(e, clauses.set, 'status') === 'succeeded' &&
        written(e, clauses.set, 'lastFinish') !== undefined
          ? { ...clauses, condition: firstClause(clauses.condition) }
          : clauses,
      );
      return;
    case 'sweepWithoutEpoch':
      // The supervisor takes a task back if it is leased, whichever lease it observed.
      rewriteTaskUpdates(ctx, (e, clauses) => {
        const error = written(e, clauses.set, 'error') as { message?: string } | undefined;
        return error?.message?.startsWith('lease expired')
          ? { ...clauses, condition: firstClause(clauses.condition) }
          : clauses;
      });
      return;
    case 'terminalThenRequeueInTwoWrites': {
      // A retry is written as a terminal failure, then a requeue: two writes where one is needed.
      const update: TaskUpdate = ctx.tasks.update.bind(ctx.tasks);
      ctx.tasks.update = async (taskId, build) => {
        let requeue = false;
        const first = await update(taskId, (e) => {
          const clauses = build(e) as Clauses;
          requeue = written(e, clauses.set, 'status') === 'queued' && clauses.condition.includes(' AND ');
          if (!requeue) return clauses;
          return {
            set: [`${e.n('status')} = ${e.v('dead')}`, `${e.n('updatedAt')} = ${e.v(ctx.now())}`],
            condition: clauses.condition,
          };
        });
        if (!requeue || !first.ok) return first;
        return update(taskId, (e) => ({
          ...(build(e) as Clauses),
          condition: `${e.n('status')} = ${e.v('dead')}`,
        }));
      };
      return;
    }
    case 'heartbeatRevivesExpiredLease': {
      // A heartbeat extends the session even after it expired (and its leases were given away).
      const sessions = ctx.sessions;
      sessions.heartbeat = (agentId, sessionId, now, ttlMs) =>
        sessions.update(agentId, (e) => ({
          set: [`${e.n('expiresAt')} = ${e.v(now + ttlMs)}`, `${e.n('heartbeatAt')} = ${e.v(now)}`],
          condition: `${e.n('sessionId')} = ${e.v(sessionId)}`,
        }));
      return;
    }
  }
}

/**
 * A claim retry that grants twice: the claim handler forgets the claim id, so a retried claim (its first answer
 * lost) is granted anew instead of being answered with the first grant. Planted on the scheduler the local
 * server runs (`mutateScheduler` of the HTTP chaos run); it changes nothing until claims carry a claim id.
 */
export function claimWithoutClaimId(scheduler: Scheduler): void {
  const claim = scheduler.claim.bind(scheduler);
  scheduler.claim = (request) => {
    const { claimId: _dropped, ...rest } = request as typeof request & { claimId?: unknown };
    return claim(rest as typeof request);
  };
}
