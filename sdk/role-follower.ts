/**
 * The body of `RoleSubscription` (see there): one role followed for an agent on the session of a `RoleHost`, the
 * Worker that keeps the session. Apart from `role-subscription.ts` so the Worker can follow its own `roles` without
 * the two modules importing each other.
 */
import { EventEmitter } from 'node:events';
import type { AgentSchedulerClient } from './client.js';
import { isAgentSchedulerError, SessionLostError } from './errors.js';
import type { HeartbeatResult, RoleLease, Session, SessionHoldings } from './types.js';
import type { RoleHost, RoleLostReason } from './worker-events.js';

export type { RoleLostReason };

export interface RoleSubscriptionEvents {
  gotRole: [lease: RoleLease];
  lostRole: [lease: RoleLease, reason: RoleLostReason];
  error: [error: unknown];
}

/**
 * Follows a role on the session of `worker` (a `Worker`, which also creates one for its `roles`); `ownsWorker` when
 * the follower started that worker for itself and stops it on `close()`.
 */
export class RoleFollower extends EventEmitter<RoleSubscriptionEvents> {
  private held: (RoleLease & { readonly sessionId: string }) | undefined;
  /** The highest epoch this agent held: a late notice of an older grant is not news. */
  private latestEpoch = 0;
  private wanted = false;
  /** The epoch of a grant given up here whose release failed: still this agent's on the server. */
  private unreleased: number | undefined;
  private volunteering: { readonly sessionId: string; readonly done: Promise<boolean> } | undefined;
  private readonly detach: () => void;

  constructor(
    private readonly client: AgentSchedulerClient,
    readonly role: string,
    private readonly worker: RoleHost,
    private readonly ownsWorker: boolean,
  ) {
    super();
    const onSession = (session: Session) => {
      if (this.wanted) this.volunteerUnder(session.sessionId).catch((error: unknown) => this.report(error));
    };
    const onHeartbeat = (result: HeartbeatResult, session: Session) => this.heard(result, session);
    // What the session holds, read after a notice may have been lost: a grant this agent never heard of.
    const onHoldings = (holdings: SessionHoldings, session: Session) => {
      const lease = holdings.roles.find((r) => r.role === this.role);
      if (!lease || this.held?.leaseEpoch === lease.leaseEpoch) return;
      if (this.wanted) this.gain(lease.leaseEpoch, session.sessionId);
      else
        this.client
          .releaseRole(this.role, { leaseEpoch: lease.leaseEpoch })
          .catch((error: unknown) => this.report(error));
    };
    const onSessionLost = (session: Session) => {
      if (this.held?.sessionId === session.sessionId) this.lose('session');
    };
    this.worker.on('session', onSession);
    this.worker.on('heartbeat', onHeartbeat);
    this.worker.on('holdings', onHoldings);
    this.worker.on('sessionLost', onSessionLost);
    const untrack = this.worker.track(this);
    this.detach = () => {
      untrack();
      this.worker.off('session', onSession);
      this.worker.off('heartbeat', onHeartbeat);
      this.worker.off('holdings', onHoldings);
      this.worker.off('sessionLost', onSessionLost);
    };
  }

  /** Whether this agent holds the role now (as far as its last word from the server says). */
  haveRole(): boolean {
    return this.held !== undefined && this.held.sessionId === this.worker.sessionId;
  }

  /** The epoch of the grant held, to fence work done in the role. */
  get leaseEpoch(): number | undefined {
    return this.haveRole() ? this.held?.leaseEpoch : undefined;
  }

  /**
   * Joins the role's candidates, now and again under every new session, until `release()` or `close()`.
   * Resolves with whether the role was granted at once; `gotRole` fires either way when it is.
   */
  async volunteer(): Promise<boolean> {
    this.wanted = true;
    if (this.ownsWorker && !this.worker.started) await this.worker.start();
    // Released while the session was opening.
    if (!this.wanted) return false;
    const sessionId = this.worker.sessionId;
    // Without a session the worker is opening one, and its `session` event volunteers.
    return sessionId ? this.volunteerUnder(sessionId) : false;
  }

  /**
   * Gives the role up (if held) and stops volunteering: the next live volunteer is granted it, and a candidacy
   * still waiting leaves the line, so the role is not granted to this agent later. `volunteer()` joins again.
   */
  async release(): Promise<void> {
    this.wanted = false;
    const volunteering = this.volunteering;
    // A volunteer call still in flight would land after the withdraw and leave this agent in line: its answer
    // comes first (a grant it brings is then released below).
    if (volunteering) await volunteering.done.catch(() => false);
    this.volunteering = undefined;
    const held = this.held ?? this.takeUnreleased();
    if (!held) {
      if (volunteering) await this.withdraw(volunteering.sessionId);
      return;
    }
    // Stop acting in the role first: the release hands it to the next volunteer the moment it commits, before
    // its answer is back here.
    this.lose('released');
    try {
      await this.client.releaseRole(this.role, { leaseEpoch: held.leaseEpoch });
    } catch (error) {
      // Gone already: it was taken while this agent was away.
      if (isAgentSchedulerError(error, 'RoleNotHeld')) return;
      // Still ours on the server, and idle: the next `release()` (or `close()`) gives it back.
      this.unreleased = held.leaseEpoch;
      throw error;
    }
  }

  /** A grant whose release failed after the role was given up here, to release again. */
  private takeUnreleased(): { readonly leaseEpoch: number } | undefined {
    const leaseEpoch = this.unreleased;
    this.unreleased = undefined;
    return leaseEpoch === undefined ? undefined : { leaseEpoch };
  }

  /** Releases the role, stops following it and, if the subscription keeps its own session, ends it. */
  async close(): Promise<void> {
    try {
      await this.release();
    } finally {
      this.detach();
      if (this.ownsWorker) await this.worker.stop({ drain: false });
    }
  }

  /** Leaves the line under `sessionId`; if the server had granted the role meanwhile, that grant is given up too. */
  private async withdraw(sessionId: string): Promise<void> {
    try {
      await this.client.withdrawFromRole(this.role, { sessionId });
    } catch (error) {
      // The session is over: its candidacy went with it.
      if (!(error instanceof SessionLostError)) throw error;
    }
  }

  private volunteerUnder(sessionId: string): Promise<boolean> {
    if (this.volunteering?.sessionId === sessionId) return this.volunteering.done;
    const done = this.client.volunteerForRole(this.role, { sessionId }).then(
      (result) => {
        if (result.picked && result.leaseEpoch !== undefined) this.gain(result.leaseEpoch, sessionId);
        return result.picked && this.haveRole();
      },
      (error: unknown) => {
        if (this.volunteering?.sessionId === sessionId) this.volunteering = undefined;
        // Already a candidate under this session (a retried call): a grant shows in the next heartbeat.
        if (isAgentSchedulerError(error, 'RoleAlreadyVolunteered')) return this.haveRole();
        // The worker opens a new session and this volunteers again under it.
        if (error instanceof SessionLostError) return false;
        throw error;
      },
    );
    this.volunteering = { sessionId, done };
    return done;
  }

  private heard(result: HeartbeatResult, session: Session): void {
    for (const lease of result.roles.lost) {
      if (lease.role === this.role && this.held?.leaseEpoch === lease.leaseEpoch) this.lose('lost');
    }
    for (const lease of result.roles.picked) {
      if (lease.role !== this.role) continue;
      if (this.wanted) this.gain(lease.leaseEpoch, session.sessionId);
      // Granted after this agent stopped wanting it: give it to the next volunteer rather than sit on it.
      else
        this.client
          .releaseRole(this.role, { leaseEpoch: lease.leaseEpoch })
          .catch((error: unknown) => this.report(error));
    }
  }

  private gain(leaseEpoch: number, sessionId: string): void {
    if (leaseEpoch <= this.latestEpoch) return;
    // A grant made under a session this agent has since given up (its answer came late): that session's roles
    // pass on without it, and acting on it could overlap the next holder.
    if (sessionId !== this.worker.sessionId) return;
    if (this.held) this.lose('lost');
    this.latestEpoch = leaseEpoch;
    this.held = { role: this.role, leaseEpoch, sessionId };
    this.emitSafe('gotRole', { role: this.role, leaseEpoch });
  }

  private lose(reason: RoleLostReason): void {
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    // The server no longer counts this agent among the candidates: a later `volunteer()` must ask it again.
    if (this.volunteering?.sessionId === held.sessionId) this.volunteering = undefined;
    this.emitSafe('lostRole', { role: this.role, leaseEpoch: held.leaseEpoch }, reason);
  }

  private emitSafe<K extends 'gotRole' | 'lostRole'>(event: K, ...args: RoleSubscriptionEvents[K]): void {
    try {
      EventEmitter.prototype.emit.call(this, event, ...args);
    } catch (error) {
      this.report(error);
    }
  }

  private report(error: unknown): void {
    if (this.listenerCount('error') === 0) return;
    try {
      this.emit('error', error);
    } catch {
      // Nowhere left to report to.
    }
  }
}
