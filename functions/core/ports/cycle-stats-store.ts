/**
 * Where the supervisor's cumulative figures are kept: one record for the whole scheduler, added to by every pass in
 * one write, so that passes that overlap (two at once, or in two function instances) both count.
 */
import type { CycleFigures, CycleIds } from '../cycle-figures';
import type { PassError } from '../pass-errors';

/** One pass as recorded: when it started, how long it took, its figures and their ids, and its errors kept. */
export interface PassRecord {
  readonly at: number;
  readonly durationMs: number;
  readonly figures: CycleFigures;
  readonly ids: CycleIds;
  readonly errors: readonly PassError[];
}

/** The record as stored: the totals over every pass, the last pass recorded, and the last errors a pass kept. */
export interface StoredCycleStats {
  readonly passes: number;
  readonly totals: CycleFigures;
  /** The pass whose record was written last (of two that overlap, the one that ended last). */
  readonly lastPass?: Omit<PassRecord, 'errors'>;
  /** The errors of the last pass that met any, and when it started. */
  readonly lastErrors?: { readonly at: number; readonly errors: readonly PassError[] };
}

export interface CycleStatsStore {
  /** Adds a pass to the totals and makes it the last pass (and, if it met errors, the last errors): one write. */
  add(pass: PassRecord): Promise<void>;
  /** The record; undefined before the first pass. Eventually consistent. */
  get(): Promise<StoredCycleStats | undefined>;
}
