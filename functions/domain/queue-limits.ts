/** A queue's limits, enforced across all agents (see `core/queue-limits.ts`): how many leased at once, how fast. */
import { z } from 'zod';
import type * as Sdk from '#sdk/types';
import { accepts } from './wire-match';

/**
 * The highest `maxConcurrency` and `perKeyConcurrency`. A limit's slots are kept in DynamoDB items of at most 400 KB:
 * an entry is a task id (28 bytes), its reservation time in milliseconds (13 digits, 8 bytes) and 1 byte of the
 * map's own, 37 bytes. Spread over `SLOT_ITEMS_MAX` items, 5,000 are 100 an item (3.7 KB, 4 write units a claim);
 * in one item (`queueSlotLayout` 1), 185 KB, less than half of the item, and 185 write units a claim.
 */
export const QUEUE_SLOTS_MAX = 5_000;

/** The bound a stored limit had before `QUEUE_SLOTS_MAX`: a limit set then still reads, and is enforced capped. */
const STORED_SLOTS_MAX = 100_000;

const slotsLimit = (max: number) =>
  z
    .int()
    .min(1)
    .max(max, {
      error: `at most ${QUEUE_SLOTS_MAX.toLocaleString('en-US')} (the slots one queue control holds)`,
    });

const limitsShape = (slotsMax: number) => ({
  /** Tasks of the queue leased at once, across all agents. */
  maxConcurrency: slotsLimit(slotsMax).optional(),
  /** Claims per second, across all agents (a token bucket). */
  ratePerSecond: z.number().min(0.001).max(10_000).optional(),
  /** Claims the bucket can take at once. @default the rate, at least 1 */
  burst: z.int().min(1).max(10_000).optional(),
  /** Tasks of one `concurrencyKey` leased at once, across all agents. */
  perKeyConcurrency: slotsLimit(slotsMax).optional(),
});

/** Limits as they may be set (through the API or declared in the construct). */
export const queueLimitsSchema = accepts<Sdk.QueueLimits>()(z.strictObject(limitsShape(QUEUE_SLOTS_MAX)));

/**
 * Limits as they may be stored: one set before `QUEUE_SLOTS_MAX` may be above it. It is kept, shown as it was set,
 * and enforced at the bound (`enforcedLimits`).
 */
export const storedQueueLimitsSchema = z.strictObject(limitsShape(STORED_SLOTS_MAX));

export type QueueLimits = z.output<typeof storedQueueLimitsSchema>;

/** The limits as claims enforce them: concurrency limits capped at `QUEUE_SLOTS_MAX`. */
export function enforcedLimits(limits: QueueLimits): QueueLimits {
  const capped = (limit: number | undefined) =>
    limit === undefined ? undefined : Math.min(limit, QUEUE_SLOTS_MAX);
  const maxConcurrency = capped(limits.maxConcurrency);
  const perKeyConcurrency = capped(limits.perKeyConcurrency);
  return {
    ...limits,
    ...(maxConcurrency === undefined ? {} : { maxConcurrency }),
    ...(perKeyConcurrency === undefined ? {} : { perKeyConcurrency }),
  };
}

/** Whether a limit is above what claims enforce (set before `QUEUE_SLOTS_MAX`). */
export const isCapped = (limits: QueueLimits): boolean =>
  (limits.maxConcurrency ?? 0) > QUEUE_SLOTS_MAX || (limits.perKeyConcurrency ?? 0) > QUEUE_SLOTS_MAX;

/**
 * The most slots a limit keeps in one item when its slots are spread (`queueSlotLayout` 2): 20 entries of 37 bytes
 * keep an item near 1 KB, so a reservation or a freeing is one write unit and a look half a read unit (a read unit
 * consistent), whatever the limit.
 */
export const SLOTS_PER_ITEM = 20;

/**
 * The most items a limit's slots are spread over: a change of the spread writes all of them in one transaction
 * (at most 100 items). Limits above 1,000 put more than `SLOTS_PER_ITEM` in each (at most 100 at `QUEUE_SLOTS_MAX`).
 */
export const SLOT_ITEMS_MAX = 50;

/** How a concurrency limit's slots are spread over items, each with its share of the limit. */
export interface SlotSpread {
  readonly max: number;
  /** Each item's share of `max`, by item: the first `max % items` get one more. They add up to `max`. */
  readonly quotas: readonly number[];
  /**
   * What each item of a spread over more than one records, so that a reservation made under another spread (one
   * read before a change of the limit, or in a function of another layout) is refused: absent for one item.
   */
  readonly stamp?: string;
}

/** The spread of `max` slots: over one item in layout 1 or up to `SLOTS_PER_ITEM`, else over several. */
export function slotSpread(max: number, layout: number): SlotSpread {
  const items = layout >= 2 ? Math.min(SLOT_ITEMS_MAX, Math.max(1, Math.ceil(max / SLOTS_PER_ITEM))) : 1;
  const base = Math.floor(max / items);
  const quotas = Array.from({ length: items }, (_, i) => base + (i < max % items ? 1 : 0));
  return { max, quotas, ...(items > 1 ? { stamp: `${items}/${max}` } : {}) };
}

/** How many items a stamp says a limit's slots are spread over (1 when there is none, or it cannot be read). */
export function itemsOfStamp(stamp: string | undefined): number {
  const items = Number(stamp?.split('/')[0]);
  return Number.isInteger(items) && items >= 1 && items <= SLOT_ITEMS_MAX ? items : 1;
}

/**
 * The name of item `index` of a control's slots: the first is the control's own record (where one item's slots have
 * always been, so the functions of earlier releases free what this one reserves there), the others `<control>/slots/<n>`.
 */
export const slotItemName = (control: string, index: number): string =>
  index === 0 ? control : `${control}/slots/${index}`;

/** The control whose slots an item holds. */
export const controlOfSlotItem = (name: string): string => name.replace(/\/slots\/\d+$/, '');
