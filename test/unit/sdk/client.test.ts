import { afterEach, describe, expect, it, vi } from 'vitest';
import { AgentSchedulerClient, type AgentSchedulerClientOptions } from '#sdk/client';
import { AgentSchedulerError, LeaseLostError, NetworkError, SessionLostError } from '#sdk/errors';
import { backoffDelayMs, DEFAULT_RETRY_POLICY, parseRetryAfter } from '#sdk/retry';

interface Seen {
  readonly method: string;
  readonly url: URL;
  readonly headers: Headers;
  readonly body: string;
}

type Step = Response | Error | (() => Response);

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

const failure = (status: number, code: string, extra: Record<string, string> = {}): Response =>
  json(status, { error: { code, message: `${code} happened` }, requestId: `req-${status}` }, extra);

const TASK = { taskId: 't_1', status: 'queued' };

/** A fetch that answers with `steps` in order (the last one again once they run out) and records requests. */
function scripted(...steps: Step[]) {
  const seen: Seen[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = input instanceof Request ? input : new Request(input, init);
    seen.push({
      method: request.method,
      url: new URL(request.url),
      headers: request.headers,
      body: await request.text(),
    });
    const step = steps[Math.min(seen.length, steps.length) - 1];
    if (step instanceof Error) throw step;
    if (typeof step === 'function') return step();
    if (!step) throw new Error('no scripted response');
    return step.clone();
  };
  return { fetch, seen };
}

const clientWith = (
  fetch: typeof globalThis.fetch,
  options: Partial<AgentSchedulerClientOptions> = {},
): AgentSchedulerClient =>
  new AgentSchedulerClient({
    endpoint: 'https://api.example.com/prod/',
    token: 'tok',
    fetch,
    retries: { baseDelayMs: 1, maxDelayMs: 5 },
    ...options,
  });

afterEach(() => {
  vi.useRealTimers();
});

describe('retries', () => {
  it.each([
    ['503', failure(503, 'ServiceUnavailable')],
    ['429', json(429, { message: 'Too Many Requests' })],
    ['500', failure(500, 'InternalError')],
    ['502', json(502, { message: 'Internal Server Error' })],
    ['504', json(504, { message: 'Gateway Timeout' })],
    ['a network error', new TypeError('fetch failed')],
  ])('retries after %s, then succeeds', async (_, first) => {
    const { fetch, seen } = scripted(first, first, json(200, { task: TASK }));
    await expect(clientWith(fetch).getTask('t_1')).resolves.toEqual(TASK);
    expect(seen).toHaveLength(3);
  });

  it('gives up after maxAttempts and throws the last error', async () => {
    const { fetch, seen } = scripted(failure(503, 'ServiceUnavailable'));
    const error = await clientWith(fetch)
      .getTask('t_1')
      .catch((e: unknown) => e);
    expect(seen).toHaveLength(DEFAULT_RETRY_POLICY.maxAttempts);
    expect(error).toMatchObject({ status: 503, code: 'ServiceUnavailable', requestId: 'req-503' });
  });

  it('throws a NetworkError once network failures outlast the retries', async () => {
    const { fetch, seen } = scripted(new TypeError('fetch failed'));
    const error = await clientWith(fetch, { retries: { maxAttempts: 2, baseDelayMs: 1 } })
      .health()
      .catch((e: unknown) => e);
    expect(seen).toHaveLength(2);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ status: 0, code: 'NetworkError' });
    expect((error as Error).cause).toBeInstanceOf(TypeError);
  });

  it.each([
    [400, 'ValidationError'],
    [401, 'Unauthorized'],
    [404, 'TaskNotFound'],
    [409, 'LeaseLost'],
    [409, 'InvalidTransition'],
    [413, 'PayloadTooLarge'],
  ])('never retries %i %s', async (status, code) => {
    const { fetch, seen } = scripted(failure(status, code), json(200, { task: TASK }));
    await expect(clientWith(fetch).cancelTask('t_1')).rejects.toMatchObject({ status, code });
    expect(seen).toHaveLength(1);
  });

  it('waits for the Retry-After the server asked for', async () => {
    vi.useFakeTimers();
    const { fetch, seen } = scripted(
      failure(429, 'TooManyRequests', { 'retry-after': '2' }),
      json(200, { status: 'ok' }),
    );
    const pending = clientWith(fetch, { retries: { maxDelayMs: 5_000 } }).health();
    await vi.advanceTimersByTimeAsync(1_999);
    expect(seen).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(seen).toHaveLength(2);
    await expect(pending).resolves.toEqual({ status: 'ok' });
  });

  it('does not wait for a Retry-After longer than maxDelayMs, and tells how long it was', async () => {
    const { fetch, seen } = scripted(failure(503, 'ServiceUnavailable', { 'retry-after': '60' }));
    const error = await clientWith(fetch)
      .health()
      .catch((e: unknown) => e);
    expect(seen).toHaveLength(1);
    expect(error).toMatchObject({ status: 503, retryAfterMs: 60_000 });
  });

  it('retries registering an agent only when the server says it was not processed', async () => {
    const created = json(201, { agent: { agentId: 'a_1' }, token: 'secret' });
    const throttled = scripted(json(429, { message: 'Too Many Requests' }), created);
    await expect(
      clientWith(throttled.fetch).createAgent({ name: 'n', queues: ['q'] }),
    ).resolves.toMatchObject({
      token: 'secret',
    });
    expect(throttled.seen).toHaveLength(2);

    for (const ambiguous of [failure(500, 'InternalError'), new TypeError('socket hang up')]) {
      const { fetch, seen } = scripted(ambiguous, created);
      await expect(clientWith(fetch).createAgent({ name: 'n', queues: ['q'] })).rejects.toBeInstanceOf(
        AgentSchedulerError,
      );
      expect(seen).toHaveLength(1);
    }
  });

  it('times out an attempt that hangs, and retries it', async () => {
    let calls = 0;
    const fetch: typeof globalThis.fetch = (_input, init) => {
      calls++;
      if (calls === 2) return Promise.resolve(json(200, { status: 'ok' }));
      return new Promise((_, reject) =>
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
      );
    };
    await expect(clientWith(fetch, { timeoutMs: 20 }).health()).resolves.toEqual({ status: 'ok' });
    const error = await clientWith(fetch, { timeoutMs: 20, retries: { maxAttempts: 1 } })
      .health()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 0, code: 'Timeout' });
  });

  it('draws delays with full jitter under an exponential cap', () => {
    const policy = { maxAttempts: 10, baseDelayMs: 100, maxDelayMs: 1_000 };
    expect([1, 2, 3, 4, 5].map((retry) => backoffDelayMs(retry, policy, () => 0.999_999))).toEqual([
      99, 199, 399, 799, 999,
    ]);
    expect(backoffDelayMs(3, policy, () => 0)).toBe(0);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3_000);
    expect(parseRetryAfter('Tue, 01 Jan 2030 00:00:05 GMT', now)).toBe(5_000);
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});

describe('submitTask', () => {
  it('generates an idempotency key and sends the same one on every retry', async () => {
    const { fetch, seen } = scripted(
      failure(503, 'ServiceUnavailable'),
      new TypeError('fetch failed'),
      json(201, { task: TASK }),
    );
    const submitted = await clientWith(fetch).submitTask({ queue: 'q', payload: { n: 1 } });
    expect(submitted).toEqual({ task: TASK, created: true });
    const keys = seen.map((request) => JSON.parse(request.body).idempotencyKey);
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('keeps the caller’s key and a fresh one for each call without one', async () => {
    const { fetch, seen } = scripted(json(200, { task: TASK }));
    const client = clientWith(fetch);
    await expect(client.submitTask({ queue: 'q', payload: 1, idempotencyKey: 'order-42' })).resolves.toEqual({
      task: TASK,
      created: false,
    });
    await client.submitTask({ queue: 'q', payload: 1 });
    await client.submitTask({ queue: 'q', payload: 1 });
    const keys = seen.map((request) => JSON.parse(request.body).idempotencyKey);
    expect(keys[0]).toBe('order-42');
    expect(keys[1]).not.toBe(keys[2]);
  });

  it('sends debounce with a key for the submission, and says whether it joined a window', async () => {
    const { fetch, seen } = scripted(
      json(201, { task: TASK, debounced: false }),
      json(200, { task: TASK, debounced: true }),
    );
    const client = clientWith(fetch);
    const debounce = { key: 'issue-42', windowSeconds: 30 };
    await expect(client.submitTask({ queue: 'q', payload: 1, debounce })).resolves.toEqual({
      task: TASK,
      created: true,
      debounced: false,
    });
    await expect(client.submitTask({ queue: 'q', payload: 2, debounce })).resolves.toEqual({
      task: TASK,
      created: false,
      debounced: true,
    });
    const bodies = seen.map((request) => JSON.parse(request.body));
    expect(bodies[0]).toMatchObject({ debounce, idempotencyKey: expect.any(String) });
    expect(bodies[0].idempotencyKey).not.toBe(bodies[1].idempotencyKey);
  });
});

describe('openSession', () => {
  const SESSION = { sessionId: 's_1', leaseTtlSeconds: 30, heartbeatIntervalSeconds: 10, expiresAt: 'x' };

  it('generates an open id and sends the same one on every retry', async () => {
    const { fetch, seen } = scripted(
      failure(503, 'ServiceUnavailable'),
      new TypeError('fetch failed'),
      json(200, SESSION),
    );
    const client = clientWith(fetch);
    await expect(client.openSession()).resolves.toEqual(SESSION);
    await client.openSession({ openId: 'open-given-0001' });
    const ids = seen.map((request) => JSON.parse(request.body).openId);
    expect(ids).toHaveLength(4);
    expect(new Set(ids.slice(0, 3)).size).toBe(1);
    expect(ids[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(ids[3]).toBe('open-given-0001');
  });

  it('opens without an id when the server is older than open ids (it refuses the field)', async () => {
    // What a server of the release before open ids answers a body with one.
    const old = json(400, {
      error: { code: 'ValidationError', message: 'body: Unrecognized key: "openId"' },
      requestId: 'req-400',
    });
    const { fetch, seen } = scripted(old, json(200, SESSION));
    await expect(clientWith(fetch).openSession()).resolves.toEqual(SESSION);
    expect(seen.map((request) => JSON.parse(request.body))).toEqual([
      { openId: expect.any(String), openSeq: expect.any(Number) },
      {},
    ]);
  });

  it('opens with its id alone when the server knows open ids but not open numbers', async () => {
    const older = json(400, {
      error: { code: 'ValidationError', message: 'body: Unrecognized key: "openSeq"' },
      requestId: 'req-400',
    });
    const { fetch, seen } = scripted(older, json(200, SESSION));
    await expect(clientWith(fetch).openSession({ openId: 'open-given-0002' })).resolves.toEqual(SESSION);
    expect(seen.map((request) => JSON.parse(request.body))).toEqual([
      { openId: 'open-given-0002', openSeq: expect.any(Number) },
      { openId: 'open-given-0002' },
    ]);
  });

  it('numbers each open above the last, the same on every retry of one', async () => {
    const { fetch, seen } = scripted(
      failure(503, 'ServiceUnavailable'),
      json(200, SESSION),
      json(200, SESSION),
    );
    const client = clientWith(fetch);
    await client.openSession();
    await client.openSession({ openSeq: 7 });
    const before = Date.now();
    await client.openSession();
    const seqs = seen.map((request) => JSON.parse(request.body).openSeq);
    expect(seqs[0]).toBe(seqs[1]);
    expect(seqs[2]).toBe(7);
    expect(seqs[3]).toBeGreaterThan(seqs[0]);
    expect(seqs[3]).toBeGreaterThanOrEqual(before);
  });

  it('does not send again without the id for any other refusal', async () => {
    const { fetch, seen } = scripted(failure(403, 'AgentRevoked'));
    await expect(clientWith(fetch).openSession()).rejects.toMatchObject({
      status: 403,
      code: 'AgentRevoked',
    });
    expect(seen).toHaveLength(1);
  });
});

describe('errors', () => {
  it('maps LeaseLost and SessionLost to their classes, with status, code and request id', async () => {
    const lease = scripted(failure(409, 'LeaseLost'));
    const leaseError = await clientWith(lease.fetch)
      .complete('t_1', { leaseEpoch: 1 })
      .catch((e: unknown) => e);
    expect(leaseError).toBeInstanceOf(LeaseLostError);
    expect(leaseError).toBeInstanceOf(AgentSchedulerError);
    expect(leaseError).toMatchObject({
      status: 409,
      code: 'LeaseLost',
      message: 'LeaseLost happened',
      requestId: 'req-409',
    });

    const session = scripted(failure(409, 'SessionLost'));
    const sessionError = await clientWith(session.fetch)
      .heartbeat({ sessionId: 's_1' })
      .catch((e: unknown) => e);
    expect(sessionError).toBeInstanceOf(SessionLostError);
  });

  it('reads API Gateway’s own errors and its request id header', async () => {
    const { fetch } = scripted(json(401, { message: 'Unauthorized' }, { 'apigw-requestid': 'gw-1' }));
    const error = await clientWith(fetch)
      .claim({ sessionId: 's_1' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentSchedulerError);
    expect(error).toMatchObject({
      status: 401,
      code: 'Unauthorized',
      message: 'Unauthorized',
      requestId: 'gw-1',
    });
  });

  it('copes with an error body that is not JSON', async () => {
    const { fetch } = scripted(new Response('<html>bad gateway</html>', { status: 502 }));
    const error = await clientWith(fetch, { retries: { maxAttempts: 1 } })
      .health()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 502, code: 'BadGateway', requestId: undefined });
  });
});

describe('requests', () => {
  it('sends the bearer token, a user agent and JSON, and signs every attempt', async () => {
    const { fetch, seen } = scripted(failure(503, 'ServiceUnavailable'), json(200, { tasks: [] }));
    const signer = vi.fn(async (request: Request) => {
      request.headers.set('x-signed', 'yes');
      return request;
    });
    await clientWith(fetch, { signer, userAgent: 'my-agent/1' }).claim({ sessionId: 's_1', max: 2 });
    expect(signer).toHaveBeenCalledTimes(2);
    const request = seen[1];
    expect(request?.headers.get('authorization')).toBe('Bearer tok');
    expect(request?.headers.get('user-agent')).toBe('my-agent/1');
    expect(request?.headers.get('content-type')).toBe('application/json');
    expect(request?.headers.get('x-signed')).toBe('yes');
    // Both attempts carry one claim id: a retry after a lost answer is the same claim.
    const bodies = seen.map((r) => JSON.parse(r.body ?? '') as { claimId?: string });
    expect(bodies[1]).toEqual({
      sessionId: 's_1',
      max: 2,
      claimId: expect.stringMatching(/^[A-Za-z0-9_-]{8,64}$/),
    });
    expect(bodies[1]?.claimId).toBe(bodies[0]?.claimId);
  });

  it('a call whose signal ends while its request is signed fails, and leaves no rejection unhandled', async () => {
    // A Worker's child submission or heartbeat carries its task's signal, which may end at any moment: here while
    // the request is signed, so the fetch is given a signal already ended and fails at once.
    const controller = new AbortController();
    const fetch: typeof globalThis.fetch = async (_input, init) => {
      throw init?.signal?.reason ?? new Error('aborted');
    };
    const signer = async (request: Request) => {
      controller.abort(new Error('the task was aborted'));
      return request;
    };
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await expect(
        clientWith(fetch, { signer }).heartbeat({ sessionId: 's_1' }, { signal: controller.signal }),
      ).rejects.toThrow();
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it.each<[string, (c: AgentSchedulerClient) => Promise<unknown>, string, string, unknown, unknown]>([
    ['getTask', (c) => c.getTask('t/1'), 'GET', '/prod/v1/tasks/t%2F1', { task: TASK }, TASK],
    ['cancelTask', (c) => c.cancelTask('t_1'), 'POST', '/prod/v1/tasks/t_1/cancel', { task: TASK }, TASK],
    ['redriveTask', (c) => c.redriveTask('t_1'), 'POST', '/prod/v1/tasks/t_1/redrive', { task: TASK }, TASK],
    [
      'clearAttention',
      (c) => c.clearAttention('t_1'),
      'POST',
      '/prod/v1/tasks/t_1/attention',
      { task: TASK },
      TASK,
    ],
    [
      'listQueues',
      (c) => c.listQueues(),
      'GET',
      '/prod/v1/queues',
      { queues: [{ name: 'q' }] },
      [{ name: 'q' }],
    ],
    [
      'pauseQueue',
      (c) => c.pauseQueue('q'),
      'POST',
      '/prod/v1/queues/q/pause',
      { queue: { name: 'q', paused: true, updatedAt: 0 } },
      { name: 'q', paused: true, updatedAt: '1970-01-01T00:00:00.000Z' },
    ],
    [
      'resumeQueue',
      (c) => c.resumeQueue('q'),
      'POST',
      '/prod/v1/queues/q/resume',
      { queue: { name: 'q', paused: false, updatedAt: '2030-01-01T00:00:00.000Z' } },
      { name: 'q', paused: false, updatedAt: '2030-01-01T00:00:00.000Z' },
    ],
    ['listAgents', (c) => c.listAgents(), 'GET', '/prod/v1/agents', { agents: [] }, []],
    [
      'revokeAgent',
      (c) => c.revokeAgent('a_1'),
      'DELETE',
      '/prod/v1/agents/a_1',
      { revoked: true },
      undefined,
    ],
    [
      'listSchedules',
      (c) => c.listSchedules(),
      'GET',
      '/prod/v1/schedules',
      { schedules: [{ name: 'n', source: 'declared', createdAt: 0 }] },
      [{ name: 'n', source: 'declared', createdAt: '1970-01-01T00:00:00.000Z' }],
    ],
    [
      'createSchedule',
      (c) => c.createSchedule({ name: 'n', expression: 'rate(1 hour)', task: { queue: 'q' } }),
      'POST',
      '/prod/v1/schedules',
      { schedule: { name: 'n', createdAt: 1_000 } },
      { name: 'n', createdAt: '1970-01-01T00:00:01.000Z' },
    ],
    [
      'deleteSchedule',
      (c) => c.deleteSchedule('n'),
      'DELETE',
      '/prod/v1/schedules/n',
      { deleted: true },
      undefined,
    ],
    [
      'openApi',
      (c) => c.openApi(),
      'GET',
      '/prod/v1/openapi.json',
      { openapi: '3.1.0' },
      { openapi: '3.1.0' },
    ],
    ['health', (c) => c.health(), 'GET', '/prod/v1/health', { status: 'ok' }, { status: 'ok' }],
    [
      'openSession',
      (c) => c.openSession(),
      'POST',
      '/prod/v1/agent/session',
      { sessionId: 's_1', leaseTtlSeconds: 30, heartbeatIntervalSeconds: 10 },
      { sessionId: 's_1', leaseTtlSeconds: 30, heartbeatIntervalSeconds: 10 },
    ],
    [
      'claim',
      (c) => c.claim({ sessionId: 's_1' }),
      'POST',
      '/prod/v1/agent/claim',
      { tasks: [], retryAfterMs: 250 },
      { tasks: [], retryAfterMs: 250 },
    ],
    [
      'heartbeat',
      (c) =>
        c.heartbeat({
          sessionId: 's_1',
          checkpoints: [{ taskId: 't_1', leaseEpoch: 2, checkpoint: { page: 3 } }],
        }),
      'POST',
      '/prod/v1/agent/heartbeat',
      { cancelled: [], lost: ['t_2'], held: ['t_1'] },
      { cancelled: [], lost: ['t_2'], held: ['t_1'] },
    ],
    [
      'getSession',
      (c) => c.getSession(),
      'GET',
      '/prod/v1/agent/session',
      { session: { sessionId: 's_1', expiresAt: 'x', tasks: [], roles: [] } },
      { sessionId: 's_1', expiresAt: 'x', tasks: [], roles: [] },
    ],
    [
      'withdrawFromRole',
      (c) => c.withdrawFromRole('r', { sessionId: 's_1' }),
      'POST',
      '/prod/v1/agent/roles/r/withdraw',
      { withdrawn: true, released: false, role: {} },
      { withdrawn: true, released: false, role: {} },
    ],
    [
      'complete',
      (c) => c.complete('t_1', { leaseEpoch: 2, result: { ok: true } }),
      'POST',
      '/prod/v1/agent/tasks/t_1/complete',
      { task: TASK },
      TASK,
    ],
    [
      'fail',
      (c) => c.fail('t_1', { leaseEpoch: 2, error: { message: 'boom' } }),
      'POST',
      '/prod/v1/agent/tasks/t_1/fail',
      { task: TASK },
      TASK,
    ],
    [
      'release',
      (c) => c.release('t_1', { leaseEpoch: 2 }),
      'POST',
      '/prod/v1/agent/tasks/t_1/release',
      { task: TASK },
      TASK,
    ],
  ])('%s calls its route and unwraps the answer', async (_, call, method, path, answer, expected) => {
    const { fetch, seen } = scripted(json(200, answer));
    await expect(call(clientWith(fetch))).resolves.toEqual(expected);
    expect(seen[0]?.method).toBe(method);
    expect(seen[0]?.url.pathname).toBe(path);
  });

  it('reads the last page of listTasks, whose cursor is null, as having none', async () => {
    const { fetch } = scripted(json(200, { tasks: [], nextCursor: null }));
    expect(await clientWith(fetch).listTasks()).toEqual({ tasks: [] });
  });

  it('puts the filters of listTasks in the query string', async () => {
    const { fetch, seen } = scripted(json(200, { tasks: [TASK], nextCursor: 'c2' }));
    const page = await clientWith(fetch).listTasks({ queue: 'q', status: 'dead', limit: 5, cursor: 'c1' });
    expect(page).toEqual({ tasks: [TASK], nextCursor: 'c2' });
    expect(Object.fromEntries(seen[0]?.url.searchParams ?? [])).toEqual({
      queue: 'q',
      status: 'dead',
      limit: '5',
      cursor: 'c1',
    });
  });

  it('asks for the tasks marked for attention with attention=true, and sends no filter for false', async () => {
    const { fetch, seen } = scripted(json(200, { tasks: [] }));
    await clientWith(fetch).listTasks({ attention: true });
    await clientWith(fetch).listTasks({ attention: false });
    expect(seen.map((request) => Object.fromEntries(request.url.searchParams))).toEqual([
      { attention: 'true' },
      {},
    ]);
  });

  it('clears the attention mark with the body that names it', async () => {
    const { fetch, seen } = scripted(json(200, { task: TASK }));
    await clientWith(fetch).clearAttention('t_1');
    expect(JSON.parse(seen[0]?.body ?? '')).toEqual({ needsAttention: false });
  });

  it('rejects an endpoint that is not an http(s) URL', () => {
    expect(() => new AgentSchedulerClient({ endpoint: 'api.example.com' })).toThrow(TypeError);
  });

  it('names the environment variables when the endpoint or the token it was given holds nothing', () => {
    // What `{ endpoint: process.env.AGENT_SCHEDULER_ENDPOINT, token: process.env.AGENT_SCHEDULER_TOKEN }` gives
    // when they are not set (or set to nothing).
    const unset = process.env.AGENT_SCHEDULER_SURELY_UNSET;
    const client = (options: { endpoint?: string; token?: string }) => () =>
      new AgentSchedulerClient(options as AgentSchedulerClientOptions);
    expect(client({ endpoint: unset, token: 'tok' })).toThrow(
      /^endpoint is undefined: .*AGENT_SCHEDULER_ENDPOINT/,
    );
    expect(client({ endpoint: '', token: 'tok' })).toThrow(/^endpoint is empty: .*AGENT_SCHEDULER_ENDPOINT/);
    expect(client({ endpoint: 'http://127.0.0.1:3000', token: unset })).toThrow(
      /^token is undefined: .*AGENT_SCHEDULER_TOKEN/,
    );
    expect(client({ endpoint: 'http://127.0.0.1:3000', token: '' })).toThrow(
      /^token is empty: .*AGENT_SCHEDULER_TOKEN/,
    );
    // Left out, the token is not asked for: the open routes, or requests signed by a signer.
    expect(client({ endpoint: 'http://127.0.0.1:3000' })).not.toThrow();
    const signer = async (request: Request) => request;
    expect(
      () => new AgentSchedulerClient({ endpoint: 'http://127.0.0.1:3000', token: unset, signer }),
    ).not.toThrow();
  });
});
