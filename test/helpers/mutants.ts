/**
 * Deliberate bugs for negative controls: each wraps a table of a test's scheduler context so that one rule is
 * broken, and the chaos checker must notice. They live here, in test code only: no configuration of the
 * deployed functions or of `npm start` can reach them.
 */
import type { Expression } from '#adapters/expression';
import type { Scheduler } from '#core/scheduler';
import type { Worker } from '#sdk/worker';
import type { WiredContext } from '#wiring/context';
import { written } from '../../chaos/written';

export type Mutant =
  | 'completeWithoutEpoch'
  | 'heartbeatRevivesExpiredLease'
  | 'sweepWithoutEpoch'
  | 'terminalThenRequeueInTwoWrites';

type Clauses = { set?: string[]; remove?: string[]; condition: string };

export { written };

/** The first clause of a condition: for the fences here, `status = leased`. */
const firstClause = (condition: string) => condition.split(' AND ')[0] ?? condition;

type TaskUpdate = WiredContext['tasks']['update'];

function rewriteTaskUpdates(ctx: WiredContext, rewrite: (e: Expression, clauses: Clauses) => Clauses): void {
  const update: TaskUpdate = ctx.tasks.update.bind(ctx.tasks);
  ctx.tasks.update = (taskId, build) => update(taskId, (e) => rewrite(e, build(e) as Clauses));
}

export function applyMutant(ctx: WiredContext, mutant: Mutant): void {
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
 * A checkpoint fenced by nothing but a live lease: any lease's clause will do (owner, session, epoch or deadline),
 * so a heartbeat's checkpoint taken under an earlier lease (sent before it ended, delivered after another began)
 * overwrites the progress of the lease that holds the task. The clauses are kept, joined by OR, because DynamoDB
 * refuses a request whose placeholders are not all used.
 */
export function checkpointWithoutFence(ctx: WiredContext): void {
  rewriteTaskUpdates(ctx, (e, clauses) => {
    if (written(e, clauses.set, 'checkpoint') === undefined) return clauses;
    const [leased, ...fences] = clauses.condition.split(' AND ');
    return { ...clauses, condition: `${leased} AND (${fences.join(' OR ')})` };
  });
}

/**
 * A claim retry that grants twice: the claim handler forgets the claim id, so a retried claim (its first answer
 * lost) is granted anew instead of being answered with the first grant. Planted on the scheduler the local
 * server runs (`mutateScheduler` of the HTTP chaos run).
 */
export function claimWithoutClaimId(scheduler: Scheduler): void {
  const claim = scheduler.claim.bind(scheduler);
  scheduler.claim = ({ claimId: _id, claimSeq: _seq, ...rest }) => claim(rest);
}

/**
 * An SDK that ignores its own reckoning of the lease: when the session runs out by the agent's clock, its handlers
 * go on (until the server's answer says the session is lost), so a cut-off agent runs beside the next holder.
 */
export function ignoreLocalExpiry(worker: Worker): void {
  (worker as unknown as { sessionLapsed: () => void }).sessionLapsed = () => undefined;
}
