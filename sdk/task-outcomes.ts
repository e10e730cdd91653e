/**
 * What becomes of a task a Worker ran: its outcome recorded under its lease (completed, failed), or the task given
 * back; and what is reported when the lease is gone first.
 */
import type { AgentSchedulerClient } from './client.js';
import { type CarriedClaim, CompletionSender } from './completion-sender.js';
import { AgentSchedulerError, LeaseLostError, NonRetryableError, SessionLostError } from './errors.js';
import { isRefusal, jsonBytes, SERVER_LIMITS } from './limits.js';
import { PollBackoff } from './poll-backoff.js';
import type { RunningTask } from './running-task.js';
import { sleep } from './sleep.js';
import { suspendOf, waitInputOf } from './suspension.js';
import type { CompleteItem, FailInput, WaitResult } from './types.js';
import { type LostReason, Snooze, type Suspend, TaskError, type WorkerEvents } from './worker-events.js';

/** What a handler came to: the value it returned, or what it threw. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * What a handler's outcome is sent as: its result or its failure, a snooze, or a suspension. A snooze or a suspension
 * the server refuses is replaced by a failure for good: a failure whose answer was lost is sent again, never the
 * snooze or the suspension, which the lease that failure ended would refuse as lost.
 */
type Plan =
  | { readonly kind: 'complete'; readonly result: unknown }
  | { readonly kind: 'fail'; readonly error: unknown; readonly retryAfterSeconds?: number }
  | { readonly kind: 'snooze'; readonly seconds: number; readonly outcome: Outcome }
  | { readonly kind: 'suspend'; readonly suspend: Suspend };

/** Backoff between sends of a finished result whose call failed, while its lease lasts. */
const RESULT_RETRY = { min: 100, max: 2_000 };

/** The server answers a task whose lease went to another agent as it answers a task that does not exist. */
export const isLeaseGone = (error: unknown): boolean =>
  error instanceof LeaseLostError ||
  error instanceof SessionLostError ||
  (error instanceof AgentSchedulerError && error.code === 'TaskNotFound');

/** What a failed give-back of `taskId` reports: nothing if the lease is gone anyway, else an error naming it. */
export const givingBackFailed =
  (report: (error: unknown) => void, taskId: string) =>
  (error: unknown): void => {
    if (!isLeaseGone(error)) report(new TaskError(taskId, 'could not be given back', { cause: error }));
  };

/** What recording outcomes needs of the Worker. */
export interface OutcomeHost {
  readonly client: AgentSchedulerClient;
  /** How long one attempt of a call about a lease may take. */
  attemptTimeoutMs(): number;
  /** The server says session `sessionId` is gone: if it is the worker's session still, it is over. */
  sessionGone(sessionId: string): void;
  /** The claim a completion call may carry, for the `freed` slots its completions make (`ClaimLoop.carry`). */
  carryClaim(freed: number): CarriedClaim | undefined;
  emit<K extends keyof WorkerEvents>(event: K, ...args: WorkerEvents[K]): void;
  report(error: unknown): void;
}

export class TaskOutcomes {
  /** Completions, grouped into as few calls as the server takes. */
  private readonly completions: CompletionSender;

  constructor(private readonly host: OutcomeHost) {
    this.completions = new CompletionSender(host.client, {
      attemptTimeoutMs: () => host.attemptTimeoutMs(),
      carryClaim: (freed) => host.carryClaim(freed),
    });
  }

  /**
   * Sends a finished task's outcome until it lands: a failure that may be passing (network, throttling, a 5xx)
   * is waited out and the outcome sent again, for as long as the lease is good by the agent's own reckoning. Once
   * that runs out, nothing more is sent and the task is reported `lost`: a later send could land on another
   * agent's lease (the server would refuse it, but the work would have been done twice anyway).
   */
  async record(entry: RunningTask, outcome: Outcome): Promise<void> {
    const backoff = new PollBackoff(RESULT_RETRY);
    let plan = planOf(outcome);
    for (;;) {
      if (entry.aborted) {
        this.host.emit('lost', entry.task, lostReasonOf(entry));
        return;
      }
      try {
        const instead = await this.send(entry, plan);
        if (instead === undefined) return;
        plan = instead;
      } catch (error) {
        if (isLeaseGone(error)) {
          this.host.emit('lost', entry.task, lostReasonOf(entry));
          if (error instanceof SessionLostError) this.host.sessionGone(entry.sessionId);
          return;
        }
        if (entry.aborted) continue;
        this.host.report(
          new TaskError(entry.taskId, 'its outcome could not be recorded yet; sending it again', {
            cause: error,
          }),
        );
        await sleep(backoff.next(), entry.signal);
      }
    }
  }

  /** Gives the task back to its queue without using up an attempt; `lost` if its lease is gone already. */
  async release(entry: RunningTask): Promise<void> {
    try {
      await this.host.client.release(entry.taskId, { leaseEpoch: entry.task.leaseEpoch });
    } catch (error) {
      if (!isLeaseGone(error)) throw error;
      this.host.emit('lost', entry.task, 'lost');
      return;
    }
    this.host.emit('released', entry.task);
  }

  /** Sends what `plan` says; answers the failure to send instead when the server refuses a snooze or a suspension. */
  private async send(entry: RunningTask, plan: Plan): Promise<Plan | undefined> {
    switch (plan.kind) {
      case 'complete':
        await this.complete(entry, plan.result);
        return undefined;
      case 'fail':
        await this.fail(entry, plan.error, plan.retryAfterSeconds);
        return undefined;
      case 'snooze':
        return this.snooze(entry, plan.seconds, plan.outcome);
      case 'suspend':
        return this.suspend(entry, plan.suspend);
    }
  }

  /**
   * Puts the task off for `seconds` with a release that uses no attempt. Past the task's `maxSnoozes` the server
   * refuses it: the attempt fails instead, retried after the same delay.
   */
  private async snooze(entry: RunningTask, seconds: number, outcome: Outcome): Promise<Plan | undefined> {
    try {
      await this.host.client.release(
        entry.taskId,
        { leaseEpoch: entry.task.leaseEpoch, delaySeconds: seconds },
        { signal: entry.signal, timeoutMs: this.host.attemptTimeoutMs(), ...traced(entry) },
      );
    } catch (error) {
      if (!(error instanceof AgentSchedulerError && error.code === 'SnoozeLimitReached')) throw error;
      const cause = outcome.ok ? new Error('snoozed more than the task may (maxSnoozes)') : outcome.error;
      return { kind: 'fail', error: cause, retryAfterSeconds: seconds };
    }
    this.host.emit('snoozed', entry.task, seconds);
    return undefined;
  }

  /**
   * Suspends the task on a waitpoint, its lease ended; then hands the waitpoint and its callback URL to the
   * handler's `onSuspended`. A suspension the server refuses (a stack not yet upgraded to waitpoints) fails the
   * attempt instead.
   */
  private async suspend(entry: RunningTask, suspend: Suspend): Promise<Plan | undefined> {
    let suspended: WaitResult;
    try {
      suspended = await this.host.client.wait(
        entry.taskId,
        waitInputOf(suspend, entry.task.leaseEpoch, entry.pendingCheckpoint()),
        { signal: entry.signal, timeoutMs: this.host.attemptTimeoutMs(), ...traced(entry) },
      );
    } catch (error) {
      if (!isRefusal(error)) throw error;
      return {
        kind: 'fail',
        error: new Error(`the suspension was refused: ${error.message}`, { cause: error }),
      };
    }
    this.host.emit('suspended', entry.task, suspended);
    try {
      await suspend.options.onSuspended?.(suspended);
    } catch (error) {
      this.host.report(
        new TaskError(entry.taskId, 'was suspended, but its onSuspended failed', { cause: error }),
      );
    }
    return undefined;
  }

  private async complete(entry: RunningTask, result: unknown): Promise<void> {
    const usage = entry.usage();
    const item: CompleteItem = {
      taskId: entry.taskId,
      leaseEpoch: entry.task.leaseEpoch,
      ...(result === undefined ? {} : { result }),
      ...(usage ? { usage } : {}),
    };
    let bytes: number;
    try {
      bytes = jsonBytes(item);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return this.fail(entry, new NonRetryableError(`the result is not JSON: ${reason}`));
    }
    try {
      await this.completions.send(item, bytes, entry.signal, entry.spanTraceparent);
    } catch (error) {
      // Only a call of this result alone gets here refused (too large, nested too deep): it would be refused again
      // on every attempt.
      if (isRefusal(error)) {
        return this.fail(entry, new NonRetryableError(`the result was refused: ${error.message}`));
      }
      throw error;
    }
    this.host.emit('completed', entry.task, result);
  }

  private async fail(entry: RunningTask, error: unknown, retryAfterSeconds?: number): Promise<void> {
    const usage = entry.usage();
    await this.host.client.fail(
      entry.taskId,
      {
        leaseEpoch: entry.task.leaseEpoch,
        error: describeFailure(error),
        ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
        ...(usage ? { usage } : {}),
      },
      { signal: entry.signal, timeoutMs: this.host.attemptTimeoutMs(), ...traced(entry) },
    );
    this.host.emit('failed', entry.task, error);
  }
}

/** The handler span's context, for the call that sends its outcome: the server's span is its child. */
const traced = (entry: RunningTask): { traceparent?: string } =>
  entry.spanTraceparent === undefined ? {} : { traceparent: entry.spanTraceparent };

/** What to send for a handler's outcome. */
function planOf(outcome: Outcome): Plan {
  const suspend = suspendOf(outcome.ok ? outcome.value : outcome.error);
  if (suspend) return { kind: 'suspend', suspend };
  const seconds = snoozeOf(outcome);
  if (seconds !== undefined) return { kind: 'snooze', seconds, outcome };
  return outcome.ok ? { kind: 'complete', result: outcome.value } : { kind: 'fail', error: outcome.error };
}

/**
 * The delay a handler asked its task to be put off for, in whole seconds within the server's bounds: a `Snooze`
 * returned or thrown, or an error with a numeric `retryAfterSeconds` (at least a second, so that every snooze counts
 * towards the task's `maxSnoozes`). Undefined for any other outcome.
 */
export function snoozeOf(outcome: Outcome): number | undefined {
  const asked = outcome.ok ? outcome.value : outcome.error;
  const seconds =
    asked instanceof Snooze
      ? asked.seconds
      : !outcome.ok && typeof asked === 'object' && asked !== null
        ? Reflect.get(asked, 'retryAfterSeconds')
        : undefined;
  if (typeof seconds !== 'number' || Number.isNaN(seconds)) return undefined;
  return Math.min(SERVER_LIMITS.snoozeSeconds, Math.max(1, Math.ceil(seconds)));
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
