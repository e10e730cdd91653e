/**
 * Where the occurrence ledger of each schedule is kept: what happened at each scheduled time (fired with a task,
 * or skipped and why), written once per scheduled time whatever the number of deliveries.
 */

export type OccurrenceStatus = 'fired' | 'skipped';

export interface Occurrence {
  readonly scheduledTime: string;
  readonly status: OccurrenceStatus;
  readonly taskId?: string;
  /** Why it was skipped: `overlap` (a previous run was still going). */
  readonly reason?: string;
  /** When it was recorded (ms). */
  readonly recordedAt: number;
}

/** How one occurrence is added to a ledger read just before. */
export interface OccurrenceEntry {
  /** The ledger was read empty: the write starts it, and is refused if another write started it first. */
  readonly first: boolean;
  /** Scheduled times dropped in the same write: the oldest, past the entries kept. */
  readonly drop: readonly string[];
}

export interface OccurrenceStore {
  /** Every occurrence recorded for `schedule`, in no particular order; read after every write that committed. */
  read(schedule: string): Promise<Occurrence[]>;
  /**
   * Records `occurrence` unless its scheduled time is already recorded (or the ledger was started since it was
   * read empty). Returns whether it was recorded.
   */
  record(schedule: string, occurrence: Occurrence, entry: OccurrenceEntry): Promise<boolean>;
}
