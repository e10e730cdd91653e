/**
 * Where what links tasks is kept: for each task, the records of the tasks that wait for it (its dependents), the
 * inputs its dependencies left it when they ended, and its result kept once for all its dependents. A waiting
 * task's own list of what it waits for is on its state item (`TaskStore.strikeDependency`).
 */
import type { DependencyOutcome, Task } from '#domain/task';
import type { ListingCursor } from './task-store';

/** How a dependency ended, as kept for its dependent: its result copied, or kept once in its own record. */
export type StoredInput = DependencyOutcome & { readonly resultKept?: true };

export interface DependencyStore {
  /**
   * Records that `dependentId` waits for `taskId`, then marks `taskId` as having dependents, in that order: an
   * end of `taskId` written after the mark finds the record. Answers `taskId` as it is after the mark (an end
   * written before it shows there), or undefined if there is no such task.
   */
  addDependent(taskId: string, dependentId: string, purgeAt: number): Promise<Task | undefined>;
  /** A page of the tasks that wait (or waited) for `taskId`. */
  dependentsOf(
    taskId: string,
    startKey?: ListingCursor,
  ): Promise<{ ids: string[]; startKey?: ListingCursor }>;
  /**
   * Keeps, for the dependent, how its dependency ended; written before the dependency is struck off its list. A
   * result is not copied: `resultKept` says it is in the dependency's result record (`keepResult`).
   */
  putInput(dependentId: string, dependencyId: string, outcome: StoredInput, purgeAt: number): Promise<void>;
  /**
   * How each dependency of the task ended, as kept for it: a result copied into the input (as written before
   * results were kept once), or `resultKept`.
   */
  inputsOf(taskId: string): Promise<Map<string, StoredInput>>;
  /**
   * Keeps a succeeded task's result once for all its dependents: unless a record kept until `neededUntil` (epoch
   * seconds) is there already, writes one kept until `purgeAt`.
   */
  keepResult(task: Pick<Task, 'taskId' | 'result'>, neededUntil: number, purgeAt: number): Promise<void>;
  /** The results kept by `keepResult`, by task id; a task whose record is gone is missing. */
  keptResults(taskIds: readonly string[]): Promise<Map<string, unknown>>;
}
