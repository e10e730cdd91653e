/**
 * The agent's session as a claim or a finish reads it first: eventually consistent, half the read units of a
 * consistent read, and a consistent read only when the first does not show the session the call needs.
 *
 * Why an old copy is safe for these calls:
 * - a session's expiry only moves later, so an old copy never shows a lease alive past the true expiry: the
 *   server never trusts a lease longer than a consistent read would;
 * - an old copy that does not show the session live (or names another session) may be behind a heartbeat or an
 *   open, so it is never the ground for a refusal: the consistent read decides;
 * - what the call then writes is conditional on the session or the lease as they are (the claim's reservation
 *   names the session, its expiry, every entry it replaces and the claim's id; a finish names the lease's
 *   session and epoch), so a decision taken on an old copy fails its condition rather than acting on it.
 */
import type { AgentSession } from '#domain/task';
import type { SchedulerContext } from './context';

/** A session read, and whether it came from the consistent read. */
export interface SessionRead {
  readonly session: AgentSession | undefined;
  readonly consistent: boolean;
}

/**
 * Reads the agent's session eventually consistent, and again consistently unless `usable` accepts what the first
 * read found.
 */
export async function readSessionFor(
  ctx: SchedulerContext,
  agentId: string,
  usable: (session: AgentSession) => boolean,
): Promise<SessionRead> {
  return confirmSession(ctx, agentId, await ctx.sessions.get(agentId, { consistent: false }), usable);
}

/**
 * The second half of `readSessionFor`, for a caller that made the eventually consistent read itself (beside
 * another read it needs to judge the copy): the copy if `usable` accepts it, else a consistent read.
 */
export async function confirmSession(
  ctx: SchedulerContext,
  agentId: string,
  copy: AgentSession | undefined,
  usable: (session: AgentSession) => boolean,
): Promise<SessionRead> {
  if (copy && usable(copy)) return { session: copy, consistent: false };
  return { session: await ctx.sessions.get(agentId), consistent: true };
}
