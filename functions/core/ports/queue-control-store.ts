/**
 * Where each queue's control is kept: whether it is paused, its limits, and what enforcing them needs (the slots
 * reserved by claims and the token bucket), in one record per queue so that a claim's admission is one write.
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
  readonly concurrency?: { readonly max: number; readonly stale: ReadonlyMap<string, number> };
  /** Take from the token bucket: what it holds after the take, and the time of the take. */
  readonly tokens?: { readonly left: number; readonly at: number };
}

export interface QueueControlStore {
  /** The queue's control; absent when none was set. */
  get(queue: string, options?: ReadOptions): Promise<StoredQueueControl | undefined>;
  /** Every queue control that was set. */
  list(): Promise<StoredQueueControl[]>;
  /** Pauses or resumes the queue at `now`, leaving its other settings alone; returns the control as it is now. */
  setPaused(queue: string, paused: boolean, now: number): Promise<StoredQueueControl>;
  /** Replaces the queue's limits at `now`, leaving its other settings alone; returns the control as it is now. */
  setLimits(queue: string, limits: QueueLimits, now: number): Promise<StoredQueueControl>;
  /** The queue's reserved slots and token bucket as they are now. */
  readAdmission(queue: string): Promise<QueueAdmissionState>;
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
}
