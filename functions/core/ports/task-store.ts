/**
 * Where a task's state is kept: the record that every transition rewrites. (Its payload, its dependencies and its
 * lane have stores of their own: `payload-store.ts`, `dependency-store.ts`, `lane-store.ts`.)
 *
 * Every write here is one conditional write. A write that changes a task's status is allowed from the statuses the
 * domain's transition table (`TRANSITIONS` in `task-status.ts`) lists for its event and destination, and from no
 * other: the store derives that part of the condition from the table. The rest of the condition, the fence, comes
 * with the call: the lease an owner presents, or the status and epoch the supervisor or an operator observed.
 * A refused write changes nothing and answers the task as it is now, so the caller can tell why.
 */
import type { Priority } from '#domain/priority';
import type { RateTaken } from '#domain/rate-limits';
import type { Task, TaskError } from '#domain/task';

/** What a conditional write answers: the task as written, or as found when the condition failed. */
export type TaskWrite =
  | { readonly ok: true; readonly task: Task }
  | {
      readonly ok: false;
      readonly current?: Task;
      /** A grant that took units: the window (of `Grant.rateTakes`, by index) that did not have them. */
      readonly short?: { readonly index: number; readonly used?: number };
      /** A transaction met another on one of its items: nothing was written. */
      readonly conflict?: true;
    };

/** Units a grant takes from a rate limit's window, with the window's bounds (see `#domain/rate-limits`). */
export interface WindowTake {
  readonly taken: RateTaken;
  /** The units the window holds: the take lands while what it took stays within them. */
  readonly capacity: number;
  /** The window's end, and when its record may be purged (epoch seconds). */
  readonly end: number;
  readonly purgeAt: number;
}

/** Units an attempt's usage adds to (or, below zero, gives back to) a window of a rate limit. */
export interface WindowSettlement {
  readonly name: string;
  readonly key?: string;
  readonly window: number;
  readonly end: number;
  readonly purgeAt: number;
  readonly delta: number;
}

/** The lease an owner presents: its write lands only while that lease is the task's and has not run out. */
export interface OwnerFence {
  readonly agentId: string;
  readonly sessionId: string;
  readonly leaseEpoch: number;
}

/** What the supervisor or an operator read: its write lands only if the task is still at that status and epoch. */
export type Observed = Pick<Task, 'taskId' | 'status' | 'leaseEpoch'>;

/** Back to `queued`. */
export interface Requeue {
  readonly status: 'queued';
  /** When it may be claimed again; at or before the write's `now`, at once. */
  readonly claimableAt: number;
  /** When the supervisor should next look at it. */
  readonly dueAt: number;
  /** Its hint is sent now (SQS can carry the delay), so the record says it was dispatched. */
  readonly sentNow: boolean;
}

/** To a terminal status: the task leaves the due index, and may be purged after the retention period. */
export interface Ending {
  readonly status: 'succeeded' | 'dead' | 'cancelled' | 'expired';
  /** When DynamoDB may purge it (seconds since the epoch, as its TTL attribute). */
  readonly purgeAt: number;
  /**
   * Something follows from this end (an `onFailure` to submit): the task stays in the due index, due then, so
   * that the supervisor makes the follow-up if the caller's own attempt is lost. `settleEnd` takes it out.
   */
  readonly followUpAt?: number;
}

/** Where a finish, a reclaim or a cancellation leaves the task. */
export type Destination = Requeue | Ending;

/** The owner's writes (`complete`, `fail`, `release`), with what each records. */
export type OwnerFinish =
  | { readonly event: 'complete'; readonly to: Ending & { status: 'succeeded' }; readonly result?: string }
  | {
      readonly event: 'fail';
      readonly to: Requeue | (Ending & { status: 'dead' });
      readonly error: TaskError;
    }
  /**
   * A release gives back the attempt it took: the task runs again with as many attempts left as before. A snooze
   * (a release with a delay) is counted.
   */
  | { readonly event: 'release'; readonly to: Requeue; readonly snooze?: boolean };

/** An owner's write, with the usage it settles in the same transaction (`complete` and `fail` only). */
export type SettledFinish = OwnerFinish & { readonly settle?: readonly WindowSettlement[] };

/** A task taken from its lease by the scheduler, not its owner: why, where it goes, and the error it records. */
export interface TakingBack {
  readonly event: 'reclaim' | 'fail';
  readonly to: Requeue | (Ending & { status: 'dead' });
  readonly error: TaskError;
}

/** A claim's grant: the owner, and the claim it answers (recorded so that a retried claim finds it). */
export interface Grant {
  readonly queue: string;
  readonly agentId: string;
  readonly sessionId: string;
  readonly claimId?: string;
  /** The queue controls that reserved a slot for this grant, at its time (see `Task.queueSlots`). */
  readonly queueSlots?: readonly string[];
  /**
   * The units the grant takes from the task's rate limits, in one transaction with it. Absent: the grant is refused
   * for a task that names rate limits (the claim did not know it did); empty: it names none in force.
   */
  readonly rateTakes?: readonly WindowTake[];
  /**
   * The name (`requirementsKey`) of the requirement set the claim matched against its session's labels: a task that
   * requires labels is granted only if it requires exactly these. Absent: only a task that requires none.
   */
  readonly requireKey?: string;
}

/** The starvation ladder's step, from the level observed. */
export interface LadderClimb {
  readonly fromLevel: number;
  readonly toLevel: number;
  /** The more urgent priority it is promoted to, if it is. */
  readonly priority?: Priority;
  readonly needsAttention: boolean;
}

export interface ReadOptions {
  /** Read after every write that committed (the default); `false` may miss the latest, at half the cost. */
  readonly consistent?: boolean;
}

/** Where a page of a listing continues; opaque to the caller. */
export type ListingCursor = Record<string, unknown>;

export interface TaskStore {
  // Reads.
  get(taskId: string, options?: ReadOptions): Promise<Task | undefined>;
  getMany(taskIds: readonly string[], options?: ReadOptions): Promise<Map<string, Task>>;
  /** The partitions of the due index: a sweep queries each. */
  readonly dueShards: readonly string[];
  /** Task ids in one due partition whose time to be looked at has come. */
  queryDue(dueShard: string, dueBy: number, limit: number): Promise<string[]>;
  /**
   * One page of a due partition, every entry whatever its due time (every open task it lists), from `startKey` (the
   * `startKey` the page before answered; from the first without); `startKey` in the answer while more follow. A
   * `startKey` that is not one a page of this partition answered is refused (`ValidationError`) before any read.
   */
  pageDue(
    dueShard: string,
    from: { startKey?: ListingCursor; limit: number },
  ): Promise<{ taskIds: string[]; startKey?: ListingCursor }>;
  /** The partitions of the listing of `queue`. */
  listedShards(queue: string): readonly string[];
  /** One page of a listing partition, newest first, from `startKey` (where the page before ended) or from the newest created at or before. */
  queryListed(
    listShard: string,
    from: { atOrBefore?: number; startKey?: ListingCursor; limit: number },
  ): Promise<{ entries: { taskId: string; createdAt: number }[]; startKey?: ListingCursor }>;

  /** The list partitions of `queue` that the list walk goes through: those of layout 2's payload items. */
  walkPartitions(queue: string): readonly string[];
  /**
   * List entries of a list partition, oldest first: after `after` (a `place` answered before; from the first
   * without), and created at or before `upTo` when given.
   */
  queryWalk(
    partition: string,
    from: { after?: string; upTo?: number; limit: number },
  ): Promise<{ entries: { taskId: string; createdAt: number; place: string }[] }>;

  // Submission.
  /**
   * Creates the task's record, due at `dueAt` (without an entry in the due index when undefined: the list walk
   * gives it one if it needs one), unless one exists; then answers the existing task.
   */
  create(
    task: Task,
    dueAt: number | undefined,
  ): Promise<{ created: true } | { created: false; existing: Task }>;
  /**
   * `create`, fenced by the lease on another task (its parent) that its agent presents: in one transaction with a
   * check that the lease still holds at `now`. A parent lease lost refuses the write, whether or not the task exists.
   */
  createUnder(
    task: Task,
    dueAt: number | undefined,
    parent: OwnerFence & { readonly taskId: string },
    now: number,
  ): Promise<{ created: true } | { created: false; existing: Task } | { parentLost: true }>;

  // Status changes, each allowed from the statuses the transition table lists.
  /**
   * `claim`: queued → leased in `grant.queue`, if claimable at `now` and the grant of the session's reservation at
   * `now` (the grant time is the reservation's) is not barred; the epoch and the attempt grow by one.
   */
  grant(taskId: string, grant: Grant, now: number): Promise<TaskWrite>;
  /**
   * Bars the grant a session's reservation of the task (made at `reservedAt`) would make, unless that grant has
   * landed: the reservation is given up (its session ended, or the entry was dropped as stale) while a claim may
   * still be between it and its grant. Refused, with the task as it is, when the grant has landed; refused without
   * a task when there is none.
   */
  barGrant(
    taskId: string,
    reservation: { readonly sessionId: string; readonly reservedAt: number },
  ): Promise<TaskWrite>;
  /** The owner's `complete`, `fail` or `release`, fenced by its lease; records the finish for a retried call. */
  finish(taskId: string, lease: OwnerFence, finish: SettledFinish, now: number): Promise<TaskWrite>;
  /**
   * `reclaim` (the lease ran out or was taken back) or, when the task cannot run, `fail` without its owner:
   * fenced by the epoch observed, and recording why.
   */
  takeBack(observed: Observed, taking: TakingBack, now: number): Promise<TaskWrite>;
  /**
   * An operator's `cancel`, fenced by the status and epoch observed; or the scheduler's, `because` a dependency
   * ended without success.
   */
  cancel(
    observed: Observed,
    to: Ending & { status: 'cancelled' },
    now: number,
    because?: { readonly failedDependency: string; readonly error: TaskError },
  ): Promise<TaskWrite>;
  /** `expire`: the task was not claimed by its deadline; fenced by the status and epoch observed. */
  expire(observed: Observed, to: Ending & { status: 'expired' }, now: number): Promise<TaskWrite>;
  /** What followed from the task's end was done: it leaves the due index (fenced by the status and epoch). */
  settleEnd(observed: Observed): Promise<TaskWrite>;
  /** `unblock`: a waiting task with nothing left to wait for is queued, fenced by the epoch observed. */
  unblock(observed: Observed, to: Requeue, now: number): Promise<TaskWrite>;
  /** An operator's `redrive` of a dead task: queued again with a fresh set of attempts. */
  redrive(observed: Observed, to: Requeue, now: number): Promise<TaskWrite>;

  // Writes that keep the status, fenced the same way.
  /** The owner's progress, kept on the task for the next holder; fenced by its lease. */
  checkpoint(taskId: string, lease: OwnerFence, checkpointJson: string, now: number): Promise<TaskWrite>;
  /**
   * The owner's attempt ends at `deadline` instead, later than it did: fenced by its lease, and by the grant time
   * read (`leasedAt`), from which the task's longest attempt was reckoned.
   */
  extendDeadline(
    taskId: string,
    lease: OwnerFence,
    leasedAt: number,
    deadline: number,
    now: number,
  ): Promise<TaskWrite>;
  /** When the supervisor should next look at the task. */
  lookAgainAt(observed: Observed, dueAt: number): Promise<TaskWrite>;
  /** Gives a task that has none an entry in the due index, at `dueAt`; fenced by the status and epoch observed. */
  armLook(observed: Observed, dueAt: number): Promise<TaskWrite>;
  /** A hint was sent for the queued task: when it becomes visible, and when to look again. */
  recordDispatch(observed: Observed, dispatch: { dispatchedAt: number; dueAt: number }): Promise<TaskWrite>;
  /** The queued task's hint is not in SQS: due at `now`, so the next reconcile sends it. */
  markUnsent(observed: Observed, now: number): Promise<TaskWrite>;
  /** The starvation ladder's step, from the level observed. */
  climbLadder(observed: Observed, climb: LadderClimb): Promise<TaskWrite>;
  /**
   * An operator clears the ladder's mark (`needsAttention`), whatever the task's status: only the mark goes. Its
   * level stays, so the ladder does not mark it again for the same wait; the next requeue resets both. Refused, with
   * the task as it is, when it is not marked; refused without a task when there is none.
   */
  clearAttention(taskId: string): Promise<TaskWrite>;

  // Dependencies: a waiting task's list is on its state item (`dependency-store.ts` keeps the rest).
  /** Strikes a dependency off a waiting task's list, if it is still on it. */
  strikeDependency(taskId: string, dependencyId: string): Promise<TaskWrite>;

  /**
   * Marks the task as watched by a push connection, whatever its state, and answers it as it is after the mark:
   * an ending written later sees the mark, one written before is in the answer. Undefined if there is no task.
   */
  watch(taskId: string): Promise<Task | undefined>;
}
