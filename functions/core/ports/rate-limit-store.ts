/**
 * Where named rate limits are kept (`#domain/rate-limits`): the limits operators set, in one item that claims of
 * limited tasks read whole, and each limit's windows (the units taken and settled in them), in the limit's own
 * partition. The windows are written by grants and settlements, with the task, in one transaction
 * (`TaskStore.grant`, `TaskStore.finish`).
 */
import type { Priority } from '#domain/priority';
import type { RateLimitDefinition } from '#domain/rate-limits';

/** A task waiting for a limit's units: what it takes to send its hint again. */
export interface WaitingTask {
  readonly taskId: string;
  readonly queue: string;
  readonly priority: Priority;
  readonly leaseEpoch: number;
}

/** A window's use by one key (`''`: a limit not per key). */
export interface WindowUse {
  readonly key: string;
  readonly used: number;
}

export interface RateLimitStore {
  /** The limits operators set, by name. */
  definitions(options?: { readonly consistent?: boolean }): Promise<Map<string, RateLimitDefinition>>;
  /**
   * Sets a limit's terms; refused (false) when the item already holds `most` limits and this is not one of them.
   */
  setDefinition(definition: RateLimitDefinition, most: number): Promise<boolean>;
  /**
   * Records that a limit (one key of it: `''` for a limit not per key) had no room, at `at`, unless it was recorded
   * at or after `since` already. True when this is the first record since then.
   */
  noteSaturation(
    name: string,
    key: string,
    note: { readonly at: number; readonly since: number; readonly purgeAt: number },
  ): Promise<boolean>;
  /** Records a task waiting for the limit's units, until `purgeAt` (epoch seconds; its window's record's). */
  noteWaiting(name: string, task: WaitingTask, purgeAt: number): Promise<void>;
  /** Up to `limit` tasks recorded as waiting for the limit. */
  waiting(name: string, limit: number): Promise<WaitingTask[]>;
  /** Forgets tasks recorded as waiting (their hints were sent again). */
  forgetWaiting(name: string, taskIds: readonly string[]): Promise<void>;
  /** Every key's use of the limit's window starting at `window`, up to `limit` keys. */
  windowUse(name: string, window: number, limit: number): Promise<WindowUse[]>;
}
