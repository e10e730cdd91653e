/**
 * Turns: how the tasks of keyed lanes (see `#domain/lanes`) reach claims.
 *
 * - **Offering** a turn: a keyed task that becomes claimable takes its lane's turn slot (a conditional write on the
 *   lane's turn item) and, if it got it, puts one turn in line in its tier's SQS queue. A lane whose turn is already
 *   in line sends nothing more: however deep its backlog, the lane is one message in line.
 * - **Taking** a turn: a claim that receives a turn reads the lane's oldest claimable tasks (up to what it can
 *   take, and what the key's `perKeyConcurrency` leaves room for) and grants them as it grants hinted tasks.
 * - **Passing** it on: the turn goes back to the end of the line if the lane has more (a new message, sent before
 *   the old one is deleted); a lane found empty frees its slot, then looks once more, so that a task that found the
 *   slot taken just before it was freed is not stranded.
 *
 * So a key waits at most one turn of each other key in line before its next turn: key B's 20 tasks behind key A's
 * 5,000 are claimed within B's first turns, not after A's backlog. A turn lost anyway (a message dropped, a crash
 * between the slot and the send) is offered again when a task of the lane comes due in `reconcile`, which puts a
 * turn in line whatever the slot says; and a slot unrefreshed for `TURN_SLOT_STALE_MS` is taken by the next task.
 */
import { errorName } from '#domain/errors';
import type { ReceivedHint, ReceivedTurn } from '#domain/hint';
import { laneIdOf, laneOf } from '#domain/lanes';
import type { Task } from '#domain/task';
import { LIMITS } from '#domain/task-spec';
import type { SchedulerContext } from './context';
import type { QueueControl } from './queue-controls';
import { admit } from './queue-limits';

/** A turn slot not refreshed this long is taken by the next task of its lane: its turn may be lost. */
export const TURN_SLOT_STALE_MS = 5 * 60_000;

/** Seconds a turn waits before it is looked at again when its key is at its `perKeyConcurrency`. */
const KEY_FULL_RETRY_SECONDS = 1;

const secondsUntil = (at: number, now: number): number => Math.max(0, at - now) / 1_000;

/**
 * Puts the task's lane's turn in line unless it is there already. `force`: put one in line whatever the slot says
 * (the supervisor, for a task left waiting past its due time). Nothing for a task without a key.
 */
export async function offerTurn(
  ctx: SchedulerContext,
  task: Pick<Task, 'queue' | 'priority' | 'concurrencyKey'>,
  delaySeconds: number,
  options: { force?: boolean } = {},
): Promise<void> {
  const lane = laneOf(task);
  if (!lane) return;
  const now = ctx.now();
  if (options.force) await ctx.tasks.holdTurnSlot(lane.laneId, now);
  else if (!(await ctx.tasks.takeTurnSlot(lane.laneId, now, now - TURN_SLOT_STALE_MS))) return;
  await ctx.queues.sendTurn(task.queue, task.priority, lane.keyHash, delaySeconds);
}

/** A key's concurrency control, kept as a queue control of its own (`<queue>/key/<keyHash>`). */
export const keyControl = (queue: string, keyHash: string, perKeyConcurrency: number): QueueControl => ({
  queue: `${queue}/key/${keyHash}`,
  paused: false,
  limits: { maxConcurrency: perKeyConcurrency },
});

/** The tasks a claim took from one turn. */
export interface TakenTurn {
  readonly turn: ReceivedTurn;
  readonly laneId: string;
  /** Stand-ins for the tasks' hints: the grant treats them as hints, and they have no message of their own. */
  readonly hints: ReceivedHint[];
  /** The lane has claimable tasks beyond those taken. */
  readonly more: boolean;
}

/** A stand-in hint has no message: it is neither deleted nor handed back. */
export const isStandIn = (hint: Pick<ReceivedHint, 'receiptHandle'>): boolean => hint.receiptHandle === '';

/**
 * Takes up to `capacity` tasks from the turns received, oldest first within each lane, an equal share of the claim
 * for each lane. A turn with nothing claimable now still counts: it is passed on (or dropped) by `passTurns`.
 */
export async function takeTurns(
  ctx: SchedulerContext,
  turns: readonly ReceivedTurn[],
  capacity: number,
  now: number,
): Promise<TakenTurn[]> {
  const taken: TakenTurn[] = [];
  const seen = new Set<string>();
  let left = capacity;
  // Turns received together share the claim: a key's turn never comes back empty because another's came first.
  const lanes = new Set(turns.map((t) => laneIdOf(t.queue, t.priority, t.keyHash))).size;
  const share = Math.max(1, Math.ceil(capacity / Math.max(1, lanes)));
  for (const turn of turns) {
    const laneId = laneIdOf(turn.queue, turn.priority, turn.keyHash);
    // A second turn of one lane (a duplicate) only goes; a turn the claim has no room for goes back in line.
    if (seen.has(laneId) || left <= 0) {
      taken.push({ turn, laneId, hints: [], more: !seen.has(laneId) });
      continue;
    }
    seen.add(laneId);
    const take = Math.min(left, share);
    const entries = await ctx.tasks.laneTasks(laneId, now, Math.min(take, LIMITS.claimMax) + 1);
    const ids = entries.slice(0, take).map((e) => e.taskId);
    left -= ids.length;
    taken.push({
      turn,
      laneId,
      hints: ids.map((taskId) => ({
        taskId,
        // A stand-in is never older than a lease: a task held by this session is looked at, not dropped.
        leaseEpoch: Number.MAX_SAFE_INTEGER,
        queue: turn.queue,
        priority: turn.priority,
        receiptHandle: '',
        messageId: turn.messageId,
        sentAt: now,
        receiveCount: 1,
      })),
      more: entries.length > ids.length,
    });
  }
  return taken;
}

/**
 * What each key's `perKeyConcurrency` admits of the tasks the claim reserved from its turns, with the slots taken
 * (by control, task and time) and the tasks refused.
 */
export async function admitKeys(
  ctx: SchedulerContext,
  turns: readonly TakenTurn[],
  reserved: { has(taskId: string): boolean },
  perKeyConcurrency: (queue: string) => number | undefined,
  now: number,
): Promise<{ slots: Map<string, Map<string, number>>; refused: Set<string> }> {
  const slots = new Map<string, Map<string, number>>();
  const refused = new Set<string>();
  for (const t of turns) {
    const limit = perKeyConcurrency(t.turn.queue);
    const ids = t.hints.map((h) => h.taskId).filter((id) => reserved.has(id));
    if (limit === undefined || ids.length === 0) continue;
    const control = keyControl(t.turn.queue, t.turn.keyHash, limit);
    const admitted = await admit(ctx, control, ids, now);
    slots.set(control.queue, new Map([...admitted].map((id) => [id, now])));
    for (const id of ids) if (!admitted.has(id)) refused.add(id);
  }
  return { slots, refused };
}

/**
 * After the claim's grants: every turn goes back in line if its lane has more, or its slot is freed. The received
 * message goes last, so a crash in between leaves two turns of the lane (harmless), never none.
 */
export async function passTurns(
  ctx: SchedulerContext,
  taken: readonly TakenTurn[],
  refused: ReadonlySet<string> = new Set(),
): Promise<void> {
  await Promise.all(
    taken.map((t) =>
      passTurn(ctx, {
        ...t,
        // Refused by a limit (the key's, or the queue's): the lane still has them, and is full for now.
        more: t.more || t.hints.some((h) => refused.has(h.taskId)),
        full: t.hints.length > 0 && t.hints.every((h) => refused.has(h.taskId)),
      }).catch((error: unknown) =>
        ctx.log.warn('passing a turn on failed; it comes back when its message is visible again', {
          laneId: t.laneId,
          error: errorName(error),
        }),
      ),
    ),
  );
}

async function passTurn(
  ctx: SchedulerContext,
  { turn, laneId, more, full }: TakenTurn & { readonly full: boolean },
): Promise<void> {
  const now = ctx.now();
  const send = (readyAt: number) =>
    ctx.queues.sendTurn(turn.queue, turn.priority, turn.keyHash, secondsUntil(readyAt, now));
  if (full) {
    // The key runs as many as it may: its turn comes back in a moment (a new message: one handed back again and
    // again would end in the dead-letter queue).
    await ctx.tasks.holdTurnSlot(laneId, now);
    await send(now + KEY_FULL_RETRY_SECONDS * 1_000);
  } else if (more) {
    await ctx.tasks.holdTurnSlot(laneId, now);
    await send(now);
  } else {
    const [next] = await ctx.tasks.laneTasks(laneId, undefined, 1);
    if (next) {
      await ctx.tasks.holdTurnSlot(laneId, now);
      await send(next.readyAt);
    } else {
      await ctx.tasks.freeTurnSlot(laneId);
      // A task that found the slot taken just before it was freed sent no turn: look once more.
      const [late] = await ctx.tasks.laneTasks(laneId, undefined, 1);
      if (late && (await ctx.tasks.takeTurnSlot(laneId, now, now - TURN_SLOT_STALE_MS)))
        await send(late.readyAt);
    }
  }
  await ctx.queues.delete([turn]);
}
