/**
 * One JSON request to the API, with authentication, an optional signer, a per-attempt timeout and retries.
 * Every attempt builds and signs a fresh `Request`: a signature covers the time it was made, and a body can be
 * read only once.
 */
import { AgentSchedulerError, abortedError, errorForResponse, NetworkError } from './errors.js';
import {
  backoffDelayMs,
  isRetryableStatus,
  parseRetryAfter,
  type RetryMode,
  type RetryOptions,
  type RetryPolicy,
  resolveRetryPolicy,
} from './retry.js';
import { sleep } from './sleep.js';

/** The call was ended by its caller's signal: nothing more is sent, and whether the server acted is unknown. */
const CALL_ABANDONED = 'the call was abandoned: the lease it was about is over by the agent’s own reckoning';

export type HttpMethod = 'GET' | 'POST' | 'DELETE';

export interface TransportOptions {
  /** Base URL of the API, stage included: `https://abc.execute-api.eu-west-1.amazonaws.com`. */
  readonly endpoint: string;
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token?: string;
  readonly fetch?: typeof fetch;
  readonly retries?: RetryOptions;
  /** Called on every attempt, after the SDK's headers are set: sign the request (SigV4) and return it. */
  readonly signer?: (request: Request) => Promise<Request>;
  readonly userAgent?: string;
  /** Longest a single attempt may take, body included. @default 30000 */
  readonly timeoutMs?: number;
}

export interface RequestSpec {
  readonly method: HttpMethod;
  /** Starts with `/v1/`; path parameters already encoded. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  readonly body?: unknown;
  /** @default 'always' */
  readonly retry?: RetryMode;
  /** Longest a single attempt of this call may take. @default the transport's `timeoutMs` */
  readonly timeoutMs?: number;
  /**
   * Ends the call, in flight or between attempts, with an `Aborted` error: a Worker aborts the calls about a lease
   * its own reckoning says is over, whatever the network is doing.
   */
  readonly signal?: AbortSignal;
  /** Sent as the `traceparent` header (`CallOptions.traceparent`). */
  readonly traceparent?: string;
}

export interface TransportResponse<T> {
  readonly status: number;
  readonly body: T;
  readonly requestId: string | undefined;
}

const DEFAULT_USER_AGENT = 'agent-scheduler-sdk/0.1.0';

/** Where API Gateway and the server put the request id, in the order they are trusted. */
const REQUEST_ID_HEADERS = ['apigw-requestid', 'x-amzn-requestid', 'x-request-id'];

/**
 * Refuses, before any request, an endpoint or a token that was named but holds nothing: a value read from an
 * environment variable that is not set (`process.env.AGENT_SCHEDULER_ENDPOINT`) would otherwise surface as a URL
 * error that names no variable, or as a 401 at the first call. The SDK reads no environment itself, so the
 * message names the variables the CLI and the examples read. A client that leaves `token` out (it signs with
 * `signer`, or calls only the open routes) is not refused.
 */
function checkCredentials(options: TransportOptions): void {
  const endpoint: unknown = options.endpoint;
  if (endpoint === undefined || endpoint === null || endpoint === '') {
    throw new TypeError(
      `endpoint is ${endpoint === '' ? 'empty' : String(endpoint)}: give the base URL of the API (the stack’s ` +
        'ApiUrl output, or the local stack’s); if it is read from AGENT_SCHEDULER_ENDPOINT, that variable is not set',
    );
  }
  if ('token' in options && !options.token && !options.signer) {
    throw new TypeError(
      `token is ${options.token === '' ? 'empty' : String(options.token)}: give an agent’s or the operator’s ` +
        'token; if it is read from AGENT_SCHEDULER_TOKEN, that variable is not set (leave token out to sign ' +
        'requests with signer instead)',
    );
  }
}

type Attempt =
  | { readonly kind: 'response'; readonly status: number; readonly headers: Headers; readonly text: string }
  | { readonly kind: 'network'; readonly error: unknown; readonly timedOut: boolean };

export class HttpTransport {
  private readonly endpoint: string;
  private readonly policy: RetryPolicy;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;

  constructor(private readonly options: TransportOptions) {
    checkCredentials(options);
    if (!/^https?:\/\//.test(options.endpoint)) throw new TypeError('endpoint must be an http(s) URL');
    this.endpoint = options.endpoint.replace(/\/+$/, '');
    this.policy = resolveRetryPolicy(options.retries);
    // Bound late so that a fetch replaced after construction (tests, instrumentation) is the one used.
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  async request<T>(spec: RequestSpec): Promise<TransportResponse<T>> {
    const mode = spec.retry ?? 'always';
    for (let attempt = 1; ; attempt++) {
      if (spec.signal?.aborted) throw abortedError(spec.signal, CALL_ABANDONED);
      const outcome = await this.attempt(spec);
      if (spec.signal?.aborted) throw abortedError(spec.signal, CALL_ABANDONED);
      const last = attempt >= this.policy.maxAttempts;
      if (outcome.kind === 'network') {
        if (last || mode !== 'always') throw networkError(outcome);
        await sleep(backoffDelayMs(attempt, this.policy), spec.signal);
        continue;
      }
      if (outcome.status >= 200 && outcome.status < 300) return success<T>(outcome);
      const error = responseError(outcome);
      if (last || !isRetryableStatus(outcome.status, mode)) throw error;
      // Never come back sooner than the server asked; if it asks for longer than we are willing to wait, say so.
      if (error.retryAfterMs !== undefined && error.retryAfterMs > this.policy.maxDelayMs) throw error;
      await sleep(error.retryAfterMs ?? backoffDelayMs(attempt, this.policy), spec.signal);
    }
  }

  private async attempt(spec: RequestSpec): Promise<Attempt> {
    const request = await this.sign(this.build(spec));
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, spec.timeoutMs ?? this.timeoutMs);
    const signal = spec.signal ? AbortSignal.any([controller.signal, spec.signal]) : controller.signal;
    try {
      // A fetch that ignores its signal (a proxy, an instrumented fetch) must not hold the call past it.
      const response = await untilAborted(this.fetchImpl(request, { signal }), signal);
      const text = await untilAborted(response.text(), signal);
      return { kind: 'response', status: response.status, headers: response.headers, text };
    } catch (error) {
      return { kind: 'network', error, timedOut };
    } finally {
      clearTimeout(timer);
    }
  }

  private build(spec: RequestSpec): Request {
    const url = new URL(`${this.endpoint}${spec.path}`);
    for (const [key, value] of Object.entries(spec.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const headers = new Headers({
      accept: 'application/json',
      'user-agent': this.options.userAgent ?? DEFAULT_USER_AGENT,
    });
    if (this.options.token) headers.set('authorization', `Bearer ${this.options.token}`);
    if (spec.traceparent) headers.set('traceparent', spec.traceparent);
    const init: RequestInit = { method: spec.method, headers };
    if (spec.body !== undefined) {
      headers.set('content-type', 'application/json');
      init.body = JSON.stringify(spec.body);
    }
    return new Request(url, init);
  }

  private sign(request: Request): Promise<Request> {
    return this.options.signer ? this.options.signer(request) : Promise.resolve(request);
  }
}

const requestIdOf = (headers: Headers, body: unknown): string | undefined => {
  if (isRecord(body) && typeof body.requestId === 'string') return body.requestId;
  for (const name of REQUEST_ID_HEADERS) {
    const value = headers.get(name);
    if (value) return value;
  }
  return undefined;
};

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function success<T>(outcome: Extract<Attempt, { kind: 'response' }>): TransportResponse<T> {
  const body = parseJson(outcome.text);
  if (body === undefined && outcome.text !== '') {
    throw new AgentSchedulerError({
      status: outcome.status,
      code: 'InvalidResponse',
      message: 'the server answered with a body that is not JSON',
      requestId: requestIdOf(outcome.headers, undefined),
    });
  }
  return { status: outcome.status, body: body as T, requestId: requestIdOf(outcome.headers, body) };
}

/** The server's `{ error: { code, message }, requestId }`, or API Gateway's own `{ message }`. */
function responseError(outcome: Extract<Attempt, { kind: 'response' }>): AgentSchedulerError {
  const body = parseJson(outcome.text);
  const detail = isRecord(body) && isRecord(body.error) ? body.error : isRecord(body) ? body : {};
  const code = typeof detail.code === 'string' ? detail.code : codeForStatus(outcome.status);
  const message =
    typeof detail.message === 'string' ? detail.message : `the server answered ${outcome.status}`;
  const retryAfterMs = parseRetryAfter(outcome.headers.get('retry-after'));
  return errorForResponse({
    status: outcome.status,
    code,
    message,
    requestId: requestIdOf(outcome.headers, body),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // The work goes on unwatched: its failure (a fetch given an ended signal fails) must not go unhandled, which
    // ends a Node process.
    work.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function networkError(outcome: Extract<Attempt, { kind: 'network' }>): NetworkError {
  const reason = outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
  return new NetworkError({
    status: 0,
    code: outcome.timedOut ? 'Timeout' : 'NetworkError',
    message: outcome.timedOut ? 'the request timed out' : `the request failed: ${reason}`,
    cause: outcome.error,
  });
}

const STATUS_CODES: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  413: 'PayloadTooLarge',
  429: 'TooManyRequests',
  500: 'InternalError',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
  504: 'GatewayTimeout',
};

const codeForStatus = (status: number): string => STATUS_CODES[status] ?? `Http${status}`;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
