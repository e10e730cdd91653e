/**
 * One task a Worker is running: its abort controller, its lease deadline and the checkpoint waiting to go out
 * with the next heartbeat.
 */
import type { ClaimedTask } from './types';
import { type AbortReason, TaskAbortedError } from './worker-events';

/** `running`: the handler has not settled; `finishing`: its outcome is being recorded. */
export type TaskPhase = 'running' | 'finishing';

export class RunningTask {
  private readonly controller = new AbortController();
  private readonly deadlineTimer: ReturnType<typeof setTimeout>;
  phase: TaskPhase = 'running';
  abortReason: AbortReason | undefined;
  /** Settles once the handler has settled and its outcome was dealt with. */
  done: Promise<void> = Promise.resolve();

  private checkpointValue: unknown;
  private checkpointVersion = 0;
  private sentVersion = 0;

  constructor(
    readonly task: ClaimedTask,
    /** The session that holds the lease: a heartbeat of another session says nothing about it. */
    readonly sessionId: string,
    onDeadline: () => void,
  ) {
    const remaining = Date.parse(task.leaseDeadline) - Date.now();
    this.deadlineTimer = setTimeout(onDeadline, Math.min(Math.max(0, remaining), 2_147_483_647));
  }

  get taskId(): string {
    return this.task.taskId;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.abortReason !== undefined;
  }

  /** Aborts the handler's signal; false when it was already aborted. */
  abort(reason: AbortReason): boolean {
    if (this.aborted) return false;
    this.abortReason = reason;
    clearTimeout(this.deadlineTimer);
    this.controller.abort(new TaskAbortedError(this.taskId, reason));
    return true;
  }

  setCheckpoint(value: unknown): void {
    // JSON has no undefined; null says "no progress" the same way.
    this.checkpointValue = value === undefined ? null : value;
    this.checkpointVersion++;
  }

  /** The checkpoint not yet sent, with the version to acknowledge once the heartbeat carrying it succeeds. */
  pendingCheckpoint(): { value: unknown; version: number } | undefined {
    if (this.checkpointVersion === this.sentVersion) return undefined;
    return { value: this.checkpointValue, version: this.checkpointVersion };
  }

  acknowledgeCheckpoint(version: number): void {
    this.sentVersion = Math.max(this.sentVersion, version);
  }

  dispose(): void {
    clearTimeout(this.deadlineTimer);
  }
}
