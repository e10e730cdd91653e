/**
 * The console's gateway, in process: it acts as the operator, so everything it refuses is refused before anything
 * reaches the API. The upstream here records what it is sent.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { ConsoleAssets } from '#console/assets';
import {
  type ConsoleGateway,
  type ConsoleRequest,
  consoleGateway,
  cookieNameFor,
  isLoopbackAddress,
  isLoopbackHost,
  LOGIN_ATTEMPTS_PER_CODE,
} from '#console/gateway';

const PORT = 3100;
const HOST = `127.0.0.1:${PORT}`;
const ORIGIN = `http://${HOST}`;
const assets: ConsoleAssets = new Map([
  ['/', { contentType: 'text/html; charset=utf-8', body: Buffer.from('<!doctype html><title>t</title>') }],
  ['/console/app.js', { contentType: 'text/javascript; charset=utf-8', body: Buffer.from('void 0') }],
]);

describe('the console gateway', () => {
  let gateway: ConsoleGateway;
  let codes: { code: string; why: string }[];
  let sent: Request[];
  let clock: number;
  const code = () => codes.at(-1)?.code ?? '';

  const request = (overrides: Partial<ConsoleRequest> & { cookie?: string } = {}): ConsoleRequest => {
    const { cookie, ...rest } = overrides;
    const method = rest.method ?? 'GET';
    return {
      method,
      url: '/',
      body: '',
      remoteAddress: '127.0.0.1',
      localPort: PORT,
      ...rest,
      headers: {
        host: HOST,
        ...(method === 'GET' ? {} : { origin: ORIGIN }),
        ...(cookie ? { cookie } : {}),
        ...rest.headers,
      },
    };
  };
  const login = async (typed = code()) =>
    gateway.answer(request({ method: 'POST', url: '/console/login', body: JSON.stringify({ code: typed }) }));
  /** Signs in and returns the cookie header a browser would send back. */
  const signIn = async () => {
    const answer = await login();
    expect(answer.statusCode).toBe(204);
    const setCookie = answer.headers['set-cookie'] ?? '';
    return setCookie.split(';')[0] ?? '';
  };

  beforeEach(() => {
    codes = [];
    sent = [];
    clock = 1_000_000;
    gateway = consoleGateway({
      mode: 'deployed',
      endpoint: 'https://abc123.execute-api.eu-west-1.amazonaws.com/',
      events: 'none',
      assets,
      upstream: async (upstreamRequest) => {
        sent.push(upstreamRequest);
        return new Response(JSON.stringify({ tasks: [] }), {
          status: 200,
          headers: { 'content-type': 'application/json', 'x-amzn-requestid': 'r-1' },
        });
      },
      onCode: (next, why) => codes.push({ code: next, why }),
      sessionTtlMs: 60_000,
      now: () => clock,
    });
  });

  it('serves the page to this machine without a cookie, under a policy that runs only its own files', async () => {
    const page = await gateway.answer(request());
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(String(page.body)).toContain('<!doctype html>');
  });

  it('refuses API requests without the cookie, or with one it did not issue, and sends nothing upstream', async () => {
    for (const cookie of [undefined, `${cookieNameFor(PORT)}=made-up`, 'other=1']) {
      const answer = await gateway.answer(
        request({ url: '/console/api/v1/tasks', ...(cookie ? { cookie } : {}) }),
      );
      expect(answer.statusCode).toBe(401);
      expect(JSON.parse(String(answer.body))).toMatchObject({ error: { code: 'Unauthorized' } });
    }
    expect(sent).toHaveLength(0);
  });

  it('refuses requests from another address, even with a valid cookie, and serves them not even the page', async () => {
    const cookie = await signIn();
    for (const remoteAddress of ['192.168.1.20', '10.0.0.5', '::ffff:172.17.0.2', '2001:db8::1', undefined]) {
      for (const url of ['/', '/console/api/v1/tasks', '/console/session']) {
        const answer = await gateway.answer(request({ url, cookie, remoteAddress }));
        expect(answer.statusCode, `${remoteAddress} ${url}`).toBe(403);
      }
    }
    expect(sent).toHaveLength(0);
  });

  it('refuses requests from another origin or site, and writes that name no origin', async () => {
    const cookie = await signIn();
    const refused = [
      request({
        method: 'POST',
        url: '/console/api/v1/tasks',
        cookie,
        headers: { origin: 'http://evil.example' },
      }),
      request({
        method: 'POST',
        url: '/console/api/v1/tasks',
        cookie,
        headers: { origin: 'http://127.0.0.1:3000' },
      }),
      request({ method: 'POST', url: '/console/api/v1/tasks', cookie, headers: { origin: 'null' } }),
      {
        ...request({ method: 'POST', url: '/console/api/v1/tasks', cookie }),
        headers: { host: HOST, cookie },
      },
      request({ url: '/console/api/v1/tasks', cookie, headers: { origin: 'http://evil.example' } }),
      request({ url: '/console/api/v1/tasks', cookie, headers: { 'sec-fetch-site': 'cross-site' } }),
      request({ url: '/console/api/v1/tasks', cookie, headers: { 'sec-fetch-site': 'same-site' } }),
      request({
        method: 'POST',
        url: '/console/login',
        headers: { origin: 'http://evil.example' },
        body: '{}',
      }),
    ];
    for (const attempt of refused) expect((await gateway.answer(attempt)).statusCode).toBe(403);
    expect(sent).toHaveLength(0);
  });

  it('refuses a Host that is not this machine’s loopback on its port (DNS rebinding)', async () => {
    const cookie = await signIn();
    for (const host of [
      'evil.example:3100',
      'attacker.localhost.example:3100',
      '127.0.0.1:3000',
      '127.0.0.1',
    ]) {
      const answer = await gateway.answer(
        request({ url: '/console/api/v1/tasks', cookie, headers: { host } }),
      );
      expect(answer.statusCode, host).toBe(421);
    }
    expect(sent).toHaveLength(0);
    for (const host of ['localhost:3100', '[::1]:3100', '127.0.0.1:3100'])
      expect(isLoopbackHost(host, PORT)).toBe(true);
    expect(isLoopbackAddress('::ffff:127.0.0.1')).toBe(true);
    expect(isLoopbackAddress('::ffff:128.0.0.1')).toBe(false);
  });

  it('takes each login code once, for an HttpOnly SameSite=Strict cookie, and prints the next', async () => {
    const first = code();
    expect(codes).toEqual([{ code: first, why: 'start' }]);
    expect(first).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    const answer = await login(first.toLowerCase().replace('-', ' '));
    expect(answer.statusCode).toBe(204);
    const setCookie = answer.headers['set-cookie'] ?? '';
    expect(setCookie).toMatch(new RegExp(`^${cookieNameFor(PORT)}=[A-Za-z0-9_-]{43};`));
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(String(answer.body)).toBe('');
    expect(codes.at(-1)).toMatchObject({ why: 'used' });
    expect(code()).not.toBe(first);
    expect((await login(first)).statusCode).toBe(401);
  });

  it('replaces a code after too many wrong guesses', async () => {
    const first = code();
    for (let i = 0; i < LOGIN_ATTEMPTS_PER_CODE; i++) expect((await login('AAAA-AAAA')).statusCode).toBe(401);
    expect(codes.at(-1)).toMatchObject({ why: 'guessed' });
    expect((await login(first)).statusCode).toBe(401);
    expect((await login()).statusCode).toBe(204);
    expect((await login('not json')).statusCode).toBe(401);
    const malformed = await gateway.answer(request({ method: 'POST', url: '/console/login', body: '{' }));
    expect(malformed.statusCode).toBe(400);
  });

  it('forwards operator routes to the API without the browser’s cookie or origin, and answers what it answers', async () => {
    const cookie = await signIn();
    const answer = await gateway.answer(
      request({ url: '/console/api/v1/tasks?queue=q%20a&status=dead', cookie }),
    );
    expect(answer.statusCode).toBe(200);
    expect(JSON.parse(String(answer.body))).toEqual({ tasks: [] });
    expect(answer.headers['x-amzn-requestid']).toBeUndefined();
    const posted = await gateway.answer(
      request({ method: 'POST', url: '/console/api/v1/tasks/t-1/cancel', cookie }),
    );
    expect(posted.statusCode).toBe(200);
    const submitted = await gateway.answer(
      request({ method: 'POST', url: '/console/api/v1/tasks', cookie, body: '{"queue":"q","payload":{}}' }),
    );
    expect(submitted.statusCode).toBe(200);
    expect(sent.map((r) => `${r.method} ${r.url}`)).toEqual([
      'GET https://abc123.execute-api.eu-west-1.amazonaws.com/v1/tasks?queue=q%20a&status=dead',
      'POST https://abc123.execute-api.eu-west-1.amazonaws.com/v1/tasks/t-1/cancel',
      'POST https://abc123.execute-api.eu-west-1.amazonaws.com/v1/tasks',
    ]);
    for (const forwarded of sent) {
      expect(forwarded.headers.get('cookie')).toBeNull();
      expect(forwarded.headers.get('origin')).toBeNull();
      expect(forwarded.headers.get('authorization')).toBeNull();
    }
    expect(await sent[2]?.text()).toBe('{"queue":"q","payload":{}}');
  });

  it('forwards no agent route, no local-only route of a deployed stack, and nothing that is not a route', async () => {
    const cookie = await signIn();
    for (const [method, url] of [
      ['POST', '/console/api/v1/agent/claim'],
      ['POST', '/console/api/v1/agent/tasks/t-1/complete'],
      ['GET', '/console/api/v1/events?since=0'],
      ['GET', '/console/api/v2/anything'],
      ['GET', '/console/api'],
      ['DELETE', '/console/api/v1/tasks'],
    ] as const) {
      const answer = await gateway.answer(request({ method, url, cookie }));
      expect(answer.statusCode, `${method} ${url}`).toBe(404);
    }
    expect(sent).toHaveLength(0);
  });

  it('ends a session at its time and at sign-out', async () => {
    const cookie = await signIn();
    expect((await gateway.answer(request({ url: '/console/session', cookie }))).body).toContain(
      '"authenticated":true',
    );
    clock += 60_001;
    expect((await gateway.answer(request({ url: '/console/api/v1/tasks', cookie }))).statusCode).toBe(401);
    const again = await signIn();
    const out = await gateway.answer(request({ method: 'POST', url: '/console/logout', cookie: again }));
    expect(out.statusCode).toBe(204);
    expect(out.headers['set-cookie']).toContain('Max-Age=0');
    expect((await gateway.answer(request({ url: '/console/api/v1/tasks', cookie: again }))).statusCode).toBe(
      401,
    );
  });

  it('answers an unreachable API with a 502 and a JSON error', async () => {
    const failing = consoleGateway({
      mode: 'deployed',
      endpoint: 'https://example.invalid',
      events: 'none',
      assets,
      upstream: async () => {
        throw new TypeError('fetch failed');
      },
      onCode: (next) => codes.push({ code: next, why: 'start' }),
    });
    const signed = await failing.answer(
      request({ method: 'POST', url: '/console/login', body: JSON.stringify({ code: code() }) }),
    );
    const cookie = (signed.headers['set-cookie'] ?? '').split(';')[0] ?? '';
    const answer = await failing.answer(request({ url: '/console/api/v1/queues', cookie }));
    expect(answer.statusCode).toBe(502);
    expect(JSON.parse(String(answer.body))).toMatchObject({ error: { code: 'UpstreamUnavailable' } });
  });
});
