/**
 * Priorities and the order in which a claim looks at them.
 *
 * SQS has no priorities, so every task queue is four SQS queues. A claim reads them highest first, but a
 * strict order would let a steady stream of high-priority work starve the low queue forever. Instead each
 * claim draws the tier it looks at first, with weights that favour the top: a low task is looked at first by
 * `weight(low) / sum(weights)` of all claims, so its expected wait is bounded by the claim rate rather than
 * by the arrival rate of higher-priority work. After the drawn tier, the rest follow in strict order.
 */
import { PRIORITIES, type Priority } from '#sdk/vocabulary';

// The priorities are the wire's, most urgent first: declared once, in the SDK's types.
export { PRIORITIES, type Priority };

export const DEFAULT_PRIORITY: Priority = 'normal';

export type PriorityWeights = Readonly<Record<Priority, number>>;

/** Of 100 claims, 70 look at critical first, 15 at high, 10 at normal and 5 at low. */
export const DEFAULT_PRIORITY_WEIGHTS: PriorityWeights = { critical: 70, high: 15, normal: 10, low: 5 };

export const isPriority = (value: unknown): value is Priority =>
  typeof value === 'string' && (PRIORITIES as readonly string[]).includes(value);

/** Rank 0 is the most urgent. */
export const priorityRank = (priority: Priority): number => PRIORITIES.indexOf(priority);

/** One step more urgent, used when starving work is promoted; critical stays critical. */
export const promote = (priority: Priority): Priority =>
  PRIORITIES[Math.max(0, priorityRank(priority) - 1)] ?? priority;

/**
 * The tiers a claim reads, in order: first the tier drawn by weight with `random` in [0, 1), then every
 * other tier from the most urgent down.
 */
export function claimOrder(
  random: number,
  weights: PriorityWeights = DEFAULT_PRIORITY_WEIGHTS,
): readonly Priority[] {
  const total = PRIORITIES.reduce((sum, p) => sum + Math.max(0, weights[p]), 0);
  let first: Priority = 'critical';
  if (total > 0) {
    let point = random * total;
    for (const p of PRIORITIES) {
      point -= Math.max(0, weights[p]);
      if (point < 0) {
        first = p;
        break;
      }
    }
  }
  return [first, ...PRIORITIES.filter((p) => p !== first)];
}
