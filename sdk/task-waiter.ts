/**
 * Waits for tasks to end, for a client: on one shared operator connection of the push channel while it is up
 * (each task watched with a `subscribe` frame, its end pushed as a `task` frame), by reading the task with
 * backoff while it is not. The connection is opened with the first wait and closed with the last.
 *
 * A watch is recorded before the task is read, in the same server write, so a task that ends while the
 * subscription is made is either in the `subscribed` answer or pushed: nothing is missed, and nothing is polled
 * while the socket is up. A socket that drops loses its watches: the waits poll until a new one is open, then
 * subscribe again on it.
 */
import { AgentSchedulerError, abortedError, isRefusal } from './errors.js';
import { PollBackoff } from './poll-backoff.js';
import { PUSH_VERSION, PushChannel, type PushFrame, type PushOptions } from './push-channel.js';
import type { PushTicket, Task, TaskProgress, TaskStatus } from './types.js';

const WAIT_ABANDONED = 'the wait was abandoned';

export interface WaitOptions {
  /** Reject with a `TaskWaitTimeoutError` if the task has not ended by then. @default no limit */
  readonly timeoutMs?: number;
  /** Abandons the wait (it rejects with an `Aborted` error). */
  readonly signal?: AbortSignal;
  /** Called with each progress report of the task, newest last (`watchTask`). */
  readonly onProgress?: (progress: TaskProgress) => void;
}

/** The task did not end within the wait's `timeoutMs`; it may still end later. */
export class TaskWaitTimeoutError extends AgentSchedulerError {
  constructor(
    readonly taskId: string,
    readonly timeoutMs: number,
    /** The task's status when last heard of, if it was. */
    readonly lastStatus: TaskStatus | undefined,
  ) {
    super({
      status: 0,
      code: 'WaitTimeout',
      message: `task ${taskId} did not end within ${timeoutMs} ms${lastStatus ? ` (it was ${lastStatus})` : ''}`,
    });
  }
}

/** What the waiter needs of its client. */
export interface WaiterClient {
  getTask(taskId: string): Promise<Task>;
  /** A fresh operator ticket. */
  pushTicket(): Promise<PushTicket>;
}

/** The statuses a task ends in. */
export const TASK_ENDS: readonly TaskStatus[] = ['succeeded', 'dead', 'cancelled', 'expired'];
const ended = (status: string | null | undefined): boolean =>
  status !== null && status !== undefined && (TASK_ENDS as readonly string[]).includes(status);

/** Reads of a task while its wait polls: from 250 ms, doubling, to 5 s. */
const POLL = { min: 250, max: 5_000 };
/** The first read waits this long for a connection still being opened, then polls. */
const FIRST_CONNECT_GRACE_MS = 2_000;
/** A `subscribe` frame unanswered this long: its waits read the task meanwhile, until the answer comes. */
const SUBSCRIBE_REPLY_MS = 5_000;
/** The server watches at most this many tasks per frame. */
const SUBSCRIBE_MAX = 25;

interface Wait {
  readonly taskId: string;
  /** `polling`: reads the task; `subscribing`: a subscribe frame awaits its answer; `watching`: a push will come. */
  mode: 'polling' | 'subscribing' | 'watching';
  settled: boolean;
  lastStatus: TaskStatus | undefined;
  /** A polling loop runs for this wait. */
  polling: boolean;
  /** Ends the polling loop's current pause early. */
  interrupt: (() => void) | undefined;
  /** The pause is the first one, for a connection still being opened. */
  inGrace: boolean;
  readonly onProgress: ((progress: TaskProgress) => void) | undefined;
  /** When the last report handed to `onProgress` was taken: an older one (a read after a push) is not handed again. */
  progressAt: string | undefined;
  readonly resolve: (task: Task) => void;
  readonly reject: (error: unknown) => void;
}

export class TaskWaiter {
  private channel: PushChannel | undefined;
  private readonly waits = new Set<Wait>();
  /** Subscribe frames sent on the current connection and not yet answered, by frame id. */
  private readonly pending = new Map<
    string,
    { readonly waits: Wait[]; readonly timer: ReturnType<typeof setTimeout> }
  >();
  /** Waits to subscribe in the next frame (gathered over one tick). */
  private readonly toSubscribe = new Set<Wait>();
  private subscribeScheduled = false;
  private frameIds = 0;
  /** A channel gave up (no WebSocket here, no push channel there): later waits read without asking again. */
  private pushUnavailable = false;

  constructor(
    private readonly client: WaiterClient,
    private readonly push: false | PushOptions,
  ) {}

  wait(taskId: string, options: WaitOptions = {}): Promise<Task> {
    const { timeoutMs, signal } = options;
    if (signal?.aborted) return Promise.reject(abortedError(signal, WAIT_ABANDONED));
    return new Promise<Task>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => wait.reject(abortedError(signal as AbortSignal, WAIT_ABANDONED));
      const finish = () => {
        wait.settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        wait.interrupt?.();
        this.waits.delete(wait);
        this.toSubscribe.delete(wait);
        if (this.waits.size === 0) this.closeChannel();
      };
      const wait: Wait = {
        taskId,
        mode: 'polling',
        settled: false,
        lastStatus: undefined,
        polling: false,
        interrupt: undefined,
        inGrace: false,
        onProgress: options.onProgress,
        progressAt: undefined,
        resolve: (task) => {
          if (wait.settled) return;
          finish();
          resolve(task);
        },
        reject: (error) => {
          if (wait.settled) return;
          finish();
          reject(error);
        },
      };
      this.waits.add(wait);
      if (timeoutMs !== undefined) {
        timer = setTimeout(
          () => wait.reject(new TaskWaitTimeoutError(taskId, timeoutMs, wait.lastStatus)),
          Math.min(Math.max(0, timeoutMs), 2_147_483_647),
        );
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      const channel = this.openChannel();
      if (channel?.connected) this.subscribe(wait);
      else if (channel && channel.state !== 'unavailable') this.poll(wait, FIRST_CONNECT_GRACE_MS, true);
      else this.poll(wait, 0);
    });
  }

  /** The shared connection, opened with the first wait; undefined when push is off. */
  private openChannel(): PushChannel | undefined {
    if (this.push === false || this.pushUnavailable) return undefined;
    if (this.channel) return this.channel;
    const channel = new PushChannel({ ...this.push, ticket: () => this.client.pushTicket() });
    this.channel = channel;
    channel.on('connected', () => {
      if (this.channel !== channel) return;
      // A new connection watches nothing yet: every wait subscribes again on it.
      this.dropPending();
      for (const wait of this.waits) this.subscribe(wait);
    });
    channel.on('disconnected', () => {
      if (this.channel !== channel) return;
      this.dropPending();
      for (const wait of this.waits) this.toPolling(wait, POLL.min);
    });
    channel.on('unavailable', () => {
      if (this.channel !== channel) return;
      this.pushUnavailable = true;
      for (const wait of this.waits) this.toPolling(wait, 0);
    });
    // A failed first connect: waits still in their grace read the task now.
    channel.on('failure', () => {
      if (this.channel !== channel) return;
      for (const wait of this.waits) if (wait.inGrace) wait.interrupt?.();
    });
    channel.on('frame', (frame) => {
      if (this.channel === channel) this.heard(frame);
    });
    channel.start();
    return channel;
  }

  private closeChannel(): void {
    const channel = this.channel;
    this.channel = undefined;
    this.dropPending();
    channel?.close();
  }

  private dropPending(): void {
    for (const { timer } of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
  }

  /** Watches the wait's task on the open connection, in a frame shared with the other waits of this tick. */
  private subscribe(wait: Wait): void {
    if (wait.settled) return;
    wait.mode = 'subscribing';
    wait.interrupt?.();
    this.toSubscribe.add(wait);
    if (this.subscribeScheduled) return;
    this.subscribeScheduled = true;
    queueMicrotask(() => {
      this.subscribeScheduled = false;
      const waits = [...this.toSubscribe].filter((w) => !w.settled && w.mode === 'subscribing');
      this.toSubscribe.clear();
      const taskIds = [...new Set(waits.map((w) => w.taskId))];
      for (let i = 0; i < taskIds.length; i += SUBSCRIBE_MAX) {
        const chunk = taskIds.slice(i, i + SUBSCRIBE_MAX);
        const chunkWaits = waits.filter((w) => chunk.includes(w.taskId));
        const id = `w${++this.frameIds}`;
        const sent = this.channel?.send({ type: 'subscribe', version: PUSH_VERSION, id, taskIds: chunk });
        if (!sent) {
          for (const w of chunkWaits) this.toPolling(w, 0);
          continue;
        }
        // Unanswered for long: read meanwhile. A late answer still counts (the watch was recorded before it).
        const timer = setTimeout(() => {
          for (const w of chunkWaits) if (w.mode === 'subscribing') this.toPolling(w, 0);
        }, SUBSCRIBE_REPLY_MS);
        this.pending.set(id, { waits: chunkWaits, timer });
      }
    });
  }

  private heard(frame: PushFrame): void {
    if (frame.type === 'subscribed') {
      const pending = this.pending.get(frame.id);
      if (!pending) return;
      this.pending.delete(frame.id);
      clearTimeout(pending.timer);
      const statuses = new Map(frame.tasks.map((t) => [t.taskId, t.status]));
      for (const wait of pending.waits) {
        if (wait.settled || wait.mode === 'watching') continue;
        const status = statuses.get(wait.taskId);
        wait.mode = 'watching';
        wait.interrupt?.();
        if (status !== undefined && status !== null) wait.lastStatus = status as TaskStatus;
        // Ended already, or no such task (the read says which): read it. A watch of progress reads it once too,
        // for the report made before the watch.
        if (status === null || ended(status)) void this.read(wait, { after: 'end' });
        else if (wait.onProgress) void this.read(wait, { after: 'poll' });
      }
      return;
    }
    if (frame.type === 'error' && frame.id !== undefined) {
      const pending = this.pending.get(frame.id);
      if (!pending) return;
      this.pending.delete(frame.id);
      clearTimeout(pending.timer);
      // Refused (a malformed id, say): reading each task tells what is wrong, or when it ends.
      for (const wait of pending.waits) if (wait.mode === 'subscribing') this.toPolling(wait, 0);
      return;
    }
    if (frame.type === 'progress') {
      for (const wait of this.waits) if (wait.taskId === frame.taskId) this.progressed(wait, frame.progress);
      return;
    }
    if (frame.type === 'task') {
      for (const wait of this.waits) {
        if (wait.taskId !== frame.taskId) continue;
        wait.lastStatus = frame.status;
        void this.read(wait, { after: 'end' });
      }
    }
  }

  /** Hands a report to the wait's `onProgress`, once, and never one older than the last it was given. */
  private progressed(wait: Wait, progress: TaskProgress): void {
    if (!wait.onProgress || wait.settled) return;
    if (wait.progressAt !== undefined && progress.at <= wait.progressAt) return;
    wait.progressAt = progress.at;
    try {
      wait.onProgress(progress);
    } catch {
      // A throwing listener must not end the wait.
    }
  }

  private toPolling(wait: Wait, firstDelayMs: number): void {
    if (wait.settled) return;
    wait.mode = 'polling';
    this.poll(wait, firstDelayMs);
  }

  /** Reads the task with backoff until it ended, the wait is over, or a connection watches it again. */
  private poll(wait: Wait, firstDelayMs: number, grace = false): void {
    wait.mode = 'polling';
    if (wait.polling) {
      // The loop running reads at once when asked to.
      if (firstDelayMs === 0) wait.interrupt?.();
      return;
    }
    wait.polling = true;
    void (async () => {
      const backoff = new PollBackoff(POLL);
      // A first wait of the backoff's own minimum (after a drop) is its first step.
      if (firstDelayMs === POLL.min) backoff.next();
      let delay = firstDelayMs;
      try {
        let first = true;
        while (!wait.settled && wait.mode === 'polling') {
          wait.inGrace = first && grace;
          first = false;
          await this.pause(wait, delay);
          wait.inGrace = false;
          if (wait.settled || wait.mode !== 'polling') break;
          delay = backoff.next();
          await this.read(wait, { after: 'poll' });
        }
      } finally {
        wait.polling = false;
      }
    })();
  }

  private pause(wait: Wait, ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(), ms);
      const done = () => {
        clearTimeout(timer);
        if (wait.interrupt === done) wait.interrupt = undefined;
        resolve();
      };
      wait.interrupt = done;
    });
  }

  /**
   * Reads the task: ended, the wait resolves with it; refused (no such task, no access), it rejects. After a push
   * said it ended, a read that fails or finds it running again leaves the wait polling.
   */
  private async read(wait: Wait, context: { readonly after: 'end' | 'poll' }): Promise<void> {
    let task: Task;
    try {
      task = await this.client.getTask(wait.taskId);
    } catch (error) {
      if (wait.settled) return;
      if (isRefusal(error)) wait.reject(error);
      else if (context.after === 'end') this.toPolling(wait, POLL.min);
      return;
    }
    if (wait.settled) return;
    wait.lastStatus = task.status;
    if (task.progress) this.progressed(wait, task.progress);
    if (ended(task.status)) wait.resolve(task);
    // Running again (redriven meanwhile): watched anew, or read until it ends.
    else if (context.after === 'end') {
      if (this.channel?.connected) this.subscribe(wait);
      else this.toPolling(wait, POLL.min);
    }
  }
}
