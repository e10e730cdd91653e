/**
 * What operators look at: tasks by queue and status, and per-queue figures.
 *
 * Listing scans the state items (a page at a time, resumable with a cursor): operators list rarely, and an
 * index kept for it would cost a write on every transition of every task. Queue figures walk the `due` index,
 * which holds only open (queued or leased) tasks, up to a bound.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { taskFromItem } from '#adapters/task-table';
import { ValidationError } from '#domain/errors';
import { TASK_ID_PATTERN } from '#domain/ids';
import { PRIORITIES, type Priority } from '#domain/priority';
import type { Task } from '#domain/task';
import { isTaskStatus, type TaskStatus } from '#domain/task-status';
import { allDueShards, type SchedulerContext } from './context';
import { listQueueControls, type QueueLimits } from './queue-controls';

export interface TaskPage {
  readonly tasks: Task[];
  readonly nextCursor?: string;
}

const encodeCursor = (key: Record<string, unknown>) => Buffer.from(JSON.stringify(key)).toString('base64url');

function decodeCursor(cursor: string): Record<string, unknown> {
  try {
    const key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (
      typeof key === 'object' &&
      key !== null &&
      // Only a key this API could have returned reaches DynamoDB: an empty or over-long part is its error (500).
      TASK_ID_PATTERN.test(String((key as { taskId?: unknown }).taskId)) &&
      (key as { part?: unknown }).part === 'state' &&
      Object.keys(key).length === 2 &&
      // base64url decoding skips what is not in its alphabet: only the exact text this API wrote is a cursor.
      encodeCursor(key as Record<string, unknown>) === cursor
    ) {
      return key as Record<string, unknown>;
    }
  } catch {
    // fall through
  }
  throw new ValidationError('cursor: not a cursor this API returned');
}

export async function listTasks(
  ctx: SchedulerContext,
  filter: { queue?: string; status?: string; limit?: number; cursor?: string },
): Promise<TaskPage> {
  const limit = filter.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw new ValidationError('limit: an integer from 1 to 100');
  if (filter.status !== undefined && !isTaskStatus(filter.status)) {
    throw new ValidationError(`status: one of queued, leased, succeeded, dead, cancelled`);
  }
  if (filter.queue !== undefined && !ctx.queues.directory.has(filter.queue)) {
    throw new ValidationError(`queue: ${filter.queue.slice(0, 64)} does not exist`);
  }
  const conditions = ['#part = :state'];
  const values: Record<string, unknown> = { ':state': 'state' };
  const names: Record<string, string> = { '#part': 'part' };
  if (filter.queue) {
    conditions.push('#queue = :queue');
    names['#queue'] = 'queue';
    values[':queue'] = filter.queue;
  }
  if (filter.status) {
    conditions.push('#status = :status');
    names['#status'] = 'status';
    values[':status'] = filter.status as TaskStatus;
  }
  const tasks: Task[] = [];
  let startKey = filter.cursor ? decodeCursor(filter.cursor) : undefined;
  // Filters apply after each page is read, so keep reading until the page is full or the table ends.
  for (let pages = 0; pages < 20 && tasks.length < limit; pages++) {
    const output = await ctx.tasks.doc.send(
      new ScanCommand({
        TableName: ctx.tasks.tableName,
        FilterExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        Limit: limit * 4,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of output.Items ?? []) tasks.push(taskFromItem(item));
    startKey = output.LastEvaluatedKey;
    if (!startKey) break;
  }
  const page = tasks.slice(0, limit);
  const last = page.at(-1);
  const more = tasks.length > limit || startKey !== undefined;
  return {
    tasks: page,
    ...(more && last ? { nextCursor: encodeCursor({ taskId: last.taskId, part: 'state' }) } : {}),
  };
}

export interface QueueStats {
  readonly name: string;
  readonly paused: boolean;
  readonly limits: QueueLimits;
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
  for (const shard of allDueShards(ctx)) {
    const ids = await ctx.tasks.queryDue(shard, Number.MAX_SAFE_INTEGER, OPEN_TASK_WALK_LIMIT - seen);
    seen += ids.length;
    for (const task of (await ctx.tasks.getMany(ids, false)).values()) {
      const entry = stats.get(task.queue);
      if (!entry) continue;
      if (task.status === 'queued') {
        entry.depth[task.priority]++;
        entry.oldest = Math.min(entry.oldest, task.createdAt);
      } else if (task.status === 'leased') entry.running++;
    }
    if (seen >= OPEN_TASK_WALK_LIMIT) break;
  }
  return [...stats.values()].map((s) => ({
    name: s.name,
    paused: s.paused,
    limits: s.limits,
    depth: s.depth,
    running: s.running,
    oldestAgeSeconds: Math.max(0, Math.round((now - s.oldest) / 1_000)),
    truncated: seen >= OPEN_TASK_WALK_LIMIT,
  }));
}
