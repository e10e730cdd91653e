/**
 * Revoking an agent: it may not open a session or register roles again, and what it holds is taken back now
 * rather than when its session would have expired.
 *
 * The point of decision is the write that ends its session. A call of the agent's whose own conditional write
 * lands before it (a heartbeat, a claim's reservation, a complete) takes effect, and is then undone like any
 * lease of an ended session: its tasks are taken back, its roles handed over. Every call that reads or writes
 * the session after it is refused (`SessionLost` for session and role calls, `LeaseLost` for complete, fail and
 * release), even while the authorizer still accepts the agent's token from its cache.
 */
import { AgentNotFoundError, ServiceUnavailableError } from '#domain/errors';
import type { SchedulerContext } from './context';
import { emit } from './events';
import { takeBackTasks } from './reclaim';
import { takeBackRoles } from './roles';

/** A session opened by a call that read the agent just before it was revoked is ended too; this many times. */
const ATTEMPTS = 3;

export interface Revocation {
  /** The session ended by this call, if the agent had one not ended yet. */
  readonly endedSession?: string;
  readonly tasksTakenBack: number;
  readonly rolesHandedOver: number;
}

/** Revokes the agent and ends its session at once; repeating it changes nothing more. */
export async function revokeAgent(ctx: SchedulerContext, agentId: string): Promise<Revocation> {
  if (!(await ctx.agents.revoke(agentId, ctx.now()))) throw new AgentNotFoundError(agentId.slice(0, 64));
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const seen = await ctx.sessions.get(agentId);
    if (!seen) return { tasksTakenBack: 0, rolesHandedOver: 0 };
    const ended = await ctx.sessions.endNow(seen, ctx.now(), { revoked: true });
    if (!ended.ok) continue;
    const session = ended.session;
    const newlyEnded = seen.endedAt === undefined;
    let tasksTakenBack = 0;
    let offline = false;
    if (Object.keys(session.held).length > 0) {
      const taken = await takeBackTasks(ctx, session, 'revoked');
      tasksTakenBack = taken.outcomes.filter(([, o]) => o === 'requeued' || o === 'dead').length;
      offline = taken.retired;
    }
    if (newlyEnded && !offline) {
      await emit(ctx, [
        { type: 'agent.offline', fields: { agentId, data: { sessionId: session.sessionId } } },
      ]);
    }
    const rolesHandedOver =
      Object.keys(session.roles).length > 0 ? (await takeBackRoles(ctx, session)).handedOver : 0;
    return {
      ...(newlyEnded ? { endedSession: session.sessionId } : {}),
      tasksTakenBack,
      rolesHandedOver,
    };
  }
  throw new ServiceUnavailableError(`agent ${agentId.slice(0, 64)} keeps opening sessions; revoke again`);
}
