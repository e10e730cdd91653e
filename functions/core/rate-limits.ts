/**
 * Named rate limits (`#domain/rate-limits`): which are in force, what a grant takes from them and what usage
 * settles, and what operators see of them.
 *
 * Design, and what it costs: a task that names limits is granted in **one transaction** with the units it takes
 * (`TaskStore.grant`): each window's count grows on condition that it stays within the window's capacity, so parallel
 * claimers never take more than a window holds, and a grant never lands without its units nor its units without
 * the grant (a claim that dies between the two leaves nothing behind). A transaction bills twice: a grant of a
 * task naming one limit writes two items at two write units each (4, against 1 for a task naming none), plus a read
 * unit to read the task as granted; and two claims writing one window at once conflict (the loser's task stays
 * queued, its hint back at once). A window is one item, written by every grant that takes from it: DynamoDB takes
 * about 1,000 write units a second on one item, so one limit (one key of a `perKey` limit) grants at most about 500
 * tasks a second. Usage settles in the transaction of the `complete` or `fail` that reports it (two write units
 * more a limit settled), sent with a token that makes it once however often it is sent: the windows' counts are
 * exactly the units taken and settled.
 *
 * A task whose limit has no room stays queued, its attempt unused: its hint is hidden until the window ends (and
 * a timed wake sent for then), or, past what SQS can hold a message back (15 minutes), the hint goes and the
 * supervisor sends a new one when the window has rolled (the due index).
 */
import { errorName, ValidationError } from '#domain/errors';
import {
  isBudget,
  PERIOD_MS,
  RATE_LIMIT_BOUNDS,
  RATE_LIMIT_NAME_PATTERN,
  type RateLimitDefinition,
  type RateWindow,
  rateLimitTermsSchema,
  settlements,
  type TaskRateLimit,
  taskLimitsProblem,
  termsProblem,
  windowAt,
} from '#domain/rate-limits';
import type { Task } from '#domain/task';
import { describeIssues } from '#domain/task-spec';
import { eachConcurrently } from './concurrently';
import type { SchedulerContext } from './context';
import { emit } from './events';
import type { WindowSettlement, WindowTake } from './ports/task-store';
import { wakeFor } from './push';

/** A limit in force, and where its terms come from. */
export type RateLimitInForce = RateLimitDefinition & { readonly source: 'set' | 'declared' };

const CACHE_MS = 2_000;
const cache = new WeakMap<SchedulerContext, { limits: Map<string, RateLimitInForce>; readAt: number }>();

/**
 * The limits in force: those operators set, and those the construct declares under names no operator set. Claims
 * read them cached for a couple of seconds per process; `fresh` reads them as they are.
 */
export async function rateLimitsInForce(
  ctx: SchedulerContext,
  fresh = false,
): Promise<Map<string, RateLimitInForce>> {
  const cached = cache.get(ctx);
  if (!fresh && cached && ctx.now() - cached.readAt < CACHE_MS) return cached.limits;
  const stored = await ctx.rateLimits.definitions({ consistent: fresh });
  const limits = new Map<string, RateLimitInForce>();
  for (const declared of ctx.settings.rateLimits)
    limits.set(declared.name, { ...declared, source: 'declared' });
  for (const [name, set] of stored) limits.set(name, { ...set, source: 'set' });
  cache.set(ctx, { limits, readAt: ctx.now() });
  return limits;
}

/** Sets a limit's terms (a new limit, or new terms for one in force, declared ones included). */
export async function setRateLimit(
  ctx: SchedulerContext,
  name: string,
  input: unknown,
): Promise<RateLimitUse> {
  if (!RATE_LIMIT_NAME_PATTERN.test(name)) {
    throw new ValidationError(
      'name: 1 to 64 letters, digits, ".", "_", "-" or ":", starting with a letter or digit',
    );
  }
  const parsed = rateLimitTermsSchema.safeParse(input);
  if (!parsed.success) throw new ValidationError(describeIssues(parsed.error));
  const problem = termsProblem(parsed.data);
  if (problem) throw new ValidationError(problem);
  const definition: RateLimitDefinition = { name, ...parsed.data, updatedAt: ctx.now() };
  if (!(await ctx.rateLimits.setDefinition(definition, RATE_LIMIT_BOUNDS.definitions))) {
    throw new ValidationError(
      `name: at most ${RATE_LIMIT_BOUNDS.definitions} rate limits may be set; set new terms on one of them instead`,
    );
  }
  cache.delete(ctx);
  await sendWaitingAgain(ctx, name);
  return rateLimitUse(ctx, { ...definition, source: 'set' }, { keys: true });
}

/** Tasks a call of `setRateLimit` sends again at most: the rest wait for their window's end, as before. */
export const RESENT_ON_SET = 1_000;

/**
 * New terms may make room (a budget raised): the tasks recorded as waiting for the limit get their hints again at
 * once, and their queues' listening agents a wake. A task granted meanwhile makes a stale hint, which a claim drops.
 */
async function sendWaitingAgain(ctx: SchedulerContext, name: string): Promise<void> {
  try {
    const waiting = await ctx.rateLimits.waiting(name, RESENT_ON_SET);
    if (waiting.length === 0) return;
    await eachConcurrently(waiting, 10, (task) =>
      ctx.queues.send(task.queue, task.priority, { taskId: task.taskId, leaseEpoch: task.leaseEpoch }, 0),
    );
    await ctx.rateLimits.forgetWaiting(
      name,
      waiting.map((task) => task.taskId),
    );
    await wakeFor(ctx, waiting, 'resent');
  } catch (error) {
    ctx.log.warn('could not send again the tasks waiting for a rate limit', {
      rateLimit: name,
      error: errorName(error),
    });
  }
}

/** Epoch seconds at which a window's record may go: a day after a rate's window, a week after a budget's. */
const purgeAtOf = (terms: Pick<RateLimitDefinition, 'per'>, end: number): number =>
  Math.ceil(end / 1_000) + (isBudget(terms) ? 7 : 1) * 86_400;

/**
 * What a grant of `task` at `now` takes: from each limit it names that is in force, its units from the window open
 * now. A limit no longer in force is passed over (the task is not held back by a name nobody defines).
 */
export async function takesFor(
  ctx: SchedulerContext,
  task: Pick<Task, 'rateLimits'>,
  now: number,
): Promise<WindowTake[]> {
  let limits = await rateLimitsInForce(ctx);
  // A name this process's copy does not know may have been set a moment ago: read again before passing it over.
  if ((task.rateLimits ?? []).some((limit) => !limits.has(limit.name)))
    limits = await rateLimitsInForce(ctx, true);
  return (task.rateLimits ?? []).flatMap((limit) => {
    const terms = limits.get(limit.name);
    if (!terms) return [];
    const window = windowAt(terms, now);
    return [
      {
        taken: {
          name: limit.name,
          units: limit.units,
          window: window.start,
          ...(terms.perKey && limit.key !== undefined ? { key: limit.key } : {}),
        },
        capacity: window.capacity,
        end: window.end,
        purgeAt: purgeAtOf(terms, window.end),
      },
    ];
  });
}

/**
 * What `usage` changes, for the limits the attempt's grant took from: a budget's count in the window of the grant,
 * a rate's in the window open now (where it holds back, or makes room for, the grants to come).
 */
export function settlementsFor(
  limits: ReadonlyMap<string, RateLimitInForce>,
  task: Pick<Task, 'rateTaken'>,
  usage: Readonly<Record<string, number>> | undefined,
  now: number,
): WindowSettlement[] {
  if (!usage || !task.rateTaken?.length) return [];
  const changes = settlements(task.rateTaken, usage);
  if (changes.length === 0) return [];
  return changes.map(({ taken, delta }) => {
    const terms = limits.get(taken.name);
    const window: RateWindow =
      terms && !isBudget(terms)
        ? windowAt(terms, now)
        : terms
          ? windowAt(terms, taken.window)
          : { start: taken.window, end: taken.window + PERIOD_MS.day, capacity: 0 };
    return {
      name: taken.name,
      ...(taken.key === undefined ? {} : { key: taken.key }),
      window: window.start,
      end: window.end,
      purgeAt: purgeAtOf(terms ?? { per: 'day' }, window.end),
      delta,
    };
  });
}

/** A rate's saturation is told at most this often (its windows may fill every second). */
const SATURATION_EVENT_EVERY_MS = 60_000;

/**
 * A grant found no room in `take`'s window: `budget.exhausted` for a budget, once a window; `rateLimit.saturated`
 * for a rate, at most once a minute; each for the limit, or the key of a `perKey` limit. One conditional write a
 * refusal (refusals come at most once a window for each task waiting).
 */
export async function noteSaturation(ctx: SchedulerContext, take: WindowTake, now: number): Promise<void> {
  const terms = (await rateLimitsInForce(ctx)).get(take.taken.name);
  if (!terms) return;
  const budget = isBudget(terms);
  const { name, key, window } = take.taken;
  try {
    const first = await ctx.rateLimits.noteSaturation(name, key ?? '', {
      at: budget ? window : now,
      since: budget ? window : now - SATURATION_EVENT_EVERY_MS,
      purgeAt: take.purgeAt,
    });
    if (!first) return;
    await emit(ctx, [
      {
        type: budget ? 'budget.exhausted' : 'rateLimit.saturated',
        fields: {
          data: {
            rateLimit: name,
            ...(key === undefined ? {} : { key }),
            window: new Date(window).toISOString(),
            windowEnd: new Date(take.end).toISOString(),
            capacity: take.capacity,
          },
        },
      },
    ]);
  } catch (error) {
    ctx.log.warn('could not note a rate limit without room', { rateLimit: name, error: errorName(error) });
  }
}

/** Whether a submission's limits can be taken: each in force, a key where it is per key, units within a window. */
export async function checkTaskRateLimits(
  ctx: SchedulerContext,
  limits: readonly TaskRateLimit[] | undefined,
): Promise<void> {
  if (!limits?.length) return;
  if (ctx.settings.taskLayout < 4) {
    throw new ValidationError(
      'rateLimits: need taskLayout 4 (this stack runs an earlier layout for an upgrade)',
    );
  }
  // A limit set a moment ago in another process may not be in this one's copy yet: a refusal is read again.
  const problem =
    taskLimitsProblem(limits, await rateLimitsInForce(ctx)) &&
    taskLimitsProblem(limits, await rateLimitsInForce(ctx, true));
  if (problem) throw new ValidationError(problem);
}

/** A limit's window open now, with its use: one key's (or the limit's), or the keys that used it most. */
export interface RateLimitUse {
  readonly limit: RateLimitInForce;
  readonly window: RateWindow;
  /** For a limit not per key: the units taken and settled in the window. */
  readonly used?: number;
  /** For a `perKey` limit, when asked for: the keys that took units in the window, most used first. */
  readonly keys?: readonly { readonly key: string; readonly used: number }[];
}

/** Most keys a look at a `perKey` limit's window lists. */
export const KEYS_LISTED = 100;

/** A limit's use now; `keys`: list a `perKey` limit's keys (one query of its window). */
export async function rateLimitUse(
  ctx: SchedulerContext,
  limit: RateLimitInForce,
  { keys = false }: { keys?: boolean } = {},
): Promise<RateLimitUse> {
  const window = windowAt(limit, ctx.now());
  if (limit.perKey && !keys) return { limit, window };
  const use = await ctx.rateLimits.windowUse(limit.name, window.start, limit.perKey ? 1_000 : 1);
  if (!limit.perKey) return { limit, window, used: use.find((u) => u.key === '')?.used ?? 0 };
  const listed = use
    .filter((u) => u.key !== '')
    .sort((a, b) => b.used - a.used)
    .slice(0, KEYS_LISTED);
  return { limit, window, keys: listed };
}

/** Every limit in force, with its use now (one query of its window each; a `perKey` limit's keys are not listed). */
export async function listRateLimits(ctx: SchedulerContext): Promise<RateLimitUse[]> {
  const limits = [...(await rateLimitsInForce(ctx, true)).values()].sort((a, b) =>
    a.name.localeCompare(b.name),
  );
  return Promise.all(limits.map((limit) => rateLimitUse(ctx, limit)));
}

/** One limit, with its use now (a `perKey` limit's keys listed); undefined when none is in force by that name. */
export async function getRateLimit(ctx: SchedulerContext, name: string): Promise<RateLimitUse | undefined> {
  const limit = (await rateLimitsInForce(ctx, true)).get(name);
  return limit && rateLimitUse(ctx, limit, { keys: true });
}
