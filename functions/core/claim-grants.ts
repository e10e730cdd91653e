/**
 * What a claim does with the tasks its session reserved: the queues' limits (concurrency, rate, per key) admit
 * some; each admitted task is granted with its conditional write (`queued → leased`, epoch + 1); then the hints and
 * the slots no grant came of are settled, in housekeeping that must not lose a grant.
 */
import type { ReceivedHint } from '#domain/hint';
import { requirementsKey, requiresAny } from '#domain/labels';
import type { AgentSession, Task } from '#domain/task';
import { LIMITS } from '#domain/task-spec';
import { type HintFates, logged, type SortedHints } from './claim-hints';
import type { SchedulerContext } from './context';
import { expireTask } from './follow-ups';
import type { TaskWrite, WindowTake } from './ports/task-store';
import type { unpausedQueues } from './queue-controls';
import { admit, hasLimits, releaseQueueSlots, takeSlots } from './queue-limits';
import { noteSaturation, takesFor } from './rate-limits';
import { admitKeys, isStandIn, offerTurn, type TakenTurn } from './turns';

/** A task waiting longer than this for a rate limit's units is recorded with the limit (`waitForUnits`). */
const RECORDED_WAIT_SECONDS = 60;

/** Seconds a hint is hidden when its queue's concurrency or rate limit refused it. */
const LIMITED_RETRY_SECONDS = 1;

export interface Admission {
  /** Reserved tasks a queue's concurrency or rate limit refused now. */
  readonly refused: ReadonlySet<string>;
  /**
   * The slots taken in each item of slots of a control with a concurrency limit (a queue's, or a key's), by task,
   * with their reservation time.
   */
  readonly queueSlots: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

/** Queue limits (concurrency, rate) admit some of what the session reserved; the rest waits a moment. */
export async function admitUnderQueueLimits(
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
    const admitted = control ? await admit(ctx, control, taskIds, now) : new Map();
    takeSlots(queueSlots, admitted, now);
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
  for (const [item, slots] of keys.slots) queueSlots.set(item, slots);
  for (const id of keys.refused) refused.add(id);
  return { refused, queueSlots };
}

export interface Grants {
  readonly granted: Task[];
  /** Errors of grants whose outcome is unknown (they may have committed). */
  readonly errors: unknown[];
  /** Session slots to free: reserved, but no task of ours came of them. */
  readonly released: Map<string, number>;
  /**
   * Hints that came before their task's time (its time moved later after they were sent: a debounced task joined
   * again), hidden until then: the queue, and the seconds until the task is claimable.
   */
  readonly early: { readonly queue: string; readonly seconds: number }[];
  /**
   * Tasks a rate limit they name had no room for: they wait queued for its next window. By each, the whole seconds
   * until that window ends when it ends within SQS's delay (else undefined).
   */
  readonly limited: Map<string, number | undefined>;
}

/** Each admitted task's grant, all at once; the hints of each get the fate its outcome calls for. */
export async function grantAll(
  ctx: SchedulerContext,
  session: AgentSession,
  /** The claim's id, written on each task it grants. */
  request: { readonly claimId?: string },
  sorted: SortedHints,
  reserved: { has(taskId: string): boolean },
  admission: Admission,
  now: number,
  fates: HintFates,
): Promise<Grants> {
  const grants: Grants = { granted: [], errors: [], released: new Map(), early: [], limited: new Map() };
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
        { ...(hints[0] ?? { queue: '', leaseEpoch: 0 }), taskId },
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
      if (outcome.kind === 'limited') {
        grants.limited.set(taskId, undefined);
        await waitForUnits(ctx, { taskId, leaseEpoch: outcome.leaseEpoch }, outcome, hints, fates, grants);
        return;
      }
      if (outcome.kind === 'later') {
        const [first, ...copies] = hints;
        fates.delete(...copies);
        if (first) fates.returnLater(outcome.seconds, first);
        if (first && outcome.seconds > 0) grants.early.push({ queue: first.queue, seconds: outcome.seconds });
      } else {
        fates.delete(...hints);
      }
    }),
  );
  return grants;
}

/**
 * A task whose rate limit has no room waits queued, using no attempt, until the window ends: its hint hidden until
 * then, with a timed wake for that moment; or, when that is further off than SQS holds a message back, its hint
 * deleted and the supervisor asked to look at it then (it sends a new one).
 */
async function waitForUnits(
  ctx: SchedulerContext,
  task: { readonly taskId: string; readonly leaseEpoch: number },
  { until, take }: { readonly until: number; readonly take: WindowTake },
  hints: readonly ReceivedHint[],
  fates: HintFates,
  grants: Grants,
): Promise<void> {
  const seconds = Math.max(0, until - ctx.now()) / 1_000;
  const [first, ...copies] = hints;
  fates.delete(...copies);
  if (!first) return;
  // A long wait (a budget spent) is recorded with the limit, so that new terms set for it (a budget raised) send it
  // again at once. A rate's wait is a window of seconds: not worth a write at every refusal.
  if (!isStandIn(first) && seconds > RECORDED_WAIT_SECONDS) {
    await ctx.rateLimits
      .noteWaiting(
        take.taken.name,
        { taskId: task.taskId, queue: first.queue, priority: first.priority, leaseEpoch: task.leaseEpoch },
        take.purgeAt,
      )
      .catch(logged(ctx, 'note a task waiting for a rate limit'));
  }
  if (seconds <= LIMITS.sqsMaxDelaySeconds) {
    fates.returnLater(Math.ceil(seconds), first);
    grants.early.push({ queue: first.queue, seconds: Math.ceil(seconds) });
    grants.limited.set(task.taskId, Math.ceil(seconds));
    return;
  }
  await ctx.tasks
    .lookAgainAt({ taskId: task.taskId, status: 'queued', leaseEpoch: task.leaseEpoch }, until)
    .then(() => fates.delete(first))
    // Not moved: the hint stays, back in a while, rather than leave the task with neither.
    .catch(() => fates.returnLater(LIMITS.sqsMaxDelaySeconds, first));
}

/**
 * Housekeeping that must not lose the grants: failures here only delay a hint or a slot. Queue slots and session
 * slots no grant came of are freed; hints are deleted or handed back.
 */
export async function settle(
  ctx: SchedulerContext,
  request: { readonly agentId: string; readonly sessionId: string },
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

type GrantOutcome =
  | { kind: 'granted'; task: Task }
  | { kind: 'stale' }
  | { kind: 'later'; seconds: number }
  /** A rate limit it names has no room until `until`: the task stays queued, at `leaseEpoch`. */
  | { kind: 'limited'; until: number; leaseEpoch: number; take: WindowTake };

/**
 * The grant: `queued → leased`, epoch + 1, owner recorded, with the queue controls that reserved a slot for it
 * (freed at the lease's end); one conditional write.
 */
async function grant(
  ctx: SchedulerContext,
  session: AgentSession,
  hinted: Pick<ReceivedHint, 'taskId' | 'queue' | 'leaseEpoch' | 'rateLimits' | 'require'>,
  now: number,
  claimId: string | undefined,
  queueSlots: readonly string[],
): Promise<GrantOutcome> {
  const { taskId, queue } = hinted;
  const base = {
    queue,
    agentId: session.agentId,
    sessionId: session.sessionId,
    ...(claimId === undefined ? {} : { claimId }),
    ...(queueSlots.length === 0 ? {} : { queueSlots }),
    ...(hinted.require ? { requireKey: requirementsKey(hinted.require) } : {}),
  };
  /** The grant with the units of `rateLimits`, in one transaction; an outcome, or the write to look at. */
  const taking = async (rateLimits: Task['rateLimits'], leaseEpoch: number) => {
    const takes = await takesFor(ctx, { rateLimits }, now);
    const write = await ctx.tasks.grant(taskId, { ...base, rateTakes: takes }, now);
    if (write.ok) return { kind: 'granted', task: write.task } as const;
    if (write.conflict) return { kind: 'later', seconds: 0 } as const;
    const short = write.short && takes[write.short.index];
    if (!short) return write;
    await noteSaturation(ctx, short, now);
    return { kind: 'limited', until: short.end, leaseEpoch, take: short } as const;
  };
  let written: TaskWrite;
  if (hinted.rateLimits) {
    // The hint says what the task takes: the units go with the first grant.
    const outcome = await taking(hinted.rateLimits, hinted.leaseEpoch);
    if ('kind' in outcome) return outcome;
    written = outcome;
  } else {
    written = await ctx.tasks.grant(taskId, base, now);
    if (written.ok) return { kind: 'granted', task: written.task };
    // Refused for naming rate limits the grant did not take (a hint that did not say): again, with their units.
    const named = written.current;
    if (named?.rateLimits && isClaimableIn(named, queue, now)) {
      const outcome = await taking(named.rateLimits, named.leaseEpoch);
      if ('kind' in outcome) return outcome;
      written = outcome;
    }
  }
  // No task: hints are sent only after the task is written, so its record was purged. Drop the hint.
  const current = written.current;
  if (!current) return { kind: 'stale' };
  // A hint of its own for a task that waits in a requirement lane (sent by a function of an earlier release): it is
  // no way to the task, whose lane's turn is; one is put in line, and the hint goes.
  if (!hinted.require && requiresAny(current.require) && isClaimableIn(current, queue, now)) {
    await offerTurn(ctx, current, 0).catch(logged(ctx, 'offer a requirement lane its turn'));
    return { kind: 'stale' };
  }
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
  // Claimable and in this queue, yet refused: this session's grant is barred (the session ended, or the entry
  // was given up, while the claim was deciding). The hint goes back for another claim at once.
  if (current.status === 'queued' && current.queue === queue) return { kind: 'later', seconds: 0 };
  return { kind: 'stale' };
}

/** Queued in `queue`, and claimable at `now` (its time come, its deadline to start not passed). */
const isClaimableIn = (task: Task, queue: string, now: number): boolean =>
  task.status === 'queued' &&
  task.queue === queue &&
  (task.notBefore === undefined || task.notBefore <= now) &&
  (task.expiresAt === undefined || task.expiresAt > now);

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
