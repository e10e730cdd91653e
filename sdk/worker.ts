/**
 * A Worker runs tasks for one agent: it opens a session, keeps it alive with heartbeats, claims up to
 * `concurrency` tasks at a time and records each handler's outcome under the lease it was given.
 *
 * A lease can end under a running handler: an operator cancels the task, the server takes it back, its deadline
 * passes or the session is lost. The handler's signal then aborts and nothing is recorded for the task, since
 * the server would refuse it (`LeaseLost`); the task is reported as `lost`. Transient failures of the API never
 * stop the loops: they are reported as `error`, waited out and tried again.
 */
import { EventEmitter } from 'node:events';
import type { AgentSchedulerClient } from './client';
import {
  AgentSchedulerError,
  errorForResponse,
  LeaseLostError,
  NonRetryableError,
  SessionLostError,
} from './errors';
import { PollBackoff, type PollInterval } from './poll-backoff';
import { RoleSubscription } from './role-subscription';
import { RunningTask } from './running-task';
import { sleep } from './sleep';
import type { ClaimedTask, ClaimResult, CompleteItem, FailInput, HeartbeatResult, Session } from './types';
import {
  type LostReason,
  RoleAbortedError,
  type RoleHandler,
  SILENT_LOG,
  type TaskContext,
  type TaskHandler,
  type WorkerEvents,
  type WorkerLog,
} from './worker-events';

export interface WorkerOptions {
  readonly client: AgentSchedulerClient;
  /** Runs claimed tasks. Without one the worker claims nothing: it keeps a session, for roles. */
  readonly handler?: TaskHandler;
  /** Roles to hold: the worker volunteers for each, and runs its handler while it holds the role. */
  readonly roles?: Readonly<Record<string, RoleHandler>>;
  /** Tasks run at once; the server also caps it at the agent's `maxConcurrency`. @default 1 */
  readonly concurrency?: number;
  /** Claim from these of the agent's queues only. @default all of them */
  readonly queues?: readonly string[];
  /** Wait between claims while there is no work. @default { min: 200, max: 5000 } */
  readonly pollIntervalMs?: PollInterval;
  /** @default silent */
  readonly log?: WorkerLog;
}

export interface StopOptions {
  /** Let running handlers finish before stopping; otherwise abort them and release their tasks. @default true */
  readonly drain?: boolean;
  /** Longest wait for a drain; handlers still running then are aborted and their tasks released. @default 30000 */
  readonly timeoutMs?: number;
}

type WorkerState = 'idle' | 'running' | 'stopping' | 'stopped';

/** Server limits: tasks per claim, checkpoints per heartbeat, characters of an error message. */
const CLAIM_MAX = 10;
/** The server's most completions in one call. */
const COMPLETE_MAX = 10;
const CHECKPOINTS_PER_HEARTBEAT = 100;
const ERROR_MESSAGE_CHARS = 2_048;

/** The server answers a task whose lease went to another agent as it answers a task that does not exist. */
const isLeaseGone = (error: unknown): boolean =>
  error instanceof LeaseLostError ||
  error instanceof SessionLostError ||
  (error instanceof AgentSchedulerError && error.code === 'TaskNotFound');

export class Worker extends EventEmitter<WorkerEvents> {
  private readonly client: AgentSchedulerClient;
  private readonly handler: TaskHandler | undefined;
  private readonly roleHandlers: Readonly<Record<string, RoleHandler>>;
  private readonly heldRoles = new Map<
    string,
    {
      readonly subscription: RoleSubscription;
      running?: { controller: AbortController; done: Promise<void> };
    }
  >();
  private readonly concurrency: number;
  private readonly queues: readonly string[] | undefined;
  private readonly pollInterval: PollInterval;
  private readonly idle: PollBackoff;
  private readonly log: WorkerLog;

  private state: WorkerState = 'idle';
  private session: Session | undefined;
  /** When the server will consider the session over if no heartbeat gets through before. */
  private sessionExpiresAt = 0;
  private reopening: Promise<Session | undefined> | undefined;
  private readonly tasks = new Set<RunningTask>();
  private readonly stopSignal = new AbortController();
  private readonly forceSignal = new AbortController();
  private heartbeatTimer: ReturnType<typeof setTimeout> | undefined;
  /** Turned off once a stop has dealt with every task, so no beat is scheduled after it. */
  private heartbeating = true;
  private beatChain: Promise<void> = Promise.resolve();
  private starting: Promise<void> = Promise.resolve();
  private claimLoop: Promise<void> = Promise.resolve();
  private wakeClaimLoop: (() => void) | undefined;
  /** Completions that finished while a completion call was in flight: they go together in the next call. */
  private readonly completionQueue: {
    readonly item: CompleteItem;
    readonly settle: { resolve(): void; reject(error: unknown): void };
  }[] = [];
  private completing = false;
  private stopping: Promise<void> | undefined;
  private removeSignalHandlers: (() => void) | undefined;

  constructor(options: WorkerOptions) {
    super();
    const concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new RangeError('concurrency must be an integer of at least 1');
    }
    this.client = options.client;
    this.handler = options.handler;
    this.roleHandlers = options.roles ?? {};
    this.concurrency = concurrency;
    this.queues = options.queues;
    this.pollInterval = options.pollIntervalMs ?? {};
    this.idle = new PollBackoff(this.pollInterval);
    this.log = options.log ?? SILENT_LOG;
  }

  /** Handlers running now, including aborted ones that have not returned yet. */
  get inFlight(): number {
    return this.tasks.size;
  }

  get sessionId(): string | undefined {
    return this.session?.sessionId;
  }

  /** Whether `start()` was called. */
  get started(): boolean {
    return this.state !== 'idle';
  }

  /** Opens a session, then heartbeats and claims in the background. Rejects if the first session cannot open. */
  start(): Promise<void> {
    if (this.state !== 'idle') return Promise.reject(new Error('a Worker can be started once'));
    this.state = 'running';
    this.starting = this.begin();
    return this.starting;
  }

  /**
   * Stops claiming, then lets running handlers finish (`drain`) or aborts them and releases their tasks.
   * Calling it again with `drain: false` while draining releases what is still running.
   */
  stop(options: StopOptions = {}): Promise<void> {
    const { drain = true, timeoutMs = 30_000 } = options;
    if (this.stopping) {
      if (!drain) this.forceSignal.abort();
      return this.stopping;
    }
    if (this.state !== 'running') {
      this.state = 'stopped';
      return Promise.resolve();
    }
    this.state = 'stopping';
    this.stopSignal.abort();
    if (!drain) this.forceSignal.abort();
    this.wake();
    this.stopping = this.shutdown(timeoutMs);
    return this.stopping;
  }

  /** Aborts the task's handler and gives the task back to its queue without using up an attempt. */
  async release(taskId: string): Promise<void> {
    const entry = this.findTask(taskId);
    if (entry?.phase !== 'running') throw new Error(`task ${taskId} is not running on this worker`);
    entry.abort('released');
    await this.releaseLease(entry);
  }

  /**
   * Stops gracefully on SIGTERM or SIGINT; a second signal stops at once, releasing running tasks. Returns a
   * function that removes the handlers; they are removed anyway once the worker has stopped.
   */
  installSignalHandlers(signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): () => void {
    this.removeSignalHandlers?.();
    const onSignal = (signal: NodeJS.Signals) => {
      const again = this.stopping !== undefined;
      this.log.info(again ? 'stopping now' : 'stopping', { signal });
      this.stop(again ? { drain: false } : {}).catch((error: unknown) => this.report(error));
    };
    for (const signal of signals) process.on(signal, onSignal);
    const remove = () => {
      for (const signal of signals) process.off(signal, onSignal);
      if (this.removeSignalHandlers === remove) this.removeSignalHandlers = undefined;
    };
    this.removeSignalHandlers = remove;
    return remove;
  }

  private async begin(): Promise<void> {
    let session: Session;
    try {
      session = await this.client.openSession();
    } catch (error) {
      this.state = 'stopped';
      throw error;
    }
    // A stop that came while the session was opening wins: nothing starts.
    if (this.state !== 'running') return;
    this.useSession(session);
    for (const [role, handler] of Object.entries(this.roleHandlers)) this.holdRole(role, handler);
    if (this.handler) this.claimLoop = this.runClaimLoop().catch((error: unknown) => this.report(error));
  }

  // Roles

  private holdRole(role: string, handler: RoleHandler): void {
    const subscription = new RoleSubscription(this.client, role, { worker: this });
    const held: {
      subscription: RoleSubscription;
      running?: { controller: AbortController; done: Promise<void> };
    } = { subscription };
    this.heldRoles.set(role, held);
    subscription.on('error', (error) => this.report(error));
    subscription.on('lostRole', (lease, reason) => {
      this.emitSafe('lostRole', lease, reason);
      held.running?.controller.abort(new RoleAbortedError(role, reason));
    });
    subscription.on('gotRole', (lease) => {
      this.emitSafe('gotRole', lease);
      const controller = new AbortController();
      const done = (async () => {
        try {
          await handler({ role, leaseEpoch: lease.leaseEpoch, signal: controller.signal });
        } catch (error) {
          if (!controller.signal.aborted) this.report(error);
        }
        if (controller.signal.aborted || this.state !== 'running') return;
        // The handler gave the role up: the next candidate gets it, and this agent joins the line again.
        await subscription.release().catch((error: unknown) => this.report(error));
        await sleep(new PollBackoff(this.pollInterval).next(), this.stopSignal.signal);
        if (this.state === 'running')
          await subscription.volunteer().catch((error: unknown) => this.report(error));
      })();
      held.running = { controller, done };
    });
    subscription.volunteer().catch((error: unknown) => this.report(error));
  }

  /** On stop: roles are given up first, so their next holders need not wait for this session to expire. */
  private async releaseRoles(): Promise<void> {
    await Promise.all(
      [...this.heldRoles.values()].map(async ({ subscription, running }) => {
        await subscription.close().catch((error: unknown) => this.report(error));
        running?.controller.abort(new RoleAbortedError(subscription.role, 'released'));
        await running?.done;
      }),
    );
  }

  // Session and heartbeats

  private useSession(session: Session): void {
    this.session = session;
    this.sessionExpiresAt = Date.now() + session.leaseTtlSeconds * 1_000;
    this.log.info('session opened', { sessionId: session.sessionId });
    this.emitSafe('session', session);
    this.scheduleHeartbeat();
    this.wake();
  }

  private scheduleHeartbeat(): void {
    clearTimeout(this.heartbeatTimer);
    const session = this.session;
    if (!session || !this.heartbeating) return;
    this.heartbeatTimer = setTimeout(() => {
      // Holding nothing, there is nothing to keep alive: an idle agent costs no heartbeats, and the claim that
      // gives it work extends its session.
      const beat = this.holdsAnything() ? this.beat() : Promise.resolve();
      beat
        .catch(() => undefined)
        .finally(() => {
          if (this.session === session) this.scheduleHeartbeat();
        });
    }, session.heartbeatIntervalSeconds * 1_000);
  }

  /** Tasks, roles, or someone listening for heartbeats (a role subscription): the session must stay live. */
  private holdsAnything(): boolean {
    return this.tasks.size > 0 || this.heldRoles.size > 0 || this.listenerCount('heartbeat') > 0;
  }

  /** One heartbeat at a time: a beat asked for while one is in flight goes after it, with newer checkpoints. */
  private beat(): Promise<void> {
    const run = this.beatChain.then(() => this.sendHeartbeat());
    this.beatChain = run.catch(() => undefined);
    return run;
  }

  private async sendHeartbeat(): Promise<void> {
    const session = this.session;
    if (!session) {
      throw new SessionLostError({
        status: 409,
        code: 'SessionLost',
        message: 'the worker has no live session',
      });
    }
    const pending: { entry: RunningTask; value: unknown; version: number }[] = [];
    for (const entry of this.tasks) {
      if (pending.length >= CHECKPOINTS_PER_HEARTBEAT) break;
      if (entry.aborted || entry.sessionId !== session.sessionId) continue;
      const checkpoint = entry.pendingCheckpoint();
      if (checkpoint) pending.push({ entry, ...checkpoint });
    }
    const sentAt = Date.now();
    let result: HeartbeatResult;
    try {
      result = await this.client.heartbeat({
        sessionId: session.sessionId,
        ...(pending.length === 0
          ? {}
          : { checkpoints: Object.fromEntries(pending.map((p) => [p.entry.taskId, p.value])) }),
      });
    } catch (error) {
      if (error instanceof SessionLostError) this.sessionLost(session);
      else {
        this.report(error);
        // Past its time to live the server has ended the session, whether or not we have heard it say so.
        if (Date.now() >= this.sessionExpiresAt) this.sessionLost(session);
      }
      throw error;
    }
    if (this.session === session) this.sessionExpiresAt = sentAt + session.leaseTtlSeconds * 1_000;
    this.emitSafe('heartbeat', result, session);
    for (const p of pending) p.entry.acknowledgeCheckpoint(p.version);
    for (const taskId of result.cancelled)
      this.abortTask(this.findTask(taskId, session.sessionId), 'cancelled');
    for (const taskId of result.lost) this.abortTask(this.findTask(taskId, session.sessionId), 'lost');
  }

  /** Every lease of the session is gone: abort their handlers, then open a new session unless stopping. */
  private sessionLost(session: Session): void {
    if (this.session !== session) return;
    this.session = undefined;
    clearTimeout(this.heartbeatTimer);
    this.log.warn('session lost', { sessionId: session.sessionId });
    this.emitSafe('sessionLost', session);
    for (const entry of this.tasks) {
      if (entry.sessionId === session.sessionId) this.abortTask(entry, 'session');
    }
    if (this.state === 'running') this.reopening = this.reopenSession();
  }

  private async reopenSession(): Promise<Session | undefined> {
    const backoff = new PollBackoff(this.pollInterval);
    while (this.state === 'running') {
      try {
        const session = await this.client.openSession();
        this.useSession(session);
        return session;
      } catch (error) {
        this.report(error);
        await sleep(backoff.next(), this.stopSignal.signal);
      }
    }
    return undefined;
  }

  // Claims

  private async runClaimLoop(): Promise<void> {
    const idle = this.idle;
    let idleClaims = 0;
    while (this.state === 'running') {
      const session = this.session ?? (await this.reopening);
      if (!session) {
        await sleep(idle.next(), this.stopSignal.signal);
        continue;
      }
      if (this.state !== 'running') break;
      const free = this.concurrency - this.tasks.size;
      if (free <= 0) {
        await this.untilWoken();
        continue;
      }
      let claimed: ClaimResult;
      try {
        claimed = await this.client.claim({
          sessionId: session.sessionId,
          max: Math.min(free, CLAIM_MAX),
          ...(this.queues ? { queues: this.queues } : {}),
          idleClaims,
        });
      } catch (error) {
        if (error instanceof SessionLostError) this.sessionLost(session);
        else {
          this.report(error);
          await sleep(idle.next(), this.stopSignal.signal);
        }
        continue;
      }
      if (this.state !== 'running' || this.session !== session) {
        await this.handBackClaimed(claimed.tasks, session);
        continue;
      }
      for (const task of claimed.tasks) this.run(task, session);
      if (claimed.tasks.length > 0) {
        idle.reset();
        idleClaims = 0;
        // The claim extended the session on the server.
        this.sessionExpiresAt = Date.now() + session.leaseTtlSeconds * 1_000;
      } else idleClaims++;
      // The server's suggestion wins: its operator sets what idle polling may cost.
      const wait = claimed.tasks.length > 0 ? 0 : (claimed.retryAfterMs ?? idle.next());
      await sleep(wait, this.stopSignal.signal);
    }
  }

  /** Tasks a claim returned after a stop began: back to their queue, unless their session is already gone. */
  private async handBackClaimed(tasks: readonly ClaimedTask[], session: Session): Promise<void> {
    if (this.session !== session) return;
    await Promise.all(
      tasks.map((task) =>
        this.client
          .release(task.taskId, { leaseEpoch: task.leaseEpoch })
          .catch((error: unknown) => (isLeaseGone(error) ? undefined : this.report(error))),
      ),
    );
  }

  private untilWoken(): Promise<void> {
    if (this.state !== 'running') return Promise.resolve();
    return new Promise((resolve) => {
      this.wakeClaimLoop = resolve;
    });
  }

  private wake(): void {
    const wake = this.wakeClaimLoop;
    this.wakeClaimLoop = undefined;
    wake?.();
  }

  // Tasks

  private run(task: ClaimedTask, session: Session): void {
    const entry: RunningTask = new RunningTask(task, session.sessionId, () =>
      this.abortTask(entry, 'deadline'),
    );
    this.tasks.add(entry);
    this.emitSafe('picked', task);
    entry.done = this.execute(entry)
      .catch((error: unknown) => this.report(error))
      .finally(() => {
        entry.dispose();
        this.tasks.delete(entry);
        this.wake();
      });
  }

  private async execute(entry: RunningTask): Promise<void> {
    const context: TaskContext = {
      signal: entry.signal,
      checkpoint: (value) => entry.setCheckpoint(value),
      heartbeatNow: () => this.beat(),
    };
    let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
    try {
      if (!this.handler) throw new Error('this worker has no task handler');
      outcome = { ok: true, value: await this.handler(entry.task, context) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    // The lease is gone (already reported) or was handed back: the server would refuse any outcome.
    if (entry.aborted) return;
    entry.phase = 'finishing';
    try {
      if (outcome.ok) await this.complete(entry, outcome.value);
      else await this.fail(entry, outcome.error);
    } catch (error) {
      if (!isLeaseGone(error)) {
        // The outcome is unknown to the server; the lease runs out and the task is tried again.
        this.report(error);
        return;
      }
      const reason = entry.abortReason;
      this.emitSafe('lost', entry.task, reason === undefined || reason === 'released' ? 'lost' : reason);
      if (error instanceof SessionLostError && this.session?.sessionId === entry.sessionId) {
        this.sessionLost(this.session);
      }
    }
  }

  private async complete(entry: RunningTask, result: unknown): Promise<void> {
    const unstorable = unstorableReason(result);
    if (unstorable) return this.fail(entry, new NonRetryableError(unstorable));
    try {
      await this.completeTogether({
        taskId: entry.taskId,
        leaseEpoch: entry.task.leaseEpoch,
        ...(result === undefined ? {} : { result }),
      });
    } catch (error) {
      // A result the server refuses (too large, invalid) would be refused again on every attempt.
      if (error instanceof AgentSchedulerError && (error.status === 400 || error.status === 413)) {
        return this.fail(entry, new NonRetryableError(`the result was refused: ${error.message}`));
      }
      throw error;
    }
    this.emitSafe('completed', entry.task, result);
  }

  /**
   * Completes one task, sharing the call with the tasks that finish while another completion is in flight (as a
   * database commits a group): alone it is sent at once, so nothing waits; under load up to ten go in one call.
   */
  private completeTogether(item: CompleteItem): Promise<void> {
    const settled = new Promise<void>((resolve, reject) => {
      this.completionQueue.push({ item, settle: { resolve, reject } });
    });
    if (!this.completing) void this.flushCompletions();
    return settled;
  }

  private async flushCompletions(): Promise<void> {
    this.completing = true;
    while (this.completionQueue.length > 0) {
      const group = this.completionQueue.splice(0, COMPLETE_MAX);
      const [only] = group;
      if (group.length === 1 && only) {
        const { taskId, ...input } = only.item;
        await this.client.complete(taskId, input).then(
          () => only.settle.resolve(),
          (error: unknown) => only.settle.reject(error),
        );
        continue;
      }
      try {
        const results = await this.client.completeTasks(group.map((g) => g.item));
        group.forEach(({ settle }, i) => {
          const result = results[i];
          if (result?.ok) settle.resolve();
          else if (result) settle.reject(errorForResponse({ status: result.status, ...result.error }));
          else settle.reject(new Error('the server answered fewer completions than were sent'));
        });
      } catch (error) {
        for (const { settle } of group) settle.reject(error);
      }
    }
    this.completing = false;
  }

  private async fail(entry: RunningTask, error: unknown): Promise<void> {
    await this.client.fail(entry.taskId, {
      leaseEpoch: entry.task.leaseEpoch,
      error: describeFailure(error),
    });
    this.emitSafe('failed', entry.task, error);
  }

  private async releaseLease(entry: RunningTask): Promise<void> {
    try {
      await this.client.release(entry.taskId, { leaseEpoch: entry.task.leaseEpoch });
    } catch (error) {
      if (!isLeaseGone(error)) throw error;
      this.emitSafe('lost', entry.task, 'lost');
      return;
    }
    this.emitSafe('released', entry.task);
  }

  private abortTask(entry: RunningTask | undefined, reason: LostReason): void {
    if (!entry?.abort(reason)) return;
    this.log.warn('task lost', { taskId: entry.taskId, reason });
    // Once finishing, the pending complete or fail tells what happened.
    if (entry.phase === 'running') this.emitSafe('lost', entry.task, reason);
  }

  private findTask(taskId: string, sessionId?: string): RunningTask | undefined {
    for (const entry of this.tasks) {
      if (entry.taskId !== taskId || entry.aborted) continue;
      if (sessionId === undefined || entry.sessionId === sessionId) return entry;
    }
    return undefined;
  }

  // Stop

  private async shutdown(timeoutMs: number): Promise<void> {
    try {
      await this.starting.catch(() => undefined);
      await this.claimLoop;
      await this.reopening;
      await this.releaseRoles();
      if (!this.forceSignal.signal.aborted) {
        const drained = Promise.allSettled([...this.tasks].map((entry) => entry.done));
        const timer = new AbortController();
        await Promise.race([
          drained,
          sleep(timeoutMs, AbortSignal.any([timer.signal, this.forceSignal.signal])),
        ]);
        timer.abort();
      }
      await this.releaseRunning();
      // Outcomes being recorded are let through: their leases are still good.
      await Promise.allSettled([...this.tasks].filter((e) => e.phase === 'finishing').map((e) => e.done));
    } finally {
      this.heartbeating = false;
      clearTimeout(this.heartbeatTimer);
      await this.beatChain;
      this.state = 'stopped';
      this.removeSignalHandlers?.();
    }
  }

  private async releaseRunning(): Promise<void> {
    const running = [...this.tasks].filter((entry) => !entry.aborted && entry.phase === 'running');
    await Promise.all(
      running.map(async (entry) => {
        entry.abort('released');
        await this.releaseLease(entry).catch((error: unknown) => this.report(error));
      }),
    );
  }

  // Events

  private emitSafe<K extends keyof WorkerEvents>(event: K, ...args: WorkerEvents[K]): void {
    try {
      // The typed overloads cannot follow a generic event name; the event map already checked `args`.
      EventEmitter.prototype.emit.call(this, event, ...args);
    } catch (error) {
      // A throwing listener must not break the loops.
      this.report(error);
    }
  }

  private report(error: unknown): void {
    this.log.error('worker error', { error });
    // An `error` event without a listener would throw; the log has it already.
    if (this.listenerCount('error') === 0) return;
    try {
      this.emit('error', error);
    } catch {
      // A throwing error listener has nowhere left to report to.
    }
  }
}

/** Why a handler's return value cannot be stored as a JSON result, or undefined when it can. */
function unstorableReason(result: unknown): string | undefined {
  try {
    JSON.stringify(result);
    return undefined;
  } catch (error) {
    return `the result is not JSON: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** The `error` of a fail call: a non-empty message within the server's limit, and whether to try again. */
export function describeFailure(error: unknown): FailInput['error'] {
  const raw = error instanceof Error ? error.message || error.name : String(error);
  const message = (raw || 'the handler failed').slice(0, ERROR_MESSAGE_CHARS);
  const retryable = !(
    typeof error === 'object' &&
    error !== null &&
    Reflect.get(error, 'retryable') === false
  );
  return { message, retryable };
}
