/**
 * Per-queue controls, kept in the leases table as `queue#<name>`: an operator pauses a queue and claims get
 * nothing from it, while sweeps and retries go on. Claims read the controls of the agent's queues, cached for a
 * few seconds per process so a busy agent does not pay a read per claim.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ValidationError } from '#domain/errors';
import type { SchedulerContext } from './context';

export interface QueueControl {
  readonly queue: string;
  readonly paused: boolean;
  readonly updatedAt?: number;
}

const controlId = (queue: string) => `queue#${queue}`;
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

export async function setQueuePaused(
  ctx: SchedulerContext,
  queue: string,
  paused: boolean,
): Promise<QueueControl> {
  if (!ctx.queues.directory.has(queue)) throw new ValidationError(`queue ${queue} does not exist`);
  const control: QueueControl = { queue, paused, updatedAt: ctx.now() };
  await ctx.sessions.doc.send(
    new PutCommand({
      TableName: ctx.sessions.tableName,
      Item: { leaseId: controlId(queue), kind: 'queue', ...control },
    }),
  );
  cacheOf(ctx).set(queue, { control, readAt: ctx.now() });
  return control;
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
      Key: { leaseId: controlId(queue) },
      ConsistentRead: fresh,
    }),
  );
  const control: QueueControl = { queue, paused: output.Item?.paused === true };
  cacheOf(ctx).set(queue, { control, readAt: ctx.now() });
  return control;
}

/** The queues of `queues` that are not paused. */
export async function unpausedQueues(ctx: SchedulerContext, queues: readonly string[]): Promise<string[]> {
  const controls = await Promise.all(queues.map((q) => getQueueControl(ctx, q)));
  return controls.filter((c) => !c.paused).map((c) => c.queue);
}

/** Every queue's control, for the operator view. */
export async function listQueueControls(ctx: SchedulerContext): Promise<Map<string, QueueControl>> {
  const items = await ctx.sessions.scanKind('queue');
  return new Map(
    items.map((item) => [String(item.queue), { queue: String(item.queue), paused: item.paused === true }]),
  );
}
