/**
 * Dependencies: a task submitted with `dependsOn` waits (`waiting`) until every task it names has succeeded, then
 * is queued like any other. How it learns of each end:
 *
 * - **Linking**, once the dependent is written: for each dependency, a record "this dependent waits for me" goes
 *   into the dependency's partition, and then the dependency's state item is marked as having dependents. The mark
 *   is a write on the dependency's own item, so it is ordered with the dependency's end: an end written after the
 *   mark sees it and reads the records (written before the mark); an end written before it is in the mark's answer,
 *   and the linking resolves that dependency itself. No end falls between the two, whatever the timing.
 * - **Resolving** one dependency: how it ended is kept for the dependent (its result), then it is struck off the
 *   dependent's list (a conditional write, so resolving twice is harmless); the write that empties the list is
 *   followed by the `unblock` (waiting → queued) and the hint. A failed dependency cancels the dependent, naming it
 *   (`onDependencyFailure: 'cancel'`, the default), or is struck off like a success (`'run'`).
 * - **Rechecking**: whatever a crash lost between an end and its dependents (a resolution not made, an unblock not
 *   written), the supervisor finds: a waiting task is in the due index, looked at every
 *   `dependencyRecheckSeconds`, and each look reads its remaining dependencies and resolves the ended ones. The
 *   look also keeps what the waiting task needs (its payload, its inputs, its links) as long as it waits
 *   (`keepPayloadFor`).
 *
 * No transaction spans an edge set (a transaction holds at most 100 items): every step is one item's write, and
 * every step can be repeated.
 */
import { ConflictError, errorName, ValidationError } from '#domain/errors';
import type { EventType } from '#domain/events';
import type { DependencyOutcome, Task } from '#domain/task';
import { LIMITS } from '#domain/task-spec';
import { isTerminal } from '#domain/task-status';
import { eachConcurrently, SWEEP_CONCURRENCY } from './concurrently';
import type { SchedulerContext } from './context';
import { dispatch } from './dispatch';
import { type EventFields, emit } from './events';
import { keepPayloadFor, payloadPurgeAtFor } from './lifetimes';
import type { StoredInput } from './ports/dependency-store';
import { announceEnd } from './push';
import { dueNoLaterThanExpiry, ending, requeueAfter, sendsNow } from './timing';

/**
 * The dependencies must exist: a task can only depend on tasks submitted before it, so no cycle can form. An agent's
 * child (`rootTaskId` given) may depend only on tasks of its parent's tree (the tree's root and every task under it,
 * its siblings and its parent among them): ids are derived from keys anyone can compute, so any other task is
 * answered exactly as a missing one, and neither its outcome nor its existence reaches the agent. A dependency that
 * has its most dependents takes no new one (`dependentId`, read in the same request, is not new if it exists: a
 * retried submit is answered as before).
 */
export async function checkDependencies(
  ctx: SchedulerContext,
  dependsOn: readonly string[],
  scope: { readonly dependentId: string; readonly rootTaskId?: string },
): Promise<void> {
  const found = await ctx.tasks.getMany([...new Set([...dependsOn, scope.dependentId])]);
  const missing = dependsOn.filter((id) => {
    const dependency = found.get(id);
    if (!dependency) return true;
    return (
      scope.rootTaskId !== undefined && (dependency.rootTaskId ?? dependency.taskId) !== scope.rootTaskId
    );
  });
  if (missing.length > 0) {
    throw new ValidationError(`dependsOn: ${missing.slice(0, 3).join(', ')} does not exist`, {
      context: { missing: missing.length },
    });
  }
  if (found.has(scope.dependentId)) return;
  const full = dependsOn.find((id) => (found.get(id)?.dependentCount ?? 0) >= LIMITS.dependentsPerTask);
  if (full) {
    throw new ConflictError(
      `dependsOn: task ${full} has ${LIMITS.dependentsPerTask} dependents, the most a task may have`,
      { context: { taskId: full, limit: LIMITS.dependentsPerTask } },
    );
  }
}

/** When a waiting task is next looked at by the supervisor. */
export const recheckAt = (ctx: SchedulerContext, now: number, task?: Pick<Task, 'expiresAt'>): number =>
  dueNoLaterThanExpiry(now + ctx.settings.dependencyRecheckSeconds * 1_000, task);

/** Links a dependent just written to each of its dependencies, resolving those that already ended. */
export async function linkDependencies(
  ctx: SchedulerContext,
  dependent: Task,
  dependsOn: readonly string[],
  purgeAt: number,
): Promise<void> {
  await eachConcurrently(dependsOn, SWEEP_CONCURRENCY, async (dependencyId) => {
    const dependency = await ctx.dependencies.addDependent(dependencyId, dependent.taskId, purgeAt);
    if (dependency && isTerminal(dependency.status)) await resolve(ctx, dependent.taskId, dependency);
  });
}

/** A dependency that succeeded with a result: its dependents' inputs name the one record that keeps it. */
const hasResult = (dependency: Task): boolean =>
  dependency.status === 'succeeded' && dependency.result !== undefined;

const outcomeOf = (dependency: Task): StoredInput => ({
  status: dependency.status as DependencyOutcome['status'],
  ...(hasResult(dependency) ? { resultKept: true as const } : {}),
  ...(dependency.error ? { error: dependency.error } : {}),
});

/**
 * How long a result kept at `now` must stay: as long as any dependent linked by then may (its payload's purge time,
 * from a creation before now and a delay of at most `LIMITS.delaySeconds`).
 */
const keptResultPurgeAt = (ctx: SchedulerContext, now: number): number =>
  Math.ceil(now / 1_000) +
  LIMITS.delaySeconds +
  ctx.settings.maxQueueAgeSeconds +
  ctx.settings.taskRetentionSeconds;

/**
 * Resolves one ended dependency of `dependentId`, read fresh: struck off (its outcome kept), or the dependent
 * cancelled. Nothing happens if the dependent no longer waits for it. `resultKept`: the caller kept the result for
 * every dependent already (the end's own pass); otherwise it is kept here for this one, unless it is already.
 */
async function resolve(
  ctx: SchedulerContext,
  dependentId: string,
  dependency: Task,
  resultKept = false,
): Promise<void> {
  const dependent = await ctx.tasks.get(dependentId);
  if (dependent?.status !== 'waiting' || !dependent.waitingOn?.includes(dependency.taskId)) return;
  const failed = dependency.status !== 'succeeded';
  if (failed && dependent.onDependencyFailure !== 'run') {
    await cancelForDependency(ctx, dependent, dependency);
    return;
  }
  const purgeAt = purgeAtOf(ctx, dependent);
  if (hasResult(dependency) && !resultKept) {
    await ctx.dependencies.keepResult(dependency, purgeAt, keptResultPurgeAt(ctx, ctx.now()));
  }
  await ctx.dependencies.putInput(dependentId, dependency.taskId, outcomeOf(dependency), purgeAt);
  const struck = await ctx.tasks.strikeDependency(dependentId, dependency.taskId);
  if (struck.ok && (struck.task.waitingOn?.length ?? 0) === 0) await unblock(ctx, struck.task);
}

/**
 * Inputs live as long as their dependent's payload, and are kept longer with it (`keepPayloadFor`). A dependent
 * submitted before that time was recorded had its payload kept from its first claimable time, as it is counted
 * here.
 */
const purgeAtOf = (ctx: SchedulerContext, task: Task): number =>
  task.payloadPurgeAt ?? payloadPurgeAtFor(ctx.settings, task.notBefore ?? task.createdAt);

/** Nothing left to wait for: queued, claimable from its own delay's end, and hinted. */
async function unblock(ctx: SchedulerContext, task: Task): Promise<void> {
  const now = ctx.now();
  const delayMs = Math.max(0, (task.notBefore ?? now) - now);
  const written = await ctx.tasks.unblock(task, requeueAfter(ctx, now, delayMs, task), now);
  if (written.ok && sendsNow(delayMs)) await dispatch(ctx, written.task, delayMs / 1_000, 'submitted');
}

async function cancelForDependency(ctx: SchedulerContext, dependent: Task, dependency: Task): Promise<void> {
  const now = ctx.now();
  const error = {
    message: `dependency ${dependency.taskId} ended ${dependency.status}`,
    retryable: false,
  };
  const written = await ctx.tasks.cancel(dependent, ending(ctx, now, 'cancelled'), now, {
    failedDependency: dependency.taskId,
    error,
  });
  if (!written.ok) return;
  // Its own dependents follow, in turn.
  await publishEnd(ctx, written.task, 'task.cancelled', {
    taskId: dependent.taskId,
    queue: dependent.queue,
    data: { from: 'waiting', failedDependency: dependency.taskId, reason: error.message },
  });
}

/** An end this call wrote (a cancel, an expiry): what every end is followed by, then the event that says so. */
export async function publishEnd(
  ctx: SchedulerContext,
  ended: Task,
  type: EventType,
  fields: EventFields,
): Promise<void> {
  await tellOfEnd(ctx, ended);
  await emit(ctx, [{ type, fields }]);
}

/** What every end of a task is followed by: the connections watching it are told, and so are its dependents. */
export async function tellOfEnd(ctx: SchedulerContext, task: Task): Promise<void> {
  await announceEnd(ctx, task);
  await releaseDependents(ctx, task);
}

/**
 * Tells the dependents of a task that just ended. Best effort: a dependent not told now is found by its recheck.
 * Never throws.
 */
export async function releaseDependents(ctx: SchedulerContext, task: Task): Promise<void> {
  if (!task.hasDependents || !isTerminal(task.status)) return;
  try {
    // The result is written once, for all the dependents, before any input names it.
    const keptNow = hasResult(task);
    if (keptNow) {
      const purgeAt = keptResultPurgeAt(ctx, ctx.now());
      await ctx.dependencies.keepResult(task, purgeAt, purgeAt);
    }
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await ctx.dependencies.dependentsOf(task.taskId, startKey);
      await eachConcurrently(page.ids, SWEEP_CONCURRENCY, (id) =>
        resolve(ctx, id, task, keptNow).catch((error: unknown) =>
          ctx.log.warn('resolving a dependent failed; its recheck will', {
            taskId: id,
            dependency: task.taskId,
            error: errorName(error),
          }),
        ),
      );
      startKey = page.startKey;
    } while (startKey);
  } catch (error) {
    ctx.log.warn('telling the dependents of a task failed; their rechecks will', {
      taskId: task.taskId,
      error: errorName(error),
    });
  }
}

/**
 * The supervisor's look at a waiting task: resolves the dependencies that ended (reading them), unblocks it if
 * none is left, and otherwise looks again later.
 */
export async function recheckWaiting(ctx: SchedulerContext, waiting: Task): Promise<void> {
  const waitingOn = waiting.waitingOn ?? [];
  if (waitingOn.length === 0) {
    await unblock(ctx, waiting);
    return;
  }
  // It may wait long: what it will need is kept as long as it waits, so its unblock (claimable now, or at the
  // delay set at submit, which its payload's first purge time counts from) needs no keeping of its own.
  const task = await keepPayloadFor(ctx, waiting, ctx.now());
  const dependencies = await ctx.tasks.getMany(waitingOn);
  for (const id of waitingOn) {
    const dependency = dependencies.get(id);
    // Gone (purged past its retention): it can no longer be known to have succeeded.
    const ended: Task | undefined =
      dependency ??
      ({
        ...task,
        taskId: id,
        status: 'cancelled',
        error: { message: 'the dependency no longer exists', retryable: false },
      } satisfies Task);
    if (isTerminal(ended.status)) await resolve(ctx, task.taskId, ended);
  }
  const now = ctx.now();
  await ctx.tasks.lookAgainAt(task, recheckAt(ctx, now, task)).catch(() => undefined);
}

/**
 * Most bytes of data one claim's answer carries besides payloads and checkpoints: waitpoint data (at most 10 of
 * 64 KB) and dependency results. With the payloads (up to 10 of 256 KB) and checkpoints (10 of 16 KB) the answer
 * stays under 4.8 MB, within Lambda's 6 MB. Results past it are left out, marked `resultOmitted`.
 */
export const CARRIED_BYTES = 2 * 1024 * 1024;

/**
 * What the claim of a task with dependencies hands its agent: how each ended, results included while `budget` (the
 * bytes left for the whole claim) lasts.
 */
export async function dependencyInputs(
  ctx: SchedulerContext,
  task: Task,
  budget: { bytes: number },
): Promise<Record<string, DependencyOutcome> | undefined> {
  if (!task.dependencyCount) return undefined;
  const inputs = await ctx.dependencies.inputsOf(task.taskId);
  // Results kept once are read from their records; inputs written before that carry a copy of their own.
  const referenced = [...inputs].flatMap(([id, input]) => (input.resultKept ? [id] : []));
  const kept =
    referenced.length > 0 ? await ctx.dependencies.keptResults(referenced) : new Map<string, unknown>();
  return Object.fromEntries(
    [...inputs].map(([id, input]): [string, DependencyOutcome] => {
      const { resultKept, ...stored } = input;
      const outcome: DependencyOutcome =
        resultKept && kept.has(id) ? { ...stored, result: kept.get(id) } : stored;
      if (resultKept && !kept.has(id)) {
        ctx.log.warn('a dependency result kept for its dependents is gone', {
          taskId: task.taskId,
          dependency: id,
        });
        return [id, { ...stored, resultOmitted: true }];
      }
      if (outcome.result === undefined) return [id, outcome];
      const bytes = Buffer.byteLength(JSON.stringify(outcome.result));
      if (bytes <= budget.bytes) {
        budget.bytes -= bytes;
        return [id, outcome];
      }
      const { result: _omitted, ...rest } = outcome;
      return [id, { ...rest, resultOmitted: true }];
    }),
  );
}
