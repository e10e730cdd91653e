/**
 * The HTTP edge of the local stack, as agents and operators reach it: authentication, an agent acting only as
 * itself, and bad input answered with a 4xx error body that changes nothing.
 */
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { createTestStack, serveStack, type TestStack } from '#test/stack';

const OPERATOR = 'op_test-operator-token';

describe('HTTP edge on the local stack', () => {
  let stack: TestStack;
  let server: LocalServer;
  const call = async (
    method: string,
    path: string,
    token?: string,
    body?: unknown,
    contentType = 'application/json',
  ) => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': contentType }),
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const snapshot = async () => {
    const tables = Object.values({
      tasks: stack.ctx.tasks.tableName,
      agents: stack.ctx.agents.tableName,
      leases: stack.ctx.sessions.tableName,
    });
    const items = await Promise.all(
      tables.map(
        async (TableName) =>
          (await stack.dynamodb.send(new ScanCommand({ TableName, ConsistentRead: true }))).Items ?? [],
      ),
    );
    return JSON.stringify(items.map((list) => list.map((i) => JSON.stringify(i)).sort()));
  };

  let agentA: { token: string; agentId: string; sessionId: string };
  let agentB: { token: string; agentId: string; sessionId: string };
  let taskOfA: { taskId: string; leaseEpoch: number };

  beforeAll(async () => {
    stack = await createTestStack({ queues: ['edge'] });
    server = await serveStack(stack, OPERATOR);
    const register = async (name: string) => {
      const created = await call('POST', '/v1/agents', OPERATOR, { name, queues: ['edge'] });
      const token = String(created.body.token);
      const session = await call('POST', '/v1/agent/session', token);
      return {
        token,
        agentId: String((created.body.agent as { agentId: string }).agentId),
        sessionId: String(session.body.sessionId),
      };
    };
    agentA = await register('a');
    agentB = await register('b');
    await call('POST', '/v1/tasks', OPERATOR, { queue: 'edge', payload: { n: 1 } });
    for (let i = 0; i < 50 && !taskOfA; i++) {
      const claimed = await call('POST', '/v1/agent/claim', agentA.token, { sessionId: agentA.sessionId });
      const [task] = claimed.body.tasks as { taskId: string; leaseEpoch: number }[];
      if (task) taskOfA = task;
      else await new Promise((r) => setTimeout(r, 50));
    }
  });
  afterAll(async () => {
    await server.close();
    await stack.destroy();
  });

  it('health is open', async () => {
    expect(await call('GET', '/v1/health')).toEqual({ status: 200, body: { status: 'ok' } });
  });

  it.each([
    ['no token on an agent route', 'POST', '/v1/agent/heartbeat', undefined, 401],
    ['a malformed token on an agent route', 'POST', '/v1/agent/heartbeat', 'nonsense', 401],
    ['a forged agent token', 'POST', '/v1/agent/heartbeat', `a_${'a'.repeat(26)}.${'b'.repeat(43)}`, 401],
    ['no token on an operator route', 'GET', '/v1/tasks', undefined, 401],
    ['a wrong operator token', 'GET', '/v1/tasks', 'op_wrong', 401],
  ])('%s → %i', async (_, method, path, token, status) => {
    const response = await call(method, path, token, method === 'POST' ? {} : undefined);
    expect(response.status).toBe(status);
    expect(response.body).toMatchObject({ error: { code: 'Unauthorized', message: expect.any(String) } });
  });

  it('an agent calling an operator route is forbidden', async () => {
    const before = await snapshot();
    const response = await call('POST', '/v1/tasks', agentA.token, { queue: 'edge', payload: {} });
    expect(response).toMatchObject({ status: 403, body: { error: { code: 'Forbidden' } } });
    expect(await snapshot()).toBe(before);
  });

  it.each(['complete', 'fail', 'release'])(
    'agent B cannot %s agent A’s task, and nothing changes',
    async (action) => {
      const before = await snapshot();
      const body =
        action === 'fail'
          ? { leaseEpoch: taskOfA.leaseEpoch, error: { message: 'x' } }
          : { leaseEpoch: taskOfA.leaseEpoch };
      const response = await call('POST', `/v1/agent/tasks/${taskOfA.taskId}/${action}`, agentB.token, body);
      // Answered as a task that does not exist: B learns neither that it exists nor its epoch.
      expect(response.status).toBe(404);
      expect(response.body).toMatchObject({ error: { code: 'TaskNotFound' } });
      expect(await snapshot()).toBe(before);
    },
  );

  it('agent B cannot use agent A’s session', async () => {
    const response = await call('POST', '/v1/agent/heartbeat', agentB.token, { sessionId: agentA.sessionId });
    expect(response).toMatchObject({ status: 409, body: { error: { code: 'SessionLost' } } });
  });

  it.each([
    [
      'submit with a server-owned status',
      'POST',
      '/v1/tasks',
      { queue: 'edge', payload: {}, status: 'succeeded' },
      400,
    ],
    ['submit with an owner', 'POST', '/v1/tasks', { queue: 'edge', payload: {}, owner: 'a_x' }, 400],
    ['submit with a lease epoch', 'POST', '/v1/tasks', { queue: 'edge', payload: {}, leaseEpoch: 9 }, 400],
    ['submit with an attempt', 'POST', '/v1/tasks', { queue: 'edge', payload: {}, attempt: 2 }, 400],
    ['submit to an unknown queue', 'POST', '/v1/tasks', { queue: 'nope', payload: {} }, 400],
    ['submit with a wrong type', 'POST', '/v1/tasks', { queue: 'edge', payload: {}, maxAttempts: '3' }, 400],
    ['submit an oversize payload', 'POST', '/v1/tasks', { queue: 'edge', payload: 'x'.repeat(262_200) }, 413],
    [
      'submit a body past the limit',
      'POST',
      '/v1/tasks',
      { queue: 'edge', payload: 'x'.repeat(400_000) },
      413,
    ],
    ['submit malformed JSON', 'POST', '/v1/tasks', '{"queue":', 400],
    ['submit an array', 'POST', '/v1/tasks', [1, 2], 400],
    ['get a task with a bad id', 'GET', '/v1/tasks/..%2F..%2Fetc', undefined, 404],
    ['get a task that does not exist', 'GET', `/v1/tasks/t_${'a'.repeat(26)}`, undefined, 404],
    ['cancel a task that does not exist', 'POST', `/v1/tasks/t_${'a'.repeat(26)}/cancel`, undefined, 404],
    ['list with a bad limit', 'GET', '/v1/tasks?limit=1000', undefined, 400],
    ['list with a bad status', 'GET', '/v1/tasks?status=running', undefined, 400],
    ['list with a forged cursor', 'GET', '/v1/tasks?cursor=eyJ4IjoxfQ', undefined, 400],
    ['register an agent with no queues', 'POST', '/v1/agents', { name: 'x', queues: [] }, 400],
    [
      'register an agent with an unknown field',
      'POST',
      '/v1/agents',
      { name: 'x', queues: ['edge'], admin: true },
      400,
    ],
    ['revoke an agent that does not exist', 'DELETE', `/v1/agents/a_${'z'.repeat(26)}`, undefined, 404],
    ['pause a queue that does not exist', 'POST', '/v1/queues/nope/pause', undefined, 400],
    ['an unknown route', 'GET', '/v1/nothing', undefined, 404],
    ['a wrong method', 'PUT', '/v1/tasks', undefined, 405],
  ])('operator: %s is refused and changes nothing', async (_, method, path, body, status) => {
    const before = await snapshot();
    const response = await call(method, path, OPERATOR, body);
    expect(response.status).toBe(status);
    expect(response.body).toEqual({
      error: { code: expect.any(String), message: expect.any(String) },
      requestId: expect.any(String),
    });
    expect(String((response.body.error as { message: string }).message).length).toBeLessThanOrEqual(300);
    expect(await snapshot()).toBe(before);
  });

  it.each([
    ['heartbeat without a session', '/v1/agent/heartbeat', {}, 400],
    ['heartbeat with an unknown field', '/v1/agent/heartbeat', { sessionId: 's_x', agentId: 'a_x' }, 400],
    ['claim more than 10', '/v1/agent/claim', { max: 11 }, 400],
    ['complete without an epoch', `/v1/agent/tasks/t_${'a'.repeat(26)}/complete`, {}, 400],
    [
      'complete with a string epoch',
      `/v1/agent/tasks/t_${'a'.repeat(26)}/complete`,
      { leaseEpoch: '1' },
      400,
    ],
    ['fail without a message', `/v1/agent/tasks/t_${'a'.repeat(26)}/fail`, { leaseEpoch: 1, error: {} }, 400],
    ['complete a task id that cannot exist', '/v1/agent/tasks/nope/complete', { leaseEpoch: 1 }, 404],
    [
      'complete with an oversize result',
      `/v1/agent/tasks/t_${'a'.repeat(26)}/complete`,
      { leaseEpoch: 1, result: 'x'.repeat(270_000) },
      413,
    ],
    ['a body that is not JSON', '/v1/agent/claim', 'sessionId=1', 400],
  ])('agent: %s is refused and changes nothing', async (_, path, body, status) => {
    const before = await snapshot();
    const payload =
      typeof body === 'object' && body !== null && !('sessionId' in body) && path.endsWith('claim')
        ? { ...body, sessionId: agentA.sessionId }
        : body;
    const response = await call('POST', path, agentA.token, payload);
    expect(response.status).toBe(status);
    expect(response.body).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
    expect(await snapshot()).toBe(before);
  });

  it('a body sent as text/plain is refused with 415', async () => {
    const response = await call('POST', '/v1/tasks', OPERATOR, '{"queue":"edge","payload":1}', 'text/plain');
    expect(response).toMatchObject({ status: 415, body: { error: { code: 'UnsupportedMediaType' } } });
  });
});
