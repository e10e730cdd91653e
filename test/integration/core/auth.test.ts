import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticateAgent } from '#core/auth';
import { issueAgentToken } from '#domain/agent-token';
import { createTestStack, type TestStack } from '#test/stack';

describe('agent authentication', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack();
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('a registered agent’s token authenticates it until it is revoked', async () => {
    const { agent, token } = await stack.scheduler.registerAgent(
      { name: 'bot', queues: ['work'] },
      issueAgentToken,
    );
    const other = await stack.scheduler.registerAgent({ name: 'other', queues: ['work'] }, issueAgentToken);
    if (!token || !other.token) throw new Error('no token minted');
    const [, secret] = token.split('.');

    expect(await authenticateAgent(stack.ctx.agents, `Bearer ${token}`)).toBe(agent.agentId);
    // Another agent's secret under this agent's id is refused.
    expect(
      await authenticateAgent(stack.ctx.agents, `Bearer ${agent.agentId}.${other.token.split('.')[1]}`),
    ).toBeUndefined();
    expect(
      await authenticateAgent(stack.ctx.agents, `Bearer ${agent.agentId}.${'A'.repeat(43)}`),
    ).toBeUndefined();
    expect(await authenticateAgent(stack.ctx.agents, `Bearer a_${'b'.repeat(26)}.${secret}`)).toBeUndefined();
    expect(await authenticateAgent(stack.ctx.agents, undefined)).toBeUndefined();

    await stack.scheduler.revokeAgent(agent.agentId);
    expect(await authenticateAgent(stack.ctx.agents, `Bearer ${token}`)).toBeUndefined();
    expect(await authenticateAgent(stack.ctx.agents, `Bearer ${other.token}`)).toBe(other.agent.agentId);
  });

  it('the stored agent keeps only the hash of its token', async () => {
    const { agent, token } = await stack.scheduler.registerAgent(
      { name: 'bot', queues: ['work'] },
      issueAgentToken,
    );
    const stored = await stack.ctx.agents.get(agent.agentId);
    expect(JSON.stringify(stored)).not.toContain(token?.split('.')[1] ?? 'missing');
    expect(stored?.tokenHash).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
