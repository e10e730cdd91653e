/**
 * Where each queue's control is kept: whether it is paused, its limits, and what enforcing them needs (the slots
 * reserved by claims and the token bucket), in one record per queue so that a claim's admission is one write; and,
 * beside them, the scheduler's own control: whether the whole scheduler is paused.
 */
import type { QueueLimits } from '#domain/queue-limits';
import type { ReadOptions } from './task-store';

/** A queue's control as stored. */
export interface StoredQueueControl {
  readonly queue: string;
  readonly paused: boolean;
  /** Absent when the record sets none (the queue's declared limits apply); unreadable limits read as none. */
  readonly limits?: QueueLimits;
  readonly updatedAt?: number;
}

/** The whole scheduler's control as stored. */
export interface StoredSchedulerControl {
  readonly paused: boolean;
  readonly updatedAt?: number;
}

/** What admission starts from: the queue's reserved slots and token bucket, as read. */
export interface QueueAdmissionState {
  /** Task id → reservation time (the grant time its claim writes); absent before the queue's first reservation. */
  readonly held?: Readonly<Record<string, number>>;
  /** Tokens left after the last take; absent before the first take (the bucket starts full). */
  readonly tokens?: number;
  /** When tokens were last taken (ms). */
  readonly tokensAt?: number;
  /** Grows with every take: a take is refused if another took since this state was read. */
  readonly tokensVersion?: number;
  /** The stamp of the spread of slots the item belongs to (`SlotSpread.stamp`); absent for slots in one item. */
  readonly stamp?: string;
}

/** One claim's reservation on a queue, made from a `QueueAdmissionState`. */
export interface QueueReservation {
  /** The tasks admitted, each reserved at `at`. */
  readonly taskIds: readonly string[];
  readonly at: number;
  /**
   * Keep the reserved slots within `max`: the entries in `stale` (task id → reservation time, as read) stand for
   * no lease any more and are dropped in the same write, refused if any has changed since. A task of `taskIds`
   * may be in `stale`: its entry is replaced by the new reservation.
   */
  readonly concurrency?: {
    readonly max: number;
    readonly stale: ReadonlyMap<string, number>;
    /** The spread the reservation was made under: refused if the item records another (`SlotSpread.stamp`). */
    readonly stamp?: string;
  };
  /** Take from the token bucket: what it holds after the take, and the time of the take. */
  readonly tokens?: { readonly left: number; readonly at: number };
}

/**
 * One item's part in a change of how a limit's slots are spread: refused unless the item is still as read (its
 * stamp, no more entries than then, the stale entries it drops still there).
 */
export interface SlotItemChange {
  /** The item, by its name (`slotItemName`). */
  readonly name: string;
  /** What was read: its stamp, and how many entries it held (absent: no slots map, or no item). */
  readonly seen: { readonly stamp?: string; readonly size?: number };
  /** The stamp it records after the change; absent removes it. */
  readonly stamp?: string;
  /** Entries added: copies of entries another item holds above its new share. */
  readonly add: ReadonlyMap<string, number>;
  /** Entries that stand for no lease any more, removed. */
  readonly drop: ReadonlyMap<string, number>;
}

export interface QueueControlStore {
  /** The queue's control; absent when none was set. */
  get(queue: string, options?: ReadOptions): Promise<StoredQueueControl | undefined>;
  /** Every queue control that was set. */
  list(): Promise<StoredQueueControl[]>;
  /** Pauses or resumes the queue at `now`, leaving its other settings alone; returns the control as it is now. */
  setPaused(queue: string, paused: boolean, now: number): Promise<StoredQueueControl>;
  /** The scheduler's control; absent when none was set (the scheduler runs). */
  getScheduler(options?: ReadOptions): Promise<StoredSchedulerControl | undefined>;
  /** Pauses or resumes the whole scheduler at `now`; returns its control as it is now. */
  setSchedulerPaused(paused: boolean, now: number): Promise<StoredSchedulerControl>;
  /** Replaces the queue's limits at `now`, leaving its other settings alone; returns the control as it is now. */
  setLimits(queue: string, limits: QueueLimits, now: number): Promise<StoredQueueControl>;
  /**
   * The queue's reserved slots and token bucket as they are now. `queue` may also name another item of a control's
   * slots (`slotItemName`).
   */
  readAdmission(queue: string): Promise<QueueAdmissionState>;
  /** Several items of slots as they are now, by name; an item that does not exist reads as empty. */
  readSlotItems(names: readonly string[]): Promise<Map<string, QueueAdmissionState>>;
  /** Changes how a limit's slots are spread, all items at once; false if any of them changed since it was read. */
  respread(changes: readonly SlotItemChange[]): Promise<boolean>;
  /**
   * Reserves slots and takes tokens in one write, refused (false) if the slots or the bucket are no longer as
   * `seen`: two claims cannot both take the last slot or spend the same tokens.
   */
  reserve(queue: string, seen: QueueAdmissionState, reservation: QueueReservation): Promise<boolean>;
  /**
   * Frees the given slots (task id → reservation time), unless any of them has changed since; nothing when the
   * queue has no control. One write, billed at the whole item's size.
   */
  release(queue: string, slots: ReadonlyMap<string, number>): Promise<void>;
  /**
   * Where the list walk of `queue` stands in each of its list partitions (a place `TaskStore.queryWalk` answered),
   * kept beside the queue's control in an item of its own; empty before the first walk.
   */
  readWalk(queue: string): Promise<Readonly<Record<string, string>>>;
  /** Records where the list walk of `queue` stands; a later walk goes on from there. */
  saveWalk(queue: string, places: Readonly<Record<string, string>>, now: number): Promise<void>;
  /**
   * Marks that a worker was asked for, for `queue` and the requirement set named `requirements` (a hash), at
   * `note.at`: one conditional write, refused (false) if it was asked for after `note.since`, so passes and
   * function instances that race ask once. The mark goes at `note.purgeAt` (epoch seconds).
   */
  noteSpawnRequest(
    queue: string,
    requirements: string,
    note: { readonly at: number; readonly since: number; readonly purgeAt: number },
  ): Promise<boolean>;
}
