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
  expectedHost,
  isLoopbackAddress,
  LOGIN_ATTEMPTS_PER_CODE,
  LOGIN_LOCKOUT_MS,
  SESSION_KEY_HEADER,
} from '#console/gateway';

const PORT = 3100;
interface Signed {
  readonly cookie: string;
  readonly key: string;
}
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

  /** A request as the page sends it; `signed` is what a sign-in gave: the cookie and the key. */
  const request = (
    overrides: Partial<ConsoleRequest> & { cookie?: string; signed?: Signed } = {},
  ): ConsoleRequest => {
    const { cookie, signed, ...rest } = overrides;
    const method = rest.method ?? 'GET';
    return {
      method,
      url: '/',
      body: '',
      remoteAddress: '127.0.0.1',
      localAddress: '127.0.0.1',
      localPort: PORT,
      ...rest,
      headers: {
        host: HOST,
        ...(method === 'GET' ? {} : { origin: ORIGIN }),
        ...(signed ? { cookie: signed.cookie, [SESSION_KEY_HEADER]: signed.key } : {}),
        ...(cookie ? { cookie } : {}),
        ...rest.headers,
      },
    };
  };
  const login = async (typed = code()) =>
    gateway.answer(request({ method: 'POST', url: '/console/login', body: JSON.stringify({ code: typed }) }));
  /** Signs in to `to`: the cookie header a browser would send back, and the key the page keeps. */
  const signIn = async (to: ConsoleGateway = gateway): Promise<Signed> => {
    const answer = await to.answer(
      request({ method: 'POST', url: '/console/login', body: JSON.stringify({ code: code() }) }),
    );
    expect(answer.statusCode).toBe(200);
    const setCookie = answer.headers['set-cookie'] ?? '';
    const { key } = JSON.parse(String(answer.body)) as { key: string };
    return { cookie: setCookie.split(';')[0] ?? '', key };
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
    const signed = await signIn();
    for (const remoteAddress of ['192.168.1.20', '10.0.0.5', '::ffff:172.17.0.2', '2001:db8::1', undefined]) {
      for (const url of ['/', '/console/api/v1/tasks', '/console/session']) {
        const answer = await gateway.answer(request({ url, signed, remoteAddress }));
        expect(answer.statusCode, `${remoteAddress} ${url}`).toBe(403);
      }
    }
    expect(sent).toHaveLength(0);
  });

  it('refuses requests from another origin or site, and writes that name no origin', async () => {
    const signed = await signIn();
    const refused = [
      request({
        method: 'POST',
        url: '/console/api/v1/tasks',
        signed,
        headers: { origin: 'http://evil.example' },
      }),
      request({
        method: 'POST',
        url: '/console/api/v1/tasks',
        signed,
        headers: { origin: 'http://127.0.0.1:3000' },
      }),
      request({ method: 'POST', url: '/console/api/v1/tasks', signed, headers: { origin: 'null' } }),
      {
        ...request({ method: 'POST', url: '/console/api/v1/tasks', signed }),
        headers: { host: HOST, cookie: signed.cookie, [SESSION_KEY_HEADER]: signed.key },
      },
      request({ url: '/console/api/v1/tasks', signed, headers: { origin: 'http://evil.example' } }),
      request({ url: '/console/api/v1/tasks', signed, headers: { 'sec-fetch-site': 'cross-site' } }),
      request({ url: '/console/api/v1/tasks', signed, headers: { 'sec-fetch-site': 'same-site' } }),
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
    const signed = await signIn();
    for (const host of [
      'evil.example:3100',
      'attacker.localhost.example:3100',
      '127.0.0.1:3000',
      '127.0.0.1',
    ]) {
      const answer = await gateway.answer(
        request({ url: '/console/api/v1/tasks', signed, headers: { host } }),
      );
      expect(answer.statusCode, host).toBe(421);
    }
    expect(sent).toHaveLength(0);
    expect(expectedHost('::ffff:127.0.0.1', PORT)).toBe(HOST);
    expect(expectedHost('::1', PORT)).toBe('[::1]:3100');
    expect(expectedHost('10.0.0.5', PORT)).toBeUndefined();
    expect(isLoopbackAddress('::ffff:127.0.0.1')).toBe(true);
    expect(isLoopbackAddress('::ffff:128.0.0.1')).toBe(false);
  });

  it('takes only the address it listens on as Host: `localhost` could be another program on [::1]', async () => {
    const signed = await signIn();
    for (const host of ['localhost:3100', '[::1]:3100', '127.0.0.2:3100']) {
      const answer = await gateway.answer(
        request({ url: '/console/api/v1/tasks', signed, headers: { host } }),
      );
      expect(answer.statusCode, host).toBe(421);
      expect(JSON.parse(String(answer.body)).error.message).toContain('http://127.0.0.1:3100/');
    }
    const onV6 = await gateway.answer(
      request({ url: '/', localAddress: '::1', remoteAddress: '::1', headers: { host: '[::1]:3100' } }),
    );
    expect(onV6.statusCode).toBe(200);
    expect(sent).toHaveLength(0);
  });

  it('refuses the cookie without the key the page keeps: another program on another port is sent the cookie', async () => {
    const signed = await signIn();
    for (const key of [undefined, '', 'x'.repeat(43), `${signed.key}x`]) {
      const answer = await gateway.answer(
        request({
          url: '/console/api/v1/tasks',
          headers: { cookie: signed.cookie, ...(key === undefined ? {} : { [SESSION_KEY_HEADER]: key }) },
        }),
      );
      expect(answer.statusCode).toBe(401);
    }
    const session = await gateway.answer(request({ url: '/console/session', cookie: signed.cookie }));
    expect(JSON.parse(String(session.body))).toMatchObject({ authenticated: false });
    expect(sent).toHaveLength(0);
    expect((await gateway.answer(request({ url: '/console/api/v1/tasks', signed }))).statusCode).toBe(200);
  });

  it('answers a refused page load in a sentence, not JSON', async () => {
    const answer = await gateway.answer(
      request({ url: '/', headers: { host: 'localhost:3100', 'sec-fetch-dest': 'document' } }),
    );
    expect(answer.statusCode).toBe(421);
    expect(answer.headers['content-type']).toMatch(/^text\/plain/);
    expect(String(answer.body)).toBe(
      'agent-scheduler console: open the console at the address it printed: http://127.0.0.1:3100/\n',
    );
  });

  it('serves the page to a navigation from elsewhere (a link), but nothing else', async () => {
    const page = await gateway.answer(
      request({ url: '/', headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' } }),
    );
    expect(page.statusCode).toBe(200);
    const session = await gateway.answer(
      request({ url: '/console/session', headers: { 'sec-fetch-site': 'cross-site' } }),
    );
    expect(session.statusCode).toBe(403);
  });

  it('takes each login code once, for an HttpOnly SameSite=Strict cookie, and prints the next', async () => {
    const first = code();
    expect(codes).toEqual([{ code: first, why: 'start' }]);
    expect(first).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    const answer = await login(first.toLowerCase().replace('-', ' '));
    expect(answer.statusCode).toBe(200);
    const setCookie = answer.headers['set-cookie'] ?? '';
    expect(setCookie).toMatch(new RegExp(`^${cookieNameFor(PORT)}=[A-Za-z0-9_-]{43};`));
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    // The key is not the cookie: holding one gives nothing without the other.
    const { key } = JSON.parse(String(answer.body)) as { key: string };
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(setCookie).not.toContain(key);
    expect(codes.at(-1)).toMatchObject({ why: 'used' });
    expect(code()).not.toBe(first);
    expect((await login(first)).statusCode).toBe(401);
  });

  it('replaces a code after too many wrong guesses, then waits longer at each round, printing one line a round', async () => {
    const first = code();
    for (let i = 0; i < LOGIN_ATTEMPTS_PER_CODE; i++) expect((await login('AAAA-AAAA')).statusCode).toBe(401);
    expect(codes.at(-1)).toMatchObject({ why: 'guessed' });
    // Locked: even the new code waits, and guesses neither count nor print.
    const locked = await login();
    expect(locked.statusCode).toBe(429);
    expect(locked.headers['retry-after']).toBe('1');
    for (let i = 0; i < 20; i++) expect((await login('BBBB-BBBB')).statusCode).toBe(429);
    expect(codes.filter((c) => c.why === 'guessed')).toHaveLength(1);
    clock += LOGIN_LOCKOUT_MS.first;
    expect((await login(first)).statusCode).toBe(401);
    for (let i = 1; i < LOGIN_ATTEMPTS_PER_CODE; i++) await login('AAAA-AAAA');
    expect((await login()).headers['retry-after']).toBe('2');
    clock += 2 * LOGIN_LOCKOUT_MS.first;
    expect((await login()).statusCode).toBe(200);
    expect((await login('not json')).statusCode).toBe(401);
    const malformed = await gateway.answer(request({ method: 'POST', url: '/console/login', body: '{' }));
    expect(malformed.statusCode).toBe(400);
  });

  it('forwards operator routes to the API without the browser’s cookie or origin, and answers what it answers', async () => {
    const signed = await signIn();
    const answer = await gateway.answer(
      request({ url: '/console/api/v1/tasks?queue=q%20a&status=dead', signed }),
    );
    expect(answer.statusCode).toBe(200);
    expect(JSON.parse(String(answer.body))).toEqual({ tasks: [] });
    expect(answer.headers['x-amzn-requestid']).toBeUndefined();
    const posted = await gateway.answer(
      request({ method: 'POST', url: '/console/api/v1/tasks/t-1/cancel', signed }),
    );
    expect(posted.statusCode).toBe(200);
    const submitted = await gateway.answer(
      request({ method: 'POST', url: '/console/api/v1/tasks', signed, body: '{"queue":"q","payload":{}}' }),
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

  it('forwards the waitpoint routes: the open list, and an approval and a rejection with their bodies', async () => {
    const signed = await signIn();
    const base = 'https://abc123.execute-api.eu-west-1.amazonaws.com';
    for (const [method, url, body] of [
      ['GET', '/console/api/v1/waitpoints?status=open&limit=50', ''],
      ['POST', '/console/api/v1/waitpoints/w_a/complete', '{"data":{"ok":true}}'],
      ['POST', '/console/api/v1/waitpoints/w_a/complete', '{}'],
      ['POST', '/console/api/v1/waitpoints/w_a/reject', '{"reason":"not this week"}'],
    ] as const) {
      const answer = await gateway.answer(request({ method, url, signed, body }));
      expect(answer.statusCode, `${method} ${url}`).toBe(200);
    }
    expect(sent.map((r) => `${r.method} ${r.url}`)).toEqual([
      `GET ${base}/v1/waitpoints?status=open&limit=50`,
      `POST ${base}/v1/waitpoints/w_a/complete`,
      `POST ${base}/v1/waitpoints/w_a/complete`,
      `POST ${base}/v1/waitpoints/w_a/reject`,
    ]);
    expect(await Promise.all(sent.slice(1).map((r) => r.text()))).toEqual([
      '{"data":{"ok":true}}',
      '{}',
      '{"reason":"not this week"}',
    ]);
  });

  it('forwards no agent route, no local-only route of a deployed stack, and nothing that is not a route', async () => {
    const signed = await signIn();
    for (const [method, url] of [
      ['POST', '/console/api/v1/agent/claim'],
      ['POST', '/console/api/v1/agent/tasks/t-1/complete'],
      ['GET', '/console/api/v1/events?since=0'],
      ['GET', '/console/api/v2/anything'],
      ['GET', '/console/api'],
      ['DELETE', '/console/api/v1/tasks'],
    ] as const) {
      const answer = await gateway.answer(request({ method, url, signed }));
      expect(answer.statusCode, `${method} ${url}`).toBe(404);
    }
    expect(sent).toHaveLength(0);
  });

  it('ends a session at its time and at sign-out', async () => {
    const signed = await signIn();
    // A deployed stack is read every 10 s by default: each read is billed there.
    expect(
      JSON.parse(String((await gateway.answer(request({ url: '/console/session', signed }))).body)),
    ).toEqual({
      authenticated: true,
      mode: 'deployed',
      endpoint: 'https://abc123.execute-api.eu-west-1.amazonaws.com/',
      events: 'none',
      refreshSeconds: 10,
      // No source of metrics was given: the Queues view draws no last hour.
      metrics: 'none',
    });
    clock += 60_001;
    expect((await gateway.answer(request({ url: '/console/api/v1/tasks', signed }))).statusCode).toBe(401);
    const again = await signIn();
    const out = await gateway.answer(request({ method: 'POST', url: '/console/logout', signed: again }));
    expect(out.statusCode).toBe(204);
    expect(out.headers['set-cookie']).toContain('Max-Age=0');
    expect((await gateway.answer(request({ url: '/console/api/v1/tasks', signed: again }))).statusCode).toBe(
      401,
    );
  });

  it('answers an unreachable API with a 502, says why on the terminal, and refuses a GET with a body', async () => {
    const told: unknown[] = [];
    const failing = consoleGateway({
      mode: 'deployed',
      endpoint: 'https://example.invalid',
      events: 'none',
      assets,
      upstream: async () => {
        throw new TypeError('fetch failed');
      },
      onUpstreamError: (error) => told.push(error),
      onCode: (next) => codes.push({ code: next, why: 'start' }),
    });
    const signed = await signIn(failing);
    const unreachable = await failing.answer(request({ url: '/console/api/v1/queues', signed }));
    expect(unreachable.statusCode).toBe(502);
    expect(JSON.parse(String(unreachable.body))).toMatchObject({ error: { code: 'UpstreamUnavailable' } });
    expect(told).toHaveLength(1);
    const withBody = await failing.answer(request({ url: '/console/api/v1/queues', signed, body: '{}' }));
    expect(withBody.statusCode).toBe(400);
    expect(told).toHaveLength(1);
  });

  it('tells the API refusing the console’s credentials apart from the browser’s session ending', async () => {
    const refusing = consoleGateway({
      mode: 'deployed',
      endpoint: 'https://abc123.execute-api.eu-west-1.amazonaws.com',
      events: 'none',
      assets,
      upstream: async () =>
        new Response(JSON.stringify({ error: { code: 'Unauthorized', message: 'no' } }), { status: 401 }),
      onCode: (next) => codes.push({ code: next, why: 'start' }),
    });
    const signed = await signIn(refusing);
    const refused = await refusing.answer(request({ url: '/console/api/v1/queues', signed }));
    expect(refused.statusCode).toBe(502);
    expect(JSON.parse(String(refused.body))).toMatchObject({ error: { code: 'UpstreamUnauthorized' } });
  });

  it('reads a deployed stack’s queue metrics from CloudWatch for a signed-in page, and refuses what it cannot read', async () => {
    const plain = await signIn();
    const asked: { target: string | null; body: Record<string, unknown> }[] = [];
    const now = Date.parse('2026-11-25T10:30:20.000Z');
    let answer: () => Response = () =>
      new Response(
        JSON.stringify({
          MetricDataResults: [
            {
              Id: 'd0',
              Timestamps: [now / 1_000 - 80, now / 1_000 - 140],
              Values: [4, 7],
              StatusCode: 'Complete',
            },
            { Id: 'c0', Timestamps: [now / 1_000 - 80], Values: [12], StatusCode: 'Complete' },
            { Id: 'd1', Timestamps: [], Values: [], StatusCode: 'Complete' },
          ],
          Messages: [],
        }),
        { status: 200, headers: { 'content-type': 'application/x-amz-json-1.0' } },
      );
    const withMetrics = consoleGateway({
      mode: 'deployed',
      endpoint: 'https://abc123.execute-api.eu-west-1.amazonaws.com',
      events: 'none',
      assets,
      upstream: async () => new Response('{}'),
      metrics: {
        endpoint: 'https://monitoring.eu-west-1.amazonaws.com',
        namespace: 'Fleet',
        send: async (sentRequest) => {
          asked.push({
            target: sentRequest.headers.get('x-amz-target'),
            body: (await sentRequest.json()) as Record<string, unknown>,
          });
          return answer();
        },
      },
      onCode: (next) => codes.push({ code: next, why: 'start' }),
      now: () => now,
    });
    const session = await withMetrics.answer(request({ url: '/console/session' }));
    expect(JSON.parse(String(session.body))).toMatchObject({ metrics: 'cloudwatch' });
    const url = '/console/metrics/queues?queue=emails&queue=reports';
    expect((await withMetrics.answer(request({ url }))).statusCode).toBe(401);
    const signed = await signIn(withMetrics);

    const read = await withMetrics.answer(request({ url, signed }));
    expect(read.statusCode).toBe(200);
    expect(JSON.parse(String(read.body))).toEqual({
      from: '2026-11-25T09:31:00.000Z',
      to: '2026-11-25T10:31:00.000Z',
      queues: [
        {
          name: 'emails',
          depth: [
            ['2026-11-25T10:28:00.000Z', 7],
            ['2026-11-25T10:29:00.000Z', 4],
          ],
          claims: [['2026-11-25T10:29:00.000Z', 12]],
        },
        { name: 'reports', depth: [], claims: [] },
      ],
    });
    // One request: per queue its depth's maximum (the supervisor's) and its claims' sum (the agent API's), by minute.
    expect(asked).toHaveLength(1);
    expect(asked[0]?.target).toBe('GraniteServiceVersion20100801.GetMetricData');
    expect(asked[0]?.body).toMatchObject({
      StartTime: Date.parse('2026-11-25T09:31:00Z') / 1_000,
      ScanBy: 'TimestampAscending',
    });
    expect(asked[0]?.body.MetricDataQueries).toEqual([
      expect.objectContaining({
        Id: 'd0',
        MetricStat: {
          Metric: {
            Namespace: 'Fleet',
            MetricName: 'QueueDepth',
            Dimensions: [
              { Name: 'service', Value: 'agent-scheduler-supervisor' },
              { Name: 'queue', Value: 'emails' },
            ],
          },
          Period: 60,
          Stat: 'Maximum',
        },
      }),
      expect.objectContaining({
        Id: 'c0',
        MetricStat: expect.objectContaining({
          Metric: expect.objectContaining({ MetricName: 'Claims' }),
          Period: 60,
          Stat: 'Sum',
        }),
      }),
      expect.objectContaining({ Id: 'd1' }),
      expect.objectContaining({ Id: 'c1' }),
    ]);

    for (const bad of [
      '/console/metrics/queues',
      '/console/metrics/queues?queue=no%20spaces',
      '/console/metrics/queues?queue=a&since=1',
      `/console/metrics/queues?${Array.from({ length: 51 }, (_, i) => `queue=q${i}`).join('&')}`,
    ]) {
      const refused = await withMetrics.answer(request({ url: bad, signed }));
      expect(refused.statusCode, bad).toBe(400);
      expect(JSON.parse(String(refused.body))).toMatchObject({ error: { code: 'ValidationError' } });
    }
    expect(asked).toHaveLength(1);

    // CloudWatch refusing (the operator may not read metrics): its reason, as the gateway's own refusal.
    answer = () =>
      new Response(
        JSON.stringify({ __type: 'AccessDeniedException', message: 'not authorized to GetMetricData' }),
        {
          status: 400,
        },
      );
    const refused = await withMetrics.answer(request({ url, signed }));
    expect(refused.statusCode).toBe(502);
    expect(JSON.parse(String(refused.body))).toMatchObject({
      error: {
        code: 'MetricsUnavailable',
        message: expect.stringContaining('not authorized to GetMetricData'),
      },
    });

    // Without a source (the local stack, or a token): nothing to read.
    const none = await gateway.answer(request({ url, signed: plain }));
    expect(none.statusCode).toBe(404);
    expect(sent).toHaveLength(0);
  });
});
