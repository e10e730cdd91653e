/**
 * The HTTP edge, free of any server: an API Gateway (HTTP API, payload 2.0) event in, a response out. Both API
 * functions and the local server go through here, so validation, error mapping and limits are the same
 * everywhere.
 *
 * Errors the caller can do something about are exposed as `{ error: { code, message }, requestId }` with their
 * status; anything else becomes a bare 500 with no internals, and is logged.
 */

import type { SchedulerLog } from '#core/context';
import {
  isSchedulerError,
  PayloadTooLargeError,
  SchedulerError,
  TaskNotFoundError,
  ValidationError,
} from '#domain/errors';
import { TASK_ID_PATTERN } from '#domain/ids';
import { jsonTextProblem } from '#domain/json-text';
import { SETTINGS } from '#domain/settings';
import { MAX_JSON_DEPTH } from '#domain/task-spec';
import type { RouteDefinition } from './routes';
import { type TraceHeaders, traceHeadersOf } from './trace-headers';

/** Largest request body accepted: a 256 KB payload plus room for the envelope. */
export const MAX_BODY_BYTES = 300 * 1024;

export interface HttpApiEvent {
  /** `$default` when API Gateway matched none of the API's routes (see `SchedulerApi`). */
  readonly routeKey?: string;
  readonly rawPath: string;
  readonly rawQueryString?: string;
  readonly headers?: Readonly<Record<string, string | undefined>>;
  readonly body?: string;
  readonly isBase64Encoded?: boolean;
  readonly requestContext: {
    readonly requestId: string;
    readonly http: { readonly method: string };
    readonly authorizer?: { readonly lambda?: Readonly<Record<string, unknown>> };
  };
}

export interface HttpApiResult {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

export interface ApiRequest {
  readonly route: RouteDefinition;
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** The parsed JSON body; undefined when there is none. */
  readonly body: unknown;
  /** The calling agent, as the authorizer established it; never read from the request itself. */
  readonly agentId?: string;
  readonly requestId: string;
  /** Where the caller reached the API (`https://host`), for URLs an answer hands out; absent if unknown. */
  readonly origin?: string;
  /** The request's W3C trace context headers, which a submission without its own takes; absent without them. */
  readonly traceHeaders?: TraceHeaders;
}

export interface ApiResponse {
  readonly status: number;
  readonly body: unknown;
}

export type Operation = (request: ApiRequest) => Promise<ApiResponse>;

/**
 * Runs an operation for a request, doing something around it: how the operations' spans are recorded when tracing
 * is on (`operation-spans.ts`). Without one the operation is called as it is.
 */
export type OperationHook = (operation: Operation, request: ApiRequest) => Promise<ApiResponse>;

/**
 * The `{taskId}` path parameter. An id that cannot exist is not found rather than invalid: the caller asked for
 * a task that is not there.
 */
export function taskIdParam(request: ApiRequest): string {
  const taskId = request.params.taskId ?? '';
  if (!TASK_ID_PATTERN.test(taskId)) throw new TaskNotFoundError(taskId.slice(0, 64));
  return taskId;
}

class HttpError extends SchedulerError {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    /** Sent as `Retry-After`. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

const json = (statusCode: number, body: unknown, retryAfterSeconds?: number): HttpApiResult => ({
  statusCode,
  // A busy dependency usually recovers within a second; say so, so clients need not guess.
  headers: {
    'content-type': 'application/json',
    ...(statusCode === 503 ? { 'retry-after': '1' } : {}),
    ...(retryAfterSeconds === undefined ? {} : { 'retry-after': String(retryAfterSeconds) }),
  },
  body: JSON.stringify(body),
});

/** How many requests a second one agent may make, with bursts of `burst`. */
export interface AgentRateLimit {
  readonly ratePerSecond: number;
  readonly burst: number;
}

/** 50 a second, bursts of 100: a Worker sends about one call per task and a heartbeat every few seconds. */
export const DEFAULT_AGENT_RATE_LIMIT: AgentRateLimit = {
  ratePerSecond: SETTINGS.agentRatePerSecond.default,
  burst: SETTINGS.agentBurst.default,
};

/** Buckets kept at most; past this, the least recently refilled go first (a full bucket is the default). */
const MAX_AGENT_BUCKETS = 10_000;

/**
 * A token bucket per agent, kept in this function instance's memory: with N instances serving one agent the
 * bound is N times the rate. API Gateway's route limits bound the total; this keeps one agent's token from
 * taking all of it.
 */
export class AgentRateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly limit: AgentRateLimit,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Takes a token for `agentId`: undefined if granted, else the whole seconds until one is available. A request
   * with a `reserve` is granted only while more than that many tokens are left: claims keep a quarter of the
   * burst for the calls that keep or finish work already held (heartbeats, completions), so an agent polling
   * for work as fast as it may cannot lose its leases to its own polling.
   */
  take(agentId: string, reserve = 0): number | undefined {
    const now = this.now();
    const bucket = this.buckets.get(agentId);
    const elapsed = bucket ? Math.max(0, now - bucket.at) / 1_000 : 0;
    const tokens = bucket
      ? Math.min(this.limit.burst, bucket.tokens + elapsed * this.limit.ratePerSecond)
      : this.limit.burst;
    this.buckets.delete(agentId);
    if (this.buckets.size >= MAX_AGENT_BUCKETS) {
      const oldest = this.buckets.keys().next().value;
      if (oldest !== undefined) this.buckets.delete(oldest);
    }
    if (tokens < 1 + reserve) {
      this.buckets.set(agentId, { tokens, at: now });
      return Math.max(1, Math.ceil((1 + reserve - tokens) / this.limit.ratePerSecond));
    }
    this.buckets.set(agentId, { tokens: tokens - 1, at: now });
    return undefined;
  }
}

/** Matches `/v1/tasks/t_x/cancel` against `/v1/tasks/{taskId}/cancel`; path parameters are decoded. */
export function matchRoute(
  routes: readonly RouteDefinition[],
  method: string,
  path: string,
): { route: RouteDefinition; params: Record<string, string> } | { allowed: string[] } | undefined {
  const segments = path.split('/');
  const allowed: string[] = [];
  for (const route of routes) {
    const pattern = route.path.split('/');
    if (pattern.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let matches = true;
    for (let i = 0; i < pattern.length && matches; i++) {
      const expected = pattern[i] ?? '';
      const actual = segments[i] ?? '';
      if (expected.startsWith('{') && expected.endsWith('}')) {
        if (actual === '') matches = false;
        else {
          try {
            params[expected.slice(1, -1)] = decodeURIComponent(actual);
          } catch {
            matches = false;
          }
        }
      } else if (expected !== actual) matches = false;
    }
    if (!matches) continue;
    if (route.method === method) return { route, params };
    allowed.push(route.method);
  }
  return allowed.length > 0 ? { allowed } : undefined;
}

function parseBody(event: HttpApiEvent): unknown {
  if (event.body === undefined || event.body === '') return undefined;
  const text = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
  if (Buffer.byteLength(text, 'utf8') > MAX_BODY_BYTES) {
    throw new PayloadTooLargeError(`the request body is larger than ${MAX_BODY_BYTES} bytes`);
  }
  const contentType = event.headers?.['content-type'] ?? event.headers?.['Content-Type'] ?? '';
  if (!/^application\/(.+\+)?json\b/i.test(contentType)) {
    throw new HttpError(415, 'UnsupportedMediaType', 'send the body as application/json');
  }
  // Depth is bounded before anything walks the value recursively; a repeated key would lose a value silently.
  // JSON.parse itself makes `__proto__` an own key, as data.
  const problem = jsonTextProblem(text, MAX_JSON_DEPTH);
  if (problem) throw new ValidationError(`body: ${problem}`);
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'MalformedJson', 'the request body is not valid JSON');
  }
}

/** The response for an error: exposed errors as they are, anything else as a bare 500. */
export function errorResult(error: unknown, requestId: string, log: SchedulerLog): HttpApiResult {
  if (isSchedulerError(error) && error.expose) {
    return json(
      error.statusCode,
      { error: { code: error.code, message: error.message.slice(0, 300) }, requestId },
      error instanceof HttpError ? error.retryAfterSeconds : undefined,
    );
  }
  if (isSchedulerError(error) && error.statusCode === 503) {
    log.warn('dependency unavailable', { requestId, error: error.name });
    return json(503, { error: { code: error.code, message: error.message }, requestId });
  }
  log.error('request failed', {
    requestId,
    error:
      error instanceof Error
        ? { name: error.name, message: error.message, stack: error.stack }
        : String(error),
  });
  return json(500, {
    error: { code: 'InternalError', message: 'the request could not be completed' },
    requestId,
  });
}

const optionalTraceHeaders = (event: HttpApiEvent): { traceHeaders?: TraceHeaders } => {
  const traceHeaders = traceHeadersOf(event.headers);
  return traceHeaders ? { traceHeaders } : {};
};

export function createHttpApi(
  routes: readonly RouteDefinition[],
  operations: Readonly<Partial<Record<string, Operation>>>,
  log: SchedulerLog,
  options: {
    readonly agentRateLimit?: AgentRateLimit;
    readonly now?: () => number;
    readonly around?: OperationHook | undefined;
  } = {},
): (event: HttpApiEvent) => Promise<HttpApiResult> {
  const { around } = options;
  const limiter = options.agentRateLimit
    ? new AgentRateLimiter(options.agentRateLimit, options.now)
    : undefined;
  return async (event) => {
    const requestId = event.requestContext.requestId;
    try {
      const method = event.requestContext.http.method.toUpperCase();
      const matched = matchRoute(routes, method, event.rawPath);
      // API Gateway's catch-all route carries no authorization: it only ever explains why nothing matched.
      if (!matched || (event.routeKey === '$default' && !('allowed' in matched)))
        throw new HttpError(404, 'RouteNotFound', `no route ${method} ${event.rawPath.slice(0, 100)}`);
      if ('allowed' in matched) {
        throw new HttpError(
          405,
          'MethodNotAllowed',
          `${method} is not allowed here; use ${matched.allowed.join(', ')}`,
        );
      }
      const { route, params } = matched;
      const operation = operations[route.operation];
      if (!operation) throw new HttpError(404, 'RouteNotFound', `${route.operation} is not served here`);
      const agentId = event.requestContext.authorizer?.lambda?.agentId;
      if (route.access === 'agent' && typeof agentId !== 'string') {
        throw new HttpError(401, 'Unauthorized', 'an agent token is required');
      }
      if (limiter && typeof agentId === 'string') {
        const reserve =
          route.operation === 'claimTasks' ? Math.floor((options.agentRateLimit?.burst ?? 0) / 4) : 0;
        const wait = limiter.take(agentId, reserve);
        if (wait !== undefined) {
          throw new HttpError(
            429,
            'TooManyRequests',
            `this agent sends more than ${options.agentRateLimit?.ratePerSecond} requests a second; retry in ${wait} s`,
            wait,
          );
        }
      }
      const body = parseBody(event);
      const host = event.headers?.host ?? event.headers?.Host;
      const proto = event.headers?.['x-forwarded-proto'] ?? 'http';
      const request: ApiRequest = {
        route,
        params,
        query: new URLSearchParams(event.rawQueryString ?? ''),
        body,
        requestId,
        ...(host && /^[A-Za-z0-9.:[\]-]{1,255}$/.test(host) && (proto === 'https' || proto === 'http')
          ? { origin: `${proto}://${host}` }
          : {}),
        ...(typeof agentId === 'string' ? { agentId } : {}),
        ...optionalTraceHeaders(event),
      };
      const response = await (around ? around(operation, request) : operation(request));
      return json(response.status, response.body);
    } catch (error) {
      return errorResult(error, requestId, log);
    }
  };
}
