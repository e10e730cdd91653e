/**
 * A Worker's progress reports (`ctx.progress`), coalesced: a handler may report as often as it likes; the Worker
 * sends at most once a second, each task's latest report in one call (up to 100, within the body limit), so a
 * Worker running many tasks makes about one call a second for all of them, well within its agent's request rate. Reports are hints for
 * people watching: one that fails is replaced by the next, or sent again a second later while its task runs; one the
 * server refuses (the lease is gone) is dropped, and a task that ends drops its unsent report.
 */
import type { AgentSchedulerClient } from './client.js';
import { AgentSchedulerError } from './errors.js';
import { SERVER_LIMITS, takeWithinBudget, toJson } from './limits.js';
import type { RunningTask } from './running-task.js';
import type { ProgressInput, ProgressItem } from './types.js';

/** The least time between two reports of one task. */
export const PROGRESS_INTERVAL_MS = 1_000;

/** What reporting needs of the Worker. */
export interface ProgressHost {
  readonly client: AgentSchedulerClient;
  attemptTimeoutMs(): number;
  report(error: unknown): void;
}

interface Pending {
  readonly item: ProgressItem;
  readonly bytes: number;
}

export class ProgressReports {
  private readonly pending = new Map<RunningTask, Pending>();
  /** When the last flush began: the next comes a second after it. */
  private flushedAt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private sending = false;
  /** The server has no progress route (an older deployment): reports are dropped. */
  private unavailable = false;

  constructor(private readonly host: ProgressHost) {}

  /**
   * Keeps `update` as the task's latest report, sent within a second. Throws, keeping nothing, for a report the
   * server would refuse however it is sent (`RangeError`, `TypeError`).
   */
  set(entry: RunningTask, update: ProgressInput): void {
    const item = checkedItem(entry, update);
    if (this.unavailable || entry.aborted) return;
    this.pending.set(entry, { item, bytes: toJson(item).bytes });
    this.schedule();
  }

  /** The task ended: its unsent report goes nowhere. */
  forget(entry: RunningTask): void {
    this.pending.delete(entry);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
  }

  /** Wakes a second after the last flush began, unless a wake or a call is on its way. */
  private schedule(): void {
    if (this.timer !== undefined || this.sending || this.pending.size === 0) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        void this.flush();
      },
      Math.max(0, this.flushedAt + PROGRESS_INTERVAL_MS - Date.now()),
    );
  }

  private async flush(): Promise<void> {
    this.sending = true;
    this.flushedAt = Date.now();
    try {
      const due = [...this.pending].filter(([entry]) => !entry.aborted);
      this.pending.clear();
      while (due.length > 0) {
        await this.send(takeWithinBudget(due, ([, p]) => p.bytes, SERVER_LIMITS.progressPerCall));
      }
    } finally {
      this.sending = false;
      this.schedule();
    }
  }

  private async send(chunk: readonly (readonly [RunningTask, Pending])[]): Promise<void> {
    try {
      await this.host.client.reportProgressBatch(
        chunk.map(([, p]) => p.item),
        { timeoutMs: this.host.attemptTimeoutMs() },
      );
      // Refused reports (a lease gone) are dropped: the heartbeats tell the Worker of the lease.
    } catch (error) {
      if (error instanceof AgentSchedulerError && error.status === 404 && error.code !== 'TaskNotFound') {
        this.unavailable = true;
        this.pending.clear();
        this.host.report(
          new Error('this deployment takes no progress reports; they are dropped', { cause: error }),
        );
        return;
      }
      this.host.report(error);
      // Sent again a second later, unless a newer report took its place.
      for (const [entry, pending] of chunk) {
        if (!entry.aborted && !this.pending.has(entry)) this.pending.set(entry, pending);
      }
    }
  }
}

/** The report of `entry` as the server takes it; throws for one it would refuse. */
function checkedItem(entry: RunningTask, update: ProgressInput): ProgressItem {
  const { percent, message, data } = update;
  if (percent !== undefined && !(typeof percent === 'number' && percent >= 0 && percent <= 100)) {
    throw new RangeError('percent: a number from 0 to 100');
  }
  if (
    message !== undefined &&
    !(
      typeof message === 'string' &&
      message.length >= 1 &&
      message.length <= SERVER_LIMITS.progressMessageChars
    )
  ) {
    throw new RangeError(`message: 1 to ${SERVER_LIMITS.progressMessageChars} characters`);
  }
  if (data !== undefined) {
    const { bytes } = toJson(data);
    if (bytes > SERVER_LIMITS.progressDataBytes) {
      throw new RangeError(
        `progress data is ${bytes} bytes of JSON; the server takes at most ${SERVER_LIMITS.progressDataBytes}`,
      );
    }
  }
  if (percent === undefined && message === undefined && data === undefined) {
    throw new TypeError('a progress report says one of percent, message or data');
  }
  return {
    taskId: entry.taskId,
    leaseEpoch: entry.task.leaseEpoch,
    ...(percent === undefined ? {} : { percent }),
    ...(message === undefined ? {} : { message }),
    ...(data === undefined ? {} : { data }),
  };
}
