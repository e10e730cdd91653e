import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffCapSeconds, backoffDelayMs, decideRetry, type RetryPolicy } from '#domain/retry-policy';

const policy: RetryPolicy = { maxAttempts: 5, backoffBaseSeconds: 2, backoffMaxSeconds: 60 };

describe('retry policy', () => {
  it.each([
    [1, 2],
    [2, 4],
    [3, 8],
    [4, 16],
    [5, 32],
    [6, 60],
    [50, 60],
    [5_000, 60],
  ])('the cap after attempt %i is %i s', (attempt, cap) => {
    expect(backoffCapSeconds(attempt, policy)).toBe(cap);
  });

  it('full jitter draws uniformly between zero and the cap', () => {
    expect(backoffDelayMs(3, policy, 0)).toBe(0);
    expect(backoffDelayMs(3, policy, 0.5)).toBe(4_000);
    expect(backoffDelayMs(3, policy, 0.999_999)).toBe(7_999);
  });

  it('never exceeds the cap and never goes negative', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, random) => {
          const delay = backoffDelayMs(attempt, policy, random);
          return delay >= 0 && delay <= backoffCapSeconds(attempt, policy) * 1_000;
        },
      ),
    );
  });

  it.each([
    { attempt: 1, retryable: true, expected: { retry: true } },
    { attempt: 4, retryable: true, expected: { retry: true } },
    { attempt: 5, retryable: true, expected: { retry: false, reason: 'maxAttemptsReached' } },
    { attempt: 9, retryable: true, expected: { retry: false, reason: 'maxAttemptsReached' } },
    { attempt: 1, retryable: false, expected: { retry: false, reason: 'notRetryable' } },
  ])('attempt $attempt (retryable $retryable) → $expected', ({ attempt, retryable, expected }) => {
    expect(decideRetry(attempt, policy, retryable, 0.5)).toMatchObject(expected);
  });
});
