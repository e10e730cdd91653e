/**
 * The spans the scheduler's functions record of their own work, in OpenTelemetry's data model as far as it is used
 * here: a span is made once its operation has ended, from what the operation read anyway, with the operation's
 * start and end times, so that nothing is read or written for it. Ids are W3C Trace Context's: a trace id of 16
 * bytes and a span id of 8, in lower-case hex, and a span's parent is named by a `traceparent`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { isTraceparent } from './trace-context';

/** OpenTelemetry's span kinds, of those the functions record. */
export type SpanKind = 'server' | 'internal';

export type SpanAttributes = Readonly<Record<string, string | number | boolean>>;

export interface RecordedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** The span it is a child of; absent for the root of a trace. */
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: SpanKind;
  readonly startMs: number;
  readonly endMs: number;
  readonly attributes: SpanAttributes;
  /** The error's message when the operation failed; absent when it did not. */
  readonly error?: string;
}

/** Where recorded spans go. An exporter never rejects, and returns within its bound whatever the far end does. */
export interface SpanExporter {
  export(spans: readonly RecordedSpan[]): Promise<void>;
}

/** A span's place in a trace, as a `traceparent` names it. */
export interface SpanParent {
  readonly traceId: string;
  readonly spanId: string;
  /** The sampled flag: a caller that does not record its trace is not recorded here either. */
  readonly sampled: boolean;
}

export const newTraceId = (): string => randomBytes(16).toString('hex');
export const newSpanId = (): string => randomBytes(8).toString('hex');

/** The parent a valid `traceparent` names; undefined for anything else. */
export function parentOf(traceparent: unknown): SpanParent | undefined {
  if (typeof traceparent !== 'string' || !isTraceparent(traceparent)) return undefined;
  const [, traceId = '', spanId = '', flags = '00'] = traceparent.split('-');
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

/** The `traceparent` of a sampled span: what a task carries to name the span its next steps are children of. */
export const traceparentOf = (traceId: string, spanId: string): string => `00-${traceId}-${spanId}-01`;

/**
 * The id of a task's claim span for one lease: derived from the task's trace context, its id and the lease epoch
 * rather than drawn, so that a later call under that lease (a completion, a failure, a release) names the claim span
 * as its parent knowing only what it already holds: the task it wrote and the epoch it was fenced by.
 */
export const claimSpanId = (traceparent: string, taskId: string, leaseEpoch: number): string =>
  createHash('sha256').update(`${traceparent} ${taskId} ${leaseEpoch}`).digest('hex').slice(0, 16);
