/**
 * When a failed request is tried again, and after how long.
 *
 * Backoff is exponential with full jitter (uniform in zero to the cap), so a fleet of agents that failed together
 * does not come back in one wave. A `Retry-After` from the server wins over the computed delay.
 */

export interface RetryOptions {
  /** Attempts in all, the first included. @default 4 */
  readonly maxAttempts?: number;
  /** Cap of the first retry's delay; each later retry doubles it. @default 100 */
  readonly baseDelayMs?: number;
  /** No computed delay is longer, and a `Retry-After` asking for more is not waited for. @default 5000 */
  readonly maxDelayMs?: number;
}

export type RetryPolicy = Required<RetryOptions>;

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 5_000 };

/**
 * Which failures a call may be retried on.
 * - `always`: the call is idempotent, so any transient failure is retried.
 * - `unprocessed`: the call is not idempotent, so only answers meaning "not done, come back" are retried (429,
 *   503); a network error or a 500 may hide a committed write.
 */
export type RetryMode = 'always' | 'unprocessed';

const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);
const UNPROCESSED_STATUSES: ReadonlySet<number> = new Set([429, 503]);

export const isRetryableStatus = (status: number, mode: RetryMode): boolean =>
  (mode === 'always' ? TRANSIENT_STATUSES : UNPROCESSED_STATUSES).has(status);

export function resolveRetryPolicy(options: RetryOptions = {}): RetryPolicy {
  const policy = { ...DEFAULT_RETRY_POLICY, ...options };
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    throw new RangeError('retries.maxAttempts must be an integer of at least 1');
  }
  if (policy.baseDelayMs < 0 || policy.maxDelayMs < policy.baseDelayMs) {
    throw new RangeError('retries needs 0 <= baseDelayMs <= maxDelayMs');
  }
  return policy;
}

/** Full jitter: uniform in [0, min(max, base * 2^(retry - 1))]; `retry` counts from 1. */
export function backoffDelayMs(
  retry: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(retry - 1, 30));
  return Math.floor(random() * cap);
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1_000);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
