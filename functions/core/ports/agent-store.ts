/** Where registered agents are kept: who they are, what they serve, and whether they were revoked. */
import type { Agent } from '#domain/agent';

export interface AgentStore {
  /** Registers the agent; its id is new, so the write refuses to replace one. */
  create(agent: Agent): Promise<void>;
  get(agentId: string): Promise<Agent | undefined>;
  /** Marks the agent revoked at `now` (once); false when there is no such agent. */
  revoke(agentId: string, now: number): Promise<boolean>;
  /** A page of agents by id, after `startAfter`. */
  page(limit: number, startAfter?: string): Promise<{ agents: Agent[]; lastAgentId?: string }>;
  list(limit: number): Promise<Agent[]>;
}
