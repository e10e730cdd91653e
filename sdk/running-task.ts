/**
 * One task a Worker is running: its abort controller, its deadline on the agent's own clock and the checkpoint
 * waiting to go out with the next heartbeat.
 *
 * The deadline is reckoned from the time the agent sent the claim, not from the server's absolute
 * `leaseDeadline`: the grant happened after the claim was sent, so the send time plus the attempt's length can only
 * come before the server's deadline, however far the two clocks are apart.
 */
import { SERVER_LIMITS, toJson } from './limits.js';
import type { ClaimedTask } from './types.js';
import { type AbortReason, TaskAbortedError } from './worker-events.js';

/** `running`: the handler has not settled; `finishing`: its outcome is being recorded. */
export type TaskPhase = 'running' | 'finishing';

export class RunningTask {
  private readonly controller = new AbortController();
  private deadlineTimer: ReturnType<typeof setTimeout>;
  private deadline: number;
  /** Seconds asked of the next heartbeat for this attempt (`extendDeadline`), until an answer names them. */
  private extensionAsked: number | undefined;
  phase: TaskPhase = 'running';
  abortReason: AbortReason | undefined;
  /** The `traceparent` of the span its handler ran in, sent with its outcome; absent without OpenTelemetry. */
  spanTraceparent: string | undefined;
  /** Settles once the handler has settled and its outcome was dealt with. */
  done: Promise<void> = Promise.resolve();

  private checkpointValue: unknown;
  private checkpointBytes = 0;
  private checkpointVersion = 0;
  private sentVersion = 0;
  /** When the checkpoint waiting to go out was set, or the one before it still waiting: the longest wait goes first. */
  private pendingSince = 0;
  /**
   * A beat carrying this checkpoint with others was refused whole: it goes in a beat of its own, so that a refusal
   * of it alone is known to be its own.
   */
  sendCheckpointAlone = false;

  constructor(
    readonly task: ClaimedTask,
    /** The session that holds the lease: a heartbeat of another session says nothing about it. */
    readonly sessionId: string,
    private readonly lease: { readonly claimSentAt: number; readonly marginMs: number },
    private readonly onDeadline: () => void,
  ) {
    const length =
      typeof task.timeoutSeconds === 'number'
        ? task.timeoutSeconds * 1_000
        : // A server that does not say the attempt's length: its absolute deadline is all there is.
          Date.parse(task.leaseDeadline) - lease.claimSentAt;
    this.deadline = lease.claimSentAt + length - lease.marginMs;
    this.deadlineTimer = this.armDeadline();
  }

  /** When the attempt's deadline passes by the agent's own clock (the margin already taken off). */
  get localDeadline(): number {
    return this.deadline;
  }

  private armDeadline(): ReturnType<typeof setTimeout> {
    const remaining = this.deadline - Date.now();
    return setTimeout(this.onDeadline, Math.min(Math.max(0, remaining), 2_147_483_647));
  }

  /** Asks the next heartbeat to push the deadline to `seconds` from when the server has it (whole, 1 to 43,200). */
  askExtension(seconds: number): void {
    this.extensionAsked = Math.min(SERVER_LIMITS.timeoutSeconds, Math.max(1, Math.ceil(seconds)));
  }

  /** The extension the next heartbeat carries, if one was asked. */
  pendingExtension(): number | undefined {
    return this.extensionAsked;
  }

  /**
   * The server moved the deadline: `secondsLeft` from its write, which came after `sentAt` (the beat's send), so
   * `sentAt` plus them can only come before the server's deadline. The extension the beat carried (`asked`) is
   * settled; one asked again since goes with the next beat.
   */
  extended(sentAt: number, secondsLeft: number, asked: number): void {
    if (this.extensionAsked === asked) this.extensionAsked = undefined;
    const deadline = sentAt + secondsLeft * 1_000 - this.lease.marginMs;
    if (this.aborted || deadline <= this.deadline) return;
    this.deadline = deadline;
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = this.armDeadline();
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

  /**
   * Keeps a copy of `value` for the next heartbeat, as JSON is taken now. Throws, keeping nothing, for a value the
   * server would refuse however it is sent: larger than its checkpoint limit (RangeError) or not JSON (TypeError).
   */
  setCheckpoint(value: unknown): void {
    // JSON has no undefined; null says "no progress" the same way.
    const { json, bytes } = toJson(value === undefined ? null : value);
    if (bytes > SERVER_LIMITS.checkpointBytes) {
      throw new RangeError(
        `a checkpoint is ${bytes} bytes of JSON; the server takes at most ${SERVER_LIMITS.checkpointBytes}`,
      );
    }
    if (this.checkpointVersion === this.sentVersion) this.pendingSince = Date.now();
    this.checkpointValue = JSON.parse(json);
    this.checkpointBytes = bytes;
    this.checkpointVersion++;
  }

  private readonly used = new Map<string, number>();

  /** Adds units used, by rate limit: all or nothing (see `TaskContext.usage`). */
  addUsage(units: Readonly<Record<string, number>>): void {
    const entries = Object.entries(units);
    for (const [name, count] of entries) {
      if (
        typeof count !== 'number' ||
        !Number.isFinite(count) ||
        count < 0 ||
        count > SERVER_LIMITS.rateUnits
      )
        throw new RangeError(`usage of ${name}: a number from 0 to ${SERVER_LIMITS.rateUnits}`);
    }
    const names = new Set([...this.used.keys(), ...entries.map(([name]) => name)]);
    if (names.size > SERVER_LIMITS.rateLimitsPerTask)
      throw new RangeError(`usage: at most ${SERVER_LIMITS.rateLimitsPerTask} rate limits`);
    for (const [name, count] of entries) this.used.set(name, (this.used.get(name) ?? 0) + count);
  }

  /** The units used so far, by rate limit; undefined when none were reported. */
  usage(): Readonly<Record<string, number>> | undefined {
    return this.used.size === 0 ? undefined : Object.fromEntries(this.used);
  }

  /** The checkpoint not yet sent, with the version to acknowledge once the heartbeat carrying it succeeds. */
  pendingCheckpoint():
    | { value: unknown; bytes: number; version: number; since: number; alone: boolean }
    | undefined {
    if (this.checkpointVersion === this.sentVersion) return undefined;
    return {
      value: this.checkpointValue,
      bytes: this.checkpointBytes,
      version: this.checkpointVersion,
      since: this.pendingSince,
      alone: this.sendCheckpointAlone,
    };
  }

  /** The server has the checkpoint of `version`, or refused it alone: it is not sent again. */
  acknowledgeCheckpoint(version: number): void {
    this.sentVersion = Math.max(this.sentVersion, version);
    if (this.sentVersion === this.checkpointVersion) this.sendCheckpointAlone = false;
  }

  dispose(): void {
    clearTimeout(this.deadlineTimer);
  }
}
