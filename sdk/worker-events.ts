/**
 * What a task handler receives and what a Worker reports.
 */
import type {
  BatchItemResult,
  ChildTaskInput,
  ClaimedTask,
  HeartbeatResult,
  ProgressInput,
  RoleLease,
  Session,
  SessionHoldings,
  WaitpointResult,
  WaitResult,
} from './types.js';

/** Why a task's lease ended before its handler could finish it. */
export type LostReason =
  /** An operator cancelled the task. */
  | 'cancelled'
  /** The server took the lease back (reclaimed, or a checkpoint was refused). */
  | 'lost'
  /** The attempt ran past its deadline (reckoned on the agent's clock from when it sent the claim). */
  | 'deadline'
  /** The agent's session ended, and every lease it held with it. */
  | 'session'
  /**
   * No heartbeat got through in time: by the agent's own reckoning (send time of the last acknowledged heartbeat
   * or claim, plus the lease TTL, less a margin) the lease is over, whatever the network is doing.
   */
  | 'expired';

/** Why a handler's signal was aborted: a lost lease, or the worker handing the task back. */
export type AbortReason = LostReason | 'released';

/** The `reason` of an aborted handler's signal. */
export class TaskAbortedError extends Error {
  constructor(
    readonly taskId: string,
    readonly reason: AbortReason,
  ) {
    super(`task ${taskId} was aborted: ${reason}`);
    this.name = 'TaskAbortedError';
  }
}

export interface TaskContext {
  /**
   * Aborts when the lease is gone or the task is handed back; stop work and return soon after. A handler that
   * ignores it is on its own: once it aborts, the Worker never sends the task's result, and the server may already
   * have given the task to another agent.
   */
  readonly signal: AbortSignal;
  /**
   * Records progress; a copy of the latest value goes with the next heartbeat and reaches the next holder on a
   * retry. Throws, recording nothing, for a value over the server's 16 KB of JSON (`RangeError`) or not JSON
   * (`TypeError`).
   */
  checkpoint(value: unknown): void;
  /** Sends a heartbeat now, with this task's latest checkpoint first; resolves once the server has the beat. */
  heartbeatNow(): Promise<void>;
  /**
   * Reports progress for people watching (`getTask`, `watchTask`, the console): the latest report of each task goes
   * out at most once a second, reports of many tasks in one call. Throws, reporting nothing, for a report the server
   * would refuse: `percent` outside 0 to 100, a `message` over 1,024 characters, `data` over 16 KB of JSON.
   */
  progress(update: ProgressInput): void;
  /**
   * Pushes the attempt's deadline forward: a heartbeat goes now asking that the attempt end no sooner than
   * `seconds` (1 to 43,200) after the server has it, never past the task's `maxTimeoutSeconds` from its start.
   * Resolves with the seconds left to the attempt by the agent's own reckoning, which the signal's deadline now
   * follows (unchanged when the task declares no `maxTimeoutSeconds`, or against a server older than extensions).
   */
  extendDeadline(seconds: number): Promise<number>;
  /**
   * Submits follow-up tasks of this one (up to 25), fenced by its lease: refused once the lease is gone. Each is
   * named by its `key` among this task's children, so an attempt run again after a crash gets the same tasks back.
   * A fan-in is a child whose `dependsOn` names its siblings.
   */
  submit(children: readonly ChildTaskInput[]): Promise<BatchItemResult[]>;
  /**
   * What a handler returns (or throws) to snooze the task: it goes back to its queue for `seconds` (1 to 43,200,
   * rounded up) without using an attempt, as when a provider answers 429 with a Retry-After. A task takes at most its
   * `maxSnoozes` (100 unless it says otherwise); past them the Worker fails the attempt instead, to be retried
   * after the same delay. A thrown error with a numeric `retryAfterSeconds` snoozes the same way.
   */
  snooze(seconds: number): Snooze;
  /**
   * What a handler returns (or throws) to suspend the task on a waitpoint until a person or another system answers
   * it: the lease ends (nothing is held while it waits, and no attempt is used), and the task runs again, on any
   * agent, once the waitpoint is completed, rejected or times out; that run reads how in `ctx.waitpoint`. The
   * waitpoint's id and its callback URL reach `onSuspended` and the Worker's `suspended` event. Throws for options
   * the server would refuse (`RangeError`, `TypeError`).
   */
  suspend(options: SuspendOptions): Suspend;
  /** How the waitpoint this task was last suspended on ended: set on the run that follows it, absent otherwise. */
  readonly waitpoint?: WaitpointResult;
  /**
   * Adds units the attempt used, by the name of a rate limit the task takes (`rateLimits`): tokens a model call
   * spent, dollars it cost. The totals go with the attempt's completion or failure and settle what its grant took
   * (an estimate, `units`). Throws, adding nothing, for a count that is not a number from 0 to 10^12 (`RangeError`)
   * or a fifth limit (`RangeError`).
   */
  usage(units: Readonly<Record<string, number>>): void;
}

/** A handler's request to put its task off (`TaskContext.snooze`). */
export class Snooze {
  constructor(readonly seconds: number) {}
}

/** How a handler suspends its task (`TaskContext.suspend`). */
export interface SuspendOptions {
  /** How long the waitpoint waits for an answer: 1 to 2,592,000 seconds (30 days), rounded up. */
  readonly timeoutSeconds: number;
  /** When it times out: `resume` the task (`ctx.waitpoint.outcome` is `timedOut`) or `fail` it for good. @default 'resume' */
  readonly onTimeout?: 'resume' | 'fail';
  /**
   * Saved on the task for the run that resumes it (up to 16 KB of JSON); absent, the latest `ctx.checkpoint` goes
   * if the heartbeats have not carried it yet.
   */
  readonly checkpoint?: unknown;
  /**
   * Called once the task is suspended, with its waitpoint and the URL that completes it (to send to whoever answers).
   * The task is suspended whatever this does; what it throws is reported through the Worker's `error` event.
   */
  readonly onSuspended?: (suspended: WaitResult) => void | Promise<void>;
}

/** A handler's request to suspend its task on a waitpoint (`TaskContext.suspend`). */
export class Suspend {
  constructor(readonly options: SuspendOptions) {}
}

/**
 * Runs one task. Its return value becomes the task's result; a throw fails the attempt, retryably unless the
 * error has `retryable === false`. A `Snooze` returned or thrown, or an error with `retryAfterSeconds`, snoozes it;
 * a `Suspend` suspends it on a waitpoint.
 */
export type TaskHandler = (task: ClaimedTask, context: TaskContext) => Promise<unknown>;

/** Why a grant of a role ended. */
export type RoleLostReason =
  /** This agent gave it up (or its worker stopped). */
  | 'released'
  /** The server gave it to another volunteer while this agent was away. */
  | 'lost'
  /** The agent's session ended (or is over by the agent's own reckoning), and every role it held with it. */
  | 'session';

/**
 * A failure about one task (its result could not be recorded yet, or at all), reported through the `error` event
 * with the task named; the underlying error is its `cause`.
 */
export class TaskError extends Error {
  constructor(
    readonly taskId: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`task ${taskId}: ${message}`, options);
    this.name = 'TaskError';
  }
}

/** The `reason` of an aborted role handler's signal. */
export class RoleAbortedError extends Error {
  constructor(
    readonly role: string,
    readonly reason: RoleLostReason,
  ) {
    super(`role ${role} ended: ${reason}`);
    this.name = 'RoleAbortedError';
  }
}

export interface RoleContext {
  readonly role: string;
  /** The epoch of this grant: present it downstream to fence work done in the role. */
  readonly leaseEpoch: number;
  /** Aborts when the role is lost or given up; stop and return soon after. */
  readonly signal: AbortSignal;
}

/**
 * Runs while the agent holds a role, typically until its signal aborts. Returning (or throwing) gives the role
 * up; the worker then volunteers again, behind the other candidates.
 */
export type RoleHandler = (context: RoleContext) => Promise<void>;

export interface WorkerEvents {
  /** A task was claimed and its handler started. */
  picked: [task: ClaimedTask];
  completed: [task: ClaimedTask, result: unknown];
  /** The handler threw and the failure was recorded. */
  failed: [task: ClaimedTask, error: unknown];
  /** The task went back to its queue, by `release()` or by a stop. */
  released: [task: ClaimedTask];
  /** The handler snoozed the task: back in its queue, claimable again after `delaySeconds`, no attempt used. */
  snoozed: [task: ClaimedTask, delaySeconds: number];
  /** The handler suspended the task on a waitpoint: no lease held until it is answered or times out. */
  suspended: [task: ClaimedTask, suspended: WaitResult];
  /** The lease ended before the task could be finished; nothing was recorded for it. */
  lost: [task: ClaimedTask, reason: LostReason];
  /** A session was opened: at start, and again after one was lost. */
  session: [session: Session];
  /** The session ended (expired or replaced): its leases and roles with it. */
  sessionLost: [session: Session];
  /** A heartbeat got through; the result carries notices for tasks and roles. */
  heartbeat: [result: HeartbeatResult, session: Session];
  /**
   * The worker read what its session holds (after a heartbeat whose answer may have been lost, or a grant it never
   * heard of): role subscriptions catch up on grants whose notices were lost.
   */
  holdings: [holdings: SessionHoldings, session: Session];
  /** This agent was granted one of the worker's roles. */
  gotRole: [lease: RoleLease];
  lostRole: [lease: RoleLease, reason: RoleLostReason];
  /** Something unexpected went wrong; the worker carries on. */
  error: [error: unknown];
}

/** The Worker events a role subscription follows. */
type RoleHostEvent = 'session' | 'sessionLost' | 'heartbeat' | 'holdings';

/** What a role subscription needs of the Worker whose session holds its role. */
export interface RoleHost {
  readonly sessionId: string | undefined;
  readonly started: boolean;
  start(): Promise<void>;
  stop(options: { drain: boolean }): Promise<void>;
  /**
   * Counts a follower among the roles of this session, so that stopping gives its role up too; returns the call
   * that stops counting it.
   */
  track(follower: { release(): Promise<void> }): () => void;
  on<K extends RoleHostEvent>(event: K, listener: (...args: WorkerEvents[K]) => void): unknown;
  off<K extends RoleHostEvent>(event: K, listener: (...args: WorkerEvents[K]) => void): unknown;
}

/** Compatible with the Powertools Logger and with `console`. */
export interface WorkerLog {
  debug(message: string, ...extra: unknown[]): void;
  info(message: string, ...extra: unknown[]): void;
  warn(message: string, ...extra: unknown[]): void;
  error(message: string, ...extra: unknown[]): void;
}

const ignore = () => undefined;

export const SILENT_LOG: WorkerLog = { debug: ignore, info: ignore, warn: ignore, error: ignore };
