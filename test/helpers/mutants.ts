/**
 * Deliberate bugs for negative controls: each wraps a table of a test's scheduler context so that one rule is
 * broken, and the chaos checker must notice. They live here, in test code only: no configuration of the
 * deployed functions or of `npm start` can reach them.
 */
import { type DynamoDBDocumentClient, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Expression } from '#adapters/expression';
import { rateWindowKey } from '#adapters/tables';
import { destinationClauses, requeueClauses, statusCondition } from '#adapters/task-writes';
import type { Scheduler } from '#core/scheduler';
import { ending } from '#core/timing';
import { requirementsKey } from '#domain/labels';
import type { Worker } from '#sdk/worker';
import type { WiredContext } from '#wiring/context';
import { written } from '../../chaos/written';

export type Mutant =
  | 'completeWithoutEpoch'
  | 'heartbeatRevivesExpiredLease'
  | 'settleOutsideFinish'
  | 'sweepWithoutEpoch'
  | 'terminalThenRequeueInTwoWrites';

type Clauses = { set?: string[]; remove?: string[]; condition: string };

export { written };

/** The first clause of a condition: for the fences here, `status = leased`. */
const firstClause = (condition: string) => condition.split(' AND ')[0] ?? condition;

/**
 * The clauses without the placeholders they no longer use: DynamoDB refuses a request that names an attribute
 * or a value its expressions do not use, so a mutant that drops a clause drops its placeholders with it.
 */
function dropUnused(e: Expression, clauses: Clauses): Clauses {
  const text = [...(clauses.set ?? []), ...(clauses.remove ?? []), clauses.condition].join(' ');
  const used = new Set(text.match(/[#:][nv]\d+/g));
  for (const name of Object.keys(e.names)) if (!used.has(name)) delete e.names[name];
  for (const value of Object.keys(e.values)) if (!used.has(value)) delete e.values[value];
  return clauses;
}

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
          ? dropUnused(e, { ...clauses, condition: firstClause(clauses.condition) })
          : clauses,
      );
      return;
    case 'sweepWithoutEpoch': {
      // The supervisor takes a task back if it is leased, whichever lease is there now: the write is the sweep's
      // own, without its epoch fence.
      const takeBack = ctx.tasks.takeBack.bind(ctx.tasks);
      ctx.tasks.takeBack = (observed, taking, now) => {
        if (!taking.error.message.startsWith('lease expired')) return takeBack(observed, taking, now);
        return ctx.tasks.update(observed.taskId, (e) => {
          const clauses = destinationClauses(e, now, observed.taskId, taking.to);
          return {
            set: [...clauses.set, `${e.n('error')} = ${e.v(taking.error)}`],
            remove: clauses.remove,
            condition: statusCondition(e, taking.event, taking.to.status, observed),
          };
        });
      };
      return;
    }
    case 'terminalThenRequeueInTwoWrites': {
      // A retried failure is written as the owner's terminal failure (`dead`, at its lease's epoch), then requeued
      // from `dead` in a second write, fenced by that epoch: two writes where one is needed, and a terminal state
      // left without a redrive.
      const finish = ctx.tasks.finish.bind(ctx.tasks);
      ctx.tasks.finish = async (taskId, lease, owner, now) => {
        if (owner.event !== 'fail' || owner.to.status !== 'queued') return finish(taskId, lease, owner, now);
        const requeue = owner.to;
        const died = await finish(taskId, lease, { ...owner, to: ending(ctx, now, 'dead') }, now);
        if (!died.ok) return died;
        return ctx.tasks.update(taskId, (e) => {
          const clauses = requeueClauses(e, now, taskId, requeue);
          return {
            set: clauses.set,
            remove: [...clauses.remove, e.n('finishedAt'), e.n('purgeAt')],
            condition: `${e.n('status')} = ${e.v('dead')} AND ${e.n('leaseEpoch')} = ${e.v(lease.leaseEpoch)}`,
          };
        });
      };
      return;
    }
    case 'settleOutsideFinish': {
      // Usage settled beside the finish instead of in its transaction: the finish written alone, then each window
      // moved by an update of its own, which carries no request token. A lost answer's retry moves the window twice;
      // a failure between the two writes, not at all.
      const finish = ctx.tasks.finish.bind(ctx.tasks);
      const { doc, tableName } = ctx.tasks;
      ctx.tasks.finish = async (taskId, lease, owner, now) => {
        const { settle, ...alone } = owner;
        if (!settle?.length) return finish(taskId, lease, owner, now);
        const written = await finish(taskId, lease, alone, now);
        if (!written.ok) return written;
        for (const s of settle)
          await doc.send(
            new UpdateCommand({
              TableName: tableName,
              Key: rateWindowKey(s.name, s.window, s.key),
              UpdateExpression: 'ADD #n0 :v0',
              ExpressionAttributeNames: { '#n0': 'used' },
              ExpressionAttributeValues: { ':v0': s.delta },
            }),
          );
        return written;
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
 * A claim that serves every requirement set, whatever its session's labels: the turns it receives lose the set they
 * carry (so each looks like one its session meets, and goes back in line without it), and each grant names the set
 * its task requires, read from the task (so the grant's fence holds whatever the claim matched). An agent is then
 * given work its labels do not meet; only the chaos run's check of each lease against its session's labels shows it.
 */
export function claimIgnoresLabels(ctx: WiredContext): void {
  const receive = ctx.queues.receive.bind(ctx.queues);
  ctx.queues.receive = async (queue, priority, options) => {
    const batch = await receive(queue, priority, options);
    return { ...batch, turns: batch.turns.map(({ require: _require, ...turn }) => turn) };
  };
  const grant = ctx.tasks.grant.bind(ctx.tasks);
  ctx.tasks.grant = async (taskId, granting, now) => {
    const task = await ctx.tasks.get(taskId, { consistent: false });
    const requireKey = task?.require ? requirementsKey(task.require) : undefined;
    return grant(taskId, requireKey ? { ...granting, requireKey } : granting, now);
  };
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

type TransactUpdate = {
  [attribute: string]: unknown;
  UpdateExpression?: string;
  ConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
};

/** An update without its condition, and without the placeholders only the condition used. */
function unconditioned(update: TransactUpdate): TransactUpdate {
  const {
    ConditionExpression: _condition,
    ExpressionAttributeNames,
    ExpressionAttributeValues,
    ...rest
  } = update;
  const used = new Set(rest.UpdateExpression?.match(/#n\d+|:v\d+/g));
  const kept = <T>(map: Record<string, T> | undefined) => {
    const entries = Object.entries(map ?? {}).filter(([placeholder]) => used.has(placeholder));
    return entries.length > 0 ? Object.fromEntries(entries) : undefined;
  };
  const names = kept(ExpressionAttributeNames);
  const values = kept(ExpressionAttributeValues);
  return {
    ...rest,
    ...(names ? { ExpressionAttributeNames: names } : {}),
    ...(values ? { ExpressionAttributeValues: values } : {}),
  };
}

/**
 * A waitpoint's end written without its conditions: neither that the waitpoint is still open nor that its task
 * still waits on it. Callers that read it open before the first answer landed each end it, and each resumes the
 * task (the last one's outcome is what the waitpoint keeps). Returns the undo: the context's document client is
 * shared by every adapter of the context.
 */
export function answerWithoutConditions(ctx: WiredContext): () => void {
  const { doc } = ctx.waitpoints as unknown as { doc: DynamoDBDocumentClient };
  const send = doc.send.bind(doc) as (command: unknown, options?: unknown) => Promise<unknown>;
  const mutated = (command: unknown, options?: unknown) => {
    if (command instanceof TransactWriteCommand) {
      const items = command.input.TransactItems ?? [];
      const endsWaitpoint = items.some((item) => item.Update?.Key?.part === 'waitpoint');
      if (endsWaitpoint)
        command.input.TransactItems = items.map((item) =>
          item.Update ? { Update: unconditioned(item.Update) } : item,
        ) as typeof items;
    }
    return send(command, options);
  };
  Object.assign(doc, { send: mutated });
  return () => {
    delete (doc as unknown as Record<string, unknown>).send;
  };
}
