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

  it('a registration whose answer was lost and that DynamoDB’s client sends again registers one agent', async () => {
    const { dynamodb, ctx, scheduler } = stack;
    let lost = 0;
    dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        const input = args.input as { TableName?: string };
        if (
          lost === 0 &&
          context.commandName === 'PutItemCommand' &&
          input.TableName === ctx.agents.tableName
        ) {
          lost++;
          throw Object.assign(new Error('answer lost'), { name: 'TimeoutError', $metadata: {} });
        }
        return result;
      },
      { step: 'finalizeRequest', name: 'loseOneAgentAnswer', priority: 'low' },
    );
    let registered: Awaited<ReturnType<typeof scheduler.registerAgent>>;
    try {
      registered = await scheduler.registerAgent({ name: 'retried', queues: ['work'] }, issueAgentToken);
    } finally {
      dynamodb.middlewareStack.remove('loseOneAgentAnswer');
    }

    expect(lost).toBe(1);
    expect(await authenticateAgent(ctx.agents, `Bearer ${registered.token}`)).toBe(registered.agent.agentId);
    const named = (await scheduler.listAgents()).filter((a) => a.name === 'retried');
    expect(named).toHaveLength(1);
  });
});
