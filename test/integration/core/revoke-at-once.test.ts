/**
 * Revoking an agent takes effect at once, even while a cached authorization still lets its calls through (API
 * Gateway's authorizer cache keeps an answer for up to a minute): its session ends, its tasks and roles go to
 * others, and every agent operation refuses it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('revoking an agent', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['revoke'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('ends its session, takes back its tasks and roles at once, and refuses every agent operation', async () => {
    // Prepare: the agent holds a task and a role; another agent waits for the role.
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['revoke'], maxConcurrency: 2 });
    const other = await startAgent(scheduler, { queues: ['revoke'] });
    const { task } = await scheduler.submit({ queue: 'revoke', payload: {} });
    const [held] = await claimUntil(scheduler, agent, 1);
    if (!held) throw new Error('nothing claimed');
    await scheduler.volunteerForRole(agent.agentId, agent.sessionId, 'revoked-role');
    await scheduler.volunteerForRole(other.agentId, other.sessionId, 'revoked-role');

    // Act
    await scheduler.revokeAgent(agent.agentId);

    // Assess: nothing waits for a sweep to take them from the agent; they go to another once its lease is over.
    const requeued = await scheduler.getTask(task.taskId);
    expect(requeued).toMatchObject({ status: 'queued' });
    const session = await stack.ctx.sessions.get(agent.agentId);
    expect(requeued.notBefore).toBeGreaterThanOrEqual(session?.expiresAt ?? Number.NaN);
    const [role] = (await scheduler.listRoles()).filter((r) => r.role === 'revoked-role');
    expect(role?.holder).toBeUndefined();
    const lease = { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: held.leaseEpoch };
    await expect(scheduler.heartbeat(agent.agentId, agent.sessionId)).rejects.toMatchObject({
      code: 'SessionLost',
    });
    await expect(scheduler.claim(agent)).rejects.toMatchObject({ code: 'SessionLost' });
    await expect(scheduler.complete(lease)).rejects.toMatchObject({ code: 'LeaseLost' });
    await expect(scheduler.fail(lease, { message: 'no' })).rejects.toMatchObject({ code: 'LeaseLost' });
    await expect(scheduler.release(lease)).rejects.toMatchObject({ code: 'LeaseLost' });
    await expect(scheduler.readSession(agent.agentId)).rejects.toMatchObject({ code: 'SessionLost' });
    await expect(scheduler.openSession(agent.agentId)).rejects.toMatchObject({
      code: 'AgentRevoked',
      statusCode: 403,
    });
    await expect(scheduler.registerRole(agent.agentId, 'another-role')).rejects.toMatchObject({
      code: 'AgentRevoked',
    });
    await expect(
      scheduler.volunteerForRole(agent.agentId, agent.sessionId, 'another-role'),
    ).rejects.toMatchObject({ code: 'AgentRevoked' });

    // Once the revoked session's lease has run out, the next volunteer (still live) holds the role. The other
    // agent's lease runs only as much longer than the revoked one's as the calls above took: it beats again once
    // the clock has moved, so a slow sweep cannot outlast it.
    await scheduler.heartbeat(other.agentId, other.sessionId);
    stack.clock.advance((session?.expiresAt ?? 0) - stack.clock.now() + 1);
    await scheduler.heartbeat(other.agentId, other.sessionId);
    await scheduler.supervise();
    const [handed] = (await scheduler.listRoles()).filter((r) => r.role === 'revoked-role');
    expect(handed?.holder).toBe(other.agentId);
  });

  it('a task on its last attempt that a revocation takes back is dead, with a record in its dead-letter queue', async () => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['revoke'] });
    const { task } = await scheduler.submit({ queue: 'revoke', payload: {}, maxAttempts: 1 });
    await claimUntil(scheduler, agent, 1);

    await scheduler.revokeAgent(agent.agentId);

    expect(await scheduler.getTask(task.taskId)).toMatchObject({
      status: 'dead',
      error: { message: 'lease expired (revoked)' },
    });
  });

  it('is idempotent, and a second revoke changes nothing', async () => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['revoke'] });
    await scheduler.revokeAgent(agent.agentId);
    await scheduler.revokeAgent(agent.agentId);
    await expect(scheduler.revokeAgent('a_doesnotexistatallxxxxxxxxx')).rejects.toMatchObject({
      code: 'AgentNotFound',
    });
  });
});
