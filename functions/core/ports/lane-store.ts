/**
 * Fairness between keys (see `#domain/lanes`): the tasks of a lane, in the order they became claimable, and the
 * lane's turn slot, which says whether a turn (one SQS message per lane) is in line.
 */

/** A lane's turn slot: the turn in line (if any), when it is visible, when it was last passed on; the last offer. */
export interface TurnSlot {
  readonly token?: string;
  readonly visibleAt?: number;
  readonly heldAt?: number;
  readonly lastOfferAt?: number;
}

/** A task in a lane: its id, and when it becomes claimable. */
export interface LaneEntry {
  readonly taskId: string;
  readonly readyAt: number;
}

export interface LaneStore {
  /** The oldest tasks of a lane, claimable by `readyBy` (any, without it); an index read, a moment behind. */
  laneTasks(laneId: string, readyBy: number | undefined, limit: number): Promise<LaneEntry[]>;
  /**
   * The lane's turn slot, as an eventually consistent read sees it (a moment behind its last write), or as it is
   * with `consistent`.
   */
  turnSlot(laneId: string, options?: { readonly consistent?: boolean }): Promise<TurnSlot>;
  /**
   * Records that a task of the lane became claimable, and answers the lane's turn slot as it is after. With
   * `ifEmpty`, the same write puts that turn in the slot if it holds none (`heldAt` `now`): the answer then names
   * it, and its caller sends it.
   */
  noteOffer(
    laneId: string,
    now: number,
    ifEmpty?: { readonly token: string; readonly visibleAt: number },
  ): Promise<TurnSlot>;
  /**
   * Puts turn `token` in the slot, visible at `visibleAt`, if the slot still holds `replacing` (undefined: no turn).
   * True if it did: its caller sends that turn.
   */
  takeTurnSlot(
    laneId: string,
    slot: { readonly token: string; readonly visibleAt: number; readonly now: number },
    replacing: string | undefined,
  ): Promise<boolean>;
  /**
   * Turn `token` goes back in line, visible at `visibleAt`: true if the slot is still that turn's (and, with
   * `offeredSince`, a task was offered since then).
   */
  holdTurnSlot(
    laneId: string,
    token: string,
    visibleAt: number,
    now: number,
    offeredSince?: number,
  ): Promise<boolean>;
  /**
   * Empties the slot if it is still turn `token`'s and no task was offered since `quietSince`: `offered` when one
   * was (the lane may hold it, not yet in the index), `superseded` when another turn holds the slot.
   */
  freeTurnSlot(
    laneId: string,
    token: string,
    quietSince: number,
  ): Promise<'freed' | 'offered' | 'superseded'>;
}
