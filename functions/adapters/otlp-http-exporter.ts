/**
 * Spans sent to an OpenTelemetry collector by OTLP/HTTP, in its JSON encoding, one POST per request's spans: to a
 * back end that takes OTLP directly (with its headers, an API key for one), or to the collector of the ADOT Lambda
 * layer at `http://localhost:4318`, which sends them on after the invocation.
 *
 * Written over `fetch` rather than taken from `@opentelemetry/exporter-trace-otlp-http`: the functions record
 * finished spans of their own, so the SDK's tracer, context and batching have nothing to do here, and this is a
 * few kilobytes in each bundle.
 *
 * An export is bounded: past `timeoutMs` it is abandoned and the request it belongs to goes on, and a failure is
 * logged (once, until an export succeeds again) and never thrown. The spans of an abandoned export are lost.
 */
import type { SchedulerLog } from '#core/context';
import type { RecordedSpan, SpanExporter } from '#domain/spans';

export interface OtlpHttpExporterOptions {
  /** The collector's base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`'s meaning): spans go to `<endpoint>/v1/traces`. */
  readonly endpoint: string;
  /** Sent with each export: a back end's API key, say. */
  readonly headers?: Readonly<Record<string, string>>;
  /** How long an export may take before it is abandoned. */
  readonly timeoutMs: number;
  /** The resource's `service.name`: the function's name in Lambda. */
  readonly serviceName: string;
  readonly log: SchedulerLog;
  readonly fetch?: typeof globalThis.fetch;
}

/** OTLP's span kinds and status codes, as numbers in its JSON encoding. */
const KIND = { internal: 1, server: 2 } as const;
const STATUS_ERROR = 2;

const attributeValue = (value: string | number | boolean) =>
  typeof value === 'string'
    ? { stringValue: value }
    : typeof value === 'boolean'
      ? { boolValue: value }
      : Number.isInteger(value)
        ? { intValue: String(value) }
        : { doubleValue: value };

const attributesOf = (attributes: Readonly<Record<string, string | number | boolean>>) =>
  Object.entries(attributes).map(([key, value]) => ({ key, value: attributeValue(value) }));

/** Milliseconds since the epoch as OTLP's nanoseconds, a decimal string (a 64-bit integer in JSON). */
const nanos = (ms: number) => `${BigInt(Math.round(ms * 1_000)) * 1_000n}`;

/** The OTLP/JSON document of some spans of one service. */
export function otlpTraces(spans: readonly RecordedSpan[], serviceName: string): unknown {
  return {
    resourceSpans: [
      {
        resource: { attributes: attributesOf({ 'service.name': serviceName }) },
        scopeSpans: [
          {
            scope: { name: 'agent-scheduler' },
            spans: spans.map((span) => ({
              traceId: span.traceId,
              spanId: span.spanId,
              ...(span.parentSpanId === undefined ? {} : { parentSpanId: span.parentSpanId }),
              name: span.name,
              kind: KIND[span.kind],
              startTimeUnixNano: nanos(span.startMs),
              endTimeUnixNano: nanos(span.endMs),
              attributes: attributesOf(span.attributes),
              status: span.error === undefined ? {} : { code: STATUS_ERROR, message: span.error },
            })),
          },
        ],
      },
    ],
  };
}

export class OtlpHttpExporter implements SpanExporter {
  private readonly url: string;
  private readonly fetch: typeof globalThis.fetch;
  private failing = false;

  constructor(private readonly options: OtlpHttpExporterOptions) {
    this.url = `${options.endpoint.replace(/\/+$/, '')}/v1/traces`;
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  async export(spans: readonly RecordedSpan[]): Promise<void> {
    if (spans.length === 0) return;
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timed out'>((resolve) => {
      timer = setTimeout(() => {
        abort.abort();
        resolve('timed out');
      }, this.options.timeoutMs);
    });
    try {
      const sent = this.fetch(this.url, {
        method: 'POST',
        headers: { ...this.options.headers, 'content-type': 'application/json' },
        body: JSON.stringify(otlpTraces(spans, this.options.serviceName)),
        signal: abort.signal,
      }).then(async (response) => {
        // The body is read so that the connection can be kept for the next export.
        await response.arrayBuffer();
        return response.ok ? 'sent' : `status ${response.status}`;
      });
      // A fetch that ignores its signal must not hold the request past the bound either.
      const outcome = await Promise.race([sent, timeout]);
      sent.catch(() => undefined);
      this.settled(outcome === 'sent' ? undefined : outcome, spans.length);
    } catch (error) {
      this.settled(error instanceof Error ? error.message : String(error), spans.length);
    } finally {
      clearTimeout(timer);
    }
  }

  private settled(problem: string | undefined, spans: number): void {
    if (problem !== undefined && !this.failing)
      this.options.log.warn('spans not exported', { endpoint: this.url, problem, spans });
    this.failing = problem !== undefined;
  }
}
