/**
 * Per-queue controls, kept in the leases table as `queue#<name>`:
 * - pause: claims get nothing from a paused queue, while sweeps and retries go on;
 * - limits: at most N tasks of the queue leased at once across all agents, and at most R claims a second with a
 *   burst, enforced in `queue-limits.ts`.
 * Claims read the controls of the agent's queues, cached for a few seconds per process, so a busy agent does
 * not pay a read per claim for a pause it rarely sees.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Expression, updateExpression } from '#adapters/expression';
import { ValidationError } from '#domain/errors';
import { type QueueLimits, queueLimitsSchema } from '#domain/queue-limits';
import { describeIssues } from '#domain/task-spec';
import type { SchedulerContext } from './context';

export interface QueueControl {
  readonly queue: string;
  readonly paused: boolean;
  readonly limits: QueueLimits;
  readonly updatedAt?: number;
}

export const queueControlId = (queue: string) => `queue#${queue}`;
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

/** A queue's control as its item says, its limits defaulting to `defaults` when the item sets none. */
export function controlFromItem(
  queue: string,
  item: Record<string, unknown> | undefined,
  defaults: QueueLimits = {},
): QueueControl {
  const limits = queueLimitsSchema.safeParse(item?.limits ?? defaults);
  return {
    queue,
    paused: item?.paused === true,
    limits: limits.success ? limits.data : {},
    ...(typeof item?.updatedAt === 'number' ? { updatedAt: item.updatedAt } : {}),
  };
}

/** Sets fields of a queue's control item, creating it if needed, and leaves its other fields alone. */
async function updateControl(
  ctx: SchedulerContext,
  queue: string,
  fields: Record<string, unknown>,
): Promise<QueueControl> {
  if (!ctx.queues.directory.has(queue)) throw new ValidationError(`queue ${queue} does not exist`);
  const e = new Expression();
  const output = await ctx.sessions.doc.send(
    new UpdateCommand({
      TableName: ctx.sessions.tableName,
      Key: { leaseId: queueControlId(queue) },
      UpdateExpression: updateExpression({
        set: Object.entries({ kind: 'queue', queue, ...fields, updatedAt: ctx.now() }).map(
          ([name, value]) => `${e.n(name)} = ${e.v(value)}`,
        ),
      }),
      ReturnValues: 'ALL_NEW',
      ...e.attributes(),
    }),
  );
  const control = controlFromItem(queue, output.Attributes, ctx.settings.queueLimits[queue]);
  cacheOf(ctx).set(queue, { control, readAt: ctx.now() });
  return control;
}

export const setQueuePaused = (ctx: SchedulerContext, queue: string, paused: boolean) =>
  updateControl(ctx, queue, { paused });

export function setQueueLimits(ctx: SchedulerContext, queue: string, input: unknown): Promise<QueueControl> {
  // Limits are removed with `{}`, never by a body that is missing or `null`: a request cut short clears nothing.
  const parsed = queueLimitsSchema.safeParse(input);
  if (!parsed.success) throw new ValidationError(describeIssues(parsed.error));
  return updateControl(ctx, queue, { limits: parsed.data });
}

export async function getQueueControl(
  ctx: SchedulerContext,
  queue: string,
  fresh = false,
): Promise<QueueControl> {
  const cached = cacheOf(ctx).get(queue);
  if (!fresh && cached && ctx.now() - cached.readAt < CACHE_MS) return cached.control;
  const output = await ctx.sessions.doc.send(
    new GetCommand({
      TableName: ctx.sessions.tableName,
      Key: { leaseId: queueControlId(queue) },
      ConsistentRead: fresh,
    }),
  );
  const control = controlFromItem(queue, output.Item, ctx.settings.queueLimits[queue]);
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
  const items = await ctx.sessions.scanKind('queue');
  const controls = new Map(
    Object.entries(ctx.settings.queueLimits).map(([queue, limits]) => [
      queue,
      controlFromItem(queue, undefined, limits),
    ]),
  );
  for (const item of items) {
    const queue = String(item.queue);
    controls.set(queue, controlFromItem(queue, item, ctx.settings.queueLimits[queue]));
  }
  return controls;
}
