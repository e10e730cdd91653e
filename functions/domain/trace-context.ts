/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) as a task carries it: the `traceparent` of the span that
 * submitted it, and the vendors' `tracestate` beside it. The scheduler keeps them and hands them to the agent that
 * runs the task, so that its work joins the submitter's trace; it starts and reads no trace of its own.
 */
import { z } from 'zod';

/** Version 00: `00-<trace id, 32 hex>-<parent span id, 16 hex>-<flags, 2 hex>`, lower case. */
export const TRACEPARENT_PATTERN = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/** The longest `tracestate` kept: the specification's 32 list members are 512 characters in practice. */
export const TRACESTATE_CHARS = 512;

/** A `traceparent` whose trace and span ids are not all zeros (the specification's invalid values). */
export const isTraceparent = (value: string): boolean => {
  const match = TRACEPARENT_PATTERN.exec(value);
  return match !== null && !/^0+$/.test(match[1] ?? '') && !/^0+$/.test(match[2] ?? '');
};

export const traceparentSchema = z
  .string()
  .refine(
    isTraceparent,
    'a W3C traceparent: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, lower case, ids not all zeros',
  );

/** Printable ASCII: list members `key=value` separated by commas. */
export const tracestateSchema = z
  .string()
  .max(TRACESTATE_CHARS)
  .regex(/^[\x20-\x7e]*$/, 'a W3C tracestate: printable ASCII');
