/**
 * A Worker's claims: one at a time while it has room for more tasks, sent again with the same id until an answer
 * comes back (so a grant whose answer was lost is answered again rather than leased twice), and between empty ones
 * an idle wait: doubling from the poll interval's `min`, or the server's suggestion, ended early by a push wake.
 */
import type { AgentSchedulerClient } from './client.js';
import type { CarriedClaim } from './completion-sender.js';
import { AgentSchedulerError, isAgentSchedulerError, SessionLostError } from './errors.js';
import { SERVER_LIMITS } from './limits.js';
import { PollBackoff, type PollInterval } from './poll-backoff.js';
import { newClaimId } from './request-ids.js';
import { sleep } from './sleep.js';
import { givingBackFailed } from './task-outcomes.js';
import type { ClaimedTask, ClaimInput, ClaimResult, Session } from './types.js';

/** How long a claim attempt may take: a grant made during it counts from its send time. */
const CLAIM_ATTEMPT_MS = 10_000;

/** A revoked agent can do nothing more: its worker stops instead of opening session after session. */
export const isRevoked = (error: unknown): boolean => isAgentSchedulerError(error, 'AgentRevoked');

/** What the claim loop needs of the Worker. */
export interface ClaimHost {
  readonly client: AgentSchedulerClient;
  readonly queues: readonly string[] | undefined;
  /** Aborted when the worker stops: ends every wait. */
  readonly stopSignal: AbortSignal;
  /** Whether the worker runs (not stopping nor stopped). */
  running(): boolean;
  session(): Session | undefined;
  /** The session being opened in place of a lost one, if any. */
  reopening(): Promise<Session | undefined> | undefined;
  /** Aborted when the session is over: calls made under it are abandoned. */
  sessionSignal(): AbortSignal;
  /** Tasks the worker has room for now. */
  room(): number;
  /** Whether the push channel's socket is up. */
  listening(): boolean;
  /** A task the session gave back already, that a claim brought all the same: not run. */
  takeGivenBack(task: ClaimedTask): boolean;
  run(task: ClaimedTask, session: Session, claimSentAt: number): void;
  /** The server extended `session` in answer to a request sent at `sentAt`. */
  acknowledged(session: Session, sentAt: number): void;
  /** When the session is over by the agent's own reckoning. */
  sessionValidUntil(): number;
  sessionLapsed(session: Session): void;
  sessionLost(session: Session): void;
  revoked(error: unknown): void;
  report(error: unknown): void;
}

/** A claim of the session, the same on every attempt: its id and number, and when it was first sent. */
interface PendingClaim {
  readonly id: string;
  readonly seq: number;
  readonly sentAt: number;
  readonly sessionId: string;
}

/** A claim and its answer. */
interface Answered {
  readonly pending: PendingClaim;
  readonly claimed: ClaimResult;
}

export class ClaimLoop {
  private readonly idle: PollBackoff;
  /** The claim whose answer has not come back: sent again, with the same id, until one does. */
  private pendingClaim: PendingClaim | undefined;
  /** The answer of a claim a completion carried, for the loop to take as its own. */
  private carried: (Answered & { readonly sessionId: string }) | undefined;
  /** Claims in a row that found nothing: the server's suggested wait grows with them. */
  private idleClaims = 0;
  /** The number of the last new claim of the session: an attempt held in the network cannot grant after a later one. */
  private claimSeq = 0;
  private claiming = false;
  /** Claims sent under the session (retries included): a session read with one sent meanwhile may be ahead of it. */
  private claimsSent = 0;
  private wakeClaimLoop: (() => void) | undefined;
  /**
   * A wake for one of this worker's queues (or a change of the channel) came since the last claim was sent: the
   * next idle wait ends at once. Cleared as a claim is sent, so a wake that arrives while it is in flight counts.
   */
  private nudged = false;
  private endIdleWait: (() => void) | undefined;

  constructor(
    private readonly host: ClaimHost,
    pollInterval: PollInterval,
  ) {
    this.idle = new PollBackoff(pollInterval);
  }

  /** A new session: its claims are numbered from 1, and none awaits an answer. */
  reset(): void {
    this.pendingClaim = undefined;
    this.carried = undefined;
    this.claimSeq = 0;
  }

  /** Claims of the session: one being sent now, one awaiting its answer, and how many were sent. */
  get status(): { readonly inFlight: boolean; readonly unanswered: boolean; readonly sent: number } {
    return { inFlight: this.claiming, unanswered: this.pendingClaim !== undefined, sent: this.claimsSent };
  }

  async run(): Promise<void> {
    const host = this.host;
    const idle = this.idle;
    while (host.running()) {
      const session = host.session() ?? (await host.reopening());
      if (!session) {
        await sleep(idle.next(), host.stopSignal);
        continue;
      }
      if (!host.running()) break;
      const free = host.room();
      // A claim a completion carries is this loop's too: none is sent beside it.
      if (free <= 0 || this.claiming) {
        await this.untilWoken();
        continue;
      }
      const answered = this.takeCarried(session) ?? (await this.send(session, free));
      if (!answered) continue;
      const { pending, claimed } = answered;
      if (!host.running() || host.session() !== session) {
        await this.handBack(claimed.tasks, session);
        continue;
      }
      for (const task of claimed.tasks)
        if (!host.takeGivenBack(task)) host.run(task, session, pending.sentAt);
      if (claimed.tasks.length > 0) {
        idle.reset();
        this.idleClaims = 0;
        // The claim extended the session on the server, after it was first sent.
        host.acknowledged(session, pending.sentAt);
        // A claim first sent longer ago than the lease lasts cannot vouch for the session: nothing else did.
        if (Date.now() >= host.sessionValidUntil()) host.sessionLapsed(session);
      } else this.idleClaims++;
      // The server's suggestion wins: its operator sets what idle polling may cost. To a listening agent it is its
      // slow safety poll, and a wake ends the wait first.
      const wait = claimed.tasks.length > 0 ? 0 : (claimed.retryAfterMs ?? idle.next());
      await this.idleWait(wait);
    }
    // The answer of a claim a completion carried that the loop did not take: its tasks go back.
    const left = this.carried;
    const session = host.session();
    this.carried = undefined;
    if (left && session?.sessionId === left.sessionId) await this.handBack(left.claimed.tasks, session);
  }

  /**
   * The claim a completion about to be sent may carry, so a busy worker finishes a task and takes its next in one
   * call: one while the worker is full and so waits for room (the completion makes `freed` slots of it), none if
   * a claim is in flight. Its answer, or `undefined` if none came (the claim is then sent on its own, with its id),
   * goes to `answered`, before the completion settles.
   */
  carry(freed: number): CarriedClaim | undefined {
    const host = this.host;
    const session = host.session();
    const room = host.room();
    // Only for a worker that is full (its loop waits for room, and claims nothing meanwhile), not beside another
    // claim, nor before the loop has taken the answer of the last one carried.
    const free = this.claiming || this.carried !== undefined || room > 0 ? 0 : room + freed;
    if (!session || !host.running() || free <= 0) return undefined;
    const pending = this.begin(session);
    const input = this.claimInput(session, free, pending);
    return {
      input,
      answered: (claimed) => {
        this.claiming = false;
        if (claimed && this.pendingClaim === pending) {
          this.pendingClaim = undefined;
          // The loop takes it, unless the worker stops: then nothing will, and its tasks go back.
          if (host.running()) this.carried = { pending, claimed, sessionId: session.sessionId };
          else void this.handBack(claimed.tasks, session);
        }
        this.wake();
      },
    };
  }

  /** The answer of a claim a completion carried, taken once, if it was made under `session`. */
  private takeCarried(session: Session): Answered | undefined {
    const carried = this.carried;
    this.carried = undefined;
    return carried?.sessionId === session.sessionId ? carried : undefined;
  }

  /** A claim of the session as this worker makes it now: a new one, or the one whose answer never came. */
  private begin(session: Session): PendingClaim {
    // A claim whose answer never came is sent again with its id (and keeps its first send time): the server
    // answers it with what it granted instead of leasing more this worker would never hear of.
    const pending =
      this.pendingClaim?.sessionId === session.sessionId
        ? this.pendingClaim
        : { id: newClaimId(), seq: ++this.claimSeq, sentAt: Date.now(), sessionId: session.sessionId };
    this.pendingClaim = pending;
    this.claiming = true;
    this.claimsSent++;
    // A wake from now on is news this claim may not have seen.
    this.nudged = false;
    return pending;
  }

  private claimInput(session: Session, free: number, pending: PendingClaim): ClaimInput {
    return {
      sessionId: session.sessionId,
      max: Math.min(free, SERVER_LIMITS.tasksPerClaim),
      ...(this.host.queues ? { queues: this.host.queues } : {}),
      idleClaims: this.idleClaims,
      claimId: pending.id,
      claimSeq: pending.seq,
      ...(this.host.listening() ? { listening: true } : {}),
    };
  }

  /** Sends a claim on its own: its answer, or undefined once what went wrong is dealt with. */
  private async send(session: Session, free: number): Promise<Answered | undefined> {
    const host = this.host;
    const pending = this.begin(session);
    let claimed: ClaimResult;
    try {
      claimed = await host.client.claim(this.claimInput(session, free, pending), {
        timeoutMs: Math.min(CLAIM_ATTEMPT_MS, (session.leaseTtlSeconds * 1_000) / 2),
        signal: host.sessionSignal(),
      });
    } catch (error) {
      if (error instanceof SessionLostError) host.sessionLost(session);
      else if (isRevoked(error)) host.revoked(error);
      else {
        // A refusal is an answer (a new claim gets a new id); a network failure or a 5xx may hide a grant.
        if (error instanceof AgentSchedulerError && error.status >= 400 && error.status < 500) {
          this.pendingClaim = undefined;
        }
        host.report(error);
        await sleep(this.idle.next(), host.stopSignal);
      }
      return undefined;
    } finally {
      this.claiming = false;
    }
    if (this.pendingClaim === pending) this.pendingClaim = undefined;
    return { pending, claimed };
  }

  /** Room for a task was made, a session opened, or the worker stops: a loop waiting for either goes on. */
  wake(): void {
    const wake = this.wakeClaimLoop;
    this.wakeClaimLoop = undefined;
    wake?.();
  }

  /** Ends the idle wait now, or the next one if the loop is not waiting. */
  nudge(): void {
    this.nudged = true;
    this.endIdleWait?.();
  }

  /** Tasks a claim returned after a stop began: back to their queue, unless their session is already gone. */
  private async handBack(tasks: readonly ClaimedTask[], session: Session): Promise<void> {
    if (this.host.session() !== session) return;
    await Promise.all(
      tasks.map((task) =>
        this.host.client
          .release(task.taskId, { leaseEpoch: task.leaseEpoch })
          .catch(givingBackFailed((error) => this.host.report(error), task.taskId)),
      ),
    );
  }

  private untilWoken(): Promise<void> {
    if (!this.host.running()) return Promise.resolve();
    return new Promise((resolve) => {
      this.wakeClaimLoop = resolve;
    });
  }

  /** The wait between an empty claim and the next: `ms`, or less when nudged (a wake, the channel changing). */
  private idleWait(ms: number): Promise<void> {
    if (ms <= 0 || this.nudged || !this.host.running()) return Promise.resolve();
    return new Promise((resolve) => {
      const signal = this.host.stopSignal;
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
}
