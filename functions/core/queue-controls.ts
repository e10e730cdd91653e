/**
 * Per-queue controls, one record per queue:
 * - pause: claims get nothing from a paused queue, while sweeps and retries go on;
 * - limits: at most N tasks of the queue leased at once across all agents, and at most R claims a second with a
 *   burst, enforced in `queue-limits.ts`.
 * Claims read the controls of the agent's queues, cached for a few seconds per process, so a busy agent does
 * not pay a read per claim for a pause it rarely sees.
 *
 * And the pause of the whole scheduler (`scheduler-control.ts`): no queue gives anything to claims, and no agent is
 * woken, while sweeps, take-backs and schedule fires go on.
 */
import { ValidationError } from '#domain/errors';
import { type QueueLimits, queueLimitsSchema, storedQueueLimitsSchema } from '#domain/queue-limits';
import { describeIssues } from '#domain/task-spec';
import type { SchedulerContext } from './context';
import type { StoredQueueControl } from './ports/queue-control-store';
import { wake } from './push';
import { type SchedulerControl, writeSchedulerPaused } from './scheduler-control';

export interface QueueControl {
  readonly queue: string;
  readonly paused: boolean;
  readonly limits: QueueLimits;
  readonly updatedAt?: number;
}

const CACHE_MS = 2_000;
const cache = new WeakMap<SchedulerContext, Map<string, { control: QueueControl; readAt: number }>>();

function cacheOf(ctx: SchedulerContext) {
  let entries = cache.get(ctx);
  if (!entries) {
    entries = new Map();
    cache.set(ctx, entries);
  }
  return entries;
}

/** A queue's control as stored, its limits defaulting to the queue's declared ones when the record sets none. */
function controlOf(
  ctx: SchedulerContext,
  queue: string,
  stored: StoredQueueControl | undefined,
): QueueControl {
  return {
    queue,
    paused: stored?.paused === true,
    limits: stored?.limits ?? declaredLimits(ctx.settings.queueLimits[queue]),
    ...(stored?.updatedAt === undefined ? {} : { updatedAt: stored.updatedAt }),
  };
}

function declaredLimits(limits: QueueLimits = {}): QueueLimits {
  const parsed = storedQueueLimitsSchema.safeParse(limits);
  return parsed.success ? parsed.data : {};
}

/** Changes a queue's control through `write`, and keeps what it returns as the cached control. */
async function updateControl(
  ctx: SchedulerContext,
  queue: string,
  write: (now: number) => Promise<StoredQueueControl>,
): Promise<QueueControl> {
  if (!ctx.queues.directory.has(queue)) throw new ValidationError(`queue ${queue} does not exist`);
  const control = controlOf(ctx, queue, await write(ctx.now()));
  cacheOf(ctx).set(queue, { control, readAt: ctx.now() });
  return control;
}

/** Pauses or resumes a queue; resuming wakes the queue's idle agents, since its waiting work is claimable again. */
export async function setQueuePaused(
  ctx: SchedulerContext,
  queue: string,
  paused: boolean,
): Promise<QueueControl> {
  const control = await updateControl(ctx, queue, (now) => ctx.queueControls.setPaused(queue, paused, now));
  if (!paused) await wake(ctx, queue, { reason: 'resumed', count: Number.POSITIVE_INFINITY });
  return control;
}

/**
 * Pauses or resumes the whole scheduler. Resuming wakes the idle agents of every queue not paused on its own, as
 * resuming a queue wakes its own: the work that queued up meanwhile is claimable again, and no wake went out for it.
 * The queues are woken one after another: an agent woken for one is no longer idle in its others, so an agent of
 * several queues is woken once.
 */
export async function setSchedulerPaused(ctx: SchedulerContext, paused: boolean): Promise<SchedulerControl> {
  const control = await writeSchedulerPaused(ctx, paused);
  if (!paused) {
    const queues = ctx.queues.directory.names();
    // A wake is a hint: a queue whose control cannot be read now is woken all the same.
    const own = await Promise.all(queues.map((queue) => getQueueControl(ctx, queue).catch(() => undefined)));
    for (const [n, queue] of queues.entries()) {
      if (own[n]?.paused) continue;
      await wake(ctx, queue, { reason: 'resumed', count: Number.POSITIVE_INFINITY });
    }
  }
  return control;
}

export async function setQueueLimits(
  ctx: SchedulerContext,
  queue: string,
  input: unknown,
): Promise<QueueControl> {
  // Limits are removed with `{}`, never by a body that is missing or `null`: a request cut short clears nothing.
  const parsed = queueLimitsSchema.safeParse(input);
  if (!parsed.success) throw new ValidationError(describeIssues(parsed.error));
  return updateControl(ctx, queue, (now) => ctx.queueControls.setLimits(queue, parsed.data, now));
}

export async function getQueueControl(
  ctx: SchedulerContext,
  queue: string,
  fresh = false,
): Promise<QueueControl> {
  const cached = cacheOf(ctx).get(queue);
  if (!fresh && cached && ctx.now() - cached.readAt < CACHE_MS) return cached.control;
  const control = controlOf(ctx, queue, await ctx.queueControls.get(queue, { consistent: fresh }));
  cacheOf(ctx).set(queue, { control, readAt: ctx.now() });
  return control;
}

/** The controls of the queues that are not paused. */
export async function unpausedQueues(
  ctx: SchedulerContext,
  queues: readonly string[],
): Promise<QueueControl[]> {
  const controls = await Promise.all(queues.map((q) => getQueueControl(ctx, q)));
  return controls.filter((c) => !c.paused);
}

/** Every queue's control, for the operator view. */
export async function listQueueControls(ctx: SchedulerContext): Promise<Map<string, QueueControl>> {
  const stored = await ctx.queueControls.list();
  const controls = new Map(
    Object.keys(ctx.settings.queueLimits).map((queue) => [queue, controlOf(ctx, queue, undefined)]),
  );
  for (const control of stored) controls.set(control.queue, controlOf(ctx, control.queue, control));
  return controls;
}
