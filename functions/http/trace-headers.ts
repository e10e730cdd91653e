/**
 * The W3C trace context headers of a submission (`traceparent`, `tracestate`), taken into the specification when
 * it names none: a caller whose HTTP client propagates its trace needs to add nothing to the body. The
 * specification's schema checks them as it checks the body's own (`#domain/trace-context`).
 */

/** The trace context headers of a request, as the HTTP edge read them (names lower case). */
export interface TraceHeaders {
  readonly traceparent: string;
  readonly tracestate?: string;
}

/** The trace context headers of an event's headers, if it has a `traceparent`; header names in any case. */
export function traceHeadersOf(
  headers: Readonly<Record<string, string | undefined>> | undefined,
): TraceHeaders | undefined {
  if (!headers) return undefined;
  let traceparent: string | undefined;
  let tracestate: string | undefined;
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (lower === 'traceparent') traceparent = value;
    else if (lower === 'tracestate') tracestate = value;
  }
  if (traceparent === undefined) return undefined;
  return { traceparent: traceparent.trim(), ...(tracestate ? { tracestate: tracestate.trim() } : {}) };
}

/**
 * A specification with the headers' trace context when it has none of its own; anything else (not an object, a
 * context of its own) as it is.
 */
export function withTraceHeaders(spec: unknown, headers: TraceHeaders | undefined): unknown {
  if (!headers || typeof spec !== 'object' || spec === null || Array.isArray(spec)) return spec;
  if (Object.hasOwn(spec, 'traceparent') || Object.hasOwn(spec, 'tracestate')) return spec;
  return { ...spec, ...headers };
}
