/**
 * Rebuild: the scheduler's ephemeral state (its SQS hints, its lanes' turns, its wake marks) derived again from its
 * durable state, the task records. For when that state is known to be gone: after an operator purged the queues, after
 * the tables were restored from a backup (their tasks point at hints that were never sent to these queues). The
 * supervisor's reconcile would find the same tasks, but only `reconcileAfterSeconds` and more after each was last
 * sent, and a queue deep enough in hints that it believes are in line makes it wait longer still.
 *
 * One call:
 * - the first (no cursor) clears the wake marks (every listener's "recently woken" cooldown, so that the wakes the
 *   hints bring reach every idle agent at once), counts the live sessions (one scan of the leases table's session
 *   items: there is no index of sessions, and the supervisor scans them the same way each pass), and walks the
 *   queues' lists up to now (`list-walk.ts`), so that every open task, even one submitted a moment ago without a due
 *   entry, is in the `due` index;
 * - then pages over the `due` index shard by shard (a Query a page, never a Scan), reads each page's tasks, and
 *   sends every queued task's hint again at its current lease epoch, hidden until its `notBefore` (a task due more
 *   than SQS's 15 minutes away is left to its due entry: reconcile sends it then), or, for a keyed task, puts its
 *   lane's turn in line, once per lane per call; a leased task is counted as an active run, and gets nothing;
 * - stops once it has read `limit` entries or spent `REBUILD_BUDGET_MS`, and answers where it stopped (`cursor`).
 *
 * Paused queues (and a paused scheduler) get their hints back like the others: their tasks stay in line, and are
 * granted once resumed. Nothing is written to a task: a hint sent again is a duplicate at worst, dropped as stale by
 * the claim that meets it (every grant is conditional), so a call from any cursor, or a rebuild from the start, can
 * be made again. What it cannot clear: the per-process copies the claims keep (the empty tiers of `claim-hints.ts`,
 * the queue and scheduler controls), each in its own function instance; they last a second or two.
 */
import { z } from 'zod';
import { errorName, ValidationError } from '#domain/errors';
import { laneOf } from '#domain/lanes';
import type { Task } from '#domain/task';
import { LIMITS } from '#domain/task-spec';
import type { SchedulerContext } from './context';
import { dispatchMany, type PendingDispatch } from './dispatch';
import { walkNewTasks } from './list-walk';
import type { ListingCursor } from './ports/task-store';
import { wakeFor, wakeLater } from './push';
import { offerTurn } from './turns';

/**
 * The wall time one call gives itself: the operator function times out at 10 s, and a page under way when this is
 * spent (a Query, a BatchGetItem, the hints' batches) finishes within the rest.
 */
export const REBUILD_BUDGET_MS = 6_000;

/**
 * Entries of the `due` index one call reads at most (`limit`), and by default. Measured on the emulators, a call read
 * and sent 1,000 queued tasks in 400 to 500 ms: 2,000 leave most of the time budget for a slower day.
 */
export const REBUILD_LIMITS = { min: 1, max: 5_000, default: 2_000 } as const;

/** The largest `due` page one Query asks for: BatchGetItem takes 100 keys, so a page is a few of its requests. */
const PAGE = 250;

/**
 * Calls that walk the lists before the rebuild goes on to the `due` index regardless. A walk stops at 20 pages a
 * list partition: a queue with more than 10,000 tasks submitted in one partition in the last
 * `reconcileAfterSeconds` would never finish; those tasks' hints were sent at submit a moment ago.
 */
const WALK_CALLS = 5;

export interface RebuildInput {
  /** Where the last call stopped; none to start a rebuild. */
  readonly cursor?: string;
  /** Entries of the `due` index this call reads at most. */
  readonly limit?: number;
}

export interface RebuildSummary {
  /** Queued tasks found (in a paused queue too). */
  readonly pendingRuns: number;
  /** Leased tasks found: their holders run them, and they get no hint. */
  readonly activeRuns: number;
  /** Live sessions found by the scan of the first call. */
  readonly sessionsScanned: number;
  /** Listeners whose wake cooldown the first call set back. */
  readonly wakeKeysCleared: number;
  /** Hints sent again (to SQS; a send that failed is left to reconcile, which the task is marked for). */
  readonly hintsSent: number;
  /** Lanes whose turn was put in line anew. */
  readonly turnsReplaced: number;
  /** Present while the rebuild is not done: send it back to go on. */
  readonly cursor?: string;
}

/** What a cursor holds (base64url JSON), opaque to its caller. */
const cursorSchema = z.strictObject({
  v: z.literal(1),
  /** When the rebuild began: a lane's turn put in line since then is this rebuild's (or a live one), and stays. */
  since: z.int().min(0).max(Number.MAX_SAFE_INTEGER),
  /** The `due` partition the rebuild is in, and the key its last page ended at. */
  shard: z.string().min(1).max(64),
  key: z.record(z.string().max(16), z.union([z.string().max(512), z.number()])).optional(),
  /** Set while the lists are still being walked: the walks left unfinished so far. */
  walks: z.int().min(1).max(WALK_CALLS).optional(),
});
type Cursor = z.output<typeof cursorSchema>;

const CURSOR_PATTERN = /^[A-Za-z0-9_-]{1,2048}$/;
const badCursor = () => new ValidationError('cursor: not a cursor this API returned');

const encodeCursor = (cursor: Cursor): string => Buffer.from(JSON.stringify(cursor)).toString('base64url');

function decodeCursor(ctx: SchedulerContext, text: string): Cursor {
  if (!CURSOR_PATTERN.test(text)) throw badCursor();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw badCursor();
  }
  const checked = cursorSchema.safeParse(parsed);
  if (!checked.success) throw badCursor();
  const cursor = checked.data;
  // The lists are walked before any page is read: a cursor of the walk has no key. The key is the store's to check.
  if (!ctx.tasks.dueShards.includes(cursor.shard) || (cursor.walks !== undefined && cursor.key !== undefined))
    throw badCursor();
  return cursor;
}

function limitOf(limit: number | undefined): number {
  if (limit === undefined) return REBUILD_LIMITS.default;
  if (!Number.isInteger(limit) || limit < REBUILD_LIMITS.min || limit > REBUILD_LIMITS.max)
    throw new ValidationError(`limit: an integer from ${REBUILD_LIMITS.min} to ${REBUILD_LIMITS.max}`);
  return limit;
}

interface Counts {
  pendingRuns: number;
  activeRuns: number;
  sessionsScanned: number;
  wakeKeysCleared: number;
  hintsSent: number;
  turnsReplaced: number;
}

/** One call of a rebuild (see above); `budgetMs` replaces `REBUILD_BUDGET_MS`. */
export async function rebuild(
  ctx: SchedulerContext,
  input: RebuildInput = {},
  options: { budgetMs?: number } = {},
): Promise<RebuildSummary> {
  // Both checked before anything is read or written: a refused call changes nothing.
  const limit = limitOf(input.limit);
  const resumed = input.cursor === undefined ? undefined : decodeCursor(ctx, input.cursor);
  const started = Date.now();
  const budgetMs = options.budgetMs ?? REBUILD_BUDGET_MS;
  const left = () => budgetMs - (Date.now() - started);
  const counts: Counts = {
    pendingRuns: 0,
    activeRuns: 0,
    sessionsScanned: 0,
    wakeKeysCleared: 0,
    hintsSent: 0,
    turnsReplaced: 0,
  };
  const [firstShard] = ctx.tasks.dueShards;
  if (firstShard === undefined) return counts;
  let at: Cursor;
  /** Walks of the lists left unfinished before this call; undefined once the lists were walked. */
  let walks: number | undefined;
  if (resumed) {
    const { walks: unfinished, ...rest } = resumed;
    at = rest;
    walks = unfinished;
  } else {
    const since = ctx.now();
    counts.wakeKeysCleared = await clearWakeMarks(ctx, since);
    counts.sessionsScanned = (await ctx.sessions.listLive(since)).length;
    at = { v: 1, since, shard: firstShard };
    walks = 0;
  }
  if (walks !== undefined) {
    // Half the call at most: a page of the walk begun just before its time is up still arms up to 500 tasks, one
    // write each (3,000 tasks took the emulators 6.5 s, in 8 partitions at once).
    const walked = await walkNewTasks(ctx, {
      upTo: at.since,
      budgetMs: Math.max(0, Math.min(left(), budgetMs / 2)),
    });
    if (!walked.complete && walks + 1 < WALK_CALLS)
      return { ...counts, cursor: encodeCursor({ ...at, walks: walks + 1 }) };
    if (!walked.complete)
      ctx.log.warn('rebuild: the lists were not walked to their end; going on with the due index', {
        walks: walks + 1,
      });
  }

  const lanesOffered = new Map<string, number>();
  let read = 0;
  for (;;) {
    if (read >= limit || left() <= 0) return { ...counts, cursor: encodeCursor(at) };
    const page = await ctx.tasks.pageDue(at.shard, {
      ...(at.key ? { startKey: at.key } : {}),
      limit: Math.min(PAGE, limit - read),
    });
    read += page.taskIds.length;
    await rebuildPage(ctx, page.taskIds, at.since, lanesOffered, counts);
    if (page.startKey) {
      at = { v: 1, since: at.since, shard: at.shard, key: keyOf(page.startKey) };
      continue;
    }
    const next = ctx.tasks.dueShards[ctx.tasks.dueShards.indexOf(at.shard) + 1];
    if (next === undefined) return counts;
    at = { v: 1, since: at.since, shard: next };
  }
}

/** A page's key as the cursor carries it: strings and numbers only, as the keys of the `due` index are. */
function keyOf(key: ListingCursor): Record<string, string | number> {
  return Object.fromEntries(
    Object.entries(key).filter((entry): entry is [string, string | number] =>
      ['string', 'number'].includes(typeof entry[1]),
    ),
  );
}

/** Sets back the wake cooldown of every listener of every queue woken within it. Without a push channel, none. */
async function clearWakeMarks(ctx: SchedulerContext, now: number): Promise<number> {
  const connections = ctx.push?.connections;
  if (!connections) return 0;
  const cleared = await Promise.all(
    ctx.queues.directory
      .names()
      .map((queue) => connections.clearWakeMarks(queue, now - ctx.settings.wakeCooldownMs)),
  );
  return cleared.reduce((a, b) => a + b, 0);
}

/**
 * A page's tasks: every queued one's hint again (batched, ten to an SQS request), each lane's turn once, and the
 * wakes for them; leased ones counted.
 */
async function rebuildPage(
  ctx: SchedulerContext,
  taskIds: readonly string[],
  since: number,
  lanesOffered: Map<string, number>,
  counts: Counts,
): Promise<void> {
  if (taskIds.length === 0) return;
  const tasks = await ctx.tasks.getMany(taskIds);
  const now = ctx.now();
  const hints: PendingDispatch[] = [];
  /** Each lane's task claimable first, and in how many seconds. */
  const lanes = new Map<string, { task: Task; delaySeconds: number }>();
  for (const task of tasks.values()) {
    if (task.status === 'leased') counts.activeRuns++;
    if (task.status !== 'queued') continue;
    counts.pendingRuns++;
    const delaySeconds = Math.max(0, (task.notBefore ?? 0) - now) / 1_000;
    const lane = laneOf(task);
    if (lane) {
      const first = lanes.get(lane.laneId);
      if (!first || delaySeconds < first.delaySeconds) lanes.set(lane.laneId, { task, delaySeconds });
    } else if (delaySeconds <= LIMITS.sqsMaxDelaySeconds) hints.push({ task, delaySeconds });
  }
  counts.hintsSent += await dispatchMany(ctx, hints, 'resent');
  for (const [laneId, { task, delaySeconds }] of lanes) {
    // Once a lane a call, unless a later page holds a task of it claimable sooner than its turn.
    const offered = lanesOffered.get(laneId);
    if (offered !== undefined && offered <= delaySeconds) continue;
    lanesOffered.set(laneId, delaySeconds);
    // A turn put in line before the rebuild began is taken for lost (its message may be gone); one since, kept.
    const replaced = await offerTurn(ctx, task, Math.min(delaySeconds, LIMITS.sqsMaxDelaySeconds), {
      staleAfterMs: Math.max(0, now - since),
    }).catch((error: unknown) => {
      ctx.log.warn('rebuild: putting a lane’s turn in line failed; reconcile does when its task is due', {
        laneId,
        error: errorName(error),
      });
      return false;
    });
    if (!replaced) continue;
    counts.turnsReplaced++;
    if (delaySeconds <= 0) await wakeFor(ctx, [task], 'resent');
    else await wakeLater(ctx, [task], delaySeconds);
  }
}
