/**
 * Revoking an agent on DynamoDB Local: its session ends at once, its tasks are taken back and its roles handed
 * over without waiting for a sweep, and every agent call of its old session is refused, through the core and
 * through the HTTP edge while the authorizer still accepts its token from its cache.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentNotFoundError, AgentRevokedError, LeaseLostError, SessionLostError } from '#domain/errors';
import { type LocalServer, startLocalServer } from '#local/server';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

const OPERATOR = 'op_test-operator-token';

const rejection = (call: Promise<unknown>): Promise<unknown> =>
  call.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('revoking an agent', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await createTestStack({ queues: ['work'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('ends its session, takes its tasks back and hands its roles over at once; every call of it is refused', async () => {
    // Prepare: a holds a task and a role that b waits for.
    const { scheduler } = stack;
    const a = await startAgent(scheduler);
    const b = await startAgent(scheduler);
    const { task } = await scheduler.submit({ queue: 'work', payload: { n: 1 } });
    const [claimed] = await claimUntil(scheduler, a, 1);
    expect(claimed?.taskId).toBe(task.taskId);
    const lease = { agentId: a.agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 };
    await scheduler.volunteerForRole(a.agentId, a.sessionId, 'revoked-role');
    await scheduler.volunteerForRole(b.agentId, b.sessionId, 'revoked-role');

    // Act
    await scheduler.revokeAgent(a.agentId);

    // Assess: no sweep ran, and yet the task is back in its queue, to be run once a's lease is over, and a holds
    // the role no more; b gets it then.
    const requeued = await scheduler.getTask(task.taskId);
    const session = await stack.ctx.sessions.get(a.agentId);
    expect(requeued.status).toBe('queued');
    expect(requeued.notBefore).toBeGreaterThanOrEqual(session?.expiresAt ?? Number.NaN);
    const [role] = (await scheduler.listRoles()).filter((r) => r.role === 'revoked-role');
    expect(role).toMatchObject({ leaseEpoch: 1, volunteers: [b.agentId] });
    expect(role?.holder).toBeUndefined();
    expect(session?.endedAt).toBeDefined();
    expect(session?.revokedAt).toBeDefined();
    expect(session?.held).toEqual({});

    const refusals = {
      heartbeat: await rejection(scheduler.heartbeat(a.agentId, a.sessionId)),
      checkpoint: await rejection(
        scheduler.heartbeat(a.agentId, a.sessionId, [
          { taskId: task.taskId, leaseEpoch: lease.leaseEpoch, checkpoint: { at: 1 } },
        ]),
      ),
      claim: await rejection(scheduler.claim({ ...a, max: 1 })),
      complete: await rejection(scheduler.complete(lease, { ok: true })),
      completeBatch: await scheduler.completeBatch(a.agentId, [{ ...lease }]),
      fail: await rejection(scheduler.fail(lease, { message: 'no' })),
      release: await rejection(scheduler.release(lease)),
      volunteer: await rejection(scheduler.volunteerForRole(a.agentId, a.sessionId, 'other-role')),
      register: await rejection(scheduler.registerRole(a.agentId, 'other-role')),
      releaseRole: await rejection(scheduler.releaseRole(a.agentId, 'revoked-role', 1)),
      withdraw: await rejection(scheduler.withdrawFromRole(a.agentId, a.sessionId, 'revoked-role')),
      openSession: await rejection(scheduler.openSession(a.agentId)),
    };
    expect(refusals.heartbeat).toBeInstanceOf(SessionLostError);
    expect(refusals.checkpoint).toBeInstanceOf(SessionLostError);
    expect(refusals.claim).toBeInstanceOf(SessionLostError);
    expect(refusals.complete).toBeInstanceOf(LeaseLostError);
    expect(refusals.completeBatch[0]).toMatchObject({ ok: false });
    expect(refusals.fail).toBeInstanceOf(LeaseLostError);
    expect(refusals.release).toBeInstanceOf(LeaseLostError);
    expect(refusals.volunteer).toBeInstanceOf(AgentRevokedError);
    expect(refusals.register).toBeInstanceOf(AgentRevokedError);
    expect(refusals.releaseRole).toMatchObject({ code: 'RoleNotHeld' });
    expect(refusals.withdraw).toBeInstanceOf(SessionLostError);
    expect(refusals.openSession).toBeInstanceOf(AgentRevokedError);
    expect(refusals.openSession).toMatchObject({ statusCode: 403, code: 'AgentRevoked' });
    expect((await scheduler.getTask(task.taskId)).status).toBe('queued');

    // Once a's lease has run out by any reckoning, b (still live) holds the role and a's session holds none. b
    // beats again once the clock has moved: its lease outran a's only by the time the calls above took.
    await scheduler.heartbeat(b.agentId, b.sessionId);
    stack.clock.advance((session?.expiresAt ?? 0) - stack.clock.now() + 1);
    await scheduler.heartbeat(b.agentId, b.sessionId);
    await scheduler.supervise();
    const [handed] = (await scheduler.listRoles()).filter((r) => r.role === 'revoked-role');
    expect(handed).toMatchObject({ holder: b.agentId, leaseEpoch: 2, volunteers: [b.agentId] });
    expect((await stack.ctx.sessions.get(a.agentId))?.roles).toEqual({});

    // Revoking again changes nothing; an unknown agent is still a 404.
    await scheduler.revokeAgent(a.agentId);
    expect(await rejection(scheduler.openSession('a_unknownunknownunknownunknow'))).toBeInstanceOf(
      AgentNotFoundError,
    );
  });

  it('over HTTP, a token the authorizer still caches is refused by every agent route', async () => {
    // Prepare: the local server caches the authorizer's answers for 60 s, as API Gateway does.
    const server: LocalServer = await startLocalServer({
      scheduler: stack.scheduler,
      agents: stack.ctx.agents,
      operatorToken: OPERATOR,
      port: 0,
      log: { info() {}, warn() {}, error() {} },
      authorizerCacheTtlMs: 60_000,
    });
    try {
      const call = async (method: string, path: string, token: string, body?: unknown) => {
        const response = await fetch(`${server.url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const json = (await response.json()) as { error?: { code: string } } & Record<string, unknown>;
        return { status: response.status, code: json.error?.code, body: json };
      };
      const created = await call('POST', '/v1/agents', OPERATOR, { name: 'edge', queues: ['work'] });
      const token = String(created.body.token);
      const agentId = (created.body.agent as { agentId: string }).agentId;
      const { sessionId } = (await call('POST', '/v1/agent/session', token)).body as { sessionId: string };
      await call('POST', '/v1/tasks', OPERATOR, { queue: 'work', payload: { n: 2 } });
      let lease: { taskId: string; leaseEpoch: number } | undefined;
      for (let i = 0; i < 50 && !lease; i++) {
        const claimed = await call('POST', '/v1/agent/claim', token, { sessionId });
        lease = (claimed.body.tasks as { taskId: string; leaseEpoch: number }[])[0];
      }
      if (!lease) throw new Error('no task was claimed');
      const picked = await call('POST', '/v1/agent/roles/edge-role/volunteer', token, { sessionId });
      expect(picked.body.picked).toBe(true);

      // Act
      const revoked = await call('DELETE', `/v1/agents/${agentId}`, OPERATOR);
      expect(revoked.status).toBe(200);

      // Assess
      const { taskId, leaseEpoch } = lease;
      const answers = {
        heartbeat: await call('POST', '/v1/agent/heartbeat', token, { sessionId }),
        claim: await call('POST', '/v1/agent/claim', token, { sessionId }),
        complete: await call('POST', `/v1/agent/tasks/${taskId}/complete`, token, { leaseEpoch }),
        fail: await call('POST', `/v1/agent/tasks/${taskId}/fail`, token, {
          leaseEpoch,
          error: { message: 'no' },
        }),
        release: await call('POST', `/v1/agent/tasks/${taskId}/release`, token, { leaseEpoch }),
        register: await call('POST', '/v1/agent/roles/edge-other/register', token),
        volunteer: await call('POST', '/v1/agent/roles/edge-other/volunteer', token, { sessionId }),
        releaseRole: await call('POST', '/v1/agent/roles/edge-role/release', token, { leaseEpoch: 1 }),
        withdraw: await call('POST', '/v1/agent/roles/edge-role/withdraw', token, { sessionId }),
        session: await call('POST', '/v1/agent/session', token),
      };
      const seen = Object.fromEntries(Object.entries(answers).map(([k, v]) => [k, `${v.status} ${v.code}`]));
      expect(seen).toEqual({
        heartbeat: '409 SessionLost',
        claim: '409 SessionLost',
        complete: '409 LeaseLost',
        fail: '409 LeaseLost',
        release: '409 LeaseLost',
        register: '403 AgentRevoked',
        volunteer: '403 AgentRevoked',
        releaseRole: '409 RoleNotHeld',
        withdraw: '409 SessionLost',
        session: '403 AgentRevoked',
      });
      const [role] = (await stack.scheduler.listRoles()).filter((r) => r.role === 'edge-role');
      expect(role?.holder).toBeUndefined();
      expect((await stack.scheduler.getTask(taskId)).status).toBe('queued');
    } finally {
      await server.close();
    }
  });
});
