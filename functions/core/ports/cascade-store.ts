/**
 * Where a cancellation that reaches a task's descendants keeps its walk (`cancel` with `cascade: true`): the tasks
 * still to be walked (whose children are still to be looked at), counters of its progress, and the list of walks
 * not finished, which the supervisor takes up. The children of a task are found by its `parentTaskId`.
 */

/** How far a walk has come. */
export interface CascadeProgress {
  readonly rootTaskId: string;
  readonly startedAt: number;
  /** Descendants it cancelled (open ones only: ended ones are left as they ended). */
  readonly cancelled: number;
  /** Tasks whose children are still to be looked at, about (a walk step done twice counts twice). */
  readonly pending: number;
  readonly finishedAt?: number;
}

export interface CascadeStore {
  /** Begins the walk from `rootTaskId` (its first task to walk: the root); the same again changes nothing. */
  start(rootTaskId: string, now: number, purgeAt: number): Promise<void>;
  /** Up to `limit` tasks still to walk. */
  toWalk(rootTaskId: string, limit: number): Promise<string[]>;
  /**
   * Tasks were walked: the children each had are to be walked in their place; `cancelled` of all those children were
   * cancelled.
   */
  walked(
    rootTaskId: string,
    steps: readonly { readonly walked: string; readonly children: readonly string[] }[],
    cancelled: number,
    purgeAt: number,
  ): Promise<void>;
  /** Nothing is left to walk: the walk leaves the open list. */
  finish(rootTaskId: string, now: number): Promise<void>;
  progress(rootTaskId: string): Promise<CascadeProgress | undefined>;
  /** Walks not finished, oldest first. */
  open(limit: number): Promise<string[]>;
  /** The children of `parentTaskId`, oldest first, as the children index has them (eventually consistent): every one, or the first `limit`. */
  childrenOf(parentTaskId: string, limit?: number): Promise<string[]>;
}
