/**
 * OpenTelemetry, when the application has it: `@opentelemetry/api` is an optional peer dependency, imported the
 * first time it is wanted and never required. Without it a submission carries no trace context it was not given
 * and a Worker starts no span; the SDK sends nothing more either way (the context rides in the body it sends).
 *
 * The trace context is W3C's (`traceparent`, `tracestate`), made from the active span's context rather than through
 * the application's propagator: the scheduler keeps that format whatever the application sends elsewhere.
 */
import type { ClaimedTask } from './types.js';

/** The part of `@opentelemetry/api` used here, typed locally so the SDK compiles and bundles without it. */
interface SpanContext {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  readonly isRemote?: boolean;
  readonly traceState?: { serialize(): string };
}
interface Span {
  spanContext(): SpanContext;
  setStatus(status: { code: number; message?: string }): void;
  recordException(exception: unknown): void;
  end(): void;
}
interface OpenTelemetryApi {
  readonly trace: {
    getActiveSpan(): Span | undefined;
    getTracer(name: string, version?: string): Tracer;
    setSpanContext(context: unknown, spanContext: SpanContext): unknown;
  };
  readonly context: { active(): unknown };
  readonly isSpanContextValid: (spanContext: SpanContext) => boolean;
  readonly createTraceState?: (text?: string) => { serialize(): string };
  readonly SpanKind: { readonly CONSUMER: number };
  readonly SpanStatusCode: { readonly ERROR: number };
}
interface Tracer {
  startActiveSpan<T>(
    name: string,
    options: { kind: number; attributes: Record<string, string | number> },
    context: unknown,
    fn: (span: Span) => T,
  ): T;
}

/** The optional peer dependency, named through a variable so bundlers and import checkers leave it alone. */
const OPTIONAL_PEER = '@opentelemetry/api';
const TRACER_NAME = '@agent-scheduler/sdk';
let imported: Promise<OpenTelemetryApi | undefined> | undefined;

/** `@opentelemetry/api` if it can be imported; undefined otherwise (looked for once). */
export function openTelemetry(): Promise<OpenTelemetryApi | undefined> {
  imported ??= import(OPTIONAL_PEER).then(
    (module: Partial<OpenTelemetryApi> & { default?: Partial<OpenTelemetryApi> }) => {
      const api = module.trace ? module : module.default;
      return api?.trace && api.context && api.isSpanContextValid ? (api as OpenTelemetryApi) : undefined;
    },
    () => undefined,
  );
  return imported;
}

const hex2 = (flags: number) => (flags & 0xff).toString(16).padStart(2, '0');

/** The W3C trace context of the active span, if there is one and it is valid. */
export async function activeTraceContext(): Promise<
  { traceparent: string; tracestate?: string } | undefined
> {
  const api = await openTelemetry();
  const span = api?.trace.getActiveSpan();
  if (!api || !span) return undefined;
  const context = span.spanContext();
  if (!api.isSpanContextValid(context)) return undefined;
  const tracestate = context.traceState?.serialize();
  return {
    traceparent: `00-${context.traceId}-${context.spanId}-${hex2(context.traceFlags)}`,
    ...(tracestate ? { tracestate } : {}),
  };
}

/**
 * A submission with the active span's trace context when it names none; as it is otherwise. `tracestate` alone is
 * a caller's choice the server answers.
 */
export async function withActiveTraceContext<T extends { traceparent?: string; tracestate?: string }>(
  specs: readonly T[],
): Promise<T[]> {
  if (specs.every((spec) => spec.traceparent !== undefined || spec.tracestate !== undefined))
    return [...specs];
  const active = await activeTraceContext();
  if (!active) return [...specs];
  return specs.map((spec) =>
    spec.traceparent !== undefined || spec.tracestate !== undefined ? spec : { ...spec, ...active },
  );
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * Runs a task's handler in a span (`agent-scheduler.task <queue>`, kind consumer) whose parent is the context the
 * task was submitted with, so that the handler's work, and the follow-ups it submits, are in the submitter's trace:
 * one trace for the task's life. A task without one starts a trace of its own. Without `@opentelemetry/api`, the
 * handler is just run.
 */
export async function inTaskSpan<T>(
  task: ClaimedTask,
  run: () => Promise<T>,
  /** Told the span's own context, which the task's outcome is sent with. */
  onSpan?: (traceparent: string) => void,
): Promise<T> {
  const api = await openTelemetry();
  if (!api) return run();
  const match = task.traceparent === undefined ? null : TRACEPARENT.exec(task.traceparent);
  const parent =
    match?.[1] && match[2] && match[3]
      ? api.trace.setSpanContext(api.context.active(), {
          traceId: match[1],
          spanId: match[2],
          traceFlags: Number.parseInt(match[3], 16),
          isRemote: true,
          ...(task.tracestate && api.createTraceState
            ? { traceState: api.createTraceState(task.tracestate) }
            : {}),
        })
      : api.context.active();
  const attributes = {
    'agent_scheduler.task.id': task.taskId,
    'agent_scheduler.queue': task.queue,
    'agent_scheduler.task.attempt': task.attempt,
    'agent_scheduler.task.lease_epoch': task.leaseEpoch,
    'messaging.system': 'agent-scheduler',
    'messaging.operation.type': 'process',
    'messaging.destination.name': task.queue,
    'messaging.message.id': task.taskId,
  };
  return api.trace
    .getTracer(TRACER_NAME)
    .startActiveSpan(
      `agent-scheduler.task ${task.queue}`,
      { kind: api.SpanKind.CONSUMER, attributes },
      parent,
      async (span) => {
        const own = span.spanContext();
        onSpan?.(`00-${own.traceId}-${own.spanId}-${hex2(own.traceFlags)}`);
        try {
          return await run();
        } catch (error) {
          span.recordException(error);
          span.setStatus({
            code: api.SpanStatusCode.ERROR,
            message: error instanceof Error ? error.message : String(error),
          });
          throw error;
        } finally {
          span.end();
        }
      },
    );
}
