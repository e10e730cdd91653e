/**
 * The local HTTP server: the same handlers as the API functions, behind the same route table, with the two
 * authorizers API Gateway provides in AWS played here: agent bearer tokens for agent routes, and an operator
 * token standing in for IAM on operator routes.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { AgentTable } from '#adapters/agent-table';
import type { LocalEventFeed } from '#adapters/event-publishers';
import type { ConsoleGateway } from '#console/gateway';
import { answerConsole, headersOf, listenOn, readBody } from '#console/serve';
import { authenticateAgent } from '#core/auth';
import type { SchedulerLog } from '#core/context';
import type { Scheduler } from '#core/scheduler';
import { bearerToken } from '#domain/agent-token';
import type { SpanExporter } from '#domain/spans';
import { operationSpansHook } from '#wiring/tracing';
import { agentOperations } from '../functions/http/agent-operations';
import {
  type AgentRateLimit,
  createHttpApi,
  DEFAULT_AGENT_RATE_LIMIT,
  type HttpApiEvent,
  type HttpApiResult,
  MAX_BODY_BYTES,
  matchRoute,
} from '../functions/http/http-api';
import { openApiDocument } from '../functions/http/openapi';
import { operatorOperations } from '../functions/http/operator-operations';
import { ROUTES, routesServedBy } from '../functions/http/routes';
import { eventOperations } from './event-operations';
import { type AwsCall, runAs, traceInvocation } from './function-scope';
import { attachPushChannel, type LocalPushSender } from './push-server';
import { type SigV4VerifierOptions, verifySigV4 } from './sigv4-verifier';

export interface LocalServerOptions {
  readonly scheduler: Scheduler;
  readonly agents: Pick<AgentTable, 'get'>;
  readonly operatorToken: string;
  /**
   * Operator routes take AWS Signature Version 4 signed with one of these keys instead of the operator token, as
   * API Gateway's IAM authorization does in AWS (the signature is checked; IAM policies are not played).
   */
  readonly operatorSigV4?: SigV4VerifierOptions;
  readonly port: number;
  readonly host?: string;
  readonly log: SchedulerLog;
  /**
   * The per-agent request rate the agent routes allow (429 past it), as the agent function enforces it; `false`
   * for none. @default DEFAULT_AGENT_RATE_LIMIT, the construct's default
   */
  readonly agentRateLimit?: AgentRateLimit | false;
  /** Serves `GET /v1/events` from this feed. */
  readonly events?: LocalEventFeed;
  /**
   * Keep an agent token's answer this long, as API Gateway caches the authorizer's (60 s in the construct); a
   * revoked token then works until its answer expires. @default 0: every request is checked
   */
  readonly authorizerCacheTtlMs?: number;
  /** Serves the push channel at `/v1/push` with this sender (the scheduler's context must use it too). */
  readonly push?: LocalPushSender;
  /** Serves the web console at `/` and `/console/`: the gateway made once the server's URL is known. */
  readonly console?: (serverUrl: string) => ConsoleGateway;
  /** Records each operation's spans to this exporter, as the API functions do with tracing on. @default no spans */
  readonly spans?: SpanExporter;
  /** Told of every answered request: what a benchmark counts as API calls and function invocations. */
  readonly onRequest?: (request: {
    operation: string;
    statusCode: number;
    durationMs: number;
    /** The AWS requests the handler made, each with when it was sent and answered (`performance.now()`). */
    awsCalls: readonly AwsCall[];
  }) => void;
}

export interface LocalServer {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

const sameSecret = (a: string, b: string) => {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
};

const errorResult = (
  statusCode: number,
  code: string,
  message: string,
  requestId: string,
): HttpApiResult => ({
  statusCode,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ error: { code, message }, requestId }),
});

/** One request as the local server sees it, read off the socket. */
export interface LocalRequest {
  readonly method: string;
  /** Path and query: `/v1/tasks?queue=q`. */
  readonly url: string;
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: string;
  /** The body was larger than the API takes and was not kept. */
  readonly tooLarge?: boolean;
}

/**
 * What the local server answers, without the socket: authentication as API Gateway does it (the agent token's
 * authorizer, the operator token in place of IAM), then the same handlers as the Lambda functions. Tests call it
 * in process.
 */
export function localRequestHandler(
  options: Omit<LocalServerOptions, 'port' | 'host' | 'onRequest'>,
): (request: LocalRequest) => Promise<HttpApiResult> {
  const agentRateLimit = options.agentRateLimit ?? DEFAULT_AGENT_RATE_LIMIT;
  const around = operationSpansHook(options.spans);
  const agentApi = createHttpApi(routesServedBy('agent'), agentOperations(options.scheduler), options.log, {
    ...(agentRateLimit === false ? {} : { agentRateLimit }),
    around,
  });
  const operatorApi = createHttpApi(
    routesServedBy('operator', options.events !== undefined),
    {
      ...operatorOperations(options.scheduler),
      ...(options.events
        ? {
            ...eventOperations(options.events),
            openApi: async () => ({ status: 200, body: openApiDocument({ local: true }) }),
          }
        : {}),
    },
    options.log,
    { around },
  );

  const authorized = new Map<string, { agentId: string | undefined; until: number }>();
  const authorize = async (authorization: string | undefined): Promise<string | undefined> => {
    const ttl = options.authorizerCacheTtlMs ?? 0;
    const authenticate = () => runAs('authorizer', () => authenticateAgent(options.agents, authorization));
    if (ttl <= 0 || !authorization) return authenticate();
    const cached = authorized.get(authorization);
    if (cached && cached.until > Date.now()) return cached.agentId;
    const agentId = await authenticate();
    authorized.set(authorization, { agentId, until: Date.now() + ttl });
    return agentId;
  };

  return async (request) => {
    const requestId = randomUUID();
    // A request target Node accepts but URL does not (`http://[`) is the caller's error, not the server's.
    const url = URL.canParse(request.url, 'http://localhost')
      ? new URL(request.url, 'http://localhost')
      : undefined;
    if (!url) return errorResult(400, 'MalformedRequest', 'the request target is not a valid URL', requestId);
    const method = request.method.toUpperCase();
    const { body, tooLarge } = request;
    if (tooLarge)
      return errorResult(
        413,
        'PayloadTooLarge',
        `the request body is larger than ${MAX_BODY_BYTES} bytes`,
        requestId,
      );
    const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v]));
    const matched = matchRoute(ROUTES, method, url.pathname);
    const route = matched && 'route' in matched ? matched.route : undefined;
    let agentId: string | undefined;
    if (route?.access === 'agent') {
      agentId = await authorize(headers.authorization);
      if (!agentId) return errorResult(401, 'Unauthorized', 'a valid agent token is required', requestId);
    } else if (route?.access === 'operator' && options.operatorSigV4) {
      const verdict = verifySigV4({ ...request, headers }, options.operatorSigV4);
      if (!verdict.ok)
        return headers.authorization
          ? errorResult(403, 'Forbidden', verdict.reason, requestId)
          : errorResult(
              401,
              'Unauthorized',
              'a request signed with AWS Signature Version 4 is required',
              requestId,
            );
    } else if (route?.access === 'operator') {
      const token = bearerToken(headers.authorization);
      if (!token) return errorResult(401, 'Unauthorized', 'the operator token is required', requestId);
      if (!sameSecret(token, options.operatorToken)) {
        // An agent's own token is valid, just not here: forbidden rather than unauthenticated.
        const agent = await runAs('authorizer', () =>
          authenticateAgent(options.agents, headers.authorization),
        );
        return agent
          ? errorResult(403, 'Forbidden', 'agents cannot call operator routes', requestId)
          : errorResult(401, 'Unauthorized', 'the operator token is not valid', requestId);
      }
    }
    const event: HttpApiEvent = {
      rawPath: url.pathname,
      rawQueryString: url.search.slice(1),
      headers,
      ...(body === '' ? {} : { body }),
      requestContext: {
        requestId,
        http: { method },
        ...(agentId ? { authorizer: { lambda: { agentId } } } : {}),
      },
    };
    return route?.access === 'agent'
      ? runAs('agentApi', () => agentApi(event))
      : runAs('operatorApi', () => operatorApi(event));
  };
}

const untraced = (result: HttpApiResult) => ({ result, trace: { awsCalls: [] } });

export async function startLocalServer(options: LocalServerOptions): Promise<LocalServer> {
  const answer = localRequestHandler(options);
  const handle = async (request: IncomingMessage): Promise<HttpApiResult> => {
    const { body, tooLarge } = await readBody(request);
    return answer({
      method: request.method ?? 'GET',
      url: request.url ?? '/',
      headers: headersOf(request),
      body,
      tooLarge,
    });
  };

  let gateway: ConsoleGateway | undefined;
  const server = createServer((request, response) => {
    const started = performance.now();
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    if (gateway?.owns(path)) {
      answerConsole(gateway, request, response, options.log);
      return;
    }
    // Only a server whose requests are reported traces each one's AWS calls (the bench's): others skip the work.
    (options.onRequest ? traceInvocation(() => handle(request)) : handle(request).then(untraced))
      .then(({ result, trace }) => {
        if (options.onRequest) {
          const url = URL.canParse(request.url ?? '/', 'http://localhost')
            ? new URL(request.url ?? '/', 'http://localhost')
            : undefined;
          const matched = url && matchRoute(ROUTES, (request.method ?? 'GET').toUpperCase(), url.pathname);
          options.onRequest({
            operation: matched && 'route' in matched ? matched.route.operation : 'unmatched',
            statusCode: result.statusCode,
            durationMs: performance.now() - started,
            awsCalls: trace.awsCalls,
          });
        }
        response.writeHead(result.statusCode, result.headers);
        response.end(result.body);
      })
      .catch((error: unknown) => {
        options.log.error('local server failed a request', {
          error: error instanceof Error ? error.message : String(error),
        });
        response.writeHead(500, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            error: { code: 'InternalError', message: 'the request could not be completed' },
            requestId: randomUUID(),
          }),
        );
      });
  });
  // Node's parser answers requests it cannot read (431 for over-long headers, 400 otherwise) with an empty body;
  // answer them with the same JSON error as every other refusal, while the socket can still take it.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable || (error.code === 'ECONNRESET' && !socket.readable)) {
      socket.destroy();
      return;
    }
    const [status, code, message] =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'HeadersTooLarge', 'the request headers are too large']
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'RequestTimeout', 'the request did not arrive in time']
          : [400, 'MalformedRequest', 'the request is not valid HTTP'];
    const body = JSON.stringify({ error: { code, message }, requestId: randomUUID() });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  // An `Expect` other than 100-continue: Node would answer 417 with an empty body.
  server.on('checkExpectation', (request, response) => {
    const body = JSON.stringify({
      error: { code: 'ExpectationFailed', message: `cannot meet the expectation ${request.headers.expect}` },
      requestId: randomUUID(),
    });
    response.writeHead(417, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    response.end(body);
  });
  if (options.push)
    attachPushChannel(server, { scheduler: options.scheduler, sender: options.push, log: options.log });
  const { url, close } = await listenOn(server, options.port, options.host ?? '127.0.0.1');
  gateway = options.console?.(url);
  return { url, server, close };
}
