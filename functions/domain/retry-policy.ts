/**
 * When a failed or reclaimed attempt is tried again, and when a task is given up on.
 *
 * Backoff is exponential with full jitter (the delay is drawn uniformly from zero to the exponential cap), which
 * spreads the retries of many tasks that failed together instead of sending them back in one wave.
 */
export interface RetryPolicy {
  /** Attempts in all, the first included. */
  readonly maxAttempts: number;
  /** Cap of the first retry's delay; each later retry doubles it. */
  readonly backoffBaseSeconds: number;
  /** No retry waits longer than this. */
  readonly backoffMaxSeconds: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 3,
  backoffBaseSeconds: 2,
  backoffMaxSeconds: 3_600,
};

/** The largest delay the retry after `attempt` may draw, in seconds (attempt counts from 1). */
export function backoffCapSeconds(attempt: number, policy: RetryPolicy): number {
  const exponent = Math.max(0, attempt - 1);
  // 2 ** 1024 is Infinity; min() below keeps the cap finite.
  return Math.min(policy.backoffMaxSeconds, policy.backoffBaseSeconds * 2 ** Math.min(exponent, 64));
}

/** Full jitter: uniform in [0, cap]. `random` is in [0, 1). */
export function backoffDelayMs(attempt: number, policy: RetryPolicy, random: number): number {
  return Math.floor(random * backoffCapSeconds(attempt, policy) * 1_000);
}

export type RetryDecision =
  | { readonly retry: true; readonly delayMs: number }
  | { readonly retry: false; readonly reason: 'maxAttemptsReached' | 'notRetryable' | 'deadlinePassed' };

/**
 * Decide what follows a failed attempt. `attempt` is the number of the attempt that just failed (1 for the
 * first), `retryable` false for errors the agent declared permanent.
 */
export function decideRetry(
  attempt: number,
  policy: RetryPolicy,
  retryable: boolean,
  random: number,
): RetryDecision {
  if (!retryable) return { retry: false, reason: 'notRetryable' };
  if (attempt >= policy.maxAttempts) return { retry: false, reason: 'maxAttemptsReached' };
  return { retry: true, delayMs: backoffDelayMs(attempt, policy, random) };
}
