/**
 * Where roles are kept, beside the sessions whose heartbeats keep them. Ownership of a role moves only in one
 * write that checks the role's epoch and holder as read and the next holder's session, so two sweeps, or a sweep
 * and a release, cannot both grant it.
 */
import type { Role, SessionRef } from '#domain/role';
import type { AgentSession } from '#domain/task';

/** How a hand-over went: done, or which of its conditions no longer held. */
export type TransferOutcome = 'transferred' | 'roleChanged' | 'candidateGone' | 'holderAlive';

export interface Transfer {
  /** The role as read; the write is refused if its epoch or holder has changed since. */
  readonly role: Role;
  /** The next holder, whose session must be live; none leaves the role free. */
  readonly to?: SessionRef;
  /** The current holder is taken over only if its session is over (expired, replaced or gone). */
  readonly holderMustBeOver?: boolean;
  /**
   * The holder's session as read, if any. When it is the holder's session (expired), the take-over ends it in the
   * same write, refused if the session has changed since: a heartbeat that lands late cannot keep a role that has
   * a new holder.
   */
  readonly holderSession?: Pick<AgentSession, 'sessionId' | 'expiresAt'>;
  /** Join the candidates. */
  readonly addVolunteer?: SessionRef;
  /** Leave the candidates (the releasing holder, volunteers whose sessions are over). */
  readonly dropVolunteers?: readonly string[];
  readonly now: number;
}

export interface RoleStore {
  /** The role, read after every write that committed. */
  get(role: string): Promise<Role | undefined>;
  list(): Promise<Role[]>;
  /** Sessions over that still hold roles, and free roles with candidates: at most `limit` of each. */
  findToSweep(now: number, limit: number): Promise<{ sessions: AgentSession[]; freeRoles: Role[] }>;
  /** The role, created free if it does not exist yet. */
  getOrCreate(role: string, now: number): Promise<Role>;
  /** Records that the agent declared the role, counting it against the agent's `maxRoles`. */
  register(
    role: string,
    agentId: string,
    maxRoles: number,
    now: number,
  ): Promise<'registered' | 'roleRefused' | 'agentRefused'>;
  /** Removes a candidate, if the role is unchanged since read; false when it changed. */
  removeVolunteer(role: Role, volunteer: SessionRef, now: number): Promise<boolean>;
  /** Adds a candidate, if the role is unchanged since read; false when it changed. */
  addVolunteer(role: Role, volunteer: SessionRef, now: number): Promise<boolean>;
  /** Moves the role (or frees it) in one write, on the conditions `transfer` states. */
  transfer(transfer: Transfer): Promise<TransferOutcome>;
}
