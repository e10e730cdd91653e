/**
 * AWS errors a caller can do nothing about but retry: throttling and brief unavailability that outlasted the
 * SDK's own retries. They become `ServiceUnavailableError` (503), never a bare 500.
 */
import { ServiceUnavailableError } from '#domain/errors';

const RETRYABLE_AWS_ERRORS = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'TransactionConflictException',
  'InternalServerError',
  'ServiceUnavailable',
  'RequestThrottled',
  'TimeoutError',
  'KMSThrottlingException',
]);

export function isRetryableAwsError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const metadata = (error as { $retryable?: unknown; $fault?: unknown }).$retryable;
  return RETRYABLE_AWS_ERRORS.has(error.name) || metadata !== undefined;
}

/** Rethrows retryable AWS errors as `ServiceUnavailableError`, keeping the original as `cause`. */
export function translateAwsError(error: unknown): never {
  if (isRetryableAwsError(error)) {
    throw new ServiceUnavailableError('a dependency is busy; try again shortly', { cause: error });
  }
  throw error;
}

/**
 * The adapter, its asynchronous methods answering retryable AWS errors as `ServiceUnavailableError`. The wiring
 * wraps every store and queue it hands to the core with this, so the translation happens once, at the boundary,
 * and the operations never see an AWS error type. Calls the adapter makes to itself are not wrapped again.
 */
export function translatingAwsErrors<Adapter extends object>(adapter: Adapter): Adapter {
  // One wrapper per method, made on first use: every call on the hot path reuses it.
  const wrapped = new Map<PropertyKey, { readonly of: unknown; readonly call: unknown }>();
  return new Proxy(adapter, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      const known = wrapped.get(property);
      // A method replaced on the adapter since (a test's deliberate bug) gets a wrapper of its own.
      if (known?.of === value) return known.call;
      const call = (...args: unknown[]) => {
        const answer: unknown = value.apply(target, args);
        return answer instanceof Promise ? answer.catch(translateAwsError) : answer;
      };
      wrapped.set(property, { of: value, call });
      return call;
    },
  });
}
