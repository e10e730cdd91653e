/**
 * What one call to the server may carry, in one place: the Worker and the client size their calls by these. The
 * server's own figures are the authority (a test ties these to them); sizes are UTF-8 bytes of the serialised
 * JSON, as the server measures them.
 */
import { AgentSchedulerError } from './errors.js';
import type { BatchItemResult } from './types.js';

export const SERVER_LIMITS = {
  /** Any request body; a larger one is refused whole (413) before any route reads it. */
  bodyBytes: 300 * 1024,
  /** A task's result; one this size always fits a completion of its own. */
  resultBytes: 256 * 1024,
  payloadBytes: 256 * 1024,
  checkpointBytes: 16 * 1024,
  checkpointsPerHeartbeat: 100,
  completionsPerCall: 10,
  tasksPerClaim: 10,
  /** Tasks in one batch submit, children included. */
  tasksPerSubmit: 25,
  errorMessageChars: 2_048,
  /** An attempt's length, and the most an extension of its deadline may ask. */
  timeoutSeconds: 12 * 60 * 60,
  /** A snooze's delay, and a failure's `retryAfterSeconds`, at most. */
  snoozeSeconds: 12 * 60 * 60,
  /** A progress report's data, its message, and the reports of one batch call. */
  progressDataBytes: 16 * 1024,
  progressMessageChars: 1_024,
  progressPerCall: 100,
  /** How long a waitpoint may wait for its answer. */
  waitSeconds: 30 * 24 * 60 * 60,
  /** Objects and arrays nested in one body, the body's own included. */
  jsonDepth: 64,
  /** Rate limits one task names, and so the limits whose usage one finish reports; the most units of any. */
  rateLimitsPerTask: 4,
  rateUnits: 1e12,
} as const;

/**
 * Room left in a body for what wraps its items (`{"tasks":[…]}`, a session id): items are grouped only while their
 * sum stays this far under the body limit. The envelopes of the agent routes are under 100 bytes.
 */
const ENVELOPE_BYTES = 1_024;

/** The most bytes of items one body may carry, commas between them included. */
export const ITEMS_BUDGET_BYTES = SERVER_LIMITS.bodyBytes - ENVELOPE_BYTES;

/**
 * UTF-8 bytes of `value` as JSON, measured as the body will be sent. Throws a TypeError for what JSON cannot carry
 * (a BigInt, a cycle, a function or symbol where a value should be).
 */
export function jsonBytes(value: unknown): number {
  return toJson(value).bytes;
}

/** `value` as JSON text, with its size in UTF-8 bytes; throws as `jsonBytes` does. */
export function toJson(value: unknown): { readonly json: string; readonly bytes: number } {
  const json = JSON.stringify(value);
  if (json === undefined) throw new TypeError(`${typeof value} is not JSON`);
  return { json, bytes: utf8Bytes(json) };
}

/** UTF-8 bytes of a string that JSON.stringify made (lone surrogates escaped), without encoding it. */
function utf8Bytes(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    if (code < 0x800) bytes += 1;
    else {
      bytes += 2;
      // A surrogate pair is two UTF-16 units and four bytes, counted in full above.
      const next = text.charCodeAt(i + 1);
      if (code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++;
    }
  }
  return bytes;
}

/**
 * Takes from the front of `items` what one call may carry: at most `maxItems`, and items of `bytesOf` bytes only
 * while their sum (and a comma between each two) stays within the budget. The first item is always taken, so one
 * too large for any body goes alone and is refused alone.
 */
export function takeWithinBudget<T>(items: T[], bytesOf: (item: T) => number, maxItems: number): T[] {
  let total = 0;
  let count = 0;
  for (const item of items) {
    const bytes = bytesOf(item) + (count > 0 ? 1 : 0);
    if (count > 0 && (count >= maxItems || total + bytes > ITEMS_BUDGET_BYTES)) break;
    total += bytes;
    count++;
  }
  return items.splice(0, count);
}

/** The server refused a call for what its body carries (too large, nested too deep): sent again, it is refused again. */
export const isRefusal = (error: unknown): error is AgentSchedulerError =>
  error instanceof AgentSchedulerError && (error.status === 400 || error.status === 413);

/**
 * A batch of `items` in as few calls of `send` as its body limit allows, the outcomes in order. A call refused as
 * too large (413) is sent again item by item, so only an item too large on its own is refused: its outcome is the
 * server's answer to it alone. A batch of no items or more than `maxItems` goes as it is, for the server to refuse;
 * any other failure is thrown (the items are idempotent, so the whole batch may be sent again).
 */
export async function inBodies<T>(
  items: readonly T[],
  maxItems: number,
  send: (chunk: readonly T[]) => Promise<BatchItemResult[]>,
): Promise<BatchItemResult[]> {
  if (items.length === 0 || items.length > maxItems) return send(items);
  const left = items.map((item) => ({ item, bytes: jsonBytes(item) }));
  const outcomes: BatchItemResult[] = [];
  while (left.length > 0) {
    const chunk = takeWithinBudget(left, (waiting) => waiting.bytes, maxItems).map(({ item }) => item);
    try {
      outcomes.push(...(await send(chunk)));
    } catch (error) {
      if (!(error instanceof AgentSchedulerError && error.status === 413)) throw error;
      // Each then goes alone: counted as a whole body, no other item joins it.
      if (chunk.length > 1) left.unshift(...chunk.map((item) => ({ item, bytes: SERVER_LIMITS.bodyBytes })));
      else
        outcomes.push({
          ok: false,
          status: error.status,
          error: { code: error.code, message: error.message },
        });
    }
  }
  return outcomes;
}
