/**
 * Who is calling: an agent presenting its bearer token. Revoked and unknown agents are refused alike.
 */
import type { AgentTable } from '#adapters/agent-table';
import { bearerToken, parseAgentToken, tokenMatches } from '#domain/agent-token';

export async function authenticateAgent(
  agents: Pick<AgentTable, 'get'>,
  authorization: string | undefined,
): Promise<string | undefined> {
  const token = bearerToken(authorization);
  const parsed = token ? parseAgentToken(token) : undefined;
  if (!parsed) return undefined;
  const agent = await agents.get(parsed.agentId);
  if (!agent?.tokenHash || agent.revokedAt !== undefined) return undefined;
  return tokenMatches(parsed.secret, agent.tokenHash) ? agent.agentId : undefined;
}
