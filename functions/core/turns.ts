/**
 * Turns: how the tasks of keyed lanes (see `#domain/lanes`) reach claims.
 *
 * Each lane has a turn slot (an item of the tasks table) naming the one turn in line, by a token, and when it is
 * visible. Every message of a lane carries its token, and only the turn the slot names lives: any other (a
 * duplicate SQS delivered, one a crash left behind, one the supervisor replaced) is deleted when received. So however
 * deep its backlog and whatever went wrong, a lane is at most one live message in line.
 *
 * - **Offering**: a keyed task that becomes claimable records the offer on the slot, and in the same write puts its
 *   own turn there if the slot is empty (then the send). If the slot holds a turn that is not live or not in line
 *   early enough for it, it puts a new one in line (a conditional write on the token it saw, then the send).
 *   A turn not passed on for a while is taken for lost and replaced: after `TURN_SLOT_STALE_MS` by a new task, after
 *   `reconcileAfterSeconds` by the supervisor, for a task of the lane left waiting past its due time.
 * - **Taking**: a claim that receives turns takes an equal share of each lane's oldest claimable tasks and grants
 *   them as it grants hinted tasks, under the key's `perKeyConcurrency`.
 * - **Passing on**: the turn goes back to the end of the line (a new message, sent before the old one is deleted)
 *   if the lane has more; a key at its limit has its turn back later, waiting longer each time, unless a lease of
 *   the key ends first: then a new turn takes its place at once (the lease's end looks at the turn after freeing
 *   its slot, and the claim at the key's slots after sending the turn back, so one of the two sees the other; the
 *   lease's look is an eventually consistent read, which can miss a turn sent back a moment before). A lane found
 *   empty frees its slot only if no task was offered in the last `OFFER_QUIET_MS`: the index the lane is read from
 *   lags its table a moment, and a task offered just before the slot was freed must not be left without a turn.
 *
 * So a key waits at most one turn of each other key in line before its next turn: key B's 20 tasks behind key A's
 * 5,000 are claimed within B's first turns, not after A's backlog.
 */
import { errorName } from '#domain/errors';
import type { ReceivedHint, ReceivedTurn } from '#domain/hint';
import { type Lane, laneIdOf, laneOf } from '#domain/lanes';
import { controlOfSlotItem } from '#domain/queue-limits';
import type { Task } from '#domain/task';
import { LIMITS } from '#domain/task-spec';
import type { SchedulerContext } from './context';
import type { QueueControl } from './queue-controls';
import { admit, freeQueueSlots, takeSlots } from './queue-limits';

/** A turn not passed on this long is taken for lost by the next task of its lane, which replaces it. */
export const TURN_SLOT_STALE_MS = 5 * 60_000;

/** A lane found empty keeps its turn while a task was offered this recently: the index may not show it yet. */
export const OFFER_QUIET_MS = 3_000;

/** How much later than a key's task a live turn of its lane may be visible and still serve it. */
const KEY_TURN_TOLERANCE_MS = 1_000;

/** How long a key at its limit waits before its turn looks again: doubling from 1 s, up to 30 s. */
const keyFullWaitSeconds = (waits: number): number => Math.min(30, 2 ** Math.min(5, waits));

/** A turn visible later than this after a lease of its key ended is brought forward (`hurryTurn`). */
const HURRY_AFTER_MS = 250;

const secondsUntil = (at: number, now: number): number => Math.max(0, at - now) / 1_000;

const newTurnToken = (): string => globalThis.crypto.randomUUID().replaceAll('-', '');

/**
 * A task of the lane became claimable (after `delaySeconds`): puts a turn in line unless a live one is there, visible
 * early enough. `staleAfterMs`: a turn not passed on for this long is taken for lost (the supervisor passes its own,
 * shorter). Nothing for a task without a key.
 */
export async function offerTurn(
  ctx: SchedulerContext,
  task: Pick<Task, 'taskId' | 'queue' | 'priority' | 'concurrencyKey' | 'require'>,
  delaySeconds: number,
  options: { staleAfterMs?: number } = {},
): Promise<boolean> {
  const lane = laneOf(task);
  if (!lane) return false;
  const now = ctx.now();
  const visibleAt = now + delaySeconds * 1_000;
  // The offer's write takes the slot too when it is empty (a quiet key's task): one write, not two.
  const token = newTurnToken();
  const slot = await ctx.lanes.noteOffer(lane.laneId, now, { token, visibleAt });
  if (slot.token === token) {
    await sendInLine(ctx, task, lane, { token, visibleAt, now });
    return true;
  }
  const live =
    slot.token !== undefined && (slot.heldAt ?? 0) > now - (options.staleAfterMs ?? TURN_SLOT_STALE_MS);
  // A live turn visible in time serves this task too; one held back for a later task does not. A key's lane lets a
  // turn due up to a second late serve (a key's next task may wait that long; a burst of its tasks costs no sends);
  // a requirement set's does not, so that such a task is claimed as promptly as one that requires nothing: a task
  // offered in the last second of a lane's hold for the index's lag would wait out the hold.
  const tolerance = lane.concurrencyKeyHash === undefined ? 0 : KEY_TURN_TOLERANCE_MS;
  if (live && (slot.visibleAt ?? 0) <= visibleAt + tolerance) return false;
  return putInLine(ctx, task, lane, { visibleAt, now, replacing: slot.token });
}

/**
 * Puts a new turn of the lane in line, visible at `visibleAt`, in place of turn `replacing` (none: the slot is
 * empty): the slot first, on condition that it still holds `replacing`, then the message. False if another took
 * the slot first.
 */
async function putInLine(
  ctx: SchedulerContext,
  task: Pick<Task, 'queue' | 'priority'>,
  lane: Lane,
  { visibleAt, now, replacing }: { visibleAt: number; now: number; replacing: string | undefined },
): Promise<boolean> {
  const token = newTurnToken();
  if (!(await ctx.lanes.takeTurnSlot(lane.laneId, { token, visibleAt, now }, replacing))) return false;
  await sendInLine(ctx, task, lane, { token, visibleAt, now });
  return true;
}

/** Sends the turn the slot now holds, visible at `visibleAt`. */
async function sendInLine(
  ctx: SchedulerContext,
  task: Pick<Task, 'queue' | 'priority'>,
  lane: Lane,
  { token, visibleAt, now }: { token: string; visibleAt: number; now: number },
): Promise<void> {
  try {
    await ctx.queues.sendTurn(
      task.queue,
      task.priority,
      { ...turnOfLane(lane), token },
      secondsUntil(visibleAt, now),
    );
  } catch (error) {
    // Not in line after all: the slot is let go, so the next offer (the supervisor's, for a task left waiting)
    // puts one in.
    await ctx.lanes.freeTurnSlot(lane.laneId, token, Number.MAX_SAFE_INTEGER).catch(() => undefined);
    throw error;
  }
}

/** What every turn of a lane says of it: its name, and for a requirement lane its set and its key's hash. */
const turnOfLane = (lane: Lane) => ({
  keyHash: lane.keyHash,
  ...(lane.require
    ? {
        require: lane.require,
        ...(lane.concurrencyKeyHash === undefined ? {} : { concurrencyKeyHash: lane.concurrencyKeyHash }),
      }
    : {}),
});

/** The lane a received turn stands for. */
const laneOfTurn = (turn: ReceivedTurn): Lane => ({
  laneId: laneIdOf(turn.queue, turn.priority, turn.keyHash),
  keyHash: turn.keyHash,
  ...(turn.concurrencyKeyHash === undefined ? {} : { concurrencyKeyHash: turn.concurrencyKeyHash }),
  ...(turn.require ? { require: turn.require } : {}),
});

/**
 * The lease of a keyed task is over and its key's slot freed: if the lane's turn was sent back for later because
 * the key was full, a turn takes its place now, so the key's next task starts when its running one ends, not after
 * that wait (1 s, doubling while the key stays full). The turn it replaces is dropped when received. One
 * eventually consistent read per such end, and one write and one send when the turn was waiting. Best effort: the
 * waiting turn still comes.
 */
export async function hurryTurn(
  ctx: SchedulerContext,
  task: Pick<Task, 'taskId' | 'queue' | 'priority' | 'concurrencyKey' | 'require' | 'queueSlots'>,
): Promise<void> {
  const lane = laneOf(task);
  if (lane?.concurrencyKeyHash === undefined) return;
  const key = keyControlName(task.queue, lane.concurrencyKeyHash);
  if (!task.queueSlots?.some((item) => controlOfSlotItem(item) === key)) return;
  try {
    const now = ctx.now();
    const slot = await ctx.lanes.turnSlot(lane.laneId);
    if (slot.token === undefined || (slot.visibleAt ?? 0) <= now + HURRY_AFTER_MS) return;
    await putInLine(ctx, task, lane, { visibleAt: now, now, replacing: slot.token });
  } catch (error) {
    ctx.log.warn('bringing a key’s turn forward failed; it comes when its wait ends', {
      laneId: lane.laneId,
      error: errorName(error),
    });
  }
}

/**
 * Ends a lease's hold on its limits: frees its queue's and its key's slots (`freeQueueSlots`), then brings its
 * lane's turn forward if it waited for that room (`hurryTurn`).
 */
export async function freeLeaseSlots(ctx: SchedulerContext, task: Task): Promise<void> {
  await freeQueueSlots(ctx, task);
  await hurryTurn(ctx, task);
}

/** Whether the key of `turn` holds fewer leases than its limit now (a strongly consistent read of its control). */
async function keyHasRoom(
  ctx: SchedulerContext,
  turn: Pick<ReceivedTurn, 'queue'> & { readonly concurrencyKeyHash: string },
  limit: number,
): Promise<boolean> {
  const { held } = await ctx.queueControls.readAdmission(keyControlName(turn.queue, turn.concurrencyKeyHash));
  return Object.keys(held ?? {}).length < limit;
}

/** The name of a key's concurrency control: a queue control of its own. */
const keyControlName = (queue: string, keyHash: string): string => `${queue}/key/${keyHash}`;

/** A key's concurrency control, kept as a queue control of its own (`<queue>/key/<keyHash>`). */
export const keyControl = (queue: string, keyHash: string, perKeyConcurrency: number): QueueControl => ({
  queue: keyControlName(queue, keyHash),
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
  /** A second turn of a lane in one claim: it only goes. */
  readonly duplicate?: boolean;
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
  const live = await liveOfSeveral(ctx, turns);
  for (const turn of turns) {
    const laneId = laneIdOf(turn.queue, turn.priority, turn.keyHash);
    // Of several turns of one lane, the one its slot names is the lane's: the others were replaced, and only go.
    const replaced = live.has(laneId) && live.get(laneId) !== turn.token;
    if (replaced && !seen.has(laneId)) {
      taken.push({ turn, laneId, hints: [], more: false, duplicate: true });
      continue;
    }
    // A second turn of one lane (a duplicate) only goes; a turn the claim has no room for goes back in line.
    if (seen.has(laneId) || left <= 0) {
      taken.push({ turn, laneId, hints: [], more: true, duplicate: seen.has(laneId) });
      continue;
    }
    // A turn back from a hold for its lane's quiet time was most often replaced meanwhile by the next task's offer:
    // one look at the slot (a consistent read, a fifth of a refused write's price) lets it go without a write. It
    // does not count as the lane's turn in this claim: the turn that replaced it, if received too, is passed on.
    if (turn.held && (await ctx.lanes.turnSlot(laneId, { consistent: true })).token !== turn.token) {
      taken.push({ turn, laneId, hints: [], more: false, duplicate: true });
      continue;
    }
    seen.add(laneId);
    const take = Math.min(left, share);
    const entries = await ctx.lanes.laneTasks(laneId, now, Math.min(take, LIMITS.claimMax) + 1);
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
        // The set the claim matched against its session's labels: the grant is conditional on the task's being it.
        ...(turn.require ? { require: turn.require } : {}),
      })),
      more: entries.length > ids.length,
    });
  }
  return taken;
}

/**
 * For each lane of which the claim received several turns, the token its slot names, when it is one of them (a
 * consistent read of the slot, only for such a lane). A turn replaced by another (a lease's end brought the lane's
 * turn forward, a stale one was replaced) stays in the queue until received: taken as the lane's turn beside the
 * live one, it would take the lane's tasks and have the live one deleted as its duplicate, and then, the slot naming
 * the live one, could not go back in line: the lane would be left without a turn.
 */
async function liveOfSeveral(
  ctx: SchedulerContext,
  turns: readonly ReceivedTurn[],
): Promise<Map<string, string>> {
  const tokens = new Map<string, string[]>();
  for (const t of turns) {
    const laneId = laneIdOf(t.queue, t.priority, t.keyHash);
    tokens.set(laneId, [...(tokens.get(laneId) ?? []), t.token]);
  }
  const live = new Map<string, string>();
  for (const [laneId, received] of tokens) {
    if (received.length < 2) continue;
    const { token } = await ctx.lanes.turnSlot(laneId, { consistent: true });
    if (token !== undefined && received.includes(token)) live.set(laneId, token);
  }
  return live;
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
    // A requirement lane without a key has no key's limit to count against.
    const keyHash = t.turn.concurrencyKeyHash;
    if (limit === undefined || ids.length === 0 || keyHash === undefined) continue;
    const control = keyControl(t.turn.queue, keyHash, limit);
    const admitted = await admit(ctx, control, ids, now);
    takeSlots(slots, admitted, now);
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
  perKeyConcurrency: (queue: string) => number | undefined = () => undefined,
  /**
   * Tasks refused by a rate limit (refused too, as those above): by each, the whole seconds until its window ends,
   * if SQS can hold it that long.
   */
  limited: ReadonlyMap<string, number | undefined> = new Map(),
): Promise<void> {
  const isRefused = (hint: ReceivedHint) => refused.has(hint.taskId) || limited.has(hint.taskId);
  const windowSeconds = (hints: readonly ReceivedHint[]) => {
    const seconds = hints.map((h) => limited.get(h.taskId));
    return seconds.length > 0 && seconds.every((s) => s !== undefined) ? Math.min(...seconds) : undefined;
  };
  await Promise.all(
    taken.map((t) =>
      passTurn(ctx, {
        ...t,
        keyLimit: perKeyConcurrency(t.turn.queue),
        windowSeconds: windowSeconds(t.hints),
        // Refused by a limit (the key's, or the queue's): the lane still has them, and is full for now.
        more: t.more || t.hints.some(isRefused),
        full: t.hints.length > 0 && t.hints.every(isRefused),
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
  {
    turn,
    laneId,
    more,
    full,
    duplicate,
    keyLimit,
    windowSeconds,
  }: TakenTurn & {
    readonly full: boolean;
    readonly keyLimit: number | undefined;
    /** Every task it stood for waits for a rate limit's window, which ends in these whole seconds. */
    readonly windowSeconds: number | undefined;
  },
): Promise<void> {
  const now = ctx.now();
  /**
   * Puts the turn back in line, visible at `visibleAt`; false if the slot names another turn (or, held for the
   * quiet time, no task was offered in it).
   */
  const again = async (visibleAt: number, waits = 0, quiet?: { offeredSince: number }): Promise<boolean> => {
    // Only the turn the slot names goes back in line; any other was a duplicate, or replaced.
    if (!(await ctx.lanes.holdTurnSlot(laneId, turn.token, visibleAt, now, quiet?.offeredSince)))
      return false;
    await ctx.queues.sendTurn(
      turn.queue,
      turn.priority,
      { ...turnOfLane(laneOfTurn(turn)), token: turn.token, waits, ...(quiet ? { held: true } : {}) },
      secondsUntil(visibleAt, now),
    );
    return true;
  };
  if (duplicate) {
    // Nothing: the lane's other turn in this claim is passed on.
  } else if (windowSeconds !== undefined) {
    // Its tasks wait for a rate limit: the turn comes back as the window ends, with the delay of the timed wake the
    // claim arms for then (after this, so the wake never finds it still hidden), not on a full key's backoff.
    await again(now + windowSeconds * 1_000, turn.waits);
  } else if (full) {
    // The key runs as many as it may: its turn comes back later, a little later each time in a row (a new
    // message: one handed back again and again would end in the dead-letter queue).
    const sentBack = await again(now + keyFullWaitSeconds(turn.waits) * 1_000, turn.waits + 1);
    // A lease of the key that ended after the admission found it full looked at the turn before it was sent back,
    // and left it be: read after sending it back, the key's room says so, and the turn comes now instead.
    const keyHash = turn.concurrencyKeyHash;
    if (
      sentBack &&
      keyLimit !== undefined &&
      keyHash !== undefined &&
      (await keyHasRoom(ctx, { queue: turn.queue, concurrencyKeyHash: keyHash }, keyLimit))
    ) {
      await putInLine(ctx, turn, laneOfTurn(turn), { visibleAt: now, now, replacing: turn.token });
    }
  } else if (more) {
    await again(now);
  } else {
    const [next] = await ctx.lanes.laneTasks(laneId, undefined, 1);
    const quiet = { offeredSince: now - OFFER_QUIET_MS };
    // Found empty, the lane keeps its turn for the quiet time if a task was offered in it (the index may not show
    // it yet), else lets it go. A turn fresh from the line most often took the very task offered a moment ago:
    // the hold is tried first, one write. One held before comes back to a lane most often quiet: the free first.
    const holdQuiet = () => again(now + OFFER_QUIET_MS, 0, quiet);
    if (next) await again(next.readyAt);
    else if (turn.held || !(await holdQuiet())) {
      if ((await ctx.lanes.freeTurnSlot(laneId, turn.token, quiet.offeredSince)) === 'offered')
        await holdQuiet();
    }
  }
  await ctx.queues.delete([turn]);
}

/**
 * Turns of requirement sets the claim's session does not meet: handed back at once (one request for each ten of a
 * queue), for an agent that can serve them. One handed back so often that SQS would soon take it for poison (its
 * receives count toward the dead-letter queue) is put in line anew instead: a write of its slot, a send, a delete.
 */
export async function handBackTurns(ctx: SchedulerContext, turns: readonly ReceivedTurn[]): Promise<void> {
  if (turns.length === 0) return;
  const worn = turns.filter((t) => t.receiveCount >= TURN_RENEW_AFTER_RECEIVES);
  const fresh = turns.filter((t) => t.receiveCount < TURN_RENEW_AFTER_RECEIVES);
  const now = ctx.now();
  await Promise.all([
    fresh.length > 0 ? ctx.queues.handBack(fresh, 0) : undefined,
    ...worn.map(async (turn) => {
      // Put in line anew only if it is its lane's live turn; any other (replaced, a duplicate) only goes.
      await putInLine(ctx, turn, laneOfTurn(turn), { visibleAt: now, now, replacing: turn.token });
      await ctx.queues.delete([turn]);
    }),
  ]);
}

/** Receives of a turn handed back unserved after which it is put in line anew (SQS dead-letters at ten). */
const TURN_RENEW_AFTER_RECEIVES = 7;
