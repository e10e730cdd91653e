/**
 * Per-queue limits, enforced at claim time with conditional writes on the queue's control record, so they hold
 * exactly under parallel claims from many agents:
 * - concurrency: the record lists the queue's tasks leased or about to be; a claim adds its tasks on condition
 *   that the list stays within the limit (the same superset bookkeeping as an agent session's slots);
 * - rate: a token bucket refilled at `ratePerSecond` up to `burst`, taken from on condition that no other claim
 *   took since it was read, so two claims cannot spend the same tokens.
 * Only queues with a limit pay for this: one read and one write per claim, and for a concurrency limit one write
 * at the end of each lease, which frees its slot (`freeQueueSlots`).
 */
import { errorName } from '#domain/errors';
import {
  enforcedLimits,
  itemsOfStamp,
  type SlotSpread,
  slotItemName,
  slotSpread,
} from '#domain/queue-limits';
import type { Task } from '#domain/task';
import type { SchedulerContext } from './context';
import type { QueueAdmissionState } from './ports/queue-control-store';
import type { QueueControl } from './queue-controls';

export const hasLimits = (control: QueueControl): boolean =>
  control.limits.maxConcurrency !== undefined || control.limits.ratePerSecond !== undefined;

/**
 * How many of a full queue's entries a claim looks at for slots no lease holds any more: the oldest reservations,
 * where a slot whose freeing was lost sits once the leases reserved with it are over. The whole map, read task by
 * task, cost a claim of a full queue half a read unit per lease held (500 at 1,000 held), at every poll.
 */
export const STALE_LOOK = 25;

/** The `STALE_LOOK` oldest entries of the slots, by reservation time. */
const oldestEntries = (held: Readonly<Record<string, number>>): Record<string, number> =>
  Object.fromEntries(
    Object.entries(held)
      .sort((a, b) => a[1] - b[1])
      .slice(0, STALE_LOOK),
  );

/**
 * Entries of the queue's reserved slots that stand for no lease any more: the grant made for the reservation has
 * landed and ended (the task still carries that grant time), or the reservation is past the grace period.
 */
async function staleEntries(ctx: SchedulerContext, held: Readonly<Record<string, number>>, now: number) {
  const graceStart = now - ctx.settings.reservationGraceSeconds * 1_000;
  const stale = new Map<string, number>();
  if (Object.keys(held).length === 0) return stale;
  const tasks = await ctx.tasks.getMany(Object.keys(held), { consistent: false });
  for (const [taskId, reservedAt] of Object.entries(held)) {
    const task = tasks.get(taskId);
    const running = task?.status === 'leased' && task.leasedAt === reservedAt;
    if (running) continue;
    // A younger entry with no landed grant may belong to a claim still deciding: keep it.
    if (task?.leasedAt === reservedAt || reservedAt < graceStart) stale.set(taskId, reservedAt);
  }
  return stale;
}

/** What a claim asks of one item of slots, or of the control's token bucket, or both. */
interface ItemLimits {
  /** The item's share of the concurrency limit, and the stamp of the spread it was computed for. */
  readonly concurrency?: { readonly max: number; readonly stamp?: string };
  readonly rate?: { readonly perSecond: number; readonly burst: number };
}

/**
 * Admits as many of `taskIds` as the item's share of the slots (and the bucket, on the control's own record) allows
 * now, reserving them (the reservation time is `now`, the grant time the claim will write). A task still named in
 * the slots by an entry that stands for no lease any more (its lease ended and the slot was not freed: a write
 * lost, or a lease ended by a function older than the freeing) is admitted in place of that entry. `respread` when
 * the item was made for another spread of the limit than `limits.concurrency.stamp`.
 */
async function admitIn(
  ctx: SchedulerContext,
  item: string,
  limits: ItemLimits,
  taskIds: readonly string[],
  now: number,
): Promise<Set<string> | 'respread'> {
  const { concurrency, rate } = limits;
  for (let round = 0; round < 4; round++) {
    const seen = await ctx.queueControls.readAdmission(item);
    if (concurrency && seen.stamp !== concurrency.stamp) return 'respread';
    const held = seen.held ?? {};
    const size = Object.keys(held).length;
    // Entries of the very tasks wanted are looked at always (a few reads, only when there are such entries).
    const named = Object.fromEntries(taskIds.filter((id) => id in held).map((id) => [id, held[id] ?? 0]));
    const stale = concurrency
      ? await staleEntries(
          ctx,
          size + taskIds.length > concurrency.max ? { ...oldestEntries(held), ...named } : named,
          now,
        )
      : new Map<string, number>();
    const wanted = concurrency ? taskIds.filter((id) => !(id in held) || stale.has(id)) : [...taskIds];
    let room = concurrency ? concurrency.max - size + stale.size : wanted.length;

    const lastTakenAt = seen.tokensAt;
    let tokens = 0;
    if (rate) {
      const previous = seen.tokens ?? rate.burst;
      const elapsedMs = lastTakenAt === undefined ? 0 : Math.max(0, now - lastTakenAt);
      tokens = Math.min(rate.burst, previous + (elapsedMs / 1_000) * rate.perSecond);
      room = Math.min(room, Math.floor(tokens));
    }
    const admitted = wanted.slice(0, Math.max(0, room));
    if (admitted.length === 0) return new Set();

    const reserved = await ctx.queueControls.reserve(item, seen, {
      taskIds: admitted,
      at: now,
      ...(concurrency ? { concurrency: { ...concurrency, stale } } : {}),
      ...(rate ? { tokens: { left: tokens - admitted.length, at: Math.max(now, lastTakenAt ?? now) } } : {}),
    });
    if (reserved) return new Set(admitted);
    // Refused: another claim changed the slots or the bucket since they were read. Look again.
  }
  return new Set();
}

/** How many items of a spread limit's slots one claim looks at for room before it leaves the rest for later. */
export const SLOT_ITEM_LOOKS = 3;

/** What a claim was admitted: by task, the item whose slot it took (absent: a rate limit alone, no slot). */
export type Admitted = Map<string, string | undefined>;

/**
 * Admits as many of `taskIds` as the queue's limits allow now (see `admitIn`). A concurrency limit above
 * `SLOTS_PER_ITEM` keeps its slots in several items, each with its share (`slotSpread`): the claim looks at up to
 * `SLOT_ITEM_LOOKS` of them, in an order drawn at random, and takes tokens from the bucket for what they admitted.
 */
export async function admit(
  ctx: SchedulerContext,
  control: QueueControl,
  taskIds: readonly string[],
  now: number,
): Promise<Admitted> {
  const { maxConcurrency, ratePerSecond } = enforcedLimits(control.limits);
  if (!hasLimits(control) || taskIds.length === 0) return new Map(taskIds.map((id) => [id, undefined]));
  const rate =
    ratePerSecond === undefined
      ? undefined
      : { perSecond: ratePerSecond, burst: control.limits.burst ?? Math.max(1, Math.ceil(ratePerSecond)) };
  const byItem = async (item: string, limits: ItemLimits, ids: readonly string[], spread?: SlotSpread) => {
    let admitted = await admitIn(ctx, item, limits, ids, now);
    if (admitted === 'respread' && spread && (await respread(ctx, control.queue, spread, now)))
      admitted = await admitIn(ctx, item, limits, ids, now);
    return new Map([...(admitted === 'respread' ? [] : admitted)].map((id) => [id, item]));
  };
  if (maxConcurrency === undefined) {
    const admitted = await byItem(control.queue, { ...(rate ? { rate } : {}) }, taskIds);
    return new Map([...admitted.keys()].map((id) => [id, undefined]));
  }
  const spread = slotSpread(maxConcurrency, ctx.settings.queueSlotLayout);
  const { quotas, stamp } = spread;
  if (quotas.length === 1) {
    const limits = { concurrency: { max: maxConcurrency }, ...(rate ? { rate } : {}) };
    return byItem(control.queue, limits, taskIds, spread);
  }
  const admitted: Admitted = new Map();
  for (const index of drawOrder(ctx, quotas.length).slice(0, SLOT_ITEM_LOOKS)) {
    const left = taskIds.filter((id) => !admitted.has(id));
    if (left.length === 0) break;
    const max = quotas[index] ?? 0;
    const item = slotItemName(control.queue, index);
    for (const [id, name] of await byItem(item, { concurrency: { max, stamp } }, left, spread))
      admitted.set(id, name);
  }
  if (!rate || admitted.size === 0) return admitted;
  const taken = await byItem(control.queue, { rate }, [...admitted.keys()]);
  const untaken = new Map<string, Map<string, number>>();
  for (const [id, item] of admitted) {
    if (taken.has(id) || item === undefined) continue;
    untaken.set(item, new Map([...(untaken.get(item) ?? []), [id, now]]));
    admitted.delete(id);
  }
  await Promise.all([...untaken].map(([item, entries]) => releaseQueueSlots(ctx, item, entries)));
  return admitted;
}

/** The items `0 … count - 1` in an order drawn at random, so that parallel claims spread over them. */
function drawOrder(ctx: SchedulerContext, count: number): number[] {
  const order = Array.from({ length: count }, (_, i) => i);
  for (let i = count - 1; i > 0; i--) {
    const j = Math.floor(ctx.random() * (i + 1));
    [order[i], order[j]] = [order[j] ?? 0, order[i] ?? 0];
  }
  return order;
}

/** How long one process waits before it tries again to change a control's spread, after a try that failed. */
const RESPREAD_EVERY_MS = 1_000;
const lastRespread = new WeakMap<SchedulerContext, Map<string, number>>();

/** The stamp of items of slots being moved to another spread: no claim reserves in them. */
const movingStamp = (items: number) => `${items}/moving`;

/** Every item of a control's slots a change of spread looks at: of the spread recorded, and of the new one. */
async function readSpread(ctx: SchedulerContext, control: string, spread: SlotSpread) {
  const head = await ctx.queueControls.readAdmission(control);
  const count = Math.max(itemsOfStamp(head.stamp), spread.quotas.length);
  const names = Array.from({ length: count }, (_, i) => slotItemName(control, i));
  // The first item is the control's record, read above for the spread it records.
  const read =
    count > 1
      ? await ctx.queueControls.readSlotItems(names.slice(1))
      : new Map<string, QueueAdmissionState>();
  read.set(control, head);
  return names.map((name) => {
    const state = read.get(name) ?? {};
    const seen = {
      ...(state.stamp === undefined ? {} : { stamp: state.stamp }),
      ...(state.held === undefined ? {} : { size: Object.keys(state.held).length }),
    };
    return { name, seen, held: new Map(Object.entries(state.held ?? {})) };
  });
}

const NONE: ReadonlyMap<string, number> = new Map();

/**
 * Moves a control's slots to `spread` (its limit changed, or the layout), in two transactions over every item of
 * the old spread and of the new one, each refused if any item changed since it was read:
 * 1. every item is stamped as moving, so that no claim reserves in them any more (a claim made under the old spread
 *    is refused by the stamp); from then on they only lose entries, as leases end;
 * 2. every item gets the new spread's stamp; an item above its new share (an item past the new spread has none)
 *    keeps its entries, which its leases free as they end, and copies of its surplus go to items below their
 *    share, which count them until the leases they stand for are over (then found stale like any entry).
 * So the leases are at most the limit at every moment. Not done while the entries are above the new limit (after
 * the oldest were looked at for stale ones): claims wait for leases to end. False if not done now.
 */
async function respread(ctx: SchedulerContext, control: string, spread: SlotSpread, now: number) {
  const failed = lastRespread.get(ctx) ?? new Map<string, number>();
  lastRespread.set(ctx, failed);
  if (now - (failed.get(control) ?? Number.NEGATIVE_INFINITY) < RESPREAD_EVERY_MS) return false;
  const done = await moveSlots(ctx, control, spread, now);
  if (done) failed.delete(control);
  else failed.set(control, now);
  return done;
}

async function moveSlots(ctx: SchedulerContext, control: string, spread: SlotSpread, now: number) {
  let items = await readSpread(ctx, control, spread);
  const moving = movingStamp(items.length);
  if (items.some(({ seen }) => seen.stamp !== moving)) {
    const frozen = await ctx.queueControls.respread(
      items.map(({ name, seen }) => ({ name, seen, stamp: moving, add: NONE, drop: NONE })),
    );
    if (!frozen) return false;
    items = await readSpread(ctx, control, spread);
    if (items.some(({ seen }) => seen.stamp !== moving)) return false;
  }

  const drop = items.map(() => new Map<string, number>());
  let total = items.reduce((sum, item) => sum + item.held.size, 0);
  if (total > spread.max) {
    // Over the new limit as recorded: the oldest entries may stand for leases whose freeing was lost.
    const oldest = items
      .flatMap(({ held }, index) => [...held].map(([id, at]) => ({ index, id, at })))
      .sort((a, b) => a.at - b.at)
      .slice(0, STALE_LOOK);
    const stale = await staleEntries(ctx, Object.fromEntries(oldest.map((e) => [e.id, e.at])), now);
    for (const { index, id, at } of oldest) {
      if (stale.get(id) !== at) continue;
      drop[index]?.set(id, at);
      items[index]?.held.delete(id);
      total--;
    }
    if (total > spread.max) return false;
  }

  const share = (index: number) => spread.quotas[index] ?? 0;
  const add = items.map(() => new Map<string, number>());
  const surplus = items.flatMap(({ held }, index) =>
    [...held].sort((a, b) => a[1] - b[1]).slice(0, Math.max(0, held.size - share(index))),
  );
  for (const [id, at] of surplus) {
    const to = items.findIndex(
      ({ held }, index) =>
        (add[index]?.size ?? 0) + held.size < share(index) && !held.has(id) && !add[index]?.has(id),
    );
    if (to < 0) return false;
    add[to]?.set(id, at);
  }
  return ctx.queueControls.respread(
    items.map(({ name, seen }, index) => {
      const stamp = index === 0 ? spread.stamp : `${spread.quotas.length}/${spread.max}`;
      return {
        name,
        seen,
        ...(stamp === undefined ? {} : { stamp }),
        add: add[index] ?? NONE,
        drop: drop[index] ?? NONE,
      };
    }),
  );
}

/** Adds what `admit` gave to the slots a claim took, by item of slots, task and reservation time. */
export function takeSlots(taken: Map<string, Map<string, number>>, admitted: Admitted, now: number): void {
  for (const [id, item] of admitted) {
    if (item === undefined) continue;
    const slots = taken.get(item) ?? new Map<string, number>();
    slots.set(id, now);
    taken.set(item, slots);
  }
}

/** Gives back queue slots reserved by a claim whose grants did not happen. */
export async function releaseQueueSlots(
  ctx: SchedulerContext,
  queue: string,
  entries: ReadonlyMap<string, number>,
): Promise<void> {
  if (entries.size === 0) return;
  await ctx.queueControls.release(queue, entries);
}

/**
 * Frees the slots a lease held in its queue's and its key's concurrency limits, once the lease is over: each is
 * removed only if it is still the one reserved for that lease (reserved at its grant time). Nothing for a task
 * whose grant reserved no slot. Best effort: a slot left behind is found stale by the next admission that looks.
 */
export async function freeQueueSlots(ctx: SchedulerContext, task: Task): Promise<void> {
  const { queueSlots, leasedAt } = task;
  if (!queueSlots || queueSlots.length === 0 || leasedAt === undefined) return;
  await Promise.all(
    queueSlots.map((control) =>
      ctx.queueControls.release(control, new Map([[task.taskId, leasedAt]])).catch((error: unknown) =>
        ctx.log.warn('freeing a queue slot failed; the next admission finds it stale', {
          taskId: task.taskId,
          error: errorName(error),
        }),
      ),
    ),
  );
}
