/**
 * A Worker runs tasks for one agent: it opens a session, keeps it alive with heartbeats, claims up to
 * `concurrency` tasks at a time and records each handler's outcome under the lease it was given.
 *
 * A lease can end under a running handler: an operator cancels the task, the server takes it back, its deadline
 * passes or the session is lost. The handler's signal then aborts and nothing is recorded for the task, since
 * the server would refuse it (`LeaseLost`); the task is reported as `lost`. Transient failures of the API never
 * stop the loops: they are reported as `error`, waited out and tried again.
 *
 * Leases are reckoned on the agent's own clock, from its own send times: the session is good until the send time
 * of the last acknowledged heartbeat (or claim, or session open) plus the lease TTL, less a margin, and a task
 * until the send time of its claim plus the attempt's length, less the margin. The server's grant and extension
 * both came after those sends, so neither a skewed clock nor a hanging network can stretch a lease past the
 * server's. When the reckoning runs out, the handlers (tasks and roles) are aborted, nothing more is sent about
 * them, and every call about them still in flight is abandoned. A finished result is sent again, with backoff,
 * until it lands or that reckoning runs out.
 *
 * Here: the session (opened, reckoned, lost and opened again), the handlers run, and the stop. Beside it, each
 * wired to the session here: the claims (`claim-loop.ts`), the heartbeats and the checkpoints they carry
 * (`heartbeats.ts`), outcomes recorded and tasks given back (`task-outcomes.ts`), grants never heard of
 * (`unknown-holdings.ts`), roles (`worker-roles.ts`) and the push channel (`worker-push.ts`).
 */
import { EventEmitter } from 'node:events';
import { ClaimLoop, isRevoked } from './claim-loop.js';
import type { AgentSchedulerClient } from './client.js';
import { SessionLostError } from './errors.js';
import { Heartbeats } from './heartbeats.js';
import { PollBackoff, type PollInterval } from './poll-backoff.js';
import { ProgressReports } from './progress-reports.js';
import type { PushOptions } from './push-channel.js';
import { newOpenId } from './request-ids.js';
import { RunningTask } from './running-task.js';
import { sleep } from './sleep.js';
import { suspension } from './suspension.js';
import { givingBackFailed, type Outcome, TaskOutcomes } from './task-outcomes.js';
import { inTaskSpan } from './tracing.js';
import type { ClaimedTask, HeartbeatResult, Session } from './types.js';
import { UnknownHoldings } from './unknown-holdings.js';
import {
  type LostReason,
  type RoleHandler,
  SILENT_LOG,
  Snooze,
  type TaskContext,
  type TaskHandler,
  type WorkerEvents,
  type WorkerLog,
} from './worker-events.js';
import { WorkerPush } from './worker-push.js';
import { WorkerRoles } from './worker-roles.js';

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
  /**
   * Narrows the agent's labels for its sessions (fewer names, fewer values): it is given only tasks whose `require`
   * these meet. A label the agent was not registered with is refused (403), and the worker does not start.
   * @default the agent's labels
   */
  readonly labels?: Readonly<Record<string, string | readonly string[]>>;
  /** Wait between claims while there is no work. @default { min: 200, max: 5000 } */
  readonly pollIntervalMs?: PollInterval;
  /**
   * Taken off every lease the Worker reckons, so that its handlers are aborted this long before the server could
   * give their work to another agent. @default 1000 ms, or a fifth of the lease TTL when that is shorter
   */
  readonly leaseMarginMs?: number;
  /**
   * The push channel: while its socket is up, an idle worker waits for a `wake` (or its slow safety poll) instead
   * of polling, and hears role grants at once. `false` polls only; `{ WebSocket }` gives the constructor to use.
   * @default on when a WebSocket constructor is available (the global one, or the optional peer `ws` on Node.js 20)
   */
  readonly push?: boolean | PushOptions;
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

export class Worker extends EventEmitter<WorkerEvents> {
  private readonly client: AgentSchedulerClient;
  private readonly handler: TaskHandler | undefined;
  private readonly roleHandlers: Readonly<Record<string, RoleHandler>>;
  private readonly concurrency: number;
  private readonly queues: readonly string[] | undefined;
  private readonly labels: WorkerOptions['labels'];
  private readonly pollInterval: PollInterval;
  private readonly log: WorkerLog;

  private readonly leaseMarginMs: number | undefined;
  private state: WorkerState = 'idle';
  private session: Session | undefined;
  /**
   * When the session is over by this agent's reckoning: the send time of the last acknowledged heartbeat, claim
   * or session open, plus the lease TTL, less the margin.
   */
  private sessionValidUntil = 0;
  private sessionTimer: ReturnType<typeof setTimeout> | undefined;
  /** Aborted when the session is over by that reckoning: every call made under the session is abandoned. */
  private sessionAbort = new AbortController();
  private reopening: Promise<Session | undefined> | undefined;
  private readonly tasks = new Set<RunningTask>();
  private readonly stopSignal = new AbortController();
  private readonly forceSignal = new AbortController();
  private starting: Promise<void> = Promise.resolve();
  private readonly claims: ClaimLoop;
  private claimLoop: Promise<void> = Promise.resolve();
  private readonly push: WorkerPush;
  private readonly roles: WorkerRoles;
  private readonly holdings: UnknownHoldings;
  private readonly outcomes: TaskOutcomes;
  private readonly progress: ProgressReports;
  private readonly heartbeats: Heartbeats;
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
    this.labels = options.labels;
    this.pollInterval = options.pollIntervalMs ?? {};
    this.claims = this.claimLoopOf(this.pollInterval);
    this.log = options.log ?? SILENT_LOG;
    if (options.leaseMarginMs !== undefined && !(options.leaseMarginMs >= 0)) {
      throw new RangeError('leaseMarginMs must be 0 or more');
    }
    this.leaseMarginMs = options.leaseMarginMs;
    this.push = new WorkerPush(
      {
        client: this.client,
        queues: this.queues,
        log: this.log,
        stopSignal: this.stopSignal.signal,
        running: () => this.state === 'running',
        hasSession: () => this.session !== undefined,
        nudge: () => this.claims.nudge(),
        beat: () => this.heartbeats.beat().catch(() => undefined),
        cancelled: (taskId, leaseEpoch) =>
          this.abortTask(this.findTask(taskId, undefined, leaseEpoch), 'cancelled'),
      },
      options.push === false ? undefined : options.push === true ? {} : (options.push ?? {}),
    );
    const report = (error: unknown) => this.report(error);
    const emit = <K extends keyof WorkerEvents>(event: K, ...args: WorkerEvents[K]) =>
      this.emitSafe(event, ...args);
    this.outcomes = new TaskOutcomes({
      client: this.client,
      attemptTimeoutMs: () => this.attemptTimeoutMs(),
      sessionGone: (sessionId) => {
        if (this.session?.sessionId === sessionId) this.sessionLost(this.session);
      },
      carryClaim: (freed) => this.claims.carry(freed),
      emit,
      report,
    });
    this.progress = new ProgressReports({
      client: this.client,
      attemptTimeoutMs: () => this.attemptTimeoutMs(),
      report,
    });
    this.roles = new WorkerRoles({
      client: this.client,
      worker: this,
      pollInterval: this.pollInterval,
      stopSignal: this.stopSignal.signal,
      running: () => this.state === 'running',
      emit,
      report,
    });
    this.holdings = new UnknownHoldings({
      client: this.client,
      log: this.log,
      session: () => this.session,
      sessionSignal: () => this.sessionAbort.signal,
      runningTaskIds: () => new Set([...this.tasks].map((entry) => entry.taskId)),
      claims: () => this.claims.status,
      heardHoldings: (holdings, session) => this.emitSafe('holdings', holdings, session),
      report,
    });
    this.heartbeats = new Heartbeats({
      client: this.client,
      session: () => this.session,
      tasks: () => this.tasks,
      holdsAnything: () => this.holdsAnything(),
      sessionValidUntil: () => this.sessionValidUntil,
      sessionSignal: () => this.sessionAbort.signal,
      answered: (session, sentAt, result) => {
        this.acknowledged(session, sentAt);
        this.emitSafe('heartbeat', result, session);
      },
      heard: (session, result) => this.heardBeat(session, result),
      failed: (session, error) => this.beatFailed(session, error),
      report,
    });
  }

  /** The claim loop, which runs tasks under this worker's session. */
  private claimLoopOf(pollInterval: PollInterval): ClaimLoop {
    return new ClaimLoop(
      {
        client: this.client,
        queues: this.queues,
        stopSignal: this.stopSignal.signal,
        running: () => this.state === 'running',
        session: () => this.session,
        reopening: () => this.reopening,
        sessionSignal: () => this.sessionAbort.signal,
        room: () => this.concurrency - this.tasks.size,
        listening: () => this.listening,
        takeGivenBack: (task) => this.holdings.takeGivenBack(task),
        run: (task, session, claimSentAt) => this.run(task, session, claimSentAt),
        acknowledged: (session, sentAt) => this.acknowledged(session, sentAt),
        sessionValidUntil: () => this.sessionValidUntil,
        sessionLapsed: (session) => this.sessionLapsed(session),
        sessionLost: (session) => this.sessionLost(session),
        revoked: (error) => this.revoked(error),
        report: (error) => this.report(error),
      },
      pollInterval,
    );
  }

  /** Whether the push channel's socket is up now: claims say `listening`, and an idle wait ends at a wake. */
  get listening(): boolean {
    return this.push.listening;
  }

  /**
   * How long one attempt of a call about a lease may take: a heartbeat interval, so a hanging attempt is given up
   * and sent again while the lease still has time, rather than eating what is left of it.
   */
  private attemptTimeoutMs(): number {
    return (this.session?.heartbeatIntervalSeconds ?? 10) * 1_000;
  }

  /** The margin taken off the leases of `session`. */
  private marginFor(session: Session): number {
    return this.leaseMarginMs ?? Math.min(1_000, (session.leaseTtlSeconds * 1_000) / 5);
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

  /** Whether the worker has stopped for good (by `stop()`, or because its agent was revoked). */
  get stopped(): boolean {
    return this.state === 'stopped';
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
    this.push.close();
    if (!drain) this.forceSignal.abort();
    this.claims.wake();
    this.stopping = this.shutdown(timeoutMs);
    return this.stopping;
  }

  /** Aborts the task's handler and gives the task back to its queue without using up an attempt. */
  async release(taskId: string): Promise<void> {
    const entry = this.findTask(taskId);
    if (entry?.phase !== 'running') throw new Error(`task ${taskId} is not running on this worker`);
    entry.abort('released');
    await this.outcomes.release(entry);
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
    const sentAt = Date.now();
    try {
      session = await this.client.openSession(this.labels ? { labels: this.labels } : {});
    } catch (error) {
      this.state = 'stopped';
      throw error;
    }
    // A stop that came while the session was opening wins: nothing starts.
    if (this.state !== 'running') return;
    this.useSession(session, sentAt);
    this.push.open();
    for (const [role, handler] of Object.entries(this.roleHandlers)) this.roles.hold(role, handler);
    if (this.handler) this.claimLoop = this.claims.run().catch((error: unknown) => this.report(error));
  }

  // Roles

  /** @internal Counts a `RoleSubscription` riding on this worker's session: stopping gives its role up too. */
  track(follower: { release(): Promise<void> }): () => void {
    return this.roles.track(follower);
  }

  // Session

  private useSession(session: Session, sentAt: number): void {
    this.session = session;
    this.sessionAbort = new AbortController();
    this.sessionValidUntil = 0;
    this.claims.reset();
    this.holdings.reset();
    this.acknowledged(session, sentAt);
    this.log.info('session opened', { sessionId: session.sessionId });
    this.emitSafe('session', session);
    this.heartbeats.schedule();
    this.claims.wake();
  }

  /** The server extended the session in answer to a request sent at `sentAt`: the reckoning moves on. */
  private acknowledged(session: Session, sentAt: number): void {
    if (this.session !== session) return;
    const validUntil = sentAt + session.leaseTtlSeconds * 1_000 - this.marginFor(session);
    if (validUntil <= this.sessionValidUntil) return;
    this.sessionValidUntil = validUntil;
    clearTimeout(this.sessionTimer);
    this.sessionTimer = setTimeout(
      () => this.sessionLapsed(session),
      Math.min(Math.max(0, validUntil - Date.now()), 2_147_483_647),
    );
  }

  /**
   * The session is over by this agent's reckoning. Holding nothing, that is fine: an idle session needs no
   * heartbeat, and the claim that gives it work extends it. Holding tasks or roles, their handlers are aborted now,
   * before the server can give their work to another agent, and a new session is opened.
   */
  private sessionLapsed(session: Session): void {
    if (this.session !== session) return;
    if (!this.holdsAnything()) return;
    this.log.warn('session over by the agent’s own reckoning', { sessionId: session.sessionId });
    this.sessionLost(session, 'expired');
  }

  /** Tasks, roles, or someone listening for heartbeats (a role subscription): the session must stay live. */
  private holdsAnything(): boolean {
    return (
      [...this.tasks].some((entry) => !entry.aborted) ||
      this.roles.size > 0 ||
      this.listenerCount('heartbeat') > 0
    );
  }

  /** What a heartbeat's answer says of the session: tasks cancelled or lost, and what the session holds. */
  private heardBeat(session: Session, result: HeartbeatResult): void {
    for (const taskId of result.cancelled)
      this.abortTask(this.findTask(taskId, session.sessionId), 'cancelled');
    // Each lost lease by its epoch: a run of the task this session claimed again since is not the one lost. A
    // server older than epoch-bearing notices names task ids only.
    for (const { taskId, leaseEpoch } of result.lostLeases ??
      result.lost.map((taskId) => ({ taskId, leaseEpoch: undefined })))
      this.abortTask(this.findTask(taskId, session.sessionId, leaseEpoch), 'lost');
    this.holdings.notice(session, result.held);
  }

  /** A heartbeat failed: the session is gone, the agent revoked, or the answer lost (with its notices, maybe). */
  private beatFailed(session: Session, error: unknown): void {
    if (error instanceof SessionLostError) this.sessionLost(session);
    else if (isRevoked(error)) this.revoked(error);
    else if (this.session === session) {
      // Its answer may have been lost, notices with it: ask what the session holds once a beat gets through.
      this.holdings.lookAfterNextBeat();
      this.report(error);
    }
  }

  /** Every lease of the session is gone: abort their handlers, then open a new session unless stopping. */
  private sessionLost(session: Session, reason: 'session' | 'expired' = 'session'): void {
    if (this.session !== session) return;
    this.session = undefined;
    this.heartbeats.cancelNext();
    clearTimeout(this.sessionTimer);
    // Nothing more is sent under it: calls in flight (results included) are abandoned.
    this.sessionAbort.abort(new Error(`session ${session.sessionId} is over`));
    this.log.warn('session lost', { sessionId: session.sessionId, reason });
    this.emitSafe('sessionLost', session);
    for (const entry of this.tasks) {
      if (entry.sessionId === session.sessionId) this.abortTask(entry, reason);
    }
    if (this.state === 'running') this.reopening = this.reopenSession();
  }

  private async reopenSession(): Promise<Session | undefined> {
    const backoff = new PollBackoff(this.pollInterval);
    // One open, however many tries: a try whose answer was lost, or that arrives late, is answered with the
    // session another try opened instead of ending it.
    const openId = newOpenId();
    while (this.state === 'running') {
      const sentAt = Date.now();
      try {
        const session = await this.client.openSession({
          openId,
          ...(this.labels ? { labels: this.labels } : {}),
        });
        this.useSession(session, sentAt);
        return session;
      } catch (error) {
        if (isRevoked(error)) {
          this.revoked(error);
          return undefined;
        }
        this.report(error);
        await sleep(backoff.next(), this.stopSignal.signal);
      }
    }
    return undefined;
  }

  /** The agent was revoked: nothing it sends will be accepted again. Stop, releasing nothing (it cannot). */
  private revoked(error: unknown): void {
    this.report(error);
    if (this.state !== 'running') return;
    this.log.error('the agent was revoked; stopping', {});
    const session = this.session;
    if (session) this.sessionLost(session);
    this.stop({ drain: false }).catch((stopError: unknown) => this.report(stopError));
  }

  // Tasks

  private run(task: ClaimedTask, session: Session, claimSentAt: number): void {
    const entry: RunningTask = new RunningTask(
      task,
      session.sessionId,
      { claimSentAt, marginMs: this.marginFor(session) },
      () => this.abortTask(entry, 'deadline'),
    );
    this.tasks.add(entry);
    this.emitSafe('picked', task);
    entry.done = this.execute(entry)
      .catch((error: unknown) => this.report(error))
      .finally(() => {
        entry.dispose();
        this.progress.forget(entry);
        this.tasks.delete(entry);
        this.claims.wake();
      });
  }

  private async execute(entry: RunningTask): Promise<void> {
    const context: TaskContext = {
      signal: entry.signal,
      checkpoint: (value) => entry.setCheckpoint(value),
      heartbeatNow: () => this.heartbeats.beat(entry),
      progress: (update) => this.progress.set(entry, update),
      extendDeadline: async (seconds) => {
        entry.askExtension(seconds);
        await this.heartbeats.beat(entry);
        return Math.max(0, (entry.localDeadline - Date.now()) / 1_000);
      },
      submit: (children) =>
        this.client.submitChildren(
          entry.taskId,
          { leaseEpoch: entry.task.leaseEpoch, tasks: children },
          { signal: entry.signal },
        ),
      snooze: (seconds) => new Snooze(seconds),
      suspend: suspension,
      ...(entry.task.waitpoint === undefined ? {} : { waitpoint: entry.task.waitpoint }),
      usage: (units) => entry.addUsage(units),
    };
    let outcome: Outcome;
    try {
      if (!this.handler) throw new Error('this worker has no task handler');
      const { handler } = this;
      outcome = {
        ok: true,
        value: await inTaskSpan(
          entry.task,
          () => handler(entry.task, context),
          (traceparent) => {
            entry.spanTraceparent = traceparent;
          },
        ),
      };
    } catch (error) {
      outcome = { ok: false, error };
    }
    // The lease is gone (already reported) or was handed back: the server would refuse any outcome.
    if (entry.aborted) return;
    entry.phase = 'finishing';
    await this.outcomes.record(entry, outcome);
  }

  private abortTask(entry: RunningTask | undefined, reason: LostReason): void {
    if (!entry?.abort(reason)) return;
    this.log.warn('task lost', { taskId: entry.taskId, reason });
    // Once finishing, the pending complete or fail tells what happened.
    if (entry.phase === 'running') this.emitSafe('lost', entry.task, reason);
  }

  private findTask(taskId: string, sessionId?: string, leaseEpoch?: number): RunningTask | undefined {
    for (const entry of this.tasks) {
      if (entry.taskId !== taskId || entry.aborted) continue;
      if (leaseEpoch !== undefined && entry.task.leaseEpoch !== leaseEpoch) continue;
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
      await this.roles.releaseAll();
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
      const beats = this.heartbeats.stop();
      this.progress.stop();
      clearTimeout(this.sessionTimer);
      await beats;
      this.state = 'stopped';
      this.removeSignalHandlers?.();
    }
  }

  private async releaseRunning(): Promise<void> {
    const running = [...this.tasks].filter((entry) => !entry.aborted && entry.phase === 'running');
    await Promise.all(
      running.map(async (entry) => {
        entry.abort('released');
        await this.outcomes
          .release(entry)
          .catch(givingBackFailed((error) => this.report(error), entry.taskId));
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
