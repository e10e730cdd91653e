/**
 * The console's gateway: what stands between the browser and the API. It serves the console's files, lets a
 * browser in by a single-use code printed on the operator's terminal (exchanged for an HttpOnly, SameSite=Strict
 * cookie), and forwards the browser's operator requests to the API with the operator's own credentials added, as
 * the CLI sends them: the operator token locally, AWS Signature Version 4 for a deployed stack.
 *
 * Because it acts as the operator, it answers only what comes from this machine, addressed to the loopback address
 * it listens on (so a page of another site cannot reach it through a name that resolves to 127.0.0.1, nor another
 * program on `[::1]` pass for it under `localhost`), and takes no request from another origin. A browser sends a
 * host's cookies to every port of that host, so the cookie alone is not enough: each API request also carries the
 * session's key, which the page keeps in storage only its own origin (this port) can read. It adds no route of its
 * own to the API: `/console/api/<route>` is the API's operator route, or nothing. Beside the API, it reads one
 * thing with the same credentials: a deployed stack's queue metrics from CloudWatch (`/console/metrics/queues`).
 */
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { QUEUE_NAME_PATTERN } from '../functions/domain/task-spec';
import { matchRoute } from '../functions/http/http-api';
import { ROUTES } from '../functions/http/routes';
import type { ConsoleAssets } from './assets';
import {
  METRICS_QUEUES_MAX,
  MetricsUnavailableError,
  type QueueMetricsSource,
  readQueueMetrics,
} from './cloudwatch';

/** A request as the gateway sees it: read off the socket, with where it came from. */
export interface ConsoleRequest {
  readonly method: string;
  /** Path and query: `/console/api/v1/tasks?queue=q`. */
  readonly url: string;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: string;
  /** The peer's address, as the socket gives it: `127.0.0.1`, `::1`, `::ffff:127.0.0.1`. */
  readonly remoteAddress: string | undefined;
  /** The address the request arrived at, as the socket gives it. */
  readonly localAddress: string | undefined;
  /** The port the request arrived on. */
  readonly localPort: number;
}

export interface ConsoleResponse {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: string | Buffer;
}

export interface ConsoleSessionInfo {
  /** `local` for the stack on this machine, `deployed` for one in AWS. */
  readonly mode: 'local' | 'deployed';
  /** The API the console acts on, shown in the page. */
  readonly endpoint: string;
  /** `poll`: the API serves `GET /v1/events` (the local stack); `none`: events go to EventBridge. */
  readonly events: 'poll' | 'none';
  /**
   * How often a shown view reads again. Each read is an API call, a function invocation and its DynamoDB reads
   * (the Queues view walks the open tasks), so a deployed stack is read less often. @default 2 locally, 10 deployed
   */
  readonly refreshSeconds?: number;
}

/** The refresh a console uses when none is given: every read is free locally, billed in AWS. */
export const DEFAULT_REFRESH_SECONDS = { local: 2, deployed: 10 } as const;

export interface ConsoleGatewayOptions extends ConsoleSessionInfo {
  readonly assets: ConsoleAssets;
  /**
   * Sends one operator request to the API with the operator's credentials added. Given the request without
   * credentials, addressed to `endpoint`.
   */
  readonly upstream: (request: Request) => Promise<Response>;
  /** Told each login code as it is made, to print it on the operator's terminal. */
  readonly onCode: (code: string, why: 'start' | 'used' | 'guessed') => void;
  /** How long a signed-in browser stays in. @default 12 hours */
  readonly sessionTtlMs?: number;
  /** How long one forwarded request may take. @default 30 s */
  readonly upstreamTimeoutMs?: number;
  /** Told why a forwarded request got no answer (the network, expired credentials), for the terminal. */
  readonly onUpstreamError?: (error: unknown) => void;
  /**
   * Where a deployed stack's metrics are read (`GET /console/metrics/queues`: the Queues view's last hour), with the
   * operator's credentials. @default none: the page draws the last hour from the event feed, or not at all
   */
  readonly metrics?: QueueMetricsSource;
  readonly now?: () => number;
}

export interface ConsoleGateway {
  /** The gateway answers this path: `/`, `/console/...`. */
  owns(path: string): boolean;
  answer(request: ConsoleRequest): Promise<ConsoleResponse>;
}

/** Wrong codes a login code survives; the fifth replaces it, and login waits (`LOGIN_LOCKOUT_MS`). */
export const LOGIN_ATTEMPTS_PER_CODE = 5;
/** How long login waits after a code is guessed at too often: doubling at each lockout, up to a minute. */
export const LOGIN_LOCKOUT_MS = { first: 1_000, max: 60_000 } as const;
/** The header that carries the session's key: the page reads it from storage of its own origin only. */
export const SESSION_KEY_HEADER = 'x-console-key';
/** Browsers signed in at once; past it the oldest is signed out. */
const MAX_SESSIONS = 64;
const DEFAULT_SESSION_TTL_MS = 12 * 60 * 60 * 1000;
const API_PREFIX = '/console/api';
/** No 0/O, 1/I/L, U: a code read off a terminal is typed without doubt. */
const CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTVWXYZ23456789';
/** 8 characters of 30: about 39 bits, against at most 5 guesses per code. */
const CODE_LENGTH = 8;

/** What every answer carries: the page runs only its own files and cannot be framed by another. */
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** The line that tells the operator the console's next login code. */
export const loginCodeLine = (code: string, why: 'used' | 'guessed') =>
  why === 'used'
    ? `console: a browser signed in; the login code for the next one is ${code}`
    : `console: too many wrong login codes; the login code is now ${code}`;

/** The cookie's name carries the port: browsers send a host's cookies to all its ports. */
export const cookieNameFor = (port: number) => `agent_scheduler_console_${port}`;

const hash = (secret: string) => createHash('sha256').update(secret).digest();

/** The one `Host` a request to this socket may name: its own loopback address and port. */
export function expectedHost(localAddress: string | undefined, port: number): string | undefined {
  if (!localAddress || !isLoopbackAddress(localAddress)) return undefined;
  const address = localAddress.startsWith('::ffff:') ? localAddress.slice(7) : localAddress;
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

/** `127.0.0.0/8` and `::1`, also as IPv4-mapped IPv6. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return address === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0) cookies.set(part.slice(0, at).trim(), part.slice(at + 1).trim());
  }
  return cookies;
}

const json = (statusCode: number, body: unknown, headers: Record<string, string> = {}): ConsoleResponse => ({
  statusCode,
  headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  body: JSON.stringify(body),
});

const refusal = (statusCode: number, code: string, message: string, headers?: Record<string, string>) =>
  json(statusCode, { error: { code, message } }, headers);

const noContent = (headers: Record<string, string> = {}): ConsoleResponse => ({
  statusCode: 204,
  headers: { 'cache-control': 'no-store', ...headers },
  body: '',
});

/** The code as it is shown: `ABCD-EFGH`. Typed back, case, spaces and dashes do not matter. */
function newCode(): string {
  let code = '';
  for (let i = 0; i < CODE_LENGTH; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

const normalCode = (code: string) => code.toUpperCase().replace(/[\s-]/g, '');

/**
 * Who is signed in: the login code on the operator's terminal, its lockout after wrong guesses, and the browsers'
 * sessions, by the SHA-256 of their cookie (with the SHA-256 of their key, and when each ends), oldest first.
 */
class SignIns {
  private readonly sessions = new Map<string, { keyHash: Buffer; until: number }>();
  private code = '';
  private wrongGuesses = 0;
  private lockouts = 0;
  private lockedUntil = 0;

  constructor(
    private readonly onCode: ConsoleGatewayOptions['onCode'],
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {
    this.replaceCode('start');
  }

  private replaceCode(why: 'start' | 'used' | 'guessed'): void {
    this.code = newCode();
    this.wrongGuesses = 0;
    this.onCode(this.code, why);
  }

  /** The session the cookie names, when the request also carries its key. */
  sessionOf(request: ConsoleRequest): string | undefined {
    const value = parseCookies(request.headers.cookie).get(cookieNameFor(request.localPort));
    if (!value) return undefined;
    const id = hash(value).toString('base64url');
    const session = this.sessions.get(id);
    if (session === undefined) return undefined;
    if (session.until <= this.now()) {
      this.sessions.delete(id);
      return undefined;
    }
    if (!timingSafeEqual(hash(request.headers[SESSION_KEY_HEADER] ?? ''), session.keyHash)) return undefined;
    return id;
  }

  login(request: ConsoleRequest): ConsoleResponse {
    let given: unknown;
    try {
      given = (JSON.parse(request.body) as { code?: unknown }).code;
    } catch {
      given = undefined;
    }
    if (typeof given !== 'string' || given.length > 64)
      return refusal(400, 'ValidationError', 'the body is { "code": "<the code printed in the terminal>" }');
    const waitMs = this.lockedUntil - this.now();
    if (waitMs > 0)
      return refusal(
        429,
        'TooManyRequests',
        'too many wrong login codes: wait, then type the new code printed in the terminal',
        { 'retry-after': String(Math.ceil(waitMs / 1000)) },
      );
    const expected = Buffer.from(normalCode(this.code));
    const typed = Buffer.from(normalCode(given));
    if (typed.length !== expected.length || !timingSafeEqual(typed, expected)) {
      this.wrongGuesses += 1;
      if (this.wrongGuesses >= LOGIN_ATTEMPTS_PER_CODE) {
        this.lockedUntil =
          this.now() + Math.min(LOGIN_LOCKOUT_MS.max, LOGIN_LOCKOUT_MS.first * 2 ** this.lockouts);
        this.lockouts += 1;
        this.replaceCode('guessed');
      }
      return refusal(401, 'Unauthorized', 'that is not the login code printed in the terminal');
    }
    this.lockouts = 0;
    this.replaceCode('used');
    const secret = randomBytes(32).toString('base64url');
    const key = randomBytes(32).toString('base64url');
    if (this.sessions.size >= MAX_SESSIONS) {
      const oldest = this.sessions.keys().next().value;
      if (oldest !== undefined) this.sessions.delete(oldest);
    }
    this.sessions.set(hash(secret).toString('base64url'), {
      keyHash: hash(key),
      until: this.now() + this.ttlMs,
    });
    return json(
      200,
      { key },
      {
        'set-cookie': `${cookieNameFor(request.localPort)}=${secret}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${Math.floor(this.ttlMs / 1000)}`,
      },
    );
  }

  logout(request: ConsoleRequest): ConsoleResponse {
    const session = this.sessionOf(request);
    if (session) this.sessions.delete(session);
    return noContent({
      'set-cookie': `${cookieNameFor(request.localPort)}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`,
    });
  }
}

/** Refuses what does not come from this machine, to a loopback name, from the console's own page. */
function refusedOrigin(
  request: ConsoleRequest,
  pathname: string,
  assets: ConsoleAssets,
): ConsoleResponse | undefined {
  if (!isLoopbackAddress(request.remoteAddress))
    return refusal(403, 'Forbidden', 'the console answers requests from this machine only');
  const host = expectedHost(request.localAddress, request.localPort);
  if (host === undefined || request.headers.host !== host)
    return refusal(
      421,
      'MisdirectedRequest',
      `open the console at the address it printed: http://${host ?? '127.0.0.1'}/`,
    );
  // The page itself may be opened from anywhere (a link, a bookmark): it holds nothing and cannot be framed.
  const reads = /^(GET|HEAD)$/i.test(request.method);
  if (reads && assets.has(pathname)) return undefined;
  const origin = request.headers.origin;
  const site = request.headers['sec-fetch-site'];
  if (
    (origin !== undefined && origin !== `http://${host}`) ||
    (!reads && origin === undefined) ||
    (site !== undefined && site !== 'same-origin' && site !== 'none')
  )
    return refusal(403, 'Forbidden', 'the console takes requests from its own page only');
  return undefined;
}

/** Sends a signed-in browser's request on to the API's operator route it names, with the operator's credentials. */
async function forward(
  options: ConsoleGatewayOptions,
  request: ConsoleRequest,
  url: URL,
): Promise<ConsoleResponse> {
  const path = url.pathname.slice(API_PREFIX.length);
  const method = request.method.toUpperCase();
  const matched = matchRoute(ROUTES, method, path);
  const route = matched && 'route' in matched ? matched.route : undefined;
  if (!route || route.access === 'agent' || (route.localOnly && options.events !== 'poll'))
    return refusal(404, 'NotFound', 'the console forwards the API’s operator routes only');
  if (request.body !== '' && (method === 'GET' || method === 'DELETE'))
    return refusal(400, 'ValidationError', `a ${method} request has no body`);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (request.body !== '') headers['content-type'] = 'application/json';
  let status: number;
  let contentType: string;
  let body: Buffer;
  try {
    const answer = await options.upstream(
      new Request(`${options.endpoint.replace(/\/+$/, '')}${path}${url.search}`, {
        method,
        headers,
        ...(request.body !== '' ? { body: request.body } : {}),
        signal: AbortSignal.timeout(options.upstreamTimeoutMs ?? 30_000),
      }),
    );
    status = answer.status;
    contentType = answer.headers.get('content-type') ?? 'application/json';
    body = Buffer.from(await answer.arrayBuffer());
  } catch (error) {
    options.onUpstreamError?.(error);
    const timedOut = (error as Error).name === 'TimeoutError';
    return timedOut
      ? refusal(504, 'UpstreamTimeout', 'the API did not answer in time')
      : refusal(502, 'UpstreamUnavailable', 'the API could not be reached (the terminal says why)');
  }
  // The API refusing the console's own credentials is not the browser's session ending.
  if (status === 401)
    return refusal(
      502,
      'UpstreamUnauthorized',
      'the API refused the console’s credentials: restart the console with credentials it takes',
    );
  return {
    statusCode: status,
    headers: { 'content-type': contentType, 'cache-control': 'no-store' },
    body,
  };
}

/** The last hour of the queues named (`?queue=a&queue=b`) from CloudWatch, for a signed-in page. */
async function queueMetrics(options: ConsoleGatewayOptions, url: URL): Promise<ConsoleResponse> {
  if (!options.metrics)
    return refusal(
      404,
      'NotFound',
      'this console reads no metrics: a deployed stack’s, with AWS credentials (the local stack’s charts come from its events)',
    );
  const queues = url.searchParams.getAll('queue');
  const unknown = [...url.searchParams.keys()].find((name) => name !== 'queue');
  if (unknown !== undefined)
    return refusal(400, 'ValidationError', `${unknown.slice(0, 40)}: not a parameter (queue only)`);
  if (queues.length === 0 || queues.length > METRICS_QUEUES_MAX)
    return refusal(400, 'ValidationError', `queue: 1 to ${METRICS_QUEUES_MAX} queue names`);
  const bad = queues.find((queue) => !QUEUE_NAME_PATTERN.test(queue));
  if (bad !== undefined)
    return refusal(400, 'ValidationError', `queue: ${bad.slice(0, 60)} is not a queue name`);
  try {
    const read = await readQueueMetrics(
      options.metrics,
      [...new Set(queues)],
      (options.now ?? Date.now)(),
      AbortSignal.timeout(options.upstreamTimeoutMs ?? 30_000),
    );
    return json(200, read);
  } catch (error) {
    options.onUpstreamError?.(error instanceof MetricsUnavailableError ? (error.cause ?? error) : error);
    if (error instanceof MetricsUnavailableError) return refusal(502, 'MetricsUnavailable', error.message);
    if ((error as Error).name === 'TimeoutError')
      return refusal(504, 'UpstreamTimeout', 'CloudWatch did not answer in time');
    throw error;
  }
}

/** A refusal opened as a page (typed in the address bar) reads as a sentence, not as JSON. */
function asPage(response: ConsoleResponse, headers: Record<string, string>): ConsoleResponse {
  const { error } = JSON.parse(String(response.body)) as { error: { message: string } };
  return {
    statusCode: response.statusCode,
    headers: { ...headers, 'content-type': 'text/plain; charset=utf-8' },
    body: `agent-scheduler console: ${error.message}\n`,
  };
}

export function consoleGateway(options: ConsoleGatewayOptions): ConsoleGateway {
  const signIns = new SignIns(
    options.onCode,
    options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS,
    options.now ?? Date.now,
  );

  const answer = async (request: ConsoleRequest): Promise<ConsoleResponse> => {
    if (!URL.canParse(request.url, 'http://localhost'))
      return refusal(400, 'MalformedRequest', 'the request target is not a valid URL');
    const url = new URL(request.url, 'http://localhost');
    const { pathname } = url;
    const refused = refusedOrigin(request, pathname, options.assets);
    if (refused) return refused;
    const method = request.method.toUpperCase();
    const asset = method === 'GET' || method === 'HEAD' ? options.assets.get(pathname) : undefined;
    if (asset)
      return {
        statusCode: 200,
        headers: { 'content-type': asset.contentType, 'cache-control': 'no-cache' },
        body: method === 'HEAD' ? '' : asset.body,
      };
    if (pathname === '/console/session' && method === 'GET')
      return json(200, {
        authenticated: signIns.sessionOf(request) !== undefined,
        mode: options.mode,
        endpoint: options.endpoint,
        events: options.events,
        refreshSeconds: options.refreshSeconds ?? DEFAULT_REFRESH_SECONDS[options.mode],
        metrics: options.metrics ? 'cloudwatch' : 'none',
      });
    if (pathname === '/console/login' && method === 'POST') return signIns.login(request);
    if (pathname === '/console/logout' && method === 'POST') return signIns.logout(request);
    if (pathname === '/console/metrics/queues' && method === 'GET') {
      if (!signIns.sessionOf(request))
        return refusal(401, 'Unauthorized', 'sign in with the code printed in the terminal');
      return queueMetrics(options, url);
    }
    if (pathname === API_PREFIX || pathname.startsWith(`${API_PREFIX}/`)) {
      if (!signIns.sessionOf(request))
        return refusal(401, 'Unauthorized', 'sign in with the code printed in the terminal');
      return forward(options, request, url);
    }
    return refusal(404, 'NotFound', `no console page at ${pathname.slice(0, 200)}`);
  };

  return {
    owns: (path) => path === '/' || path === '/console' || path.startsWith('/console/'),
    answer: async (request) => {
      const response = await answer(request);
      const headers = { ...SECURITY_HEADERS, ...response.headers };
      if (response.statusCode >= 400 && request.headers['sec-fetch-dest'] === 'document')
        return asPage(response, headers);
      return { ...response, headers };
    },
  };
}
