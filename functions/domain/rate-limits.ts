/**
 * Named rate limits: capacity a fleet shares with the outside world (a provider's requests or tokens per minute, a
 * tenant's dollars per day), taken by the tasks that name them when they are granted, in units.
 *
 * Every limit counts in windows aligned to UTC, and a grant takes its units from the window open at the grant:
 * - **a rate** (`per: 'second' | 'minute'`): windows of `per × burst / limit`, each holding `burst` units (by default
 *   `limit`, so a window is the period). Over any stretch of whole windows at most `limit` units a period go, and no
 *   stretch of `t` sees more than `burst + limit × t / period` (for `t` a whole number of windows).
 * - **a budget** (`per: 'hour' | 'day'`): the hour or the day itself, from its start in UTC, holding `limit`.
 * A `perKey` limit keeps windows of its own for each key a task names (a tenant, an API key).
 *
 * Usage settles the estimate: what an agent reports when it ends an attempt (`usage`) replaces the units its grant
 * took. A budget's window is the grant's (late usage counts against the window it was granted in); a rate's is the
 * window open when the usage is reported, where it holds back (or makes room for) the grants to come.
 */
import { z } from 'zod';
import type * as Sdk from '#sdk/types';
import { accepts } from './wire-match';

export const RATE_PERIODS = ['second', 'minute', 'hour', 'day'] as const;
export type RatePeriod = (typeof RATE_PERIODS)[number];

export const PERIOD_MS: Readonly<Record<RatePeriod, number>> = {
  second: 1_000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
};

export const RATE_LIMIT_BOUNDS = {
  /** Limits a task may name. */
  perTask: 4,
  /** Limits one stack may define: they are kept in one item, which every claim of a limited task reads. */
  definitions: 200,
  /** The largest `limit`, `burst`, a task's `units` and reported usage. */
  units: 1e12,
  keyChars: 128,
  /** The shortest window of a rate: `per × burst / limit` must be at least this (a burst at least a tenth of a second's). */
  windowMs: 100,
} as const;

/** Letters, digits and `.` `_` `-` `:`, starting with a letter or digit: the name is a path segment and a key part. */
export const RATE_LIMIT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/** A key of a `perKey` limit: printable, no `#` (it ends the record's key, which it follows). */
export const RATE_LIMIT_KEY_PATTERN = /^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}#]+$/u;

export const rateLimitNameSchema = z
  .string()
  .regex(RATE_LIMIT_NAME_PATTERN, 'a rate limit name is 1 to 64 letters, digits, ".", "_", "-" or ":"');

const unitsSchema = z.number().positive().max(RATE_LIMIT_BOUNDS.units);

/** A limit's terms as an operator sets them (`POST /v1/rate-limits/{name}`) or the construct declares them. */
export const rateLimitTermsSchema = accepts<Sdk.RateLimitTerms>()(
  z.strictObject({
    /** Units a period: a rate's average, a budget's whole window. */
    limit: unitsSchema,
    per: z.enum(RATE_PERIODS),
    /** A rate's units at once (its window's capacity). Budgets have none. @default limit */
    burst: unitsSchema.optional(),
    /** Each key a task names has windows of its own. @default false */
    perKey: z.boolean().optional(),
  }),
);

export type RateLimitTerms = z.output<typeof rateLimitTermsSchema>;

/** A limit as the construct declares it: its terms and its name. */
export const declaredRateLimitSchema = z.strictObject({
  name: rateLimitNameSchema,
  ...rateLimitTermsSchema.shape,
});

export interface RateLimitDefinition extends RateLimitTerms {
  readonly name: string;
  /** When an operator last set it; absent for a limit as declared. */
  readonly updatedAt?: number;
}

/** What a task names: a limit, the units its attempt is expected to use, and the key of a `perKey` limit. */
export const taskRateLimitSchema = accepts<Sdk.TaskRateLimit>()(
  z.strictObject({
    name: rateLimitNameSchema,
    units: unitsSchema.optional(),
    key: z
      .string()
      .min(1)
      .max(RATE_LIMIT_BOUNDS.keyChars)
      .regex(RATE_LIMIT_KEY_PATTERN, 'a key of printable characters, without "#"')
      .optional(),
  }),
);

export const taskRateLimitsSchema = z
  .array(taskRateLimitSchema)
  .min(1)
  .max(RATE_LIMIT_BOUNDS.perTask)
  .refine((limits) => new Set(limits.map((l) => l.name)).size === limits.length, 'each limit once');

/** A task's limit as kept on the task: its units resolved. */
export interface TaskRateLimit {
  readonly name: string;
  readonly units: number;
  readonly key?: string;
}

/** Usage an agent reports as it ends an attempt: units by limit name. */
export const usageSchema = accepts<Sdk.RateUsage>()(
  z
    .record(rateLimitNameSchema, z.number().min(0).max(RATE_LIMIT_BOUNDS.units))
    .refine((usage) => Object.keys(usage).length <= RATE_LIMIT_BOUNDS.perTask, {
      error: `at most ${RATE_LIMIT_BOUNDS.perTask} limits`,
    }),
);

export type RateUsage = Readonly<Record<string, number>>;

/** What a grant took from one limit, kept on the task so that its usage settles the same window. */
export interface RateTaken {
  readonly name: string;
  readonly units: number;
  /** The window's start, in milliseconds since the epoch. */
  readonly window: number;
  readonly key?: string;
}

export const isBudget = (terms: Pick<RateLimitTerms, 'per'>): boolean =>
  terms.per === 'hour' || terms.per === 'day';

/** A limit's window: where it starts and ends, and the units it holds. */
export interface RateWindow {
  readonly start: number;
  readonly end: number;
  readonly capacity: number;
}

/** The window of `terms` open at `at`. */
export function windowAt(terms: RateLimitTerms, at: number): RateWindow {
  const period = PERIOD_MS[terms.per];
  const capacity = isBudget(terms) ? terms.limit : (terms.burst ?? terms.limit);
  const span = isBudget(terms) ? period : (period * capacity) / terms.limit;
  const start = Math.floor(Math.floor(at / span) * span);
  return { start, end: Math.ceil(start + span), capacity };
}

/** Why terms are inconsistent (a burst on a budget, a rate's window too short), or undefined. */
export function termsProblem(terms: RateLimitTerms): string | undefined {
  if (isBudget(terms) && terms.burst !== undefined)
    return 'burst: only a rate (per second or minute) has one';
  if (!isBudget(terms)) {
    const spanMs = (PERIOD_MS[terms.per] * (terms.burst ?? terms.limit)) / terms.limit;
    if (spanMs < RATE_LIMIT_BOUNDS.windowMs) {
      const least = (terms.limit * RATE_LIMIT_BOUNDS.windowMs) / PERIOD_MS[terms.per];
      return `burst: at least ${least} for a limit of ${terms.limit} a ${terms.per} (windows of at least ${RATE_LIMIT_BOUNDS.windowMs} ms)`;
    }
  }
  return undefined;
}

/**
 * Why a task's limits cannot be taken under these definitions, or undefined: a limit not defined, a key missing
 * or given where it means nothing, more units than a window holds.
 */
export function taskLimitsProblem(
  limits: readonly { name: string; units?: number; key?: string }[],
  definitions: ReadonlyMap<string, RateLimitDefinition>,
): string | undefined {
  for (const [i, limit] of limits.entries()) {
    const field = `rateLimits.${i}`;
    const definition = definitions.get(limit.name);
    if (!definition) return `${field}.name: no rate limit is named ${limit.name}`;
    if (definition.perKey && limit.key === undefined)
      return `${field}.key: ${limit.name} is per key; name one`;
    if (!definition.perKey && limit.key !== undefined) return `${field}.key: ${limit.name} is not per key`;
    const capacity = windowAt(definition, 0).capacity;
    if ((limit.units ?? 1) > capacity)
      return `${field}.units: at most ${capacity}, what one window of ${limit.name} holds`;
  }
  return undefined;
}

/** The units `usage` settles for each limit a grant took from: what was reported less what was taken. */
export function settlements(
  taken: readonly RateTaken[],
  usage: Readonly<Record<string, number>>,
): { taken: RateTaken; delta: number }[] {
  return taken.flatMap((t) => {
    const reported = usage[t.name];
    return reported === undefined || reported === t.units ? [] : [{ taken: t, delta: reported - t.units }];
  });
}
