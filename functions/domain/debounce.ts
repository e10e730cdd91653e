/**
 * Debounce: submissions of one queue, key and specification (all of it but the payload) that come within a window of
 * each other collapse into one task, claimable once the window has been quiet (or at its longest wait), carrying the
 * latest submission's payload. The shape a caller sends and its bounds; how submissions join a window is
 * `functions/core/debounce.ts`.
 */
import { z } from 'zod';
import type * as Sdk from '#sdk/types';
import { accepts } from './wire-match';

export const DEBOUNCE_LIMITS = {
  keyChars: 128,
  /** The longest quiet time a window waits for: an hour. */
  windowSeconds: 60 * 60,
  /** The longest a window stays open from its first submission, and its default: a day. */
  maxWaitSeconds: 24 * 60 * 60,
} as const;

/**
 * Letters, digits and a few marks that ids and paths use. No `#` (it separates the parts of the record's key), no
 * spaces or control characters (keys are echoed in logs).
 */
export const DEBOUNCE_KEY_PATTERN = /^[A-Za-z0-9._:/@+=-]{1,128}$/;

export const debounceSchema = accepts<Sdk.Debounce>()(
  z
    .strictObject({
      key: z
        .string()
        .regex(DEBOUNCE_KEY_PATTERN, 'a debounce key is 1 to 128 letters, digits or . _ : / @ + = -'),
      windowSeconds: z.int().min(1).max(DEBOUNCE_LIMITS.windowSeconds),
      maxWaitSeconds: z.int().min(1).max(DEBOUNCE_LIMITS.maxWaitSeconds).optional(),
    })
    .describe(
      'Submissions of one queue, key and specification (all but the payload) within `windowSeconds` of each other make one task, claimable once none came for `windowSeconds` (or `maxWaitSeconds`, at least `windowSeconds`, a day unless given, after the first), carrying the latest payload. An `idempotencyKey` names the submission. Not with `delaySeconds`, `expiresAt` or `dependsOn`.',
    ),
);

/** A submission's debounce as the scheduler keeps it: its longest wait resolved. */
export interface DebounceSpec {
  readonly key: string;
  readonly windowSeconds: number;
  readonly maxWaitSeconds: number;
}
