/**
 * Exclusive roles: duties with at most one holder at a time, held under an agent session.
 */

/** An agent session: the unit of liveness a role is held or volunteered under. */
export interface SessionRef {
  readonly agentId: string;
  readonly sessionId: string;
}

export interface RoleVolunteer extends SessionRef {
  /** When it volunteered: the earliest live volunteer is next in line. */
  readonly at: number;
}

export interface RoleHolder extends SessionRef {
  readonly since: number;
}

/**
 * A role: a duty with at most one holder at a time. The holder is valid while its session is live; the epoch
 * grows with every grant and fences the holder's writes (a release names it).
 */
export interface Role {
  readonly role: string;
  readonly epoch: number;
  readonly holder?: RoleHolder;
  /** Candidates, the holder included, earliest first. */
  readonly volunteers: readonly RoleVolunteer[];
  /** Agents that declared the role: agent id → when. */
  readonly registered: Readonly<Record<string, number>>;
  readonly createdAt: number;
  readonly updatedAt: number;
}
