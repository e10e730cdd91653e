/**
 * Tracing in a function, when the construct turned it on (`tracingConfigFromEnv`): the span exporter and the hook
 * that records the HTTP operations' spans. Off, neither exists and nothing of tracing is loaded; on, their modules
 * are imported at the first span, so a function that never records one never loads them either.
 */
import { type TracingConfig, tracingConfigFromEnv } from '#adapters/environment';
import type { SchedulerLog } from '#core/context';
import { newSpanId, newTraceId, type SpanAttributes, type SpanExporter, traceparentOf } from '#domain/spans';
import type { OperationHook } from '../http/http-api';

/** The function's span exporter: OTLP/HTTP to the configured endpoint; undefined when tracing is off. */
export function spanExporterFromEnvironment(
  log: SchedulerLog,
  env: NodeJS.ProcessEnv = process.env,
): SpanExporter | undefined {
  const config = tracingConfigFromEnv(env);
  return config ? lazyExporter(config, log, env.AWS_LAMBDA_FUNCTION_NAME ?? 'agent-scheduler') : undefined;
}

function lazyExporter(config: TracingConfig, log: SchedulerLog, serviceName: string): SpanExporter {
  let loaded: Promise<SpanExporter> | undefined;
  return {
    export: async (spans) => {
      loaded ??= import('#adapters/otlp-http-exporter').then(
        ({ OtlpHttpExporter }) => new OtlpHttpExporter({ ...config, serviceName, log }),
      );
      // An export never fails the request it belongs to, not even when its module cannot be loaded.
      await (await loaded.catch(() => undefined))?.export(spans);
    },
  };
}

/** The hook that records each operation's spans to `exporter`; undefined without one. */
export function operationSpansHook(exporter: SpanExporter | undefined): OperationHook | undefined {
  if (!exporter) return undefined;
  let loaded: Promise<OperationHook> | undefined;
  return async (operation, request) => {
    loaded ??= import('../http/operation-spans').then(({ operationSpans }) => operationSpans(exporter));
    // Tracing never fails a request: without its module, the operation runs untraced.
    const hook = await loaded.catch(() => undefined);
    return hook ? hook(operation, request) : operation(request);
  };
}

/**
 * Runs a function's work that no request started (a supervisor pass, a schedule's fire) as the root span of a trace
 * of its own, with the attributes its outcome gives; `run` is given the span's `traceparent`, for what it starts
 * to join (a fired task). Without an exporter, just runs it.
 */
export async function inRootSpan<T>(
  exporter: SpanExporter | undefined,
  name: string,
  run: (traceparent: string | undefined) => Promise<T>,
  attributesOf: (outcome: T) => SpanAttributes,
): Promise<T> {
  if (!exporter) return run(undefined);
  const startMs = Date.now();
  const span = { traceId: newTraceId(), spanId: newSpanId(), name, kind: 'internal' as const, startMs };
  try {
    const outcome = await run(traceparentOf(span.traceId, span.spanId));
    await exporter.export([{ ...span, endMs: Date.now(), attributes: attributesOf(outcome) }]);
    return outcome;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    await exporter.export([{ ...span, endMs: Date.now(), attributes: {}, error: message }]);
    throw error;
  }
}
