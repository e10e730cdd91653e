/**
 * The SDK keeps its own copy of the server's limits (it imports nothing from the server): these tie each figure to
 * the server's, so neither side can move alone, and check that sizes are measured as the server measures them.
 */
import { describe, expect, it } from 'vitest';
import { BATCH_LIMITS } from '#core/batches';
import { CHILDREN_LIMIT } from '#core/children';
import { checkpointsSchema } from '#core/sessions';
import { PROGRESS_LIMITS } from '#domain/progress';
import { RATE_LIMIT_BOUNDS } from '#domain/rate-limits';
import { LIMITS, MAX_JSON_DEPTH } from '#domain/task-spec';
import { WAITPOINT_LIMITS } from '#domain/waitpoint';
import { ITEMS_BUDGET_BYTES, jsonBytes, SERVER_LIMITS, takeWithinBudget } from '#sdk/limits';
import { MAX_BODY_BYTES } from '../../../functions/http/http-api';

describe('SERVER_LIMITS', () => {
  it('are the server’s own figures', () => {
    expect(SERVER_LIMITS.bodyBytes).toBe(MAX_BODY_BYTES);
    expect(SERVER_LIMITS.resultBytes).toBe(LIMITS.resultBytes);
    expect(SERVER_LIMITS.payloadBytes).toBe(LIMITS.payloadBytes);
    expect(SERVER_LIMITS.checkpointBytes).toBe(LIMITS.checkpointBytes);
    expect(SERVER_LIMITS.completionsPerCall).toBe(BATCH_LIMITS.complete);
    expect(SERVER_LIMITS.tasksPerSubmit).toBe(BATCH_LIMITS.submit);
    expect(SERVER_LIMITS.tasksPerSubmit).toBe(CHILDREN_LIMIT);
    expect(SERVER_LIMITS.tasksPerClaim).toBe(LIMITS.claimMax);
    expect(SERVER_LIMITS.errorMessageChars).toBe(LIMITS.errorMessageChars);
    expect(SERVER_LIMITS.jsonDepth).toBe(MAX_JSON_DEPTH);
    expect(SERVER_LIMITS.timeoutSeconds).toBe(LIMITS.timeoutSeconds);
    expect(SERVER_LIMITS.snoozeSeconds).toBe(LIMITS.snoozeSeconds);
    expect(SERVER_LIMITS.waitSeconds).toBe(WAITPOINT_LIMITS.timeoutSeconds);
    expect(SERVER_LIMITS.progressDataBytes).toBe(PROGRESS_LIMITS.dataBytes);
    expect(SERVER_LIMITS.progressMessageChars).toBe(PROGRESS_LIMITS.messageChars);
    expect(SERVER_LIMITS.progressPerCall).toBe(PROGRESS_LIMITS.perCall);
    expect(SERVER_LIMITS.rateLimitsPerTask).toBe(RATE_LIMIT_BOUNDS.perTask);
    expect(SERVER_LIMITS.rateUnits).toBe(RATE_LIMIT_BOUNDS.units);
    const checkpoints = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        taskId: `t_${String.fromCharCode(97 + (i % 26), 97 + Math.floor(i / 26)).padStart(26, 'a')}`,
        leaseEpoch: 1,
        checkpoint: i,
      }));
    expect(checkpointsSchema.safeParse(checkpoints(SERVER_LIMITS.checkpointsPerHeartbeat)).success).toBe(
      true,
    );
    expect(checkpointsSchema.safeParse(checkpoints(SERVER_LIMITS.checkpointsPerHeartbeat + 1)).success).toBe(
      false,
    );
  });

  it('leave room for a result of the largest size in a completion of its own', () => {
    const single = { leaseEpoch: Number.MAX_SAFE_INTEGER, result: 'x'.repeat(LIMITS.resultBytes - 2) };
    expect(jsonBytes(single)).toBeLessThanOrEqual(ITEMS_BUDGET_BYTES);
  });
});

describe('jsonBytes', () => {
  it('counts UTF-8 bytes of the JSON, escapes, multi-byte characters and surrogate pairs included', () => {
    for (const value of [
      'plain',
      '"quoted"\n\u0001',
      'é€',
      '🦀 and 😀',
      '\ud800 lone',
      { k: ['ü', 1, null] },
    ]) {
      expect(jsonBytes(value)).toBe(Buffer.byteLength(JSON.stringify(value), 'utf8'));
    }
  });

  it('refuses what JSON cannot carry', () => {
    expect(() => jsonBytes(10n)).toThrow(TypeError);
    expect(() => jsonBytes(() => 1)).toThrow(TypeError);
  });
});

describe('takeWithinBudget', () => {
  it('takes up to the item count and the byte budget, always at least one, from the front', () => {
    const items = [150_000, 150_000, 150_000, 5, 400_000, 1];
    expect(takeWithinBudget(items, (n) => n, 10)).toEqual([150_000, 150_000]);
    expect(takeWithinBudget(items, (n) => n, 2)).toEqual([150_000, 5]);
    expect(takeWithinBudget(items, (n) => n, 10)).toEqual([400_000]);
    expect(takeWithinBudget(items, (n) => n, 10)).toEqual([1]);
    expect(items).toEqual([]);
  });
});
