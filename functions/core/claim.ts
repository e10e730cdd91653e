/**
 * Claiming tasks: read hints from the agent's queues in priority order, reserve slots in the agent's session,
 * then take each task with a conditional write that increments its lease epoch.
 *
 * - Exactly one claimant wins a task: the grant's condition is `status = queued`, and it sets `leased`.
 * - Per-agent concurrency is exact under parallel claims: slots are reserved in the session item with a
 *   condition on the size of its `held` map before any grant is written.
 * - A grant never lands for a session no one holds: whatever gives up a reservation while a claim may be between
 *   it and its grant (the session's end, its replacement, a stale entry dropped) bars that grant first
 *   (`TaskStore.barGrant`), or finds it landed and takes it back; so the claim need not read its session again.
 * - A stale or duplicate hint is deleted; a hint the agent cannot take now goes back to its queue.
 * - While the whole scheduler is paused a claim grants nothing: it looks at the scheduler's control before it
 *   receives any hint, and again once it has dated its grants, with hints received meanwhile handed back at once
 *   (`scheduler-control.ts`: a copy kept 2 s per process while the scheduler runs, read at every claim while paused).
 *
 * Here: the order of the phases, and the claim's answer (payloads and inputs attached, a replayed claim's grants
 * found again). The phases beside it: the hints in `claim-hints.ts`, the session's slots in `claim-reservation.ts`,
 * admission, grants and settling in `claim-grants.ts`.
 */

import { ServiceUnavailableError, SessionLostError, ValidationError } from '#domain/errors';
import type { ReceivedHint, ReceivedTurn } from '#domain/hint';
import { type Labels, meets } from '#domain/labels';
import { type AgentSession, canClaimUnder, type DependencyOutcome, type Task } from '#domain/task';
import { LIMITS } from '#domain/task-spec';
import { admitUnderQueueLimits, grantAll, settle } from './claim-grants';
import { HintFates, logged, receiveHints, sortHints } from './claim-hints';
import { type Examined, examine, freeSlots, outrun, reserve } from './claim-reservation';
import type { SchedulerContext } from './context';
import { CARRIED_BYTES, dependencyInputs } from './dependencies';
import { emit } from './events';
import { wakeLater } from './push';
import { unpausedQueues } from './queue-controls';
import { markDead } from './reclaim';
import { isSchedulerPaused } from './scheduler-control';
import { confirmSession, readSessionFor, type SessionRead } from './session-reads';
import { handBackTurns, passTurns, type TakenTurn, takeTurns } from './turns';
import { type CarriedWaitpoint, waitpointFor } from './waitpoints';

export interface ClaimRequest {
  readonly agentId: string;
  readonly sessionId: string;
  /** At most this many tasks (1 to 10); default 1. */
  readonly max?: number;
  /** Only these of the agent's queues; default all of them. */
  readonly queues?: readonly string[];
  /**
   * Chosen by the agent, the same on every attempt of one claim: a claim sent again with the id of one that
   * reserved something in this session returns what that claim granted (still leased to the session), and grants
   * nothing more. Without it a claim whose answer was lost leases tasks the agent never learns of.
   */
  readonly claimId?: string;
  /**
   * The claim's number in its session, chosen by the agent: growing with each new claim (1, 2, 3…), the same on
   * every attempt of one. An attempt numbered at or below a claim that already reserved in the session, and not a
   * replay of one it remembers, was delivered after the agent moved on: it grants nothing.
   */
  readonly claimSeq?: number;
  /**
   * Tasks of the session as the caller has just written them (a completion carrying this claim): taken as they are
   * when the claim looks at the session's entries, instead of read again. Never from the wire.
   */
  readonly justWritten?: readonly Task[];
  /**
   * The agent's session as the completion carrying this claim has just read it: taken instead of a read of its own
   * when it shows the claim's session usable (an older copy is as safe as the claim's own eventually consistent read:
   * the reservation is conditional on the session as it is). Never from the wire.
   */
  readonly sessionRead?: SessionRead;
}

export const CLAIM_ID_PATTERN = /^[A-Za-z0-9_-]{8,64}$/;

export interface ClaimedTask {
  readonly taskId: string;
  readonly queue: string;
  readonly priority: Task['priority'];
  readonly payload: unknown;
  readonly attempt: number;
  readonly leaseEpoch: number;
  readonly leaseDeadline: number;
  /**
   * The attempt's length from its grant: `leaseDeadline` is the grant time plus this. An agent reckons its
   * deadline from its own clock with it (the time it sent the claim plus this), so a skewed clock cannot stretch it.
   */
  readonly timeoutSeconds: number;
  /** The last checkpoint a previous holder saved, if any. */
  readonly checkpoint?: unknown;
  /** The task is the `onFailure` of this dead task. */
  readonly failureOf?: Task['failureOf'];
  /** It was submitted with `dependsOn`: how each dependency ended, by task id, results included. */
  readonly dependencies?: Readonly<Record<string, DependencyOutcome>>;
  /** Submitted by the agent running this task, in the tree that `rootTaskId` began. */
  readonly parentTaskId?: string;
  readonly rootTaskId?: string;
  /** Resumed from a waitpoint: how it ended. */
  readonly waitpoint?: CarriedWaitpoint;
  /** The trace context it was submitted with: the agent's work on it joins that trace. */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

/**
 * How long an agent should wait after a claim that found nothing, given the empty claims it made in a row
 * before this one: doubling from the base, capped. It shrinks to nothing as soon as a claim finds work.
 */
export function idleRetryAfterMs(
  settings: Pick<SchedulerContext['settings'], 'idleClaimRetryBaseMs' | 'idleClaimRetryMaxMs'>,
  idleClaims: number,
): number {
  return Math.min(
    settings.idleClaimRetryMaxMs,
    settings.idleClaimRetryBaseMs * 2 ** Math.min(Math.max(0, idleClaims), 30),
  );
}

/**
 * A claim, in phases: read the agent's session; **receive** hints from its open queues; **sort** them (one per
 * task, stale or in-flight ones set aside); **reserve** slots in the session; **admit** what the queues' limits
 * allow; **grant** each task with its conditional write; then **settle** the hints and slots (housekeeping that
 * must not lose a grant), keep only grants the session still holds, and hand the tasks over with their payloads.
 */
export async function claimTasks(
  ctx: SchedulerContext,
  request: ClaimRequest,
  /** Filled with the queues the claim looked at, from the session it read, and the tasks it could take. */
  seen?: { queues?: readonly string[]; capacity?: number; labels?: Labels },
): Promise<ClaimedTask[]> {
  const max = checkClaimRequest(request);
  const readAt = ctx.now();
  const session = await liveSession(ctx, request, readAt);
  const queues = request.queues ?? session.queues;
  if (seen) {
    seen.queues = queues;
    seen.labels = session.labels ?? {};
  }
  const foreign = queues.filter((q) => !session.queues.includes(q));
  if (foreign.length > 0)
    throw new ValidationError(`queues: this agent does not serve ${foreign.join(', ')}`);
  if (request.claimId !== undefined && session.claims?.[request.claimId] !== undefined) {
    return replayClaim(ctx, session, request.claimId);
  }
  if (outrun(session, request.claimSeq)) return [];

  // A paused scheduler gives nothing to claims, from any queue; the hints stay where they are. The agent is told to
  // come back as after any empty claim.
  if (await isSchedulerPaused(ctx)) return [];

  // When the session looks full, find the entries that stand for leases already over (reads only).
  let examined: Examined = { stale: new Map(), heldByUs: new Map() };
  // A paused queue gives nothing to claims; its hints stay where they are.
  const open = await unpausedQueues(ctx, queues);
  if (freeSlots(session) < max)
    examined = await examine(ctx, session, Object.keys(session.held), readAt, request.justWritten);
  const capacity = Math.min(max, freeSlots(session) + examined.stale.size);
  if (seen) seen.capacity = capacity;
  if (capacity <= 0 || open.length === 0) return [];

  // Turns of requirement sets this session's labels do not meet are handed back as they come, untaken.
  const inbox = await receiveHints(
    ctx,
    open.map((c) => c.queue),
    capacity,
    (turn) => meets(session.labels, turn.require),
  );
  // Until the hints' fates are settled, a failure hands back what the claim received.
  const progress: ClaimProgress = { settled: false };
  try {
    return await takeReceived(ctx, request, session, inbox, { examined, capacity, open, readAt }, progress);
  } catch (error) {
    if (!progress.settled) await handBack(ctx, inbox, progress.turns);
    throw error;
  }
}

/**
 * The claim from its received hints and turns on: sort, reserve, admit, grant and settle (see `claimTasks`), noting
 * in `progress` the turns taken and the moment the hints' fates are settled.
 */
async function takeReceived(
  ctx: SchedulerContext,
  request: ClaimRequest,
  session: AgentSession,
  inbox: Awaited<ReturnType<typeof receiveHints>>,
  {
    examined,
    capacity,
    open,
    readAt,
  }: {
    readonly examined: Examined;
    readonly capacity: number;
    readonly open: Awaited<ReturnType<typeof unpausedQueues>>;
    readonly readAt: number;
  },
  progress: ClaimProgress,
): Promise<ClaimedTask[]> {
  // Turns of keyed lanes stand for their lanes' oldest tasks, which the claim takes as if they were hinted.
  const turns = await takeTurns(ctx, inbox.turns, Math.max(0, capacity - inbox.hints.length), readAt);
  progress.turns = turns;
  const received = [...inbox.hints, ...turns.flatMap((t) => t.hints)];
  if (received.length === 0) {
    await passTurns(ctx, turns);
    // Idle: drop the entries found stale now, in one write, rather than look at them again at every poll.
    if (examined.stale.size > 0) {
      await ctx.sessions
        .release(session.agentId, session.sessionId, examined.stale)
        .catch(logged(ctx, 'drop stale session entries'));
    }
    return [];
  }

  const hints = new HintFates();
  const sorted = await sortHints(ctx, session, received, examined, readAt, hints);

  // The time of the grants, taken once the hints are in: a grant recorded at the claim's start would date its lease
  // from before the previous holder's ended, when the receive or the reads took long.
  const now = ctx.now();
  // The scheduler's control again, after the grants' time is taken: every grant dated `now` is decided on a copy
  // younger than 2 s then. Paused while the hints came in (the receive may wait, and the copy grow old): none is
  // taken, each goes back at once.
  if (await isSchedulerPaused(ctx)) {
    await handBack(ctx, inbox, turns);
    return [];
  }
  const reserved = await reserve(ctx, session, sorted.candidates, sorted.examined.stale, now, request);
  if ('replayFrom' in reserved) {
    // A retry of this claim overtook it and reserved first: this attempt answers with what that one granted.
    await handBack(ctx, inbox, turns);
    progress.settled = true;
    return replayClaim(ctx, reserved.replayFrom, reserved.claimId);
  }
  const admission = await admitUnderQueueLimits(ctx, open, sorted, reserved, turns, now);
  const grants = await grantAll(ctx, session, request, sorted, reserved, admission, now, hints);
  await settle(ctx, request, hints, admission, grants);
  progress.settled = true;
  await passTurns(
    ctx,
    turns,
    admission.refused,
    (queue) => open.find((c) => c.queue === queue)?.limits.perKeyConcurrency,
    grants.limited,
  );
  // A hint hidden until its task's time wakes nobody when it shows again: with a push channel, a timed wake does.
  // Armed after the hints and turns are sent back with the same delay, so it never comes before them.
  for (const { queue, seconds } of grants.early) await wakeLater(ctx, [{ queue }], seconds);

  await emit(
    ctx,
    grants.granted.map((task) => ({
      type: 'task.claimed' as const,
      fields: {
        taskId: task.taskId,
        agentId: request.agentId,
        queue: task.queue,
        data: { leaseEpoch: task.leaseEpoch, attempt: task.attempt },
      },
    })),
  );
  if (ctx.counters) {
    const byQueue = new Map<string, number>();
    for (const task of grants.granted) byQueue.set(task.queue, (byQueue.get(task.queue) ?? 0) + 1);
    for (const [queue, tasks] of byQueue) ctx.counters.claimed(queue, tasks);
  }
  if (grants.granted.length === 0 && grants.errors.length > 0) {
    throw new ServiceUnavailableError('could not take tasks right now; try again', {
      cause: grants.errors[0],
    });
  }
  return withPayloads(ctx, grants.granted, inbox.hints);
}

/** How far a claim got with what it received: the turns it took, and whether the hints' fates were settled. */
interface ClaimProgress {
  turns?: readonly TakenTurn[];
  settled: boolean;
}

/**
 * What a claim received, handed back at once: by a claim that takes none of it (the scheduler paused, a retry that
 * overtook it), and by one that failed before settling. Left hidden for the claim's visibility timeout, a hint would
 * wake nobody when it showed again, and an idle agent waiting on push wakes would not claim its task until the
 * supervisor's reconcile sent it again, minutes later. A hint of a task granted before a failure comes back stale
 * and is deleted by the claim that receives it.
 */
async function handBack(
  ctx: SchedulerContext,
  inbox: { readonly hints: readonly ReceivedHint[]; readonly turns: readonly ReceivedTurn[] },
  taken: readonly TakenTurn[] | undefined,
): Promise<void> {
  await Promise.all([
    ...inbox.hints.map((hint) => ctx.queues.returnLater(hint, 0).catch(logged(ctx, 'return hint'))),
    (taken ? passTurns(ctx, taken) : handBackTurns(ctx, inbox.turns)).catch(logged(ctx, 'hand back turns')),
  ]);
}

/** The claim's `max`, once every field of the request is known to be well formed. */
function checkClaimRequest(request: ClaimRequest): number {
  const max = request.max ?? 1;
  if (!Number.isInteger(max) || max < 1 || max > LIMITS.claimMax) {
    throw new ValidationError(`max: must be an integer from 1 to ${LIMITS.claimMax}`);
  }
  if (request.claimId !== undefined && !CLAIM_ID_PATTERN.test(request.claimId)) {
    throw new ValidationError('claimId: 8 to 64 letters, digits, "-" or "_"');
  }
  if (request.claimSeq !== undefined && !(Number.isSafeInteger(request.claimSeq) && request.claimSeq >= 1)) {
    throw new ValidationError('claimSeq: a whole number from 1');
  }
  if (request.claimSeq !== undefined && request.claimId === undefined) {
    throw new ValidationError('claimSeq: numbers a claim that has a claimId');
  }
  return max;
}

/**
 * The claim's session, read eventually consistent first (see `session-reads.ts`): the reservation's condition
 * checks again everything decided on it.
 */
async function liveSession(ctx: SchedulerContext, request: ClaimRequest, now: number): Promise<AgentSession> {
  const usable = (s: AgentSession) => s.sessionId === request.sessionId && canClaimUnder(s, now);
  const { session } = request.sessionRead
    ? await confirmSession(ctx, request.agentId, request.sessionRead.session, usable)
    : await readSessionFor(ctx, request.agentId, usable);
  if (!session || !usable(session)) {
    throw new SessionLostError('the session expired or was replaced; open a new session', {
      context: { agentId: request.agentId },
    });
  }
  return session;
}

/**
 * Attaches payloads: the one a task's hint carried, if it belongs to the specification the task was granted under,
 * else its payload item's. A task whose payload is gone (past its retention) cannot run and is marked dead.
 */
async function withPayloads(
  ctx: SchedulerContext,
  granted: readonly Task[],
  hinted: readonly Pick<ReceivedHint, 'taskId' | 'payload'>[] = [],
): Promise<ClaimedTask[]> {
  if (granted.length === 0) return [];
  // Carried payloads by task and specification, parsed: a hint's text that is not JSON is passed over (the item is read).
  const carried = new Map<string, { value: unknown }>();
  for (const { taskId, payload } of hinted) {
    const value = payload && parsedJson(payload.json);
    if (payload && value) carried.set(`${taskId} ${payload.specHash}`, value);
  }
  const carriedFor = (task: Task) => carried.get(`${task.taskId} ${task.specHash}`);
  const unread = granted.filter((task) => carriedFor(task) === undefined);
  const [read, { waitpoints, inputs }] = await Promise.all([
    unread.length > 0 ? ctx.payloads.getPayloads(unread) : new Map<string, string>(),
    carriedData(ctx, granted),
  ]);
  const claimed: ClaimedTask[] = [];
  for (const [index, task] of granted.entries()) {
    const dependencies = inputs[index];
    const waitpoint = waitpoints[index];
    const text = read.get(task.taskId);
    const payload = carriedFor(task) ?? (text === undefined ? undefined : { value: JSON.parse(text) });
    if (payload === undefined) {
      await markDead(ctx, task, 'the payload no longer exists');
      continue;
    }
    claimed.push({
      taskId: task.taskId,
      queue: task.queue,
      priority: task.priority,
      payload: payload.value,
      attempt: task.attempt,
      leaseEpoch: task.leaseEpoch,
      leaseDeadline: task.leaseDeadline ?? 0,
      timeoutSeconds: task.timeoutSeconds,
      ...(task.checkpoint === undefined ? {} : { checkpoint: task.checkpoint }),
      ...(task.failureOf === undefined ? {} : { failureOf: task.failureOf }),
      ...(dependencies === undefined ? {} : { dependencies }),
      ...(task.parentTaskId === undefined
        ? {}
        : { parentTaskId: task.parentTaskId, rootTaskId: task.rootTaskId ?? task.parentTaskId }),
      ...(waitpoint === undefined ? {} : { waitpoint }),
      ...(task.traceparent === undefined ? {} : { traceparent: task.traceparent }),
      ...(task.tracestate === undefined ? {} : { tracestate: task.tracestate }),
    });
  }
  return claimed;
}

/**
 * What the claimed tasks carry besides their payloads, within one budget of `CARRIED_BYTES`: the data of the
 * waitpoints they resumed from (up to 64 KB a task; read once more, half a read unit, only for such a task) always,
 * and their dependencies' results while the rest lasts.
 */
async function carriedData(ctx: SchedulerContext, granted: readonly Task[]) {
  const waitpoints = await Promise.all(granted.map((task) => waitpointFor(ctx, task)));
  const dataBytes = waitpoints.reduce(
    (sum, w) => sum + (w?.data === undefined ? 0 : Buffer.byteLength(JSON.stringify(w.data))),
    0,
  );
  const budget = { bytes: CARRIED_BYTES - dataBytes };
  const inputs = [];
  for (const task of granted) inputs.push(await dependencyInputs(ctx, task, budget));
  return { waitpoints, inputs };
}

/** The value of a JSON text, boxed (`null` is a payload too); undefined if the text is not JSON. */
function parsedJson(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

/**
 * The answer to a claim sent again: the tasks its first attempt granted that this session still holds, found
 * through the session's entries (a superset of its leases) and the claim id each grant wrote on its task.
 */
async function replayClaim(
  ctx: SchedulerContext,
  session: AgentSession,
  claimId: string,
): Promise<ClaimedTask[]> {
  const ids = Object.keys(session.held);
  if (ids.length === 0) return [];
  const tasks = await ctx.tasks.getMany(ids);
  const granted = ids.flatMap((id) => {
    const task = tasks.get(id);
    return task?.status === 'leased' &&
      task.claimId === claimId &&
      task.sessionId === session.sessionId &&
      task.owner === session.agentId
      ? [task]
      : [];
  });
  return withPayloads(ctx, granted);
}
