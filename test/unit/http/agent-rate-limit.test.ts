/**
 * One agent's token cannot take the whole API: past its rate, the edge answers that agent 429 with Retry-After,
 * while other agents and operators go on.
 */
import { describe, expect, it } from 'vitest';
import { recordingLog } from '#test/mock-context';
import { createHttpApi, DEFAULT_AGENT_RATE_LIMIT, type HttpApiEvent } from '../../../functions/http/http-api';
import { ROUTES } from '../../../functions/http/routes';

const heartbeat = (agentId: string): HttpApiEvent => ({
  rawPath: '/v1/agent/heartbeat',
  headers: { 'content-type': 'application/json' },
  body: '{}',
  requestContext: { requestId: 'r', http: { method: 'POST' }, authorizer: { lambda: { agentId } } },
});

describe('per-agent rate limit at the edge', () => {
  function api(limit = { ratePerSecond: 5, burst: 10 }) {
    let now = 1_000_000;
    const handler = createHttpApi(
      ROUTES,
      {
        heartbeat: async () => ({ status: 200, body: { ok: true } }),
        claimTasks: async () => ({ status: 200, body: { tasks: [] } }),
        health: async () => ({ status: 200, body: { status: 'ok' } }),
      },
      recordingLog().log,
      { agentRateLimit: limit, now: () => now },
    );
    return { handler, advance: (ms: number) => (now += ms) };
  }

  it('answers 429 TooManyRequests with Retry-After past the burst, and serves again once tokens come back', async () => {
    // GIVEN an edge that allows 5 requests a second, bursts of 10
    const { handler, advance } = api();

    // WHEN one agent sends 11 requests at once
    const statuses = [];
    for (let i = 0; i < 11; i++) statuses.push((await handler(heartbeat('a_flood'))).statusCode);
    const refused = await handler(heartbeat('a_flood'));

    // THEN the burst passes, the rest is refused with a wait, and a fifth of a second later one more passes
    expect(statuses).toEqual([...Array(10).fill(200), 429]);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(JSON.parse(refused.body)).toMatchObject({
      error: { code: 'TooManyRequests', message: expect.stringMatching(/more than 5 requests a second/) },
    });
    advance(200);
    expect((await handler(heartbeat('a_flood'))).statusCode).toBe(200);
  });

  it('another agent and operator routes are not held back by it', async () => {
    const { handler } = api();
    for (let i = 0; i < 20; i++) await handler(heartbeat('a_flood'));
    expect((await handler(heartbeat('a_calm'))).statusCode).toBe(200);
    expect(
      (await handler({ rawPath: '/v1/health', requestContext: { requestId: 'r', http: { method: 'GET' } } }))
        .statusCode,
    ).toBe(200);
  });

  it('claims cannot spend the last quarter of the burst: heartbeats still pass when claims are refused', async () => {
    // GIVEN an edge that allows bursts of 12, and one agent polling for work as fast as it can
    const { handler } = api({ ratePerSecond: 5, burst: 12 });
    const claim: HttpApiEvent = { ...heartbeat('a_poller'), rawPath: '/v1/agent/claim' };

    // WHEN it claims until refused, then heartbeats
    const claims = [];
    for (let i = 0; i < 10; i++) claims.push((await handler(claim)).statusCode);
    const beats = [];
    for (let i = 0; i < 4; i++) beats.push((await handler(heartbeat('a_poller'))).statusCode);

    // THEN nine claims passed (3 of 12 tokens kept back) and the kept tokens served the heartbeats
    expect(claims.filter((s) => s !== 429)).toHaveLength(9);
    expect(claims.at(-1)).toBe(429);
    expect(beats).toEqual([200, 200, 200, 429]);
  });

  it('the default leaves a Worker room: 100 calls at once and 50 a second after', async () => {
    const { handler, advance } = api(DEFAULT_AGENT_RATE_LIMIT);
    for (let i = 0; i < 100; i++) expect((await handler(heartbeat('a_worker'))).statusCode).toBe(200);
    advance(1_000);
    for (let i = 0; i < 50; i++) expect((await handler(heartbeat('a_worker'))).statusCode).toBe(200);
  });
});
