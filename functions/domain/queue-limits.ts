/** A queue's limits, enforced across all agents (see `core/queue-limits.ts`): how many leased at once, how fast. */
import { z } from 'zod';

export const queueLimitsSchema = z.strictObject({
  /** Tasks of the queue leased at once, across all agents. */
  maxConcurrency: z.int().min(1).max(100_000).optional(),
  /** Claims per second, across all agents (a token bucket). */
  ratePerSecond: z.number().min(0.001).max(10_000).optional(),
  /** Claims the bucket can take at once. @default the rate, at least 1 */
  burst: z.int().min(1).max(10_000).optional(),
  /** Tasks of one `concurrencyKey` leased at once, across all agents. */
  perKeyConcurrency: z.int().min(1).max(100_000).optional(),
});

export type QueueLimits = z.output<typeof queueLimitsSchema>;
