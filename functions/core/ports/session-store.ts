/**
 * Where agent sessions are kept: one record per agent, its current session. A session is the unit of liveness:
 * every lease and role an agent holds lives as long as its session, and every write that extends, ends or fills a
 * session is conditional on the session being the one the caller names (and, for the agent's own writes, live).
 */
import type { AgentSession } from '#domain/task';

/** What a conditional write answers: the session as written, or as found when the condition failed. */
export type SessionWriteResult =
  | { readonly ok: true; readonly session: AgentSession }
  | { readonly ok: false; readonly current?: AgentSession };

/** The maps of a session that hold notices for the agent's next heartbeat. */
export type SessionNotice = 'cancelled' | 'lost' | 'rolesPicked' | 'rolesLost';

/** A claim id to record in the session's reservation write, with the session's claims as read. */
export interface ClaimRecord {
  readonly id: string;
  /** The session's `claims` map as read; undefined when the record has none yet. */
  readonly seen: Readonly<Record<string, number>> | undefined;
  /** The claim's number, if the agent numbers its claims: recorded, and it must be above the session's. */
  readonly seq?: number;
}

/** What an agent hears of a task at its next heartbeat: cancelled, or lost at the lease it held. */
export interface TaskNotice {
  readonly kind: 'cancelled' | 'lost';
  readonly taskId: string;
  readonly leaseEpoch: number;
  /**
   * For a lost lease: when it was reserved in the session (the task's `leasedAt`). Its slot is freed only while
   * the session's entry for the task is still that reservation; without it, the entry is left for a claim to find
   * stale.
   */
  readonly reservedAt?: number;
}

/**
 * What opening a session came to: written; refused because the agent is revoked; or refused because the agent's
 * session item is no longer the one read (another open, or a claim or hand-over to the old session, landed since).
 */
export type OpenOutcome = 'opened' | 'revoked' | 'changed';

/** One claim's reservation in its agent's session. */
export interface SlotReservation {
  /** Task id → the stale entry it replaces (its reservation time as read), or undefined for a new entry. */
  readonly add: ReadonlyMap<string, number | undefined>;
  /** Stale entries to remove, each by the reservation time read. */
  readonly drop: ReadonlyMap<string, number>;
  /** The session holds at most this many entries after the write. */
  readonly maxConcurrency: number;
  readonly now: number;
  /** The session is extended to this (a claim is as good as a heartbeat). */
  readonly expiresAt: number;
  /** The claim's id, recorded so that a retry finds what it granted. */
  readonly claim?: ClaimRecord;
}

export interface SessionStore {
  /**
   * Starts a new session for the agent over the item as read (`replacing`, holding no task or role; undefined:
   * none), only while the agent is not revoked.
   */
  open(session: AgentSession, replacing: AgentSession | undefined): Promise<OpenOutcome>;
  /**
   * The agent's session, read after every write that committed; `consistent: false` reads it eventually consistent
   * (half the read units), which may miss the last writes, so a decision on it must be checked again by a write.
   */
  get(agentId: string, options?: { readonly consistent?: boolean }): Promise<AgentSession | undefined>;
  /** The sessions of many agents, eventually consistent (what an operator looks at). */
  getMany(agentIds: readonly string[]): Promise<Map<string, AgentSession>>;
  /** Every session that is live at `now`: which queues the agents at work serve. */
  listLive(now: number): Promise<AgentSession[]>;
  /** Extends a live session to `now + ttlMs`; refused once it has expired or ended. */
  heartbeat(agentId: string, sessionId: string, now: number, ttlMs: number): Promise<SessionWriteResult>;
  /** Ends a session seen expired, unless it has changed since it was read (a late heartbeat kept it). */
  end(session: AgentSession, now: number): Promise<SessionWriteResult>;
  /** Ends the session now, live or not (a revocation); `revoked` marks it so. */
  endNow(
    session: Pick<AgentSession, 'agentId' | 'sessionId'>,
    now: number,
    options?: { readonly revoked?: boolean },
  ): Promise<SessionWriteResult>;
  /** Reserves slots in a live session and drops entries found stale, in one write (see `SlotReservation`). */
  reserve(agentId: string, sessionId: string, reservation: SlotReservation): Promise<SessionWriteResult>;
  /** Frees slots, each only if still reserved at the time read. */
  release(
    agentId: string,
    sessionId: string,
    entries: ReadonlyMap<string, number>,
  ): Promise<SessionWriteResult>;
  /** Removes notices the agent has been given, each only if unchanged since it was read. */
  clearNotices(
    agentId: string,
    sessionId: string,
    notices: Partial<Record<SessionNotice, Readonly<Record<string, number>>>>,
  ): Promise<SessionWriteResult>;
  /** Tells the session's agent, at its next heartbeat, that a task was cancelled or lost. */
  notify(agentId: string, sessionId: string, notice: TaskNotice): Promise<SessionWriteResult>;
  /** Turns an ended session's held tasks into `lost` notices, so later sweeps skip it. */
  retire(session: AgentSession, now: number): Promise<SessionWriteResult>;
  /** Turns an ended session's roles, handed over, into `rolesLost` notices. */
  forgetRoles(session: AgentSession, roles: Readonly<Record<string, number>>): Promise<SessionWriteResult>;
  /** A role given up no longer stands in its holder's session, if it still stands there at `leaseEpoch`. */
  forgetRole(
    agentId: string,
    sessionId: string,
    role: string,
    leaseEpoch: number,
  ): Promise<SessionWriteResult>;
  /** Sessions over (expired or ended) that still hold tasks: at most `limit`. */
  findExpiredHolding(now: number, limit: number): Promise<AgentSession[]>;
}
