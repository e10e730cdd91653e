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
 */
import { EventEmitter } from 'node:events';
import { type AgentSchedulerClient, newClaimId, newOpenId } from './client.js';
import { CompletionSender } from './completion-sender.js';
import {
  AgentSchedulerError,
  isAgentSchedulerError,
  LeaseLostError,
  NonRetryableError,
  SessionLostError,
} from './errors.js';
import { isRefusal, jsonBytes, SERVER_LIMITS, takeWithinBudget } from './limits.js';
import { PollBackoff, type PollInterval } from './poll-backoff.js';
import { PushChannel, type PushFrame, type PushOptions } from './push-channel.js';
import { RoleFollower } from './role-follower.js';
import { RunningTask } from './running-task.js';
import { sleep } from './sleep.js';
import type { ClaimedTask, ClaimResult, CompleteItem, FailInput, HeartbeatResult, Session } from './types.js';
import {
  type LostReason,
  RoleAbortedError,
  type RoleHandler,
  SILENT_LOG,
  type TaskContext,
  TaskError,
  type TaskHandler,
  type WorkerEvents,
  type WorkerLog,
} from './worker-events.js';

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

/** A checkpoint going out with a heartbeat. */
interface OutgoingCheckpoint {
  readonly entry: RunningTask;
  readonly value: unknown;
  readonly version: number;
}

/** How soon after a heartbeat the next one goes when checkpoints were left out of it to stay under the body limit. */
const CHECKPOINT_FOLLOW_UP_MS = 1_000;

/** The server answers a task whose lease went to another agent as it answers a task that does not exist. */
const isLeaseGone = (error: unknown): boolean =>
  error instanceof LeaseLostError ||
  error instanceof SessionLostError ||
  (error instanceof AgentSchedulerError && error.code === 'TaskNotFound');

/** A revoked agent can do nothing more: its worker stops instead of opening session after session. */
const isRevoked = (error: unknown): boolean => isAgentSchedulerError(error, 'AgentRevoked');

/** How long a claim attempt may take: a grant made during it counts from its send time. */
const CLAIM_ATTEMPT_MS = 10_000;
/** Backoff between sends of a finished result whose call failed, while its lease lasts. */
const RESULT_RETRY = { min: 100, max: 2_000 };
/** Heartbeats in a row that must name a task this worker does not run before it asks the server what it holds. */
const UNKNOWN_HELD_BEATS = 2;

export class Worker extends EventEmitter<WorkerEvents> {
  private readonly client: AgentSchedulerClient;
  private readonly handler: TaskHandler | undefined;
  private readonly roleHandlers: Readonly<Record<string, RoleHandler>>;
  private readonly heldRoles = new Map<
    string,
    {
      readonly subscription: RoleFollower;
      running?: { controller: AbortController; done: Promise<void> };
    }
  >();
  /** Every role followed on this worker's session: its own `roles` and `RoleSubscription`s given this worker. */
  private readonly followers = new Set<{ release(): Promise<void> }>();
  private readonly concurrency: number;
  private readonly queues: readonly string[] | undefined;
  private readonly pollInterval: PollInterval;
  private readonly idle: PollBackoff;
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
  /** The claim whose answer has not come back: sent again, with the same id, until one does. */
  private pendingClaim:
    | { readonly id: string; readonly seq: number; readonly sentAt: number; readonly sessionId: string }
    | undefined;
  /** The number of the last new claim of the session: an attempt held in the network cannot grant after a later one. */
  private claimSeq = 0;
  private claiming = false;
  /** Claims sent under the session (retries included): a session read with one sent meanwhile may be ahead of it. */
  private claimsSent = 0;
  /** Leases (`taskId:epoch`) this worker gave back without running them: a claim answer that brings one is ignored. */
  private readonly givenBack = new Set<string>();
  /** Task ids the server says the session holds and this worker does not run: heartbeats in a row. */
  private readonly unknownHeld = new Map<string, number>();
  /** A heartbeat answer may have been lost (its notices with it): ask the server what the session holds. */
  private reconcileNeeded = false;
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
  private readonly pushOptions: PushOptions | undefined;
  private channel: PushChannel | undefined;
  /**
   * A wake for one of this worker's queues (or a change of the channel) came since the last claim was sent: the
   * next idle wait ends at once. Cleared as a claim is sent, so a wake that arrives while it is in flight counts.
   */
  private nudged = false;
  private endIdleWait: (() => void) | undefined;
  /** Completions, grouped into as few calls as the server takes. */
  private readonly completions: CompletionSender;
  /** The sooner beat that carries checkpoints a beat had no room for. */
  private checkpointTimer: ReturnType<typeof setTimeout> | undefined;
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
    if (options.leaseMarginMs !== undefined && !(options.leaseMarginMs >= 0)) {
      throw new RangeError('leaseMarginMs must be 0 or more');
    }
    this.leaseMarginMs = options.leaseMarginMs;
    this.pushOptions = options.push === false ? undefined : options.push === true ? {} : (options.push ?? {});
    this.completions = new CompletionSender(this.client, () => this.attemptTimeoutMs());
  }

  /** Whether the push channel's socket is up now: claims say `listening`, and an idle wait ends at a wake. */
  get listening(): boolean {
    return this.channel?.connected === true;
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
    this.closePushChannel();
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
    const sentAt = Date.now();
    try {
      session = await this.client.openSession();
    } catch (error) {
      this.state = 'stopped';
      throw error;
    }
    // A stop that came while the session was opening wins: nothing starts.
    if (this.state !== 'running') return;
    this.useSession(session, sentAt);
    this.openPushChannel();
    for (const [role, handler] of Object.entries(this.roleHandlers)) this.holdRole(role, handler);
    if (this.handler) this.claimLoop = this.runClaimLoop().catch((error: unknown) => this.report(error));
  }

  // Push channel

  private openPushChannel(): void {
    if (!this.pushOptions || this.channel) return;
    const channel = new PushChannel({
      ...this.pushOptions,
      ticket: () => this.client.pushTicket('agent', { signal: this.stopSignal.signal }),
    });
    this.channel = channel;
    channel.on('frame', (frame) => this.heardPush(frame));
    // A new connection listens but is not idle yet, and a lost one hears nothing: either way, claim now (saying
    // whether it listens) rather than at the end of a wait set for the other case.
    channel.on('connected', () => {
      this.log.debug('push channel connected', {});
      this.nudge();
    });
    channel.on('disconnected', () => {
      if (this.channel !== channel) return;
      this.log.info('push channel down; polling until it is back', {});
      this.nudge();
    });
    channel.on('unavailable', (reason) => {
      this.log.info('no push channel; polling', {
        reason: reason instanceof Error ? reason.message : String(reason),
      });
    });
    channel.on('failure', (error) => {
      this.log.debug('push channel connect failed', {
        error: error instanceof Error ? error.message : String(error),
      });
    });
    channel.start();
  }

  private closePushChannel(): void {
    const channel = this.channel;
    this.channel = undefined;
    channel?.close();
  }

  private heardPush(frame: PushFrame): void {
    if (this.state !== 'running') return;
    if (frame.type === 'wake') {
      if (!this.queues || this.queues.includes(frame.queue)) this.nudge();
    } else if (frame.type === 'role' && this.session) {
      // The grant is in the session's notices: a heartbeat now brings it (and starts the role's handler).
      this.beat().catch(() => undefined);
    }
  }

  /** Ends the claim loop's idle wait now, or the next one if it is not waiting. */
  private nudge(): void {
    this.nudged = true;
    this.endIdleWait?.();
  }

  /** The wait between an empty claim and the next: `ms`, or less when nudged (a wake, the channel changing). */
  private idleWait(ms: number): Promise<void> {
    if (ms <= 0 || this.nudged || this.state !== 'running') return Promise.resolve();
    return new Promise((resolve) => {
      const signal = this.stopSignal.signal;
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        if (this.endIdleWait === done) this.endIdleWait = undefined;
        resolve();
      };
      // setTimeout overflows past 2^31 - 1 ms and would fire at once.
      const timer = setTimeout(done, Math.min(ms, 2_147_483_647));
      signal.addEventListener('abort', done, { once: true });
      this.endIdleWait = done;
    });
  }

  // Roles

  private holdRole(role: string, handler: RoleHandler): void {
    const subscription = new RoleFollower(this.client, role, this, false);
    const held: {
      subscription: RoleFollower;
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

  /** @internal Counts a `RoleSubscription` riding on this worker's session: stopping gives its role up too. */
  track(follower: { release(): Promise<void> }): () => void {
    this.followers.add(follower);
    return () => this.followers.delete(follower);
  }

  /**
   * On stop: roles are given up first, so their next holders need not wait for this session to expire: the
   * worker's own `roles`, then those of subscriptions sharing its session (each stops volunteering, as on its
   * own `release()`).
   */
  private async releaseRoles(): Promise<void> {
    await Promise.all(
      [...this.heldRoles.values()].map(async ({ subscription, running }) => {
        await subscription.close().catch((error: unknown) => this.report(error));
        running?.controller.abort(new RoleAbortedError(subscription.role, 'released'));
        await running?.done;
      }),
    );
    await Promise.all(
      [...this.followers].map((follower) => follower.release().catch((error: unknown) => this.report(error))),
    );
  }

  // Session and heartbeats

  private useSession(session: Session, sentAt: number): void {
    this.session = session;
    this.sessionAbort = new AbortController();
    this.sessionValidUntil = 0;
    this.pendingClaim = undefined;
    this.claimSeq = 0;
    this.unknownHeld.clear();
    this.givenBack.clear();
    this.reconcileNeeded = false;
    this.acknowledged(session, sentAt);
    this.log.info('session opened', { sessionId: session.sessionId });
    this.emitSafe('session', session);
    this.scheduleHeartbeat();
    this.wake();
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
    return (
      [...this.tasks].some((entry) => !entry.aborted) ||
      this.heldRoles.size > 0 ||
      this.listenerCount('heartbeat') > 0
    );
  }

  /**
   * One heartbeat at a time: a beat asked for while one is in flight goes after it, with newer checkpoints. A beat
   * asked for by a task's `heartbeatNow` carries that task's checkpoint first.
   */
  private beat(first?: RunningTask): Promise<void> {
    const run = this.beatChain.then(() => this.sendHeartbeat(first));
    this.beatChain = run.catch(() => undefined);
    return run;
  }

  private async sendHeartbeat(first?: RunningTask): Promise<void> {
    const session = this.session;
    if (!session) {
      throw new SessionLostError({
        status: 409,
        code: 'SessionLost',
        message: 'the worker has no live session',
      });
    }
    const { carried, leftOver } = this.checkpointsToSend(session, first);
    const sentAt = Date.now();
    let result: HeartbeatResult;
    let pending: readonly OutgoingCheckpoint[];
    try {
      ({ result, landed: pending } = await this.heartbeatCarrying(session, carried, sentAt));
    } catch (error) {
      if (error instanceof SessionLostError) this.sessionLost(session);
      else if (isRevoked(error)) this.revoked(error);
      else if (this.session === session) {
        // Its answer may have been lost, notices with it: ask what the session holds once a beat gets through.
        this.reconcileNeeded = true;
        this.report(error);
      }
      throw error;
    }
    this.acknowledged(session, sentAt);
    this.emitSafe('heartbeat', result, session);
    for (const p of pending) p.entry.acknowledgeCheckpoint(p.version);
    if (leftOver) this.beatSoon(session);
    for (const taskId of result.cancelled)
      this.abortTask(this.findTask(taskId, session.sessionId), 'cancelled');
    // Each lost lease by its epoch: a run of the task this session claimed again since is not the one lost. A
    // server older than epoch-bearing notices names task ids only.
    for (const { taskId, leaseEpoch } of result.lostLeases ??
      result.lost.map((taskId) => ({ taskId, leaseEpoch: undefined })))
      this.abortTask(this.findTask(taskId, session.sessionId, leaseEpoch), 'lost');
    this.noticeHeld(session, result.held);
  }

  /**
   * The checkpoints the next beat carries, as many as its body has room for: `first`'s, then the longest waiting,
   * so none starves; the rest are `leftOver` for a sooner beat. One that was in a beat refused whole goes alone.
   */
  private checkpointsToSend(
    session: Session,
    first: RunningTask | undefined,
  ): { carried: OutgoingCheckpoint[]; leftOver: boolean } {
    const pending: (OutgoingCheckpoint & { bytes: number; since: number; alone: boolean })[] = [];
    for (const entry of this.tasks) {
      if (entry.aborted || entry.sessionId !== session.sessionId) continue;
      const checkpoint = entry.pendingCheckpoint();
      if (checkpoint) pending.push({ entry, ...checkpoint });
    }
    pending.sort((a, b) => Number(b.entry === first) - Number(a.entry === first) || a.since - b.since);
    const [head] = pending;
    const carried = head?.alone
      ? [head]
      : takeWithinBudget(
          pending.filter((p) => !p.alone),
          // Each goes as `{"taskId":…,"leaseEpoch":…,"checkpoint":…}`.
          (p) => p.bytes + p.entry.taskId.length + String(p.entry.task.leaseEpoch).length + 44,
          SERVER_LIMITS.checkpointsPerHeartbeat,
        );
    return { carried, leftOver: carried.length < pending.length };
  }

  /**
   * One heartbeat carrying `carried`. A beat refused whole for its checkpoints (over the body limit, one nested too
   * deep) is sent again at once without them, so no checkpoint can let the session lapse: a checkpoint refused
   * alone is reported and dropped, and those refused together go alone in the next beats. `landed` are those the
   * server has.
   */
  private async heartbeatCarrying(
    session: Session,
    carried: readonly OutgoingCheckpoint[],
    sentAt: number,
  ): Promise<{ result: HeartbeatResult; landed: readonly OutgoingCheckpoint[] }> {
    const send = (checkpoints: readonly OutgoingCheckpoint[]) =>
      this.client.heartbeat(
        {
          sessionId: session.sessionId,
          ...(checkpoints.length === 0
            ? {}
            : {
                checkpoints: checkpoints.map((p) => ({
                  taskId: p.entry.taskId,
                  leaseEpoch: p.entry.task.leaseEpoch,
                  checkpoint: p.value,
                })),
              }),
        },
        {
          // An attempt may not outlast the next beat, nor the session's own reckoning.
          timeoutMs: Math.max(
            100,
            Math.min(session.heartbeatIntervalSeconds * 1_000, this.sessionValidUntil - sentAt),
          ),
          signal: this.sessionAbort.signal,
        },
      );
    try {
      return { result: await send(carried), landed: carried };
    } catch (error) {
      if (carried.length === 0 || !isRefusal(error)) throw error;
      const [only] = carried;
      if (carried.length === 1 && only) {
        only.entry.acknowledgeCheckpoint(only.version);
        this.report(
          new TaskError(only.entry.taskId, `its checkpoint was refused: ${error.message}`, { cause: error }),
        );
      } else for (const p of carried) p.entry.sendCheckpointAlone = true;
      this.beatSoon(session);
      return { result: await send([]), landed: [] };
    }
  }

  /** A beat sooner than the interval, for checkpoints the last one had no room for. */
  private beatSoon(session: Session): void {
    if (this.checkpointTimer !== undefined) return;
    this.checkpointTimer = setTimeout(
      () => {
        this.checkpointTimer = undefined;
        if (this.session === session && this.heartbeating) this.beat().catch(() => undefined);
      },
      Math.min(CHECKPOINT_FOLLOW_UP_MS, session.heartbeatIntervalSeconds * 1_000),
    );
  }

  /**
   * Task ids the server says the session holds that this worker does not run are grants whose answers were lost
   * (a claim retried after its first attempt, still in flight, had granted them). Seen in a row, and with no
   * claim in flight, they are given back; a beat whose answer was lost leads to the same check.
   */
  private noticeHeld(session: Session, held: readonly string[]): void {
    const known = new Set([...this.tasks].map((entry) => entry.taskId));
    const unknown = held.filter((taskId) => !known.has(taskId));
    for (const taskId of [...this.unknownHeld.keys()])
      if (!unknown.includes(taskId)) this.unknownHeld.delete(taskId);
    for (const taskId of unknown) this.unknownHeld.set(taskId, (this.unknownHeld.get(taskId) ?? 0) + 1);
    const due = [...this.unknownHeld.values()].some((beats) => beats >= UNKNOWN_HELD_BEATS) && !this.claiming;
    if (!due && !this.reconcileNeeded) return;
    this.reconcileNeeded = false;
    this.unknownHeld.clear();
    this.reconcile(session).catch((error: unknown) => this.report(error));
  }

  /**
   * Reads what the session holds, and gives back the tasks this worker does not run. A grant of a claim still in
   * flight shows in the read before its answer is back: while a claim is open, or one was sent during the read,
   * nothing is given back and the next beat looks again. What is given back is never run, should its grant come
   * after all.
   */
  private async reconcile(session: Session): Promise<void> {
    const claimsBefore = this.claimsSent;
    const holdings = await this.client.getSession({ signal: this.sessionAbort.signal });
    if (holdings.sessionId !== session.sessionId || this.session !== session) return;
    this.emitSafe('holdings', holdings, session);
    if (this.claiming || this.pendingClaim !== undefined || this.claimsSent !== claimsBefore) {
      this.reconcileNeeded = true;
      return;
    }
    const known = new Set([...this.tasks].map((entry) => entry.taskId));
    await Promise.all(
      holdings.tasks
        .filter((task) => !known.has(task.taskId))
        .map(async (task) => {
          this.givenBack.add(`${task.taskId}:${task.leaseEpoch}`);
          this.log.warn('giving back a task whose grant was never heard of', { taskId: task.taskId });
          await this.client
            .release(task.taskId, { leaseEpoch: task.leaseEpoch }, { signal: this.sessionAbort.signal })
            .catch(this.givingBackFailed(task.taskId));
        }),
    );
  }

  /** Every lease of the session is gone: abort their handlers, then open a new session unless stopping. */
  private sessionLost(session: Session, reason: 'session' | 'expired' = 'session'): void {
    if (this.session !== session) return;
    this.session = undefined;
    clearTimeout(this.heartbeatTimer);
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
        const session = await this.client.openSession({ openId });
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
      // A claim whose answer never came is sent again with its id (and keeps its first send time): the server
      // answers it with what it granted instead of leasing more this worker would never hear of.
      const pending =
        this.pendingClaim?.sessionId === session.sessionId
          ? this.pendingClaim
          : { id: newClaimId(), seq: ++this.claimSeq, sentAt: Date.now(), sessionId: session.sessionId };
      this.pendingClaim = pending;
      let claimed: ClaimResult;
      this.claiming = true;
      this.claimsSent++;
      // A wake from now on is news this claim may not have seen.
      this.nudged = false;
      const listening = this.listening;
      try {
        claimed = await this.client.claim(
          {
            sessionId: session.sessionId,
            max: Math.min(free, SERVER_LIMITS.tasksPerClaim),
            ...(this.queues ? { queues: this.queues } : {}),
            idleClaims,
            claimId: pending.id,
            claimSeq: pending.seq,
            ...(listening ? { listening: true } : {}),
          },
          {
            timeoutMs: Math.min(CLAIM_ATTEMPT_MS, (session.leaseTtlSeconds * 1_000) / 2),
            signal: this.sessionAbort.signal,
          },
        );
      } catch (error) {
        if (error instanceof SessionLostError) this.sessionLost(session);
        else if (isRevoked(error)) this.revoked(error);
        else {
          // A refusal is an answer (a new claim gets a new id); a network failure or a 5xx may hide a grant.
          if (error instanceof AgentSchedulerError && error.status >= 400 && error.status < 500) {
            this.pendingClaim = undefined;
          }
          this.report(error);
          await sleep(idle.next(), this.stopSignal.signal);
        }
        continue;
      } finally {
        this.claiming = false;
      }
      if (this.pendingClaim === pending) this.pendingClaim = undefined;
      if (this.state !== 'running' || this.session !== session) {
        await this.handBackClaimed(claimed.tasks, session);
        continue;
      }
      for (const task of claimed.tasks)
        if (!this.givenBack.delete(`${task.taskId}:${task.leaseEpoch}`))
          this.run(task, session, pending.sentAt);
      if (claimed.tasks.length > 0) {
        idle.reset();
        idleClaims = 0;
        // The claim extended the session on the server, after it was first sent.
        this.acknowledged(session, pending.sentAt);
        // A claim first sent longer ago than the lease lasts cannot vouch for the session: nothing else did.
        if (Date.now() >= this.sessionValidUntil) this.sessionLapsed(session);
      } else idleClaims++;
      // The server's suggestion wins: its operator sets what idle polling may cost. To a listening agent it is its
      // slow safety poll, and a wake ends the wait first.
      const wait = claimed.tasks.length > 0 ? 0 : (claimed.retryAfterMs ?? idle.next());
      await this.idleWait(wait);
    }
  }

  /** What a failed give-back of `taskId` reports: nothing if the lease is gone anyway, else an error naming it. */
  private givingBackFailed(taskId: string): (error: unknown) => void {
    return (error) => {
      if (!isLeaseGone(error))
        this.report(new TaskError(taskId, 'could not be given back', { cause: error }));
    };
  }

  /** Tasks a claim returned after a stop began: back to their queue, unless their session is already gone. */
  private async handBackClaimed(tasks: readonly ClaimedTask[], session: Session): Promise<void> {
    if (this.session !== session) return;
    await Promise.all(
      tasks.map((task) =>
        this.client
          .release(task.taskId, { leaseEpoch: task.leaseEpoch })
          .catch(this.givingBackFailed(task.taskId)),
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
        this.tasks.delete(entry);
        this.wake();
      });
  }

  private async execute(entry: RunningTask): Promise<void> {
    const context: TaskContext = {
      signal: entry.signal,
      checkpoint: (value) => entry.setCheckpoint(value),
      heartbeatNow: () => this.beat(entry),
      submit: (children) =>
        this.client.submitChildren(
          entry.taskId,
          { leaseEpoch: entry.task.leaseEpoch, tasks: children },
          { signal: entry.signal },
        ),
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
    await this.record(entry, outcome);
  }

  /**
   * Sends a finished task's outcome until it lands: a failure that may be passing (network, throttling, a 5xx)
   * is waited out and the outcome sent again, for as long as the lease is good by the agent's own reckoning. Once
   * that runs out, nothing more is sent and the task is reported `lost`: a later send could land on another
   * agent's lease (the server would refuse it, but the work would have been done twice anyway).
   */
  private async record(
    entry: RunningTask,
    outcome: { ok: true; value: unknown } | { ok: false; error: unknown },
  ): Promise<void> {
    const backoff = new PollBackoff(RESULT_RETRY);
    for (;;) {
      if (entry.aborted) {
        this.emitSafe('lost', entry.task, lostReasonOf(entry));
        return;
      }
      try {
        if (outcome.ok) await this.complete(entry, outcome.value);
        else await this.fail(entry, outcome.error);
        return;
      } catch (error) {
        if (isLeaseGone(error)) {
          this.emitSafe('lost', entry.task, lostReasonOf(entry));
          if (error instanceof SessionLostError && this.session?.sessionId === entry.sessionId) {
            this.sessionLost(this.session);
          }
          return;
        }
        if (entry.aborted) continue;
        this.report(
          new TaskError(entry.taskId, 'its outcome could not be recorded yet; sending it again', {
            cause: error,
          }),
        );
        await sleep(backoff.next(), entry.signal);
      }
    }
  }

  private async complete(entry: RunningTask, result: unknown): Promise<void> {
    const item: CompleteItem = {
      taskId: entry.taskId,
      leaseEpoch: entry.task.leaseEpoch,
      ...(result === undefined ? {} : { result }),
    };
    let bytes: number;
    try {
      bytes = jsonBytes(item);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return this.fail(entry, new NonRetryableError(`the result is not JSON: ${reason}`));
    }
    try {
      await this.completions.send(item, bytes, entry.signal);
    } catch (error) {
      // Only a call of this result alone gets here refused (too large, nested too deep): it would be refused again
      // on every attempt.
      if (isRefusal(error)) {
        return this.fail(entry, new NonRetryableError(`the result was refused: ${error.message}`));
      }
      throw error;
    }
    this.emitSafe('completed', entry.task, result);
  }

  private async fail(entry: RunningTask, error: unknown): Promise<void> {
    await this.client.fail(
      entry.taskId,
      { leaseEpoch: entry.task.leaseEpoch, error: describeFailure(error) },
      { signal: entry.signal, timeoutMs: this.attemptTimeoutMs() },
    );
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
      clearTimeout(this.checkpointTimer);
      clearTimeout(this.sessionTimer);
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
        await this.releaseLease(entry).catch(this.givingBackFailed(entry.taskId));
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

/** What a `lost` event says of a task whose lease ended under it. */
const lostReasonOf = (entry: RunningTask): LostReason => {
  const reason = entry.abortReason;
  return reason === undefined || reason === 'released' ? 'lost' : reason;
};

/** The `error` of a fail call: a non-empty message within the server's limit, and whether to try again. */
export function describeFailure(error: unknown): FailInput['error'] {
  const raw = error instanceof Error ? error.message || error.name : String(error);
  const message = (raw || 'the handler failed').slice(0, SERVER_LIMITS.errorMessageChars);
  const retryable = !(
    typeof error === 'object' &&
    error !== null &&
    Reflect.get(error, 'retryable') === false
  );
  return { message, retryable };
}
