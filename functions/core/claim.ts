/**
 * Claiming tasks: read hints from the agent's queues in priority order, reserve slots in the agent's session,
 * then take each task with a conditional write that increments its lease epoch.
 *
 * - Exactly one claimant wins a task: the grant's condition is `status = queued`, and it sets `leased`.
 * - Per-agent concurrency is exact under parallel claims: slots are reserved in the session item with a
 *   condition on the size of its `held` map before any grant is written.
 * - A stale or duplicate hint is deleted; a hint the agent cannot take now goes back to its queue.
 */

import { errorName, ServiceUnavailableError, SessionLostError, ValidationError } from '#domain/errors';
import type { ReceivedHint, ReceivedTurn } from '#domain/hint';
import { claimOrder } from '#domain/priority';
import { type AgentSession, canClaimUnder, type DependencyOutcome, type Task } from '#domain/task';
import { LIMITS } from '#domain/task-spec';
import type { SchedulerContext } from './context';
import { DEPENDENCY_RESULTS_BYTES, dependencyInputs } from './dependencies';
import { emit } from './events';
import { expireTask } from './follow-ups';
import { unpausedQueues } from './queue-controls';
import { admit, hasLimits, releaseQueueSlots } from './queue-limits';
import { markDead, reclaimTask } from './reclaim';
import { admitKeys, isStandIn, passTurns, type TakenTurn, takeTurns } from './turns';

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

/** Seconds a hint is hidden when a parallel claim of the same agent is deciding on the same task. */
const IN_FLIGHT_RETRY_SECONDS = 2;
/** Seconds a hint is hidden when its queue's concurrency or rate limit refused it. */
const LIMITED_RETRY_SECONDS = 1;

/**
 * A claim, in phases: read the agent's session; **receive** hints from its open queues; **sort** them (one per
 * task, stale or in-flight ones set aside); **reserve** slots in the session; **admit** what the queues' limits
 * allow; **grant** each task with its conditional write; then **settle** the hints and slots (housekeeping that
 * must not lose a grant), keep only grants the session still holds, and hand the tasks over with their payloads.
 */
export async function claimTasks(
  ctx: SchedulerContext,
  request: ClaimRequest,
  /** Filled with the queues the claim looked at, from the session it read. */
  seen?: { queues?: readonly string[] },
): Promise<ClaimedTask[]> {
  const max = checkClaimRequest(request);
  const readAt = ctx.now();
  const session = await liveSession(ctx, request, readAt);
  const queues = request.queues ?? session.queues;
  if (seen) seen.queues = queues;
  const foreign = queues.filter((q) => !session.queues.includes(q));
  if (foreign.length > 0)
    throw new ValidationError(`queues: this agent does not serve ${foreign.join(', ')}`);
  if (request.claimId !== undefined && session.claims?.[request.claimId] !== undefined) {
    return replayClaim(ctx, session, request.claimId);
  }
  if (outrun(session, request.claimSeq)) return [];

  // When the session looks full, find the entries that stand for leases already over (reads only).
  let examined: Examined = { stale: new Map(), heldByUs: new Map() };
  // A paused queue gives nothing to claims; its hints stay where they are.
  const open = await unpausedQueues(ctx, queues);
  if (freeSlots(session) < max) examined = await examine(ctx, session, Object.keys(session.held), readAt);
  const capacity = Math.min(max, freeSlots(session) + examined.stale.size);
  if (capacity <= 0 || open.length === 0) return [];

  const inbox = await receiveHints(
    ctx,
    open.map((c) => c.queue),
    capacity,
  );
  // Turns of keyed lanes stand for their lanes' oldest tasks, which the claim takes as if they were hinted.
  const turns = await takeTurns(ctx, inbox.turns, Math.max(0, capacity - inbox.hints.length), readAt);
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
  const reserved = await reserve(ctx, session, sorted.candidates, sorted.examined.stale, now, request);
  if ('replayFrom' in reserved) {
    // A retry of this claim overtook it and reserved first: this attempt answers with what that one granted.
    await Promise.all(
      inbox.hints.map((hint) => ctx.queues.returnLater(hint, 0).catch(logged(ctx, 'return hint'))),
    );
    await passTurns(ctx, turns);
    return replayClaim(ctx, reserved.replayFrom, reserved.claimId);
  }
  const admission = await admitUnderQueueLimits(ctx, open, sorted, reserved, turns, now);
  const grants = await grantAll(ctx, session, request, sorted, reserved, admission, now, hints);
  await settle(ctx, request, hints, admission, grants);
  await passTurns(ctx, turns, admission.refused);

  const kept = await grantsOfLiveSession(ctx, request, grants.granted, now);
  await emit(
    ctx,
    kept.map((task) => ({
      type: 'task.claimed' as const,
      fields: {
        taskId: task.taskId,
        agentId: request.agentId,
        queue: task.queue,
        data: { leaseEpoch: task.leaseEpoch, attempt: task.attempt },
      },
    })),
  );
  if (grants.granted.length === 0 && grants.errors.length > 0) {
    throw new ServiceUnavailableError('could not take tasks right now; try again', {
      cause: grants.errors[0],
    });
  }
  return withPayloads(ctx, kept);
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

/** What becomes of the hints a claim received: deleted (done with), or handed back to be seen again later. */
class HintFates {
  readonly toDelete: ReceivedHint[] = [];
  readonly toReturn: { hint: ReceivedHint; seconds: number }[] = [];

  delete(...hints: ReceivedHint[]): void {
    this.toDelete.push(...hints);
  }

  returnLater(seconds: number, ...hints: ReceivedHint[]): void {
    for (const hint of hints) this.toReturn.push({ hint, seconds });
  }
}

interface SortedHints {
  /** The hints of each task; extra copies share the first one's fate. */
  readonly byTask: ReadonlyMap<string, ReceivedHint[]>;
  /** Tasks the claim may try to take. */
  readonly candidates: string[];
  readonly examined: Examined;
}

/**
 * One hint per task. A hint for a task already in the session's `held` map stands for one we hold (the hint is
 * stale), a leftover entry, or a task a parallel claim of ours is deciding on: it is set aside, and the rest are
 * the candidates.
 */
async function sortHints(
  ctx: SchedulerContext,
  session: AgentSession,
  received: readonly ReceivedHint[],
  seen: Examined,
  readAt: number,
  fates: HintFates,
): Promise<SortedHints> {
  const byTask = new Map<string, ReceivedHint[]>();
  for (const hint of received) byTask.set(hint.taskId, [...(byTask.get(hint.taskId) ?? []), hint]);

  let examined = seen;
  const unexamined = [...byTask.keys()].filter(
    (id) => id in session.held && !examined.stale.has(id) && !examined.heldByUs.has(id),
  );
  if (unexamined.length > 0) examined = merge(examined, await examine(ctx, session, unexamined, readAt));

  const candidates: string[] = [];
  for (const [taskId, hints] of byTask) {
    const heldAt = examined.heldByUs.get(taskId);
    if (heldAt !== undefined) {
      // A hint older than our lease is stale. One as new (the task was given back since; the read was eventually
      // consistent) stands for the task waiting again: it goes back for a moment.
      for (const hint of hints) {
        if (hint.leaseEpoch < heldAt) fates.delete(hint);
        else fates.returnLater(IN_FLIGHT_RETRY_SECONDS, hint);
      }
    } else if (taskId in session.held && !examined.stale.has(taskId)) {
      const [first, ...copies] = hints;
      fates.delete(...copies);
      if (first) fates.returnLater(IN_FLIGHT_RETRY_SECONDS, first);
    } else {
      candidates.push(taskId);
    }
  }
  return { byTask, candidates, examined };
}

interface Admission {
  /** Reserved tasks a queue's concurrency or rate limit refused now. */
  readonly refused: ReadonlySet<string>;
  /**
   * The slots taken in each control with a concurrency limit (a queue's, or a key's), by task, with their
   * reservation time.
   */
  readonly queueSlots: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

/** Queue limits (concurrency, rate) admit some of what the session reserved; the rest waits a moment. */
async function admitUnderQueueLimits(
  ctx: SchedulerContext,
  open: Awaited<ReturnType<typeof unpausedQueues>>,
  sorted: SortedHints,
  reserved: { has(taskId: string): boolean },
  turns: readonly TakenTurn[],
  now: number,
): Promise<Admission> {
  const limited = new Map<string, string[]>();
  for (const taskId of sorted.candidates) {
    const control = open.find((c) => c.queue === sorted.byTask.get(taskId)?.[0]?.queue);
    if (reserved.has(taskId) && control && hasLimits(control)) {
      limited.set(control.queue, [...(limited.get(control.queue) ?? []), taskId]);
    }
  }
  const refused = new Set<string>();
  const queueSlots = new Map<string, Map<string, number>>();
  for (const [queue, taskIds] of limited) {
    const control = open.find((c) => c.queue === queue);
    const admitted = control ? await admit(ctx, control, taskIds, now) : new Set<string>();
    // A rate limit alone takes tokens, not slots.
    if (control?.limits.maxConcurrency !== undefined)
      queueSlots.set(queue, new Map([...admitted].map((id) => [id, now])));
    for (const id of taskIds) if (!admitted.has(id)) refused.add(id);
  }
  // Keyed tasks the queue admitted, each key's `perKeyConcurrency` too.
  const keys = await admitKeys(
    ctx,
    turns,
    { has: (id) => reserved.has(id) && !refused.has(id) },
    (queue) => open.find((c) => c.queue === queue)?.limits.perKeyConcurrency,
    now,
  );
  for (const [control, slots] of keys.slots) queueSlots.set(control, slots);
  for (const id of keys.refused) refused.add(id);
  return { refused, queueSlots };
}

interface Grants {
  readonly granted: Task[];
  /** Errors of grants whose outcome is unknown (they may have committed). */
  readonly errors: unknown[];
  /** Session slots to free: reserved, but no task of ours came of them. */
  readonly released: Map<string, number>;
}

/** Each admitted task's grant, all at once; the hints of each get the fate its outcome calls for. */
async function grantAll(
  ctx: SchedulerContext,
  session: AgentSession,
  request: ClaimRequest,
  sorted: SortedHints,
  reserved: { has(taskId: string): boolean },
  admission: Admission,
  now: number,
  fates: HintFates,
): Promise<Grants> {
  const grants: Grants = { granted: [], errors: [], released: new Map() };
  await Promise.all(
    sorted.candidates.map(async (taskId) => {
      const hints = sorted.byTask.get(taskId) ?? [];
      if (!reserved.has(taskId)) {
        fates.returnLater(0, ...hints);
        return;
      }
      if (admission.refused.has(taskId)) {
        grants.released.set(taskId, now);
        fates.returnLater(LIMITED_RETRY_SECONDS, ...hints);
        return;
      }
      if (ctx.now() - now > ctx.settings.reservationGraceSeconds * 500) {
        // Past half the grace after which another claim of this session drops the reservation as stale: a grant
        // sent now could land after that, be answered by a retry of this claim, and then be taken back. The
        // reservation is freed and the hint goes back instead (a claim this slow meets it only on a stalled host).
        grants.released.set(taskId, now);
        fates.returnLater(0, ...hints);
        return;
      }
      const slots = [...admission.queueSlots]
        .filter(([, taken]) => taken.has(taskId))
        .map(([control]) => control);
      const outcome = await grant(
        ctx,
        session,
        taskId,
        hints[0]?.queue ?? '',
        now,
        request.claimId,
        slots,
      ).catch((error: unknown) => {
        grants.errors.push(error);
        return { kind: 'error' } as const;
      });
      if (outcome.kind === 'error') {
        // The write may have committed (a timeout after the commit): keep the slot, which the grace period
        // frees if the task is not ours, and let another claim look at the hint.
        fates.returnLater(0, ...hints);
        return;
      }
      if (outcome.kind === 'granted') {
        grants.granted.push(outcome.task);
        fates.delete(...hints);
        return;
      }
      grants.released.set(taskId, now);
      if (outcome.kind === 'later') {
        const [first, ...copies] = hints;
        fates.delete(...copies);
        if (first) fates.returnLater(outcome.seconds, first);
      } else {
        fates.delete(...hints);
      }
    }),
  );
  return grants;
}

/**
 * Housekeeping that must not lose the grants: failures here only delay a hint or a slot. Queue slots and session
 * slots no grant came of are freed; hints are deleted or handed back.
 */
async function settle(
  ctx: SchedulerContext,
  request: ClaimRequest,
  fates: HintFates,
  admission: Admission,
  grants: Grants,
): Promise<void> {
  const grantedIds = new Set(grants.granted.map((t) => t.taskId));
  const unusedQueueSlots = [...admission.queueSlots].map(
    ([queue, slots]) =>
      [queue, new Map([...slots].filter(([id]) => !grantedIds.has(id) && grants.released.has(id)))] as const,
  );
  await Promise.all([
    ...unusedQueueSlots.map(([queue, slots]) => releaseQueueSlots(ctx, queue, slots).catch(() => undefined)),
    grants.released.size > 0
      ? ctx.sessions.release(request.agentId, request.sessionId, grants.released).catch(() => undefined)
      : undefined,
    fates.toDelete.some((hint) => !isStandIn(hint))
      ? ctx.queues
          .delete(fates.toDelete.filter((hint) => !isStandIn(hint)))
          .catch(logged(ctx, 'delete hints'))
      : undefined,
    ...fates.toReturn
      .filter(({ hint }) => !isStandIn(hint))
      .map(({ hint, seconds }) => ctx.queues.returnLater(hint, seconds).catch(logged(ctx, 'return hint'))),
  ]);
}

/**
 * A grant lands on the task after its reservation landed on the session, in a write of its own. In between, the
 * session may have been replaced by the agent's next one, or ended by the sweep, each handing back what the session
 * held while the task was not leased yet: the grant then leaves the task leased to a session nobody looks at again.
 * So a claim that granted anything reads its session once more (one read, for a whole batch) and takes back,
 * fenced by the epoch, every grant the session does not hold any more. Whatever replaces or ends the session after
 * that read finds the grant landed and takes it back itself.
 */
async function grantsOfLiveSession(
  ctx: SchedulerContext,
  request: Pick<ClaimRequest, 'agentId' | 'sessionId'>,
  granted: readonly Task[],
  reservedAt: number,
): Promise<Task[]> {
  if (granted.length === 0) return [];
  const session = await ctx.sessions.get(request.agentId);
  const holds = (task: Task) =>
    session?.sessionId === request.sessionId &&
    session.endedAt === undefined &&
    session.held[task.taskId] === reservedAt;
  const orphans = granted.filter((task) => !holds(task));
  for (const task of orphans) {
    ctx.log.warn('a grant landed after its session ended; taking it back', { taskId: task.taskId });
    await reclaimTask(ctx, task.taskId, { reason: 'session', task });
  }
  return granted.filter(holds);
}

/** A claim numbered at or below one that already reserved in the session: its agent has moved on. */
const outrun = (session: AgentSession, claimSeq: number | undefined): boolean =>
  claimSeq !== undefined && session.claimSeq !== undefined && claimSeq <= session.claimSeq;

const freeSlots = (session: AgentSession) => session.maxConcurrency - Object.keys(session.held).length;

const logged = (ctx: SchedulerContext, what: string) => (error: unknown) =>
  ctx.log.warn(`${what} failed`, { error: errorName(error) });

async function liveSession(ctx: SchedulerContext, request: ClaimRequest, now: number): Promise<AgentSession> {
  const session = await ctx.sessions.get(request.agentId);
  if (!session || session.sessionId !== request.sessionId || !canClaimUnder(session, now)) {
    throw new SessionLostError('the session expired or was replaced; open a new session', {
      context: { agentId: request.agentId },
    });
  }
  return session;
}

/** When each SQS queue (by URL) was last found empty, per context: one per function instance. */
const foundEmpty = new WeakMap<SchedulerContext, Map<string, number>>();

/**
 * Reads up to `capacity` hints: priority tiers in the claim order (see `claimOrder`), and within a tier the
 * agent's queues starting at a random one so no queue is always last. Tiers found empty in the last
 * `emptyTierRecheckMs` are read only if the others did not fill the claim.
 */
async function receiveHints(ctx: SchedulerContext, queues: readonly string[], capacity: number) {
  const hints: ReceivedHint[] = [];
  const turns: ReceivedTurn[] = [];
  const poison: Parameters<SchedulerContext['queues']['delete']>[0][number][] = [];
  const offset = Math.floor(ctx.random() * queues.length);
  const rotated = [...queues.slice(offset), ...queues.slice(0, offset)];
  const tiers = claimOrder(ctx.random(), ctx.settings.priorityWeights).flatMap((priority) =>
    rotated.map((queue) => ({ queue, priority, key: `${queue}/${priority}` })),
  );
  const empty = foundEmpty.get(ctx) ?? new Map<string, number>();
  foundEmpty.set(ctx, empty);
  const now = ctx.now();
  const recentlyEmpty = (key: string) =>
    (empty.get(key) ?? -Infinity) > now - ctx.settings.emptyTierRecheckMs;
  const skipped = tiers.filter((tier) => recentlyEmpty(tier.key));
  for (const tier of [...tiers.filter((t) => !recentlyEmpty(t.key)), ...skipped]) {
    const wanted = capacity - hints.length - turns.length;
    if (wanted <= 0) break;
    const batch = await ctx.queues.receive(tier.queue, tier.priority, {
      max: wanted,
      visibilityTimeoutSeconds: ctx.settings.claimVisibilityTimeoutSeconds,
      waitTimeSeconds: ctx.settings.receiveWaitSeconds,
    });
    if (batch.hints.length === 0 && batch.turns.length === 0 && batch.poison.length === 0)
      empty.set(tier.key, now);
    else empty.delete(tier.key);
    hints.push(...batch.hints);
    turns.push(...batch.turns);
    poison.push(...batch.poison);
  }
  if (poison.length > 0) await ctx.queues.delete(poison).catch(logged(ctx, 'delete unreadable messages'));
  return { hints, turns };
}

/**
 * Reserves as many of `taskIds` as the session has room for, dropping the stale entries in the same write. A
 * condition failure means a parallel claim of the same agent changed the session first: work from the session
 * as it now is (returned with the failure) and try again.
 */
async function reserve(
  ctx: SchedulerContext,
  session: AgentSession,
  taskIds: readonly string[],
  stale: ReadonlyMap<string, number>,
  now: number,
  claim: Pick<ClaimRequest, 'claimId' | 'claimSeq'>,
): Promise<{ has(taskId: string): boolean } | { replayFrom: AgentSession; claimId: string }> {
  const { claimId, claimSeq } = claim;
  let current = session;
  for (let round = 0; round < 3; round++) {
    const held = current.held;
    const drop = new Map([...stale].filter(([id, reservedAt]) => held[id] === reservedAt));
    const room = freeSlots(current) + drop.size;
    const fitting = taskIds.filter((id) => !(id in held) || drop.has(id)).slice(0, Math.max(0, room));
    if (fitting.length === 0) break;
    const add = new Map(fitting.map((id) => [id, drop.get(id)]));
    for (const id of fitting) drop.delete(id);
    const written = await ctx.sessions.reserve(current.agentId, current.sessionId, {
      add,
      drop,
      maxConcurrency: current.maxConcurrency,
      now,
      // Never shorter than it is: a heartbeat decided after this claim may have landed first.
      expiresAt: Math.max(now + ctx.settings.leaseTtlSeconds * 1_000, current.expiresAt),
      ...(claimId === undefined
        ? {}
        : {
            claim: {
              id: claimId,
              seen: current.claims,
              ...(claimSeq === undefined ? {} : { seq: claimSeq }),
            },
          }),
    });
    if (written.ok) return { has: (id) => add.has(id) };
    if (
      !written.current ||
      written.current.sessionId !== session.sessionId ||
      !canClaimUnder(written.current, now)
    ) {
      throw new SessionLostError('the session expired or was replaced; open a new session');
    }
    if (claimId !== undefined && written.current.claims?.[claimId] !== undefined)
      return { replayFrom: written.current, claimId };
    if (outrun(written.current, claimSeq)) break;
    current = written.current;
  }
  return { has: () => false };
}

type GrantOutcome = { kind: 'granted'; task: Task } | { kind: 'stale' } | { kind: 'later'; seconds: number };

/**
 * The grant: `queued → leased`, epoch + 1, owner recorded, with the queue controls that reserved a slot for it
 * (freed at the lease's end); one conditional write.
 */
async function grant(
  ctx: SchedulerContext,
  session: AgentSession,
  taskId: string,
  queue: string,
  now: number,
  claimId: string | undefined,
  queueSlots: readonly string[],
): Promise<GrantOutcome> {
  const written = await ctx.tasks.grant(
    taskId,
    {
      queue,
      agentId: session.agentId,
      sessionId: session.sessionId,
      ...(claimId === undefined ? {} : { claimId }),
      ...(queueSlots.length === 0 ? {} : { queueSlots }),
    },
    now,
  );
  if (written.ok) return { kind: 'granted', task: written.task };
  // No task: hints are sent only after the task is written, so its record was purged. Drop the hint.
  const current = written.current;
  if (!current) return { kind: 'stale' };
  // Refused because this very grant committed: the SDK sent the write again after its answer was lost.
  if (isOwnGrant(current, session, now, claimId)) return { kind: 'granted', task: current };
  if (current.status === 'queued' && current.expiresAt !== undefined && current.expiresAt <= now) {
    // Its deadline to start passed in line: it ends now rather than at the supervisor's next pass.
    await expireTask(ctx, current).catch(logged(ctx, 'expire a task'));
    return { kind: 'stale' };
  }
  if (current.status === 'queued' && current.queue === queue && current.notBefore !== undefined) {
    const waitMs = current.notBefore - now;
    // Early hint: hide it until the task is due, or drop it when reconcile will send one later anyway.
    return waitMs <= LIMITS.sqsMaxDelaySeconds * 1_000
      ? { kind: 'later', seconds: waitMs / 1_000 }
      : { kind: 'stale' };
  }
  return { kind: 'stale' };
}

/**
 * The task as this grant leaves it: leased to this session, by this claim, at this grant time. No other grant can
 * leave it so: the session's reservation of the task, made at that time, keeps any other claim of the session
 * from granting it until the entry goes, and a later grant writes a later time.
 */
const isOwnGrant = (task: Task, session: AgentSession, now: number, claimId: string | undefined): boolean =>
  task.status === 'leased' &&
  task.owner === session.agentId &&
  task.sessionId === session.sessionId &&
  task.leasedAt === now &&
  task.claimId === claimId;

/** Attaches payloads; a task whose payload is gone (past its retention) cannot run and is marked dead. */
async function withPayloads(ctx: SchedulerContext, granted: readonly Task[]): Promise<ClaimedTask[]> {
  if (granted.length === 0) return [];
  const [payloads, inputs] = await Promise.all([
    ctx.payloads.getPayloads(granted),
    (async () => {
      const budget = { bytes: DEPENDENCY_RESULTS_BYTES };
      const all = [];
      for (const task of granted) all.push(await dependencyInputs(ctx, task, budget));
      return all;
    })(),
  ]);
  const claimed: ClaimedTask[] = [];
  for (const [index, task] of granted.entries()) {
    const dependencies = inputs[index];
    const payload = payloads.get(task.taskId);
    if (payload === undefined) {
      await markDead(ctx, task, 'the payload no longer exists');
      continue;
    }
    claimed.push({
      taskId: task.taskId,
      queue: task.queue,
      priority: task.priority,
      payload: JSON.parse(payload),
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
    });
  }
  return claimed;
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

interface Examined {
  /** Entries standing for no lease any more, with the reservation time observed. */
  readonly stale: Map<string, number>;
  /** Entries whose task this session holds now, with the epoch of its lease. */
  readonly heldByUs: Map<string, number>;
}

const merge = (a: Examined, b: Examined): Examined => ({
  stale: new Map([...a.stale, ...b.stale]),
  heldByUs: new Map([...a.heldByUs, ...b.heldByUs]),
});

/**
 * Sorts `held` entries by reading their tasks. An entry is stale when its task is not leased to this session
 * and either the grant made for this very reservation has landed and ended (the task still names this session
 * and a grant time equal to the reservation time), or the reservation is older than the grace period, past
 * which no claim is still deciding on it. A younger entry with no landed grant may belong to a claim in flight
 * and is kept. Eventually consistent reads are enough: an old view only keeps an entry longer.
 */
async function examine(
  ctx: SchedulerContext,
  session: AgentSession,
  taskIds: readonly string[],
  now: number,
): Promise<Examined> {
  const examined: Examined = { stale: new Map(), heldByUs: new Map() };
  if (taskIds.length === 0) return examined;
  const graceStart = now - ctx.settings.reservationGraceSeconds * 1_000;
  const tasks = await ctx.tasks.getMany(taskIds, { consistent: false });
  for (const id of taskIds) {
    const reservedAt = session.held[id];
    if (reservedAt === undefined) continue;
    const task = tasks.get(id);
    const ours = task?.sessionId === session.sessionId;
    if (ours && task?.status === 'leased') examined.heldByUs.set(id, task.leaseEpoch);
    else if ((ours && task?.leasedAt === reservedAt) || reservedAt < graceStart)
      examined.stale.set(id, reservedAt);
  }
  return examined;
}
