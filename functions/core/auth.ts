/**
 * Who is calling: an agent presenting its bearer token. Revoked and unknown agents are refused alike.
 */

import { bearerToken, parseAgentToken, tokenMatches } from '#domain/agent-token';
import type { AgentStore } from './ports/agent-store';

export async function authenticateAgent(
  agents: Pick<AgentStore, 'get'>,
  authorization: string | undefined,
): Promise<string | undefined> {
  const token = bearerToken(authorization);
  const parsed = token ? parseAgentToken(token) : undefined;
  if (!parsed) return undefined;
  const agent = await agents.get(parsed.agentId);
  if (!agent?.tokenHash || agent.revokedAt !== undefined) return undefined;
  return tokenMatches(parsed.secret, agent.tokenHash) ? agent.agentId : undefined;
}
