/**
 * Exclusive roles, as in Fluid Framework's AgentScheduler: duties that must always have exactly one holder
 * (the one agent that listens to a stream, or runs a singleton loop). Agents register a role, volunteer for it,
 * and exactly one live volunteer holds it; when the holder releases it, or its session ends or goes silent, the
 * role passes to the earliest live volunteer.
 *
 * A role is kept by its holder's session heartbeat: no write per role. Each grant increments the role's epoch,
 * which the holder presents to release it and can use to fence what it does downstream.
 */
import { z } from 'zod';
import {
  AgentNotFoundError,
  AgentRevokedError,
  errorName,
  RoleConflictError,
  ServiceUnavailableError,
  SessionLostError,
  ValidationError,
} from '#domain/errors';
import type { Role, SessionRef } from '#domain/role';
import { type AgentSession, isSessionLive } from '#domain/task';
import type { SchedulerContext } from './context';
import { emit } from './events';
import { noteError, PASS_ERRORS_KEPT, type PassError } from './pass-errors';
import { pushRoleGrant } from './push';

export const ROLE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export const roleNameSchema = z
  .string()
  .regex(
    ROLE_NAME_PATTERN,
    'a role name is 1 to 128 letters, digits, ".", "-" or "_", starting alphanumeric',
  );

/** Concurrent writers can move a role between a read and a write; each operation reads again this often. */
const ATTEMPTS = 5;

function roleName(role: string): string {
  const parsed = roleNameSchema.safeParse(role);
  if (!parsed.success) throw new ValidationError(`role: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

/** Reads agent sessions once per operation: liveness is decided on consistent reads, then checked again in the write. */
class SessionReader {
  private readonly cache = new Map<string, Promise<AgentSession | undefined>>();
  constructor(private readonly ctx: SchedulerContext) {}

  get(agentId: string): Promise<AgentSession | undefined> {
    let session = this.cache.get(agentId);
    if (!session) {
      session = this.ctx.sessions.get(agentId);
      this.cache.set(agentId, session);
    }
    return session;
  }

  forget(agentId: string): void {
    this.cache.delete(agentId);
  }

  async isLive(ref: SessionRef, now: number): Promise<boolean> {
    const session = await this.get(ref.agentId);
    return session?.sessionId === ref.sessionId && isSessionLive(session, now);
  }

  /**
   * Whether the agent may still believe it holds what the session holds: the session is live, or was ended by a
   * revocation and its lease has not run out. A revoked agent hears of its revocation only at its next call; until
   * its own reckoning of the lease runs out, its role handler may still run, so its roles go to no one else.
   */
  async mayStillAct(ref: SessionRef, now: number): Promise<boolean> {
    const session = await this.get(ref.agentId);
    if (session?.sessionId !== ref.sessionId) return false;
    return isSessionLive(session, now) || (session.revokedAt !== undefined && session.expiresAt > now);
  }
}

/** The agent, unless it does not exist or was revoked. */
async function activeAgent(ctx: SchedulerContext, agentId: string) {
  const agent = await ctx.agents.get(agentId);
  if (!agent) throw new AgentNotFoundError(agentId);
  if (agent.revokedAt !== undefined) throw new AgentRevokedError(agentId);
  return agent;
}

export interface RoleView {
  readonly role: string;
  /** The holder, while its session is live. */
  readonly holder?: string;
  readonly leaseEpoch: number;
  /** When the holder was granted the role. */
  readonly since?: number;
  /** Live candidates, earliest first, the holder included. */
  readonly volunteers: string[];
  readonly registered: string[];
}

export async function registerRole(ctx: SchedulerContext, agentId: string, role: string): Promise<RoleView> {
  const name = roleName(role);
  if ((await register(ctx, agentId, name)) === 'alreadyRegistered') {
    throw new RoleConflictError('RoleAlreadyRegistered', `this agent has already registered role ${name}`);
  }
  return viewRole(ctx, await currentRole(ctx, name), new SessionReader(ctx));
}

/**
 * Counts the role among the agent's (at most `maxRolesPerAgent`) and creates its item if need be: only for an
 * agent under its bound, so no agent can fill the table with roles. Volunteering registers a role this way too.
 */
async function register(
  ctx: SchedulerContext,
  agentId: string,
  name: string,
): Promise<'registered' | 'alreadyRegistered'> {
  const limit = ctx.settings.maxRolesPerAgent;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const now = ctx.now();
    const outcome = await ctx.roles.register(name, agentId, limit, now);
    if (outcome === 'registered') return outcome;
    if (outcome === 'agentRefused') {
      if ((await ctx.roles.get(name))?.registered[agentId] !== undefined) return 'alreadyRegistered';
      await activeAgent(ctx, agentId);
      throw new RoleConflictError(
        'RoleLimitReached',
        `this agent has registered ${limit} roles, the most one agent may (maxRolesPerAgent)`,
        { context: { maxRolesPerAgent: limit } },
      );
    }
    // The role has no item yet, or the agent is registered already.
    if (await ctx.roles.get(name)) return 'alreadyRegistered';
    await ctx.roles.getOrCreate(name, now);
  }
  throw new ServiceUnavailableError(`role ${name} is changing; retry`);
}

export interface VolunteerResult {
  readonly picked: boolean;
  /** The epoch of this agent's grant, when picked. */
  readonly leaseEpoch?: number;
  readonly role: RoleView;
}

/**
 * Joins the role's candidates under the agent's live session; the role is granted at once if it is free or its
 * holder's session is over.
 */
export async function volunteerForRole(
  ctx: SchedulerContext,
  agentId: string,
  sessionId: string,
  role: string,
): Promise<VolunteerResult> {
  const name = roleName(role);
  const agent = await activeAgent(ctx, agentId);
  if (!agent.interactive) {
    throw new RoleConflictError('AgentNotInteractive', 'a non-interactive agent cannot volunteer for roles');
  }
  const me = { agentId, sessionId };
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const now = ctx.now();
    const sessions = new SessionReader(ctx);
    if (!(await sessions.isLive(me, now))) {
      throw new SessionLostError('the session expired or was replaced; open a new session', {
        context: { agentId },
      });
    }
    let current = await ctx.roles.get(name);
    if (current?.registered[agentId] === undefined) {
      await register(ctx, agentId, name);
      current = await currentRole(ctx, name);
    }
    const mine = current.volunteers.find((v) => v.agentId === agentId);
    if (mine?.sessionId === sessionId || current.holder?.sessionId === sessionId) {
      throw new RoleConflictError(
        'RoleAlreadyVolunteered',
        `this agent already volunteered for role ${name}`,
      );
    }
    const holder = current.holder;
    if (holder && (await sessions.mayStillAct(holder, now))) {
      if (await ctx.roles.addVolunteer(current, me, now)) {
        return { picked: false, role: await viewRole(ctx, await currentRole(ctx, name), sessions) };
      }
      continue;
    }
    const holderSession = holder && (await sessions.get(holder.agentId));
    const outcome = await ctx.roles.transfer({
      role: current,
      to: me,
      holderMustBeOver: true,
      ...(holderSession ? { holderSession } : {}),
      addVolunteer: me,
      dropVolunteers: holder ? [holder.agentId] : [],
      now,
    });
    if (outcome === 'candidateGone') {
      throw new SessionLostError('the session expired or was replaced; open a new session', {
        context: { agentId },
      });
    }
    if (outcome !== 'transferred') continue;
    // The volunteer learns of its grant from this answer: nothing to push.
    await announceTransfer(ctx, current, me, 'taken', now, { answered: true });
    const granted = await currentRole(ctx, name);
    return { picked: true, leaseEpoch: current.epoch + 1, role: await viewRole(ctx, granted, sessions) };
  }
  throw new ServiceUnavailableError(`role ${name} is changing hands; retry`);
}

export interface ReleaseResult {
  readonly role: RoleView;
  /** Who holds the role now, if a live volunteer took it. */
  readonly nextHolder?: string;
}

/**
 * The holder gives the role up, and leaves its candidates; the earliest live volunteer is granted it in the
 * same write. Fenced by the epoch: a holder that lost the role cannot release its successor's grant.
 */
export async function releaseRole(
  ctx: SchedulerContext,
  agentId: string,
  role: string,
  leaseEpoch: number,
): Promise<ReleaseResult> {
  const name = roleName(role);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const current = await ctx.roles.get(name);
    const sessions = new SessionReader(ctx);
    // A revoked agent's roles were taken from it at once, though no one else gets them before its lease is over.
    const revoked = (await sessions.get(agentId))?.revokedAt !== undefined;
    if (current?.holder?.agentId !== agentId || current.epoch !== leaseEpoch || revoked) {
      throw new RoleConflictError(
        'RoleNotHeld',
        `this agent does not hold role ${name} at epoch ${leaseEpoch}`,
        current ? { context: { leaseEpoch: current.epoch } } : {},
      );
    }
    const moved = await handOver(ctx, current, sessions, { releasedBy: agentId });
    if (moved === undefined) continue;
    await forgetRoleInSession(ctx, agentId, current.holder.sessionId, name, leaseEpoch);
    const next = moved === null ? undefined : moved.agentId;
    return {
      role: await viewRole(ctx, await currentRole(ctx, name), sessions),
      ...(next ? { nextHolder: next } : {}),
    };
  }
  throw new ServiceUnavailableError(`role ${name} is changing hands; retry`);
}

/** A role given up no longer stands in its holder's session (best effort: the role item is the truth). */
async function forgetRoleInSession(
  ctx: SchedulerContext,
  agentId: string,
  sessionId: string,
  name: string,
  leaseEpoch: number,
): Promise<void> {
  await ctx.sessions.forgetRole(agentId, sessionId, name, leaseEpoch).catch(() => undefined);
}

/**
 * Passes a role to its earliest live volunteer, or leaves it free. For a release, the releasing agent leaves
 * the candidates; otherwise the holder must be over, which the write checks. Volunteers whose sessions are
 * over leave the candidates too. Returns the next holder, null if the role is now free, or undefined if the
 * role changed meanwhile (read it again).
 */
async function handOver(
  ctx: SchedulerContext,
  role: Role,
  sessions: SessionReader,
  options: { releasedBy?: string } = {},
): Promise<SessionRef | null | undefined> {
  const now = ctx.now();
  const live: SessionRef[] = [];
  const over: string[] = [];
  for (const volunteer of role.volunteers) {
    if (volunteer.agentId === options.releasedBy) continue;
    if (volunteer.sessionId === role.holder?.sessionId && !options.releasedBy) continue;
    if (await sessions.isLive(volunteer, now)) live.push(volunteer);
    else over.push(volunteer.agentId);
  }
  const drop = [...over, ...(options.releasedBy ? [options.releasedBy] : [])];
  if (role.holder && !options.releasedBy && !live.some((v) => v.agentId === role.holder?.agentId)) {
    drop.push(role.holder.agentId);
  }
  const holderSession =
    role.holder && !options.releasedBy ? await sessions.get(role.holder.agentId) : undefined;
  for (const candidate of [...live, null]) {
    // Reaching "no one" means every live-looking candidate's session turned out to be over: they leave too.
    const leaving = candidate ? drop : [...drop, ...live.map((v) => v.agentId)];
    const outcome = await ctx.roles.transfer({
      role,
      ...(candidate ? { to: candidate } : {}),
      holderMustBeOver: !options.releasedBy,
      ...(holderSession ? { holderSession } : {}),
      dropVolunteers: [...new Set(leaving)],
      now,
    });
    if (outcome === 'transferred') {
      await announceTransfer(ctx, role, candidate, options.releasedBy ? 'released' : 'taken', now);
      return candidate;
    }
    if (outcome !== 'candidateGone') return undefined;
    sessions.forget(candidate?.agentId ?? '');
  }
  return undefined;
}

/** Events of one move: the old holder's release or loss, then the new holder's grant. */
async function announceTransfer(
  ctx: SchedulerContext,
  role: Role,
  to: SessionRef | null,
  how: 'released' | 'taken',
  since: number,
  options: { answered?: boolean } = {},
): Promise<void> {
  const events: Parameters<typeof emit>[1][number][] = [];
  if (role.holder) {
    events.push({
      type: how === 'released' ? 'role.released' : 'role.lost',
      fields: {
        agentId: role.holder.agentId,
        role: role.role,
        data: { leaseEpoch: role.epoch, sessionId: role.holder.sessionId },
      },
    });
  }
  if (to) {
    events.push({
      type: 'role.picked',
      fields: {
        agentId: to.agentId,
        role: role.role,
        data: { leaseEpoch: role.epoch + 1, sessionId: to.sessionId, since: new Date(since).toISOString() },
      },
    });
  }
  // The new holder hears of its grant now on its push connection, rather than at its next heartbeat.
  await Promise.all([
    emit(ctx, events),
    to && !options.answered ? pushRoleGrant(ctx, to.agentId, role.role, role.epoch + 1) : undefined,
  ]);
}

export interface RoleSweep {
  readonly handedOver: number;
  readonly freed: number;
  readonly errors: number;
  /** The first few errors met, as a pass keeps them (`pass-errors.ts`). */
  readonly failures: readonly PassError[];
}

/**
 * The supervisor's pass over roles, from one scan of the leases table. Every session that is over (expired, or
 * ended by a revocation) and still holds roles is found: its roles pass to their earliest live
 * volunteers (or are freed), and its `roles` map is emptied so later passes skip it; however many roles exist,
 * none waits behind others. Then a free role with a live volunteer (a volunteer that joined while the holder
 * released) is granted. Within a lease TTL plus a supervisor period of a holder going silent, the role has a
 * live holder again.
 */
export async function sweepRoles(ctx: SchedulerContext): Promise<RoleSweep> {
  const sweep = { handedOver: 0, freed: 0, errors: 0, failures: [] as PassError[] };
  const now = ctx.now();
  const found = await ctx.roles.findToSweep(now, ctx.settings.sweepLimit);
  for (const session of found.sessions) {
    try {
      // Each take-over ends the session in its own transaction, refused if a heartbeat landed since the read.
      const moved = await takeBackRoles(ctx, session);
      sweep.handedOver += moved.handedOver;
      sweep.freed += moved.freed;
      sweep.errors += moved.errors;
      sweep.failures.push(...moved.failures.slice(0, PASS_ERRORS_KEPT - sweep.failures.length));
    } catch (error) {
      noteError(sweep, 'roles', error);
      ctx.log.error('role sweep failed for one session', {
        agentId: session.agentId,
        error: errorName(error),
      });
    }
  }
  const sessions = new SessionReader(ctx);
  for (const role of found.freeRoles) {
    try {
      const now = ctx.now();
      let anyLive = false;
      for (const v of role.volunteers) anyLive ||= await sessions.isLive(v, now);
      if (!anyLive) continue;
      const moved = await handOver(ctx, role, sessions);
      if (moved) sweep.handedOver++;
      else if (moved === null) sweep.freed++;
    } catch (error) {
      noteError(sweep, 'roles', error);
      ctx.log.error('role sweep failed for one role', { role: role.role, error: errorName(error) });
    }
  }
  return sweep;
}

/**
 * Hands over the roles of a session that is over and ended, then empties its `roles` map (the entries become
 * `rolesLost` notices), so the sweep does not find the session again. An entry whose role could not be moved
 * stays for the next pass.
 */
export async function takeBackRoles(
  ctx: SchedulerContext,
  ended: AgentSession,
): Promise<RoleSweep & { left: number }> {
  const moved = await handOverEach(ctx, ended);
  if (Object.keys(moved.done).length > 0) {
    await ctx.sessions.forgetRoles(ended, moved.done).catch((error: unknown) =>
      ctx.log.warn('could not clear the roles of an ended session; the sweep will', {
        agentId: ended.agentId,
        error: errorName(error),
      }),
    );
  }
  return { ...moved, left: Object.keys(ended.roles).length - Object.keys(moved.done).length };
}

/**
 * A role stays with a revoked session until its lease has run out (the agent's handler may run until then); an
 * ended session of an agent not revoked (it opened a new one, or went silent) gives its roles up at once.
 */
async function handOverEach(
  ctx: SchedulerContext,
  ended: AgentSession,
): Promise<RoleSweep & { done: Record<string, number> }> {
  const sessions = new SessionReader(ctx);
  const result = {
    handedOver: 0,
    freed: 0,
    errors: 0,
    failures: [] as PassError[],
    done: {} as Record<string, number>,
  };
  for (const [name, epoch] of Object.entries(ended.roles)) {
    try {
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const role = await ctx.roles.get(name);
        if (role?.holder?.sessionId !== ended.sessionId) {
          // Released, or moved on already.
          result.done[name] = epoch;
          break;
        }
        // A heartbeat that landed after the session was read keeps the session, and its roles.
        if (await sessions.mayStillAct(role.holder, ctx.now())) break;
        const moved = await handOver(ctx, role, sessions);
        sessions.forget(ended.agentId);
        if (moved === undefined) continue;
        if (moved) result.handedOver++;
        else result.freed++;
        result.done[name] = epoch;
        break;
      }
    } catch (error) {
      noteError(result, 'roles', error);
      ctx.log.warn('could not hand over a role of an ended session; the sweep will', {
        role: name,
        error: errorName(error),
      });
    }
  }
  return result;
}

export interface WithdrawResult {
  /** Whether a candidacy of this session was removed. */
  readonly withdrawn: boolean;
  /** Whether the session held the role at the epoch named, and gave it up. */
  readonly released: boolean;
  /** Who holds the role now, if a live volunteer took it. */
  readonly nextHolder?: string;
  readonly role: RoleView;
}

/**
 * The agent leaves the role's candidates, so it is never granted the role later. If its session holds the role at
 * `leaseEpoch`, the role passes to the earliest live volunteer in the same write, fenced by the role's epoch and
 * holder as read. A holding at another epoch (or with none named) is left as it is, and the answer's role shows
 * it: the caller releases it by its epoch if it does not want it. Withdrawing a candidacy that does not exist
 * changes nothing.
 */
export async function withdrawFromRole(
  ctx: SchedulerContext,
  agentId: string,
  sessionId: string,
  role: string,
  leaseEpoch?: number,
): Promise<WithdrawResult> {
  const name = roleName(role);
  const me = { agentId, sessionId };
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const sessions = new SessionReader(ctx);
    const now = ctx.now();
    if (!(await sessions.isLive(me, now))) {
      throw new SessionLostError('the session expired or was replaced; open a new session', {
        context: { agentId },
      });
    }
    const current = await ctx.roles.get(name);
    if (!current) {
      return {
        withdrawn: false,
        released: false,
        role: { role: name, leaseEpoch: 0, volunteers: [], registered: [] },
      };
    }
    const candidate = current.volunteers.some((v) => v.agentId === agentId && v.sessionId === sessionId);
    const holds = current.holder?.agentId === agentId && current.holder.sessionId === sessionId;
    // A holding is given up only when the withdraw names its epoch: one sent before this session was granted the
    // role again (and landing late) must not release a grant its agent now acts on.
    if (holds && current.epoch === leaseEpoch) {
      const moved = await handOver(ctx, current, sessions, { releasedBy: agentId });
      if (moved === undefined) continue;
      await forgetRoleInSession(ctx, agentId, sessionId, name, current.epoch);
      return {
        withdrawn: candidate,
        released: true,
        ...(moved ? { nextHolder: moved.agentId } : {}),
        role: await viewRole(ctx, await currentRole(ctx, name), sessions),
      };
    }
    const withdrawn = candidate && (await ctx.roles.removeVolunteer(current, me, now));
    if (candidate && !withdrawn) continue;
    return {
      withdrawn,
      released: false,
      role: await viewRole(ctx, await currentRole(ctx, name), sessions),
    };
  }
  throw new ServiceUnavailableError(`role ${name} is changing hands; retry`);
}

/** Every role, with live holders and volunteers only. */
export async function listRoles(ctx: SchedulerContext): Promise<RoleView[]> {
  const sessions = new SessionReader(ctx);
  const roles = await ctx.roles.list();
  const views = await Promise.all(roles.map((role) => viewRole(ctx, role, sessions)));
  return views.sort((a, b) => a.role.localeCompare(b.role));
}

async function currentRole(ctx: SchedulerContext, name: string): Promise<Role> {
  const role = await ctx.roles.get(name);
  if (!role) throw new ServiceUnavailableError(`role ${name} could not be read back; retry`);
  return role;
}

async function viewRole(ctx: SchedulerContext, role: Role, sessions: SessionReader): Promise<RoleView> {
  const now = ctx.now();
  const holderLive = role.holder ? await sessions.isLive(role.holder, now) : false;
  const volunteers: string[] = [];
  for (const v of role.volunteers) if (await sessions.isLive(v, now)) volunteers.push(v.agentId);
  return {
    role: role.role,
    ...(holderLive && role.holder ? { holder: role.holder.agentId, since: role.holder.since } : {}),
    leaseEpoch: role.epoch,
    volunteers,
    registered: Object.keys(role.registered).sort(),
  };
}
