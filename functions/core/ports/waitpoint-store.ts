/**
 * Where waitpoints are kept: each beside the task it suspends, written in one transaction with the task's own move,
 * so that a task is suspended exactly when its waitpoint is open, and resumes exactly once.
 */
import type { Waitpoint, WaitpointOutcome } from '#domain/waitpoint';
import type { Ending, OwnerFence, Requeue } from './task-store';

/** A suspension: the task leaves its lease for `waitpoint`, and is looked at by `dueAt` (its timeout, at latest). */
export interface Suspension {
  readonly waitpoint: Waitpoint;
  readonly checkpointJson?: string;
  readonly dueAt: number;
  /** When the waitpoint's records may be purged (epoch seconds): well after its timeout. */
  readonly purgeAt: number;
}

/** How a waitpoint ends, and where its task goes. */
export interface Resolution {
  readonly outcome: WaitpointOutcome;
  readonly dataJson?: string;
  readonly reason?: string;
  readonly resolutionHash: string;
  /** Back to the queue; or, for a timeout with `onTimeout: 'fail'`, dead with this error. */
  readonly to: Requeue | (Ending & { status: 'dead' });
  readonly error?: { readonly message: string; readonly retryable: boolean };
}

/** One open waitpoint, as the list shows it. */
export interface OpenWaitpoint {
  readonly waitpointId: string;
  readonly taskId: string;
  readonly createdAt: number;
  readonly timeoutAt: number;
  readonly onTimeout: 'resume' | 'fail';
}

export interface WaitpointStore {
  get(waitpointId: string): Promise<Waitpoint | undefined>;
  /**
   * Suspends the task: leased by `lease` → `suspended` on `waitpoint`, the waitpoint and its entry in the open list
   * written with it. False when the lease no longer holds (nothing is written).
   */
  suspend(taskId: string, lease: OwnerFence, suspension: Suspension, now: number): Promise<boolean>;
  /** A new callback secret's hash for an open waitpoint (a retried suspension whose answer was lost). */
  replaceToken(waitpoint: Waitpoint, tokenHash: string): Promise<boolean>;
  /**
   * Ends an open waitpoint with `resolution`, and moves its task (still suspended on it) where the resolution
   * says, in one transaction. False when the waitpoint is no longer open or its task no longer waits on it.
   */
  resolve(waitpoint: Waitpoint, resolution: Resolution, now: number): Promise<boolean>;
  /** Closes an open waitpoint whose task ended otherwise (cancelled, expired). */
  close(waitpoint: Waitpoint, now: number): Promise<void>;
  /** Open waitpoints, oldest first, a page at a time. */
  listOpen(limit: number, after?: string): Promise<{ waitpoints: OpenWaitpoint[]; next?: string }>;
}
