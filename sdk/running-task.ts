/**
 * One task a Worker is running: its abort controller, its deadline on the agent's own clock and the checkpoint
 * waiting to go out with the next heartbeat.
 *
 * The deadline is reckoned from the time the agent sent the claim, not from the server's absolute
 * `leaseDeadline`: the grant happened after the claim was sent, so the send time plus the attempt's length can only
 * come before the server's deadline, however far the two clocks are apart.
 */
import type { ClaimedTask } from './types.js';
import { type AbortReason, TaskAbortedError } from './worker-events.js';

/** `running`: the handler has not settled; `finishing`: its outcome is being recorded. */
export type TaskPhase = 'running' | 'finishing';

export class RunningTask {
  private readonly controller = new AbortController();
  private readonly deadlineTimer: ReturnType<typeof setTimeout>;
  /** When the attempt's deadline passes by the agent's own clock (the margin already taken off). */
  readonly localDeadline: number;
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
    lease: { readonly claimSentAt: number; readonly marginMs: number },
    onDeadline: () => void,
  ) {
    const length =
      typeof task.timeoutSeconds === 'number'
        ? task.timeoutSeconds * 1_000
        : // A server that does not say the attempt's length: its absolute deadline is all there is.
          Date.parse(task.leaseDeadline) - lease.claimSentAt;
    this.localDeadline = lease.claimSentAt + length - lease.marginMs;
    const remaining = this.localDeadline - Date.now();
    this.deadlineTimer = setTimeout(onDeadline, Math.min(Math.max(0, remaining), 2_147_483_647));
  }

  get taskId(): string {
    return this.task.taskId;
  }

  /** Aborts when the lease is over or the task is handed back: the handler's signal, and every call about it. */
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
