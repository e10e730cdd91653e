/**
 * What a caller may submit, and the limits that keep one task cheap to store and to move.
 */
import { z } from 'zod';
import type * as Sdk from '#sdk/types';
import { DEBOUNCE_LIMITS, type DebounceSpec, debounceSchema } from './debounce';
import { PayloadTooLargeError, ValidationError } from './errors';
import { TASK_ID_PATTERN } from './ids';
import { normaliseRequirements, type Requirements, requirementsSchema, requiresAny } from './labels';
import { CONCURRENCY_KEY_CHARS } from './lanes';
import { DEFAULT_PRIORITY, PRIORITIES, type Priority } from './priority';
import { type TaskRateLimit, taskRateLimitsSchema } from './rate-limits';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry-policy';
import { traceparentSchema, tracestateSchema } from './trace-context';
import { accepts } from './wire-match';

export const LIMITS = {
  /** Serialised JSON, UTF-8 bytes. Payloads live in their own item, so this never touches hot-path writes. */
  payloadBytes: 256 * 1024,
  resultBytes: 256 * 1024,
  /** A checkpoint is rewritten at every heartbeat that carries one, so it is kept small. */
  checkpointBytes: 16 * 1024,
  errorMessageChars: 2_048,
  idempotencyKeyChars: 255,
  maxAttempts: 100,
  /** Longest single attempt: the lease's hard deadline. */
  timeoutSeconds: 12 * 60 * 60,
  /** Delays up to SQS's 15 minutes ride on the message; longer ones are held by a not-before time. */
  delaySeconds: 7 * 24 * 60 * 60,
  sqsMaxDelaySeconds: 15 * 60,
  backoffSeconds: 7 * 24 * 60 * 60,
  /** Longest snooze (a release with a delay), and longest `retryAfterSeconds` of a failure. */
  snoozeSeconds: 12 * 60 * 60,
  /** Most snoozes a task may be given (`maxSnoozes`). */
  maxSnoozes: 1_000,
  claimMax: 10,
  /** Longest `ttlSeconds`: a task waits to start at most this long, as long as its payload is kept for. */
  ttlSeconds: 14 * 24 * 60 * 60,
  /** An `onFailure` specification, serialised: kept beside the payload until the task can no longer die. */
  onFailureBytes: 64 * 1024,
  /** Most tasks one task may depend on. */
  dependsOn: 100,
  /**
   * Most dependents one task may have. Its end resolves each inside the call that ends it (an agent's complete,
   * whose function has 10 s): about 4 requests and 4 write units a dependent, so 100 stay well within that call,
   * and their records fit one page of the dependents' query (100).
   */
  dependentsPerTask: 100,
} as const;

/**
 * Deepest nesting of objects and arrays a JSON body may have. Validation walks values recursively, and a 6 KB
 * body of 3,000 nested arrays is enough to overflow the stack; real payloads stay within a few levels.
 */
export const MAX_JSON_DEPTH = 64;

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

function isJsonValue(value: unknown, depth: number): value is JsonValue {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || depth >= MAX_JSON_DEPTH) return false;
  if (Array.isArray(value)) return value.every((item) => isJsonValue(item, depth + 1));
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  return Object.values(value).every((item) => isJsonValue(item, depth + 1));
}

/**
 * A JSON value, checked in place and passed on as it is. `z.json()` rebuilds objects by assignment, which turns
 * an own `__proto__` key (as `JSON.parse` makes it) into a prototype and drops it from the data; this schema
 * keeps every key, so the bytes a caller sends are the bytes it reads back.
 */
export const jsonValueSchema = z.custom<JsonValue>(
  (value) => isJsonValue(value, 0),
  `a JSON value nested at most ${MAX_JSON_DEPTH} deep`,
);

/**
 * A name shown to people (an agent's): any text but control and format characters (ESC, BEL, C1, bidi overrides
 * such as RLO, zero-width marks) and line or paragraph separators, which would rewrite a terminal or a log line.
 */
export const printableNameSchema = (maxChars: number) =>
  z
    .string()
    .min(1)
    .max(maxChars)
    .regex(/^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]+$/u, 'a name of printable characters, without control characters');

/** Queue names become part of SQS queue names, so they use SQS's alphabet and leave room for a suffix. */
export const QUEUE_NAME_PATTERN = /^[A-Za-z0-9_-]{1,48}$/;

export const queueNameSchema = z
  .string()
  .regex(QUEUE_NAME_PATTERN, 'a queue name is 1 to 48 letters, digits, "-" or "_"');

/** Printable ASCII without spaces: keys are echoed in logs and must not smuggle control characters. */
export const idempotencyKeySchema = z
  .string()
  .min(1)
  .max(LIMITS.idempotencyKeyChars)
  .regex(/^[\x21-\x7e]+$/, 'an idempotency key is printable ASCII without spaces');

/** What every task specification has: what runs, where, and how it is retried. */
const runShape = {
  queue: queueNameSchema,
  payload: jsonValueSchema,
  priority: z.enum(PRIORITIES).default(DEFAULT_PRIORITY),
  maxAttempts: z.int().min(1).max(LIMITS.maxAttempts).default(DEFAULT_RETRY_POLICY.maxAttempts),
  timeoutSeconds: z
    .int()
    .min(1)
    .max(LIMITS.timeoutSeconds)
    .default(15 * 60),
  /**
   * How long an attempt may last in all when its agent extends its deadline (`extend` on a heartbeat), from the
   * attempt's start; at least `timeoutSeconds`. Absent: the attempt keeps `timeoutSeconds`.
   */
  maxTimeoutSeconds: z.int().min(1).max(LIMITS.timeoutSeconds).optional(),
  delaySeconds: z.int().min(0).max(LIMITS.delaySeconds).default(0),
  backoffBaseSeconds: z
    .int()
    .min(1)
    .max(LIMITS.backoffSeconds)
    .default(DEFAULT_RETRY_POLICY.backoffBaseSeconds),
  backoffMaxSeconds: z
    .int()
    .min(1)
    .max(LIMITS.backoffSeconds)
    .default(DEFAULT_RETRY_POLICY.backoffMaxSeconds),
  /** Seconds from when it may first be claimed (the submit, or the end of its delay) to start, or it expires. */
  ttlSeconds: z.int().min(1).max(LIMITS.ttlSeconds).optional(),
  /** The moment by which the task must start, or it expires (ISO 8601, with its offset). */
  expiresAt: z.iso.datetime({ offset: true }).optional(),
  /**
   * Whose task it is (a tenant, a user, a repository): keys of one queue take turns, so a key with a deep backlog
   * does not hold up the others, and the queue's `perKeyConcurrency` bounds how many of a key run at once.
   */
  concurrencyKey: printableNameSchema(CONCURRENCY_KEY_CHARS).optional(),
  /** Releases with a delay (snoozes) the task may take, which use no attempt. @default DEFAULT_MAX_SNOOZES */
  maxSnoozes: z.int().min(0).max(LIMITS.maxSnoozes).optional(),
  /** Named rate limits its attempts take units of (`#domain/rate-limits`). */
  rateLimits: taskRateLimitsSchema.optional(),
  /** Labels the agent that runs it must have (`#domain/labels`): a value for each, or `'*'` for any. */
  require: requirementsSchema
    .describe(
      'Labels the agent that runs it must have: for each label name (up to 8), a value among the agent’s values for it, or `*` for any value. Only agents that meet every one are given it or woken for it. Needs `taskLayout` 5.',
    )
    .optional(),
};

/**
 * Snoozes a task may take unless it says otherwise: with a provider's usual Retry-After of a few seconds to a
 * minute, a task waits out an hour or more of refusals before its snoozes run out and its failures count.
 */
export const DEFAULT_MAX_SNOOZES = 100;

/**
 * A task submitted on another's behalf (its `onFailure`): its own name and follow-ups are the scheduler's, and its
 * deadline, if any, counts from when it is submitted (`ttlSeconds`): a moment fixed now could pass before it is.
 */
const { expiresAt: _fixedMoment, ...followUpShape } = runShape;
export const followUpSpecSchema = accepts<Sdk.FollowUpTaskInput>()(z.strictObject(followUpShape));

export const taskSpecSchema = accepts<Sdk.SubmitTaskInput>()(
  z.strictObject({
    ...runShape,
    idempotencyKey: idempotencyKeySchema.optional(),
    /** Tasks (submitted before this one) that must all succeed before this one may be claimed. */
    dependsOn: z
      .array(z.string().regex(TASK_ID_PATTERN, 'a task id'))
      .min(1)
      .max(LIMITS.dependsOn)
      .refine((ids) => new Set(ids).size === ids.length, 'each task once')
      .optional(),
    /** When a dependency ends dead, cancelled or expired: `cancel` this task (the default), or `run` it anyway. */
    onDependencyFailure: z.enum(['cancel', 'run']).optional(),
    /** Submitted once, when this task ends `dead`: the new task names this one and carries its last error. */
    onFailure: followUpSpecSchema.optional(),
    /** Submissions of one key and specification within the window collapse into one task (`core/debounce.ts`). */
    debounce: debounceSchema.optional(),
    /** The W3C trace context of the span that submitted it (`#domain/trace-context`): its agent's work joins it. */
    traceparent: traceparentSchema
      .describe(
        'The W3C trace context of the span that submits the task (`00-<trace id>-<span id>-<flags>`): kept with the task and handed to the agent that claims it, so its work joins the trace. Absent: the `traceparent` header, if any.',
      )
      .optional(),
    tracestate: tracestateSchema
      .describe(
        'The W3C `tracestate` beside `traceparent` (up to 512 characters). Absent: the `tracestate` header.',
      )
      .optional(),
  }),
);

export type TaskSpecInput = z.input<typeof taskSpecSchema>;

/** An error as an agent reports a failed attempt; one that does not say whether it is retryable is. */
export const taskErrorSchema = accepts<Sdk.FailInput['error']>()(
  z.strictObject({
    message: z.string().min(1).max(LIMITS.errorMessageChars),
    retryable: z.boolean().optional(),
  }),
);

export interface TaskSpec {
  readonly queue: string;
  /** The payload as the caller sent it, serialised once so its size is exact and it is never re-encoded. */
  readonly payloadJson: string;
  readonly payloadBytes: number;
  readonly priority: Priority;
  readonly retryPolicy: RetryPolicy;
  readonly timeoutSeconds: number;
  readonly maxTimeoutSeconds?: number;
  readonly delaySeconds: number;
  readonly idempotencyKey?: string;
  /** When it must start by: seconds from the submit, or a moment. */
  readonly expiry?: { readonly ttlSeconds: number } | { readonly at: number };
  /** The `onFailure` specification as JSON, checked but not yet resolved against the queues. */
  readonly onFailureJson?: string;
  readonly dependsOn?: readonly string[];
  readonly onDependencyFailure?: 'cancel' | 'run';
  readonly concurrencyKey?: string;
  readonly maxSnoozes?: number;
  readonly debounce?: DebounceSpec;
  readonly rateLimits?: readonly TaskRateLimit[];
  /** Labels its agent must have, names sorted; absent when it requires none. */
  readonly require?: Requirements;
  /** The submitter's trace context: kept, handed to its agent, never part of its hash (a retry may come from another span). */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

/** Human-readable reason for the first problem zod found, naming the field. */
export function describeIssues(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid input';
  const path = issue.path.length > 0 ? issue.path.join('.') : 'body';
  return `${path}: ${issue.message}`;
}

export const jsonByteLength = (json: string): number => Buffer.byteLength(json, 'utf8');

/** Validate a submission and normalise it. Throws `ValidationError` or `PayloadTooLargeError`. */
export function parseTaskSpec(input: unknown): TaskSpec {
  const parsed = taskSpecSchema.safeParse(input);
  if (!parsed.success) {
    throw new ValidationError(describeIssues(parsed.error), {
      context: { issues: parsed.error.issues.length },
    });
  }
  const spec = parsed.data;
  if (spec.payload === undefined) throw new ValidationError('payload: required');
  if (spec.backoffMaxSeconds < spec.backoffBaseSeconds) {
    throw new ValidationError('backoffMaxSeconds: must be at least backoffBaseSeconds');
  }
  if (spec.ttlSeconds !== undefined && spec.expiresAt !== undefined) {
    throw new ValidationError('expiresAt: give expiresAt or ttlSeconds, not both');
  }
  if (spec.onFailure && spec.onFailure.backoffMaxSeconds < spec.onFailure.backoffBaseSeconds) {
    throw new ValidationError('onFailure.backoffMaxSeconds: must be at least backoffBaseSeconds');
  }
  for (const [field, run] of [
    ['', spec],
    ['onFailure.', spec.onFailure],
  ] as const) {
    if (run?.maxTimeoutSeconds !== undefined && run.maxTimeoutSeconds < run.timeoutSeconds) {
      throw new ValidationError(
        `${field}maxTimeoutSeconds: must be at least timeoutSeconds (${run.timeoutSeconds})`,
      );
    }
  }
  if (spec.tracestate !== undefined && spec.traceparent === undefined) {
    throw new ValidationError('tracestate: only with traceparent');
  }
  if (spec.onDependencyFailure !== undefined && spec.dependsOn === undefined) {
    throw new ValidationError('onDependencyFailure: only with dependsOn');
  }
  const { debounce } = spec;
  if (debounce) {
    // The window is the task's delay, and its end moves: a delay, a fixed deadline or dependencies would each
    // say otherwise when it may be claimed. A deadline counted from the end of the window (`ttlSeconds`) moves with it.
    const other = [
      ['delaySeconds', spec.delaySeconds > 0],
      ['expiresAt', spec.expiresAt !== undefined],
      ['dependsOn', spec.dependsOn !== undefined],
    ].find(([, given]) => given);
    if (other) throw new ValidationError(`debounce: not with ${other[0]}`);
    if (debounce.maxWaitSeconds !== undefined && debounce.maxWaitSeconds < debounce.windowSeconds) {
      throw new ValidationError(
        `debounce.maxWaitSeconds: must be at least windowSeconds (${debounce.windowSeconds})`,
      );
    }
  }
  const onFailureJson = spec.onFailure === undefined ? undefined : JSON.stringify(spec.onFailure);
  if (onFailureJson !== undefined && jsonByteLength(onFailureJson) > LIMITS.onFailureBytes) {
    throw new PayloadTooLargeError(
      `onFailure is ${jsonByteLength(onFailureJson)} bytes; the limit is ${LIMITS.onFailureBytes}`,
      { context: { limit: LIMITS.onFailureBytes } },
    );
  }
  const payloadJson = JSON.stringify(spec.payload);
  const payloadBytes = jsonByteLength(payloadJson);
  if (payloadBytes > LIMITS.payloadBytes) {
    throw new PayloadTooLargeError(`payload is ${payloadBytes} bytes; the limit is ${LIMITS.payloadBytes}`, {
      context: { payloadBytes, limit: LIMITS.payloadBytes },
    });
  }
  return {
    queue: spec.queue,
    payloadJson,
    payloadBytes,
    priority: spec.priority,
    retryPolicy: {
      maxAttempts: spec.maxAttempts,
      backoffBaseSeconds: spec.backoffBaseSeconds,
      backoffMaxSeconds: spec.backoffMaxSeconds,
    },
    timeoutSeconds: spec.timeoutSeconds,
    ...(spec.maxTimeoutSeconds === undefined ? {} : { maxTimeoutSeconds: spec.maxTimeoutSeconds }),
    delaySeconds: spec.delaySeconds,
    ...(spec.idempotencyKey === undefined ? {} : { idempotencyKey: spec.idempotencyKey }),
    ...(spec.ttlSeconds === undefined ? {} : { expiry: { ttlSeconds: spec.ttlSeconds } }),
    ...(spec.expiresAt === undefined ? {} : { expiry: { at: Date.parse(spec.expiresAt) } }),
    ...(onFailureJson === undefined ? {} : { onFailureJson }),
    ...(spec.concurrencyKey === undefined ? {} : { concurrencyKey: spec.concurrencyKey }),
    ...(spec.maxSnoozes === undefined ? {} : { maxSnoozes: spec.maxSnoozes }),
    ...(spec.rateLimits === undefined
      ? {}
      : {
          rateLimits: spec.rateLimits.map((l) => ({
            name: l.name,
            units: l.units ?? 1,
            ...(l.key === undefined ? {} : { key: l.key }),
          })),
        }),
    ...(requiresAny(spec.require) ? { require: normaliseRequirements(spec.require) } : {}),
    ...(spec.traceparent === undefined ? {} : { traceparent: spec.traceparent }),
    ...(spec.traceparent === undefined || !spec.tracestate ? {} : { tracestate: spec.tracestate }),
    ...(spec.dependsOn === undefined
      ? {}
      : { dependsOn: spec.dependsOn, onDependencyFailure: spec.onDependencyFailure ?? 'cancel' }),
    ...(debounce === undefined
      ? {}
      : {
          debounce: {
            key: debounce.key,
            windowSeconds: debounce.windowSeconds,
            maxWaitSeconds: debounce.maxWaitSeconds ?? DEBOUNCE_LIMITS.maxWaitSeconds,
          },
        }),
  };
}

/** Serialise a JSON value and enforce a byte limit; `what` names it in the error. */
export function encodeBoundedJson(value: unknown, limit: number, what: string): string {
  const json = JSON.stringify(value ?? null);
  const bytes = jsonByteLength(json);
  if (bytes > limit) {
    throw new PayloadTooLargeError(`${what} is ${bytes} bytes; the limit is ${limit}`, {
      context: { bytes, limit },
    });
  }
  return json;
}
