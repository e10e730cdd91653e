/**
 * The API operations' spans (`operation-spans.ts`) and their way out (`#wiring/tracing`, the OTLP/HTTP exporter):
 * off, nothing is wrapped and nothing sent; on, each span joins its task's trace from what the answer holds, and a
 * collector that fails or hangs neither fails a request nor holds it past the export's bound.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { claimSpanId, type RecordedSpan, type SpanExporter } from '#domain/spans';
import { recordingLog } from '#test/mock-context';
import { inRootSpan, operationSpansHook, spanExporterFromEnvironment } from '#wiring/tracing';
import { OtlpHttpExporter, otlpTraces } from '../../../functions/adapters/otlp-http-exporter';
import { createHttpApi, type HttpApiEvent, type Operation } from '../../../functions/http/http-api';
import { operationSpans } from '../../../functions/http/operation-spans';
import { ROUTES } from '../../../functions/http/routes';

const TRACE = 'a'.repeat(32);
const SUBMITTER = `00-${TRACE}-${'b'.repeat(16)}-01`;
const STORED = `00-${TRACE}-${'c'.repeat(16)}-01`;
const OTHER = `00-${'d'.repeat(32)}-${'e'.repeat(16)}-01`;

const event = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  ({
    rawPath: path,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    requestContext: { requestId: 'req-1', http: { method }, authorizer: { lambda: { agentId: 'a_1' } } },
  }) satisfies HttpApiEvent;

const task = (taskId: string, traceparent?: string) => ({
  taskId,
  queue: 'q',
  attempt: 1,
  leaseEpoch: 2,
  ...(traceparent ? { traceparent } : {}),
});

/** An exporter that keeps what it is given. */
const kept = () => {
  const spans: RecordedSpan[] = [];
  const exporter: SpanExporter = { export: async (batch) => void spans.push(...batch) };
  return { spans, exporter };
};

describe('with tracing off', () => {
  afterEach(() => vi.restoreAllMocks());

  it('nothing is wrapped, the operation sees the request as sent, and nothing is sent anywhere', async () => {
    const fetch = vi.spyOn(globalThis, 'fetch');
    const { log } = recordingLog();
    const exporter = spanExporterFromEnvironment(log, { AWS_LAMBDA_FUNCTION_NAME: 'fn' });
    const around = operationSpansHook(exporter);
    const seen: unknown[] = [];
    const api = createHttpApi(
      ROUTES,
      {
        submitTask: async (request) => {
          seen.push(request.body);
          return { status: 201, body: {} };
        },
      },
      log,
      { around },
    );

    const result = await api(event('POST', '/v1/tasks', { queue: 'q', traceparent: SUBMITTER }));

    expect([exporter, around]).toEqual([undefined, undefined]);
    expect(result.statusCode).toBe(201);
    expect(seen).toEqual([{ queue: 'q', traceparent: SUBMITTER }]);
    expect(fetch).not.toHaveBeenCalled();
  });
});

describe('an operation’s spans', () => {
  const { log } = recordingLog();
  const run = async (operation: string, answer: Operation, sent: HttpApiEvent) => {
    const { spans, exporter } = kept();
    const seen: unknown[] = [];
    const api = createHttpApi(
      ROUTES,
      {
        [operation]: async (request) => {
          seen.push(request.body);
          return answer(request);
        },
      },
      log,
      { around: operationSpans(exporter) },
    );
    const result = await api(sent);
    return { spans, seen, status: result.statusCode, body: JSON.parse(result.body) };
  };

  it('a submission is the submitter’s child, and the task keeps the submission’s context', async () => {
    const { spans, seen } = await run(
      'submitTasks',
      async (request) => ({
        status: 200,
        body: {
          results: (request.body as { tasks: { traceparent?: string }[] }).tasks.map((spec, i) => ({
            ok: true,
            task: task(`t_${i}`, spec.traceparent),
          })),
        },
      }),
      event(
        'POST',
        '/v1/tasks/batch',
        { tasks: [{ queue: 'q' }, { queue: 'q', traceparent: OTHER }] },
        { traceparent: SUBMITTER, tracestate: 'v=1' },
      ),
    );

    const [fromHeader, own] = spans;
    expect(fromHeader).toMatchObject({ name: 'submitTasks', traceId: TRACE, parentSpanId: 'b'.repeat(16) });
    expect(own).toMatchObject({ traceId: 'd'.repeat(32), parentSpanId: 'e'.repeat(16) });
    expect(fromHeader?.attributes).toMatchObject({
      'agent_scheduler.task.id': 't_0',
      'http.route': '/v1/tasks/batch',
    });
    expect(seen).toEqual([
      {
        tasks: [
          { queue: 'q', traceparent: `00-${TRACE}-${fromHeader?.spanId}-01`, tracestate: 'v=1' },
          { queue: 'q', traceparent: `00-${'d'.repeat(32)}-${own?.spanId}-01` },
        ],
      },
    ]);
  });

  it('a specification’s invalid context is left for the validation to refuse, its request a span of its own', async () => {
    const { spans, seen } = await run(
      'submitTask',
      async () => ({ status: 400, body: {} }),
      event('POST', '/v1/tasks', { queue: 'q', traceparent: 'nonsense' }),
    );
    expect(seen).toEqual([{ queue: 'q', traceparent: 'nonsense' }]);
    // The request's span stands alone: it names no parent it could be the child of.
    expect(spans).toMatchObject([{ name: 'submitTask', attributes: { 'http.response.status_code': 400 } }]);
    expect(spans[0]?.parentSpanId).toBeUndefined();
  });

  it('a claim records a span per traced task, each its task’s child, and hands over the claim span', async () => {
    const { spans, body } = await run(
      'claimTasks',
      async () => ({ status: 200, body: { tasks: [task('t_1', STORED), task('t_2', OTHER), task('t_3')] } }),
      event('POST', '/v1/agent/claim', { sessionId: 's' }),
    );

    expect(
      spans.map((s) => [s.name, s.traceId, s.parentSpanId, s.attributes['agent_scheduler.task.id']]),
    ).toEqual([
      ['claimTasks', TRACE, 'c'.repeat(16), 't_1'],
      ['claimTasks', 'd'.repeat(32), 'e'.repeat(16), 't_2'],
    ]);
    expect(spans[0]?.spanId).toBe(claimSpanId(STORED, 't_1', 2));
    expect(body.tasks.map((t: { traceparent?: string }) => t.traceparent)).toEqual([
      `00-${TRACE}-${spans[0]?.spanId}-01`,
      `00-${'d'.repeat(32)}-${spans[1]?.spanId}-01`,
      undefined,
    ]);
  });

  it('a claim that grants nothing traced, a heartbeat and a read are not recorded without a header', async () => {
    const empty = await run(
      'claimTasks',
      async () => ({ status: 200, body: { tasks: [task('t_3')], retryAfterMs: 100 } }),
      event('POST', '/v1/agent/claim', { sessionId: 's' }),
    );
    const beat = await run(
      'heartbeat',
      async () => ({ status: 200, body: {} }),
      event('POST', '/v1/agent/heartbeat', { sessionId: 's' }),
    );
    const traced = await run(
      'heartbeat',
      async () => ({ status: 200, body: {} }),
      event('POST', '/v1/agent/heartbeat', { sessionId: 's' }, { traceparent: SUBMITTER }),
    );
    const read = await run(
      'listTasks',
      async () => ({ status: 200, body: { tasks: [task('t_1', STORED)] } }),
      event('GET', '/v1/tasks'),
    );
    expect([empty.spans, beat.spans, read.spans]).toEqual([[], [], []]);
    expect(traced.spans).toMatchObject([{ name: 'heartbeat', traceId: TRACE, parentSpanId: 'b'.repeat(16) }]);
  });

  it('a completion without a header is the child of its lease’s claim span; a refused one is marked an error', async () => {
    const done = await run(
      'completeTask',
      async () => ({ status: 200, body: { task: task('t_1', STORED) } }),
      event('POST', '/v1/agent/tasks/t_1/complete', { leaseEpoch: 2 }),
    );
    const refused = await run(
      'failTask',
      async () => {
        throw Object.assign(new Error('lease lost'), { name: 'LeaseLostError' });
      },
      event('POST', '/v1/agent/tasks/t_1/fail', { leaseEpoch: 2, error: { message: 'x' } }),
    );

    expect(done.spans).toMatchObject([
      { name: 'completeTask', traceId: TRACE, parentSpanId: claimSpanId(STORED, 't_1', 2) },
    ]);
    expect(done.spans[0]?.attributes).toMatchObject({
      'agent_scheduler.task.lease_epoch': 2,
      'http.response.status_code': 200,
    });
    expect(refused.status).toBe(500);
    expect(refused.spans).toMatchObject([
      { name: 'failTask', error: 'lease lost', attributes: { 'agent_scheduler.task.id': 't_1' } },
    ]);
  });

  it('a completion under a header is the header’s child; a header not of the W3C form is ignored, not refused', async () => {
    const answer = async () => ({ status: 200, body: { task: task('t_1', STORED) } });
    const sent = (traceparent: string) =>
      event('POST', '/v1/agent/tasks/t_1/complete', { leaseEpoch: 2 }, { traceparent });
    const under = await run('completeTask', answer, sent(OTHER));
    const malformed = await run('completeTask', answer, sent('00-not-a-trace-01'));

    expect(under.spans).toMatchObject([
      { name: 'completeTask', traceId: 'd'.repeat(32), parentSpanId: 'e'.repeat(16) },
    ]);
    expect(malformed.status).toBe(200);
    expect(malformed.seen).toEqual([{ leaseEpoch: 2 }]);
    expect(malformed.spans).toMatchObject([
      { name: 'completeTask', traceId: TRACE, parentSpanId: claimSpanId(STORED, 't_1', 2) },
    ]);
  });

  it('a caller that does not sample is not recorded, and its request is not changed', async () => {
    const unsampled = `00-${TRACE}-${'b'.repeat(16)}-00`;
    const { spans, seen } = await run(
      'submitTask',
      async () => ({ status: 201, body: { task: task('t_1') } }),
      event('POST', '/v1/tasks', { queue: 'q' }, { traceparent: unsampled }),
    );
    expect(spans).toEqual([]);
    expect(seen).toEqual([{ queue: 'q' }]);
  });
});

describe('the OTLP/HTTP export', () => {
  let hung: Server;
  let received: { path: string; body: string; key: string | undefined }[];
  let collector: Server;
  const urlOf = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  beforeAll(async () => {
    received = [];
    // Takes the request and never answers.
    hung = createServer(() => undefined);
    collector = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => {
        body += chunk;
      });
      request.on('end', () => {
        received.push({ path: request.url ?? '', body, key: request.headers['x-api-key'] as string });
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await Promise.all([hung, collector].map((s) => new Promise<void>((ok) => s.listen(0, '127.0.0.1', ok))));
  });
  afterAll(async () => {
    hung.closeAllConnections();
    await Promise.all([hung, collector].map((s) => new Promise((ok) => s.close(ok))));
  });

  const api = (endpoint: string, timeoutMs: number, log = recordingLog().log) =>
    createHttpApi(ROUTES, { submitTask: async () => ({ status: 201, body: { task: task('t_1') } }) }, log, {
      around: operationSpansHook(
        spanExporterFromEnvironment(log, {
          TRACING_OTLP_ENDPOINT: endpoint,
          TRACING_OTLP_HEADERS: '{"x-api-key":"k"}',
          TRACING_EXPORT_TIMEOUT_MS: String(timeoutMs),
        }),
      ),
    });

  it('posts the spans as OTLP JSON to <endpoint>/v1/traces with the configured headers', async () => {
    const result = await api(
      urlOf(collector),
      5_000,
    )(event('POST', '/v1/tasks', { queue: 'q' }, { traceparent: SUBMITTER }));

    expect(result.statusCode).toBe(201);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ path: '/v1/traces', key: 'k' });
    const [span] = JSON.parse(received[0]?.body ?? '{}').resourceSpans[0].scopeSpans[0].spans;
    expect(span).toMatchObject({ traceId: TRACE, parentSpanId: 'b'.repeat(16), name: 'submitTask', kind: 2 });
    expect(BigInt(span.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(span.startTimeUnixNano));
  });

  it('a hung collector holds the request no longer than the bound; one that refuses fails nothing', async () => {
    const { log, entries } = recordingLog();
    const started = performance.now();
    const slow = await api(urlOf(hung), 100, log)(event('POST', '/v1/tasks', { queue: 'q' }));
    const waited = performance.now() - started;
    const refused = await api('http://127.0.0.1:1', 100, log)(event('POST', '/v1/tasks', { queue: 'q' }));

    expect([slow.statusCode, refused.statusCode]).toEqual([201, 201]);
    expect(waited).toBeGreaterThanOrEqual(95);
    expect(waited).toBeLessThan(1_000);
    expect(entries.filter((e) => e.message === 'spans not exported')).toHaveLength(2);
  });

  it('logs a failing collector once until an export succeeds again', async () => {
    const { log, entries } = recordingLog();
    let ok = false;
    const exporter = new OtlpHttpExporter({
      endpoint: 'http://collector',
      timeoutMs: 100,
      serviceName: 'fn',
      log,
      fetch: async () => new Response('{}', { status: ok ? 200 : 503 }),
    });
    const span = otlpSpan();
    await exporter.export([span]);
    await exporter.export([span]);
    ok = true;
    await exporter.export([span]);
    ok = false;
    await exporter.export([span]);
    expect(entries.map((e) => e.extra?.problem)).toEqual(['status 503', 'status 503']);
  });
});

function otlpSpan(): RecordedSpan {
  return {
    traceId: TRACE,
    spanId: 'f'.repeat(16),
    name: 'x',
    kind: 'server',
    startMs: 1,
    endMs: 2,
    attributes: {},
  };
}

it('encodes OTLP JSON: ids in hex, nanoseconds as strings, an error as status 2', () => {
  const document = otlpTraces(
    [
      {
        ...otlpSpan(),
        startMs: 1_700_000_000_123.5,
        attributes: { n: 2, d: 0.5, b: true, s: 'x' },
        error: 'boom',
      },
    ],
    'fn',
  );
  expect(document).toMatchObject({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'fn' } }] },
        scopeSpans: [
          {
            spans: [
              {
                traceId: TRACE,
                spanId: 'f'.repeat(16),
                startTimeUnixNano: '1700000000123500000',
                attributes: [
                  { key: 'n', value: { intValue: '2' } },
                  { key: 'd', value: { doubleValue: 0.5 } },
                  { key: 'b', value: { boolValue: true } },
                  { key: 's', value: { stringValue: 'x' } },
                ],
                status: { code: 2, message: 'boom' },
              },
            ],
          },
        ],
      },
    ],
  });
});

describe('a span of work no request started (a supervisor pass, a schedule fire)', () => {
  it('is the root of a trace of its own, with its outcome’s attributes; a failure is recorded and thrown', async () => {
    const { spans, exporter } = kept();
    const given: (string | undefined)[] = [];
    const outcome = await inRootSpan(
      exporter,
      'supervisorPass',
      async (traceparent) => {
        given.push(traceparent);
        return { requeued: 2 };
      },
      (o) => ({
        'agent_scheduler.pass.requeued': o.requeued,
      }),
    );
    await expect(
      inRootSpan(
        exporter,
        'scheduleFire',
        async () => Promise.reject(new Error('table gone')),
        () => ({}),
      ),
    ).rejects.toThrow('table gone');
    // Without an exporter, the work alone.
    expect(
      await inRootSpan(
        undefined,
        'x',
        async (traceparent) => {
          given.push(traceparent);
          return 7;
        },
        () => ({}),
      ),
    ).toBe(7);

    expect(outcome).toEqual({ requeued: 2 });
    expect(spans).toMatchObject([
      { name: 'supervisorPass', kind: 'internal', attributes: { 'agent_scheduler.pass.requeued': 2 } },
      { name: 'scheduleFire', error: 'table gone' },
    ]);
    expect(spans.map((span) => span.parentSpanId)).toEqual([undefined, undefined]);
    expect(spans[0]?.traceId).not.toBe(spans[1]?.traceId);
    // The work is told its span's context (for a fired task to join), and nothing without an exporter.
    expect(given).toEqual([`00-${spans[0]?.traceId}-${spans[0]?.spanId}-01`, undefined]);
  });
});
