/**
 * Where a task's last progress report is kept: one item per task, beside its state, so that a report bills only its
 * own size. The lease is checked before the write (a read of the task); the write itself only keeps a report of an
 * earlier lease from replacing a later one's.
 */
import type { Progress } from '#domain/progress';

export interface ProgressStore {
  /**
   * Keeps `progress` as the task's last report, purged at `purgeAt` (epoch seconds), unless a report of a later lease
   * is kept already. True when written.
   */
  put(taskId: string, progress: Progress, purgeAt: number): Promise<boolean>;
  /** The task's last report, if any (read eventually consistent: a report a moment old may not be seen yet). */
  get(taskId: string): Promise<Progress | undefined>;
}
