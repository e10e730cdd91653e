/**
 * A waitpoint: a task suspended by its agent until a person or a system answers (an approval, a webhook), holding
 * no lease meanwhile. Exactly one outcome ends it: completed (with data), rejected (with a reason), or timed out.
 * Its callback token is a bearer secret shown once and kept only as a hash.
 */
import { timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { sha256Base64Url } from './ids';
import { jsonValueSchema } from './task-spec';

export const WAITPOINT_LIMITS = {
  /** Longest wait. */
  timeoutSeconds: 30 * 24 * 60 * 60,
  /** An outcome's data, serialised: a claim carries it to the resumed attempt. */
  dataBytes: 64 * 1024,
  reasonChars: 2_048,
} as const;

export type WaitpointOutcome = 'completed' | 'rejected' | 'timedOut';
export type WaitpointStatus = 'open' | WaitpointOutcome | 'cancelled';
export type OnTimeout = 'resume' | 'fail';

export interface Waitpoint {
  readonly waitpointId: string;
  readonly taskId: string;
  /** The lease epoch the task was suspended at. */
  readonly leaseEpoch: number;
  readonly status: WaitpointStatus;
  readonly onTimeout: OnTimeout;
  readonly timeoutAt: number;
  readonly createdAt: number;
  /** sha256 of the callback secret. */
  readonly tokenHash: string;
  readonly resolvedAt?: number;
  /** The outcome's data (completed) as JSON, or the reason (rejected). */
  readonly dataJson?: string;
  readonly reason?: string;
  /** sha256 of the request that resolved it: the same request again is answered as it was, another refused. */
  readonly resolutionHash?: string;
}

/** The body of `POST /v1/agent/tasks/{taskId}/wait`. */
export const waitBodyShape = {
  timeoutSeconds: z.int().min(1).max(WAITPOINT_LIMITS.timeoutSeconds),
  onTimeout: z.enum(['resume', 'fail']).default('resume'),
  checkpoint: jsonValueSchema.optional(),
};

/** A waitpoint's callback token: `<waitpointId>.<secret>`, so that its record is found without a scan. */
export const callbackToken = (waitpointId: string, secret: string): string => `${waitpointId}.${secret}`;

export const CALLBACK_TOKEN_PATTERN = /^(w_[a-z2-7]{26})\.([A-Za-z0-9_-]{43})$/;

/** Whether `secret` is the one whose hash the waitpoint keeps; in constant time. */
export function secretMatches(waitpoint: Pick<Waitpoint, 'tokenHash'>, secret: string): boolean {
  const given = Buffer.from(sha256Base64Url(secret));
  const kept = Buffer.from(waitpoint.tokenHash);
  return given.length === kept.length && timingSafeEqual(given, kept);
}
