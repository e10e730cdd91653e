/**
 * A claim's slots in its agent's session: the entries of the session's `held` map, examined to tell the ones that
 * stand for no lease any more, and the reservation that takes slots for the claim's tasks before any is granted,
 * with a condition on the size of that map, so per-agent concurrency is exact under parallel claims.
 */
import { SessionLostError } from '#domain/errors';
import { type AgentSession, canClaimUnder, type Task } from '#domain/task';
import type { SchedulerContext } from './context';

/** A claim numbered at or below one that already reserved in the session: its agent has moved on. */
export const outrun = (session: AgentSession, claimSeq: number | undefined): boolean =>
  claimSeq !== undefined && session.claimSeq !== undefined && claimSeq <= session.claimSeq;

export const freeSlots = (session: AgentSession) => session.maxConcurrency - Object.keys(session.held).length;

/**
 * Reserves as many of `taskIds` as the session has room for, dropping the stale entries in the same write. A
 * condition failure means a parallel claim of the same agent changed the session first: work from the session
 * as it now is (returned with the failure) and try again.
 */
export async function reserve(
  ctx: SchedulerContext,
  session: AgentSession,
  taskIds: readonly string[],
  stale: ReadonlyMap<string, number>,
  now: number,
  claim: { readonly claimId?: string; readonly claimSeq?: number },
): Promise<{ has(taskId: string): boolean } | { replayFrom: AgentSession; claimId: string }> {
  const { claimId, claimSeq } = claim;
  let current = session;
  for (let round = 0; round < 3; round++) {
    const held = current.held;
    const drop = new Map([...stale].filter(([id, reservedAt]) => held[id] === reservedAt));
    const room = freeSlots(current) + drop.size;
    const fitting = taskIds.filter((id) => !(id in held) || drop.has(id)).slice(0, Math.max(0, room));
    if (fitting.length === 0) break;
    const add = new Map(fitting.map((id) => [id, drop.get(id)]));
    for (const id of fitting) drop.delete(id);
    const written = await ctx.sessions.reserve(current.agentId, current.sessionId, {
      add,
      drop,
      maxConcurrency: current.maxConcurrency,
      now,
      // Never shorter than it is: a heartbeat decided after this claim may have landed first.
      expiresAt: Math.max(now + ctx.settings.leaseTtlSeconds * 1_000, current.expiresAt),
      ...(claimId === undefined
        ? {}
        : {
            claim: {
              id: claimId,
              seen: current.claims,
              ...(claimSeq === undefined ? {} : { seq: claimSeq }),
            },
          }),
    });
    if (written.ok) return { has: (id) => add.has(id) };
    if (
      !written.current ||
      written.current.sessionId !== session.sessionId ||
      !canClaimUnder(written.current, now)
    ) {
      throw new SessionLostError('the session expired or was replaced; open a new session');
    }
    if (claimId !== undefined && written.current.claims?.[claimId] !== undefined)
      return { replayFrom: written.current, claimId };
    if (outrun(written.current, claimSeq)) break;
    current = written.current;
  }
  return { has: () => false };
}

export interface Examined {
  /** Entries standing for no lease any more, with the reservation time observed. */
  readonly stale: Map<string, number>;
  /** Entries whose task this session holds now, with the epoch of its lease. */
  readonly heldByUs: Map<string, number>;
}

export const merge = (a: Examined, b: Examined): Examined => ({
  stale: new Map([...a.stale, ...b.stale]),
  heldByUs: new Map([...a.heldByUs, ...b.heldByUs]),
});

/**
 * Sorts `held` entries by reading their tasks. An entry is stale when its task is not leased to this session
 * and either the grant made for this very reservation has landed and ended (the task still names this session
 * and a grant time equal to the reservation time), or the reservation is older than the grace period, past
 * which no claim should still be deciding on it. A younger entry with no landed grant may belong to a claim in
 * flight and is kept. Eventually consistent reads are enough: an old view only keeps an entry longer.
 *
 * An old entry with no landed grant is dropped only once its grant is barred (`TaskStore.barGrant`): a claim
 * slower than the grace period would otherwise lease the task into a slot given to another, one task more than
 * `maxConcurrency`. The bar is refused when that grant has just landed, and the entry is then the lease it is.
 */
export async function examine(
  ctx: SchedulerContext,
  session: AgentSession,
  taskIds: readonly string[],
  now: number,
  /** Tasks as the caller has just written them: not read again (a completion that carries the claim). */
  justWritten: readonly Task[] = [],
): Promise<Examined> {
  const examined: Examined = { stale: new Map(), heldByUs: new Map() };
  if (taskIds.length === 0) return examined;
  const graceStart = now - ctx.settings.reservationGraceSeconds * 1_000;
  const known = new Map(justWritten.filter((t) => taskIds.includes(t.taskId)).map((t) => [t.taskId, t]));
  const unknown = taskIds.filter((id) => !known.has(id));
  const read = unknown.length > 0 ? await ctx.tasks.getMany(unknown, { consistent: false }) : new Map();
  const tasks = new Map<string, Task>([...read, ...known]);
  const sort = (id: string, reservedAt: number, task: Task | undefined, barred: boolean) => {
    const ours = task?.sessionId === session.sessionId;
    if (ours && task?.status === 'leased') examined.heldByUs.set(id, task.leaseEpoch);
    else if ((ours && task?.leasedAt === reservedAt) || (reservedAt < graceStart && barred))
      examined.stale.set(id, reservedAt);
  };
  await Promise.all(
    taskIds.map(async (id) => {
      const reservedAt = session.held[id];
      if (reservedAt === undefined) return;
      const task = tasks.get(id);
      const landed = task?.sessionId === session.sessionId && task.leasedAt === reservedAt;
      if (landed || reservedAt >= graceStart || !task) return sort(id, reservedAt, task, !task);
      const bar = await ctx.tasks.barGrant(id, { sessionId: session.sessionId, reservedAt });
      sort(id, reservedAt, bar.ok ? bar.task : bar.current, bar.ok || bar.current === undefined);
    }),
  );
  return examined;
}
