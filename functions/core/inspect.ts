/**
 * What operators look at: tasks by queue and status, and per-queue figures.
 *
 * Listing reads the `listed` index newest first (every shard of the queues listed, merged by time; see
 * `NewestFirst`), then the page's tasks from the table in one consistent `BatchGetItem`. A time window is served by
 * the index: `createdBefore` is where the reading starts, `createdAfter` where it ends. A status, a
 * concurrency key or `attention` is a filter on the tasks read, so a page of a rare status may take a few rounds; a page stops after `LIST_ROUNDS` rounds and
 * says where to go on. Queue figures walk the `due` index, which holds only open (queued or leased) tasks, up to
 * a bound.
 *
 * `attention: true` (the tasks the starvation ladder marked) has no index of its own either: marks are rare, and a
 * sparse index would cost every mark and every clear a write to it. A page reads as any filtered page does: at most
 * `LIST_ROUNDS` rounds, each `limit` list entries (queries of the queues' list partitions, newest first) and their
 * state items in one consistent `BatchGetItem`, so at most 1,000 state items at `limit=100` (a read unit each, as an
 * item under 4 KB read consistently is billed), and it keeps the marked ones. A short or empty page with a
 * `nextCursor` means the rounds ran out before the list did, not that nothing older is marked; a queue or a time
 * window narrows what is read (a status does not). Nothing scans the table.
 */
import { z } from 'zod';
import { ValidationError } from '#domain/errors';
import { TASK_ID_PATTERN } from '#domain/ids';
import { CONCURRENCY_KEY_CHARS } from '#domain/lanes';
import { PRIORITIES, type Priority } from '#domain/priority';
import { enforcedLimits, isCapped, type QueueLimits } from '#domain/queue-limits';
import type { Task } from '#domain/task';
import { printableNameSchema } from '#domain/task-spec';
import { isTaskStatus, TASK_STATUSES } from '#domain/task-status';
import type { SchedulerContext } from './context';
import { type ListPosition, listedBefore, NewestFirst } from './newest-first';
import { listQueueControls } from './queue-controls';

export interface TaskPage {
  readonly tasks: Task[];
  readonly nextCursor?: string;
}

/** Most rounds of `limit` tasks one page looks at when a status filter leaves it short. */
const LIST_ROUNDS = 10;

const encodeCursor = (position: ListPosition) =>
  Buffer.from(JSON.stringify({ createdAt: position.createdAt, taskId: position.taskId })).toString(
    'base64url',
  );

function decodeCursor(cursor: string): ListPosition {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (typeof value === 'object' && value !== null) {
      const { createdAt, taskId } = value as { createdAt?: unknown; taskId?: unknown };
      if (
        Number.isSafeInteger(createdAt) &&
        (createdAt as number) >= 0 &&
        typeof taskId === 'string' &&
        TASK_ID_PATTERN.test(taskId) &&
        // base64url decoding skips what is not in its alphabet: only the exact text this API wrote is a cursor.
        encodeCursor({ createdAt: createdAt as number, taskId }) === cursor
      ) {
        return { createdAt: createdAt as number, taskId };
      }
    }
  } catch {
    // fall through
  }
  throw new ValidationError(
    'cursor: not a cursor this API returned (pass the nextCursor of a page as it is)',
  );
}

/** A time bound of a list: ISO 8601 with its offset, as the API writes times. */
function instantOf(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const at = isoInstant.safeParse(value).success ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(at)) throw new ValidationError(`${name}: an ISO 8601 time with its offset`);
  return at;
}

const isoInstant = z.iso.datetime({ offset: true });
const concurrencyKeySchema = printableNameSchema(CONCURRENCY_KEY_CHARS);

export async function listTasks(
  ctx: SchedulerContext,
  filter: {
    queue?: string;
    status?: string;
    limit?: number;
    cursor?: string;
    /** Only tasks created at or after this time. */
    createdAfter?: string;
    /** Only tasks created before this time. */
    createdBefore?: string;
    /** Only the tasks of this concurrency key: a filter on the tasks read, as a status is. */
    concurrencyKey?: string;
    /** `true`: only the tasks marked as needing attention, a filter on the tasks read too; `false`: no filter. */
    attention?: boolean;
  },
): Promise<TaskPage> {
  const limit = filter.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw new ValidationError('limit: an integer from 1 to 100');
  const { status } = filter;
  if (status !== undefined && !isTaskStatus(status)) {
    throw new ValidationError(`status: one of ${TASK_STATUSES.join(', ')}`);
  }
  if (filter.queue !== undefined && !ctx.queues.directory.has(filter.queue)) {
    throw new ValidationError(`queue: ${filter.queue.slice(0, 64)} does not exist`);
  }
  const { concurrencyKey } = filter;
  if (concurrencyKey !== undefined && !concurrencyKeySchema.safeParse(concurrencyKey).success)
    throw new ValidationError(`concurrencyKey: 1 to ${CONCURRENCY_KEY_CHARS} printable characters`);
  const attention = filter.attention === true;
  const filtered = status !== undefined || concurrencyKey !== undefined || attention;
  const createdAfter = instantOf('createdAfter', filter.createdAfter);
  const createdBefore = instantOf('createdBefore', filter.createdBefore);
  // Before a time: the list starts where a task of that millisecond with the least id would be.
  const cursor = filter.cursor === undefined ? undefined : decodeCursor(filter.cursor);
  const bound = createdBefore === undefined ? undefined : { createdAt: createdBefore, taskId: '' };
  const after = cursor && bound ? (listedBefore(cursor, bound) ? bound : cursor) : (cursor ?? bound);
  const queues = filter.queue === undefined ? ctx.queues.directory.names() : [filter.queue];
  const listed = new NewestFirst(
    queues.flatMap((queue) => ctx.tasks.listedShards(queue)),
    (shard, from) => ctx.tasks.queryListed(shard, from),
    after,
  );
  const tasks: Task[] = [];
  let last: ListPosition | undefined;
  let cut = false;
  /** The list reached tasks older than `createdAfter`: newest first, nothing after them is wanted. */
  let ended = false;
  for (let round = 0; round < LIST_ROUNDS && tasks.length < limit && !cut && !ended; round++) {
    // Without a filter every task read is listed: read no more than the page needs.
    const positions = await listed.take(filtered ? limit : limit - tasks.length);
    if (positions.length === 0) break;
    const found = await ctx.tasks.getMany([...new Set(positions.map((p) => p.taskId))]);
    for (const [i, position] of positions.entries()) {
      if (createdAfter !== undefined && position.createdAt < createdAfter) {
        ended = true;
        break;
      }
      last = position;
      // Gone from the table since the index was read (expired): nothing to list. A list entry of another creation
      // than its task's is the payload item of a submission retried after its first had landed (layout 2): the task
      // is listed by the entry of its first, once.
      const task = found.get(position.taskId);
      if (
        task &&
        task.createdAt === position.createdAt &&
        // One idempotency key twice in one batch, for two specifications: two entries of one creation.
        !tasks.some((t) => t.taskId === task.taskId) &&
        (status === undefined || task.status === status) &&
        (concurrencyKey === undefined || task.concurrencyKey === concurrencyKey) &&
        (!attention || task.needsAttention === true)
      )
        tasks.push(task);
      if (tasks.length === limit) {
        cut = i < positions.length - 1;
        break;
      }
    }
  }
  // A full page that ended at the edge of the window: one look past it saves the caller an empty page.
  let beyond = false;
  if (createdAfter !== undefined && !ended && !cut && tasks.length === limit && listed.hasMore()) {
    const [next] = await listed.take(1);
    if (next === undefined || next.createdAt < createdAfter) ended = true;
    else beyond = true;
  }
  const more = !ended && (cut || beyond || listed.hasMore());
  return {
    tasks,
    ...(more && last ? { nextCursor: encodeCursor(last) } : {}),
  };
}

export interface QueueStats {
  readonly name: string;
  readonly paused: boolean;
  readonly limits: QueueLimits;
  /** Present when a limit set before the bound is above it: the limits as claims enforce them. */
  readonly enforcedLimits?: QueueLimits;
  /** Claimable tasks waiting, by priority (DynamoDB's count, not SQS's hints). */
  readonly depth: Record<Priority, number>;
  readonly running: number;
  /** Age of the oldest queued task, 0 when none. */
  readonly oldestAgeSeconds: number;
  /** True when the walk stopped at its bound: the figures are lower bounds. */
  readonly truncated: boolean;
}

const OPEN_TASK_WALK_LIMIT = 5_000;

export async function queueStats(ctx: SchedulerContext): Promise<QueueStats[]> {
  const now = ctx.now();
  const controls = await listQueueControls(ctx);
  const stats = new Map(
    ctx.queues.directory.names().map((name) => [
      name,
      {
        name,
        paused: controls.get(name)?.paused ?? false,
        limits: controls.get(name)?.limits ?? {},
        depth: Object.fromEntries(PRIORITIES.map((p) => [p, 0])) as Record<Priority, number>,
        running: 0,
        oldest: now,
      },
    ]),
  );
  let seen = 0;
  const count = (task: Task) => {
    const entry = stats.get(task.queue);
    if (!entry) return;
    if (task.status === 'queued') {
      entry.depth[task.priority]++;
      entry.oldest = Math.min(entry.oldest, task.createdAt);
    } else if (task.status === 'leased') entry.running++;
  };
  for (const shard of ctx.tasks.dueShards) {
    const ids = await ctx.tasks.queryDue(shard, Number.MAX_SAFE_INTEGER, OPEN_TASK_WALK_LIMIT - seen);
    seen += ids.length;
    for (const task of (await ctx.tasks.getMany(ids, { consistent: false })).values()) count(task);
    if (seen >= OPEN_TASK_WALK_LIMIT) break;
  }
  // The open tasks not in the due index: new tasks of layout 2 that the list walk has not passed yet.
  for (const queue of stats.keys()) {
    if (seen >= OPEN_TASK_WALK_LIMIT) break;
    const places = await ctx.queueControls.readWalk(queue);
    for (const partition of ctx.tasks.walkPartitions(queue)) {
      const after = places[partition];
      const { entries } = await ctx.tasks.queryWalk(partition, {
        ...(after === undefined ? {} : { after }),
        limit: OPEN_TASK_WALK_LIMIT - seen,
      });
      seen += entries.length;
      if (entries.length === 0) continue;
      const tasks = await ctx.tasks.getMany([...new Set(entries.map((e) => e.taskId))], {
        consistent: false,
      });
      for (const entry of entries) {
        const task = tasks.get(entry.taskId);
        if (task && task.createdAt === entry.createdAt && !task.inDueIndex) count(task);
      }
      if (seen >= OPEN_TASK_WALK_LIMIT) break;
    }
  }
  return [...stats.values()].map((s) => ({
    name: s.name,
    paused: s.paused,
    limits: s.limits,
    ...(isCapped(s.limits) ? { enforcedLimits: enforcedLimits(s.limits) } : {}),
    depth: s.depth,
    running: s.running,
    oldestAgeSeconds: Math.max(0, Math.round((now - s.oldest) / 1_000)),
    truncated: seen >= OPEN_TASK_WALK_LIMIT,
  }));
}

/** A task's payload as submitted, or `gone`: one in S3 is deleted when its task succeeds, any past its retention. */
export async function readTaskPayload(
  ctx: SchedulerContext,
  task: Task,
): Promise<{ readonly payload: unknown } | { readonly gone: true }> {
  const json = (await ctx.payloads.getPayloads([task])).get(task.taskId);
  return json === undefined ? { gone: true } : { payload: JSON.parse(json) as unknown };
}
