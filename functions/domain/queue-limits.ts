/** A queue's limits, enforced across all agents (see `core/queue-limits.ts`): how many leased at once, how fast. */
import { z } from 'zod';
import type * as Sdk from '#sdk/types';
import { accepts } from './wire-match';

/**
 * The most slots one control item holds, and so the highest `maxConcurrency` and `perKeyConcurrency`. A queue's
 * (or a key's) slots are a map in one DynamoDB item, of at most 400 KB: an entry is a task id (28 bytes), its
 * reservation time in milliseconds (13 digits, 8 bytes) and 1 byte of the map's own, 37 bytes, so 11,000 entries
 * fill the item. 5,000 entries are 185 KB, less than half of it: room for the item's other fields and a margin
 * over the estimate. Every claim on a limited queue reads and writes the whole item, so this also bounds what one
 * costs (at the bound, 185 write units).
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
