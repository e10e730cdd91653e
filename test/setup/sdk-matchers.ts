/**
 * Registers the aws-sdk-client-mock matchers (`toHaveReceivedCommandWith`, ...) for the `unit` project.
 */
import { allCustomMatcher, type BaseMatcher } from 'aws-sdk-client-mock-vitest';
import { expect } from 'vitest';

expect.extend(allCustomMatcher);

declare module 'vitest' {
  // biome-ignore lint/suspicious/noExplicitAny: must match vitest's own `Matchers<T = any>` declaration
  interface Matchers<T = any> extends BaseMatcher<T> {}
}
