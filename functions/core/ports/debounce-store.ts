/**
 * Debounce windows (see `core/debounce.ts`): per queue, key and specification, the record that names the task the
 * window's submissions collapse into, and per idempotency key what that submission was answered. The window's task
 * itself is a task like any other, with a few more attributes: it is created with its record, in one transaction,
 * and joined by a conditional write of its state item.
 */
import type { Task } from '#domain/task';

/** Which window: a queue, a key, and the hash of the specification its submissions share (all but the payload). */
export interface DebounceRef {
  readonly queue: string;
  readonly key: string;
  readonly specOf: string;
}

/** A window as its record names it. */
export interface DebounceWindow {
  /** The task the window's submissions collapse into. */
  readonly taskId: string;
  /** The task takes no submission past this time: its first submission plus `maxWaitSeconds`. */
  readonly closesBy: number;
}

/** What a submission named by an idempotency key was answered, kept a day for its retries. */
export interface DebouncedSubmission {
  readonly taskId: string;
  readonly specHash: string;
  /** It opened its window (its task was created by it), rather than joined one. */
  readonly opened: boolean;
}

/** What a submission that joins a window writes on the window's task: the latest payload, and its new time. */
export interface DebounceJoin {
  /** The joining submission's specification hash: its payload item is named by it, and written already. */
  readonly specHash: string;
  readonly payloadBytes: number;
  readonly payloadInObject: boolean;
  /** When the task may now be claimed: the window quiet from now on, or its longest wait. */
  readonly notBefore: number;
  /** When the new payload item may be purged (epoch seconds). */
  readonly payloadPurgeAt: number;
  /** With `ttlSeconds`: the deadline to start, counted again from `notBefore`. */
  readonly expiresAt?: number;
}

export interface DebounceStore {
  /**
   * The window's record and, for an idempotency key, what its submission was answered: eventually consistent unless
   * `consistent` (one request either way).
   */
  read(
    ref: DebounceRef,
    submissionKey: string | undefined,
    consistent: boolean,
  ): Promise<{ window?: DebounceWindow; submission?: DebouncedSubmission }>;

  /**
   * Creates the window's task (its state item, with `dueAt` as a submission gives it) and points the record at it,
   * in one transaction, if the record still names `replacing.taskId` (no `replacing`: if there is none). With
   * `replacing.close`, the task it names is queued, never granted and no longer takes submissions at `now` (its
   * time has come): the same transaction marks it closed, so that no submission whose clock is behind joins it
   * after the next window opened. False when a condition failed (another submission opened a window first, or the
   * task to close changed): nothing was written.
   */
  open(
    ref: DebounceRef,
    task: Task,
    dueAt: number | undefined,
    replacing: { readonly taskId: string; readonly close: boolean } | undefined,
    now: number,
  ): Promise<boolean>;

  /**
   * Joins the window's task: one conditional write of its state item, that holds only while the task is still the
   * window's (queued, never granted, of this key and specification, not closed) and not yet claimable at `now`, and
   * `join`'s time is within its longest wait. The task as written, or as it stands when refused (absent if gone).
   */
  join(
    ref: DebounceRef,
    taskId: string,
    join: DebounceJoin,
    now: number,
  ): Promise<{ readonly ok: true; readonly task: Task } | { readonly ok: false; readonly current?: Task }>;

  /**
   * Keeps what a submission named by an idempotency key was answered, until `purgeAt` (epoch seconds), unless one is
   * kept already: then that one, unchanged.
   */
  remember(
    ref: DebounceRef,
    submissionKey: string,
    submission: DebouncedSubmission,
    purgeAt: number,
  ): Promise<DebouncedSubmission | undefined>;
}
