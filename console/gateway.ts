/**
 * The console's gateway: what stands between the browser and the API. It serves the console's files, lets a
 * browser in by a single-use code printed on the operator's terminal (exchanged for an HttpOnly, SameSite=Strict
 * cookie), and forwards the browser's operator requests to the API with the operator's own credentials added, as
 * the CLI sends them: the operator token locally, AWS Signature Version 4 for a deployed stack.
 *
 * Because it acts as the operator, it answers only what comes from this machine, to a loopback host name (so a
 * page of another site cannot reach it through a name that resolves to 127.0.0.1), and takes no request from
 * another origin. It adds no route of its own to the API: `/console/api/<route>` is the API's operator route, or
 * nothing.
 */
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { matchRoute } from '../functions/http/http-api';
import { ROUTES } from '../functions/http/routes';
import type { ConsoleAssets } from './assets';

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
}

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
  readonly now?: () => number;
}

export interface ConsoleGateway {
  /** The gateway answers this path: `/`, `/console/...`. */
  owns(path: string): boolean;
  answer(request: ConsoleRequest): Promise<ConsoleResponse>;
}

/** Wrong codes a login code survives; the next wrong one replaces it with a new one. */
export const LOGIN_ATTEMPTS_PER_CODE = 5;
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

/** `127.0.0.0/8` and `::1`, also as IPv4-mapped IPv6. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return address === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/** A `Host` header naming this machine's loopback on the port the request came in on. */
export function isLoopbackHost(host: string | undefined, port: number): boolean {
  if (!host) return false;
  const match = /^(localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\]):(\d{1,5})$/i.exec(host);
  return match !== null && Number(match[2]) === port;
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

export function consoleGateway(options: ConsoleGatewayOptions): ConsoleGateway {
  const now = options.now ?? Date.now;
  const sessionTtlMs = options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS;
  const upstreamTimeoutMs = options.upstreamTimeoutMs ?? 30_000;
  const endpoint = options.endpoint.replace(/\/+$/, '');
  /** Sessions by the SHA-256 of their cookie, with when each ends; in insertion order, oldest first. */
  const sessions = new Map<string, number>();
  let code = '';
  let wrongGuesses = 0;
  const replaceCode = (why: 'start' | 'used' | 'guessed') => {
    code = newCode();
    wrongGuesses = 0;
    options.onCode(code, why);
  };
  replaceCode('start');

  const sessionOf = (request: ConsoleRequest): string | undefined => {
    const value = parseCookies(request.headers.cookie).get(cookieNameFor(request.localPort));
    if (!value) return undefined;
    const key = hash(value).toString('base64url');
    const until = sessions.get(key);
    if (until === undefined) return undefined;
    if (until <= now()) {
      sessions.delete(key);
      return undefined;
    }
    return key;
  };

  /** Refuses what does not come from this machine, to a loopback name, from the console's own page. */
  const refusedOrigin = (request: ConsoleRequest): ConsoleResponse | undefined => {
    if (!isLoopbackAddress(request.remoteAddress))
      return refusal(403, 'Forbidden', 'the console answers requests from this machine only');
    const host = request.headers.host;
    if (!isLoopbackHost(host, request.localPort))
      return refusal(
        421,
        'MisdirectedRequest',
        'open the console at http://127.0.0.1 or http://localhost, on the port it printed',
      );
    const origin = request.headers.origin;
    const site = request.headers['sec-fetch-site'];
    const writes = !/^(GET|HEAD)$/i.test(request.method);
    if (
      (origin !== undefined && origin !== `http://${host}`) ||
      (writes && origin === undefined) ||
      (site !== undefined && site !== 'same-origin' && site !== 'none')
    )
      return refusal(403, 'Forbidden', 'the console takes requests from its own page only');
    return undefined;
  };

  const login = (request: ConsoleRequest): ConsoleResponse => {
    let given: unknown;
    try {
      given = (JSON.parse(request.body) as { code?: unknown }).code;
    } catch {
      given = undefined;
    }
    if (typeof given !== 'string' || given.length > 64)
      return refusal(400, 'ValidationError', 'the body is { "code": "<the code printed in the terminal>" }');
    const expected = Buffer.from(normalCode(code));
    const typed = Buffer.from(normalCode(given));
    if (typed.length !== expected.length || !timingSafeEqual(typed, expected)) {
      wrongGuesses += 1;
      if (wrongGuesses >= LOGIN_ATTEMPTS_PER_CODE) replaceCode('guessed');
      return refusal(401, 'Unauthorized', 'that is not the login code printed in the terminal');
    }
    replaceCode('used');
    const secret = randomBytes(32).toString('base64url');
    if (sessions.size >= MAX_SESSIONS) {
      const oldest = sessions.keys().next().value;
      if (oldest !== undefined) sessions.delete(oldest);
    }
    sessions.set(hash(secret).toString('base64url'), now() + sessionTtlMs);
    return noContent({
      'set-cookie': `${cookieNameFor(request.localPort)}=${secret}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${Math.floor(sessionTtlMs / 1000)}`,
    });
  };

  const forward = async (request: ConsoleRequest, url: URL): Promise<ConsoleResponse> => {
    const path = url.pathname.slice(API_PREFIX.length);
    const method = request.method.toUpperCase();
    const matched = matchRoute(ROUTES, method, path);
    const route = matched && 'route' in matched ? matched.route : undefined;
    if (!route || route.access === 'agent' || (route.localOnly && options.events !== 'poll'))
      return refusal(404, 'NotFound', 'the console forwards the API’s operator routes only');
    const headers: Record<string, string> = { accept: 'application/json' };
    if (request.body !== '') headers['content-type'] = 'application/json';
    let answer: Response;
    try {
      answer = await options.upstream(
        new Request(`${endpoint}${path}${url.search}`, {
          method,
          headers,
          ...(request.body !== '' ? { body: request.body } : {}),
          signal: AbortSignal.timeout(upstreamTimeoutMs),
        }),
      );
    } catch (error) {
      const timedOut = (error as Error).name === 'TimeoutError';
      return timedOut
        ? refusal(504, 'UpstreamTimeout', 'the API did not answer in time')
        : refusal(502, 'UpstreamUnavailable', 'the API could not be reached');
    }
    return {
      statusCode: answer.status,
      headers: {
        'content-type': answer.headers.get('content-type') ?? 'application/json',
        'cache-control': 'no-store',
      },
      body: Buffer.from(await answer.arrayBuffer()),
    };
  };

  const answer = async (request: ConsoleRequest): Promise<ConsoleResponse> => {
    const refused = refusedOrigin(request);
    if (refused) return refused;
    if (!URL.canParse(request.url, 'http://localhost'))
      return refusal(400, 'MalformedRequest', 'the request target is not a valid URL');
    const url = new URL(request.url, 'http://localhost');
    const { pathname } = url;
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
        authenticated: sessionOf(request) !== undefined,
        mode: options.mode,
        endpoint: options.endpoint,
        events: options.events,
      });
    if (pathname === '/console/login' && method === 'POST') return login(request);
    if (pathname === '/console/logout' && method === 'POST') {
      const session = sessionOf(request);
      if (session) sessions.delete(session);
      return noContent({
        'set-cookie': `${cookieNameFor(request.localPort)}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`,
      });
    }
    if (pathname === API_PREFIX || pathname.startsWith(`${API_PREFIX}/`)) {
      if (!sessionOf(request))
        return refusal(401, 'Unauthorized', 'sign in with the code printed in the terminal');
      return forward(request, url);
    }
    return refusal(404, 'NotFound', `no console page at ${pathname.slice(0, 200)}`);
  };

  return {
    owns: (path) => path === '/' || path === '/console' || path.startsWith('/console/'),
    answer: async (request) => {
      const response = await answer(request);
      return { ...response, headers: { ...SECURITY_HEADERS, ...response.headers } };
    },
  };
}
