import { describe, expect, it } from 'vitest';
import { PayloadTooLargeError, ValidationError } from '#domain/errors';
import { LIMITS, parseTaskSpec } from '#domain/task-spec';

const valid = { queue: 'emails', payload: { to: 'a@example.com' } };

describe('parseTaskSpec', () => {
  it('applies the documented defaults', () => {
    const spec = parseTaskSpec(valid);
    expect(spec).toMatchObject({
      queue: 'emails',
      priority: 'normal',
      timeoutSeconds: 900,
      delaySeconds: 0,
      retryPolicy: { maxAttempts: 3, backoffBaseSeconds: 2, backoffMaxSeconds: 3_600 },
    });
    expect(spec.payloadJson).toBe('{"to":"a@example.com"}');
    expect(spec.payloadBytes).toBe(22);
  });

  it.each([
    ['missing queue', { payload: 1 }, /queue/],
    ['bad queue name', { queue: 'has space', payload: 1 }, /queue/],
    ['queue name too long', { queue: 'q'.repeat(49), payload: 1 }, /queue/],
    ['missing payload', { queue: 'q' }, /payload/],
    ['unknown priority', { ...valid, priority: 'urgent' }, /priority/],
    ['fractional attempts', { ...valid, maxAttempts: 1.5 }, /maxAttempts/],
    ['zero attempts', { ...valid, maxAttempts: 0 }, /maxAttempts/],
    ['too many attempts', { ...valid, maxAttempts: 101 }, /maxAttempts/],
    ['timeout zero', { ...valid, timeoutSeconds: 0 }, /timeoutSeconds/],
    ['timeout over 12 h', { ...valid, timeoutSeconds: 43_201 }, /timeoutSeconds/],
    ['negative delay', { ...valid, delaySeconds: -1 }, /delaySeconds/],
    ['delay over 7 days', { ...valid, delaySeconds: 604_801 }, /delaySeconds/],
    ['unknown field', { ...valid, owner: 'me' }, /owner|unrecognized/i],
    ['server-owned field', { ...valid, status: 'succeeded' }, /status|unrecognized/i],
    ['key with spaces', { ...valid, idempotencyKey: 'a b' }, /idempotencyKey/],
    ['key too long', { ...valid, idempotencyKey: 'k'.repeat(256) }, /idempotencyKey/],
    [
      'backoff max below base',
      { ...valid, backoffBaseSeconds: 10, backoffMaxSeconds: 5 },
      /backoffMaxSeconds/,
    ],
    ['not an object', 'hello', /body|expected object/i],
    ['ttl zero', { ...valid, ttlSeconds: 0 }, /ttlSeconds/],
    ['ttl over 14 days', { ...valid, ttlSeconds: LIMITS.ttlSeconds + 1 }, /ttlSeconds/],
    ['expiry without an offset', { ...valid, expiresAt: '2030-01-01T00:00:00' }, /expiresAt/],
    ['expiry as a number', { ...valid, expiresAt: 1_900_000_000_000 }, /expiresAt/],
    ['both expiry forms', { ...valid, ttlSeconds: 5, expiresAt: '2030-01-01T00:00:00Z' }, /not both/],
    ['an onFailure naming itself', { ...valid, onFailure: { ...valid, idempotencyKey: 'k' } }, /onFailure/],
    ['a nested onFailure', { ...valid, onFailure: { ...valid, onFailure: valid } }, /onFailure/],
    ['an onFailure without a queue', { ...valid, onFailure: { payload: 1 } }, /onFailure.queue/],
  ])('rejects %s', (_, input, message) => {
    expect(() => parseTaskSpec(input)).toThrow(ValidationError);
    expect(() => parseTaskSpec(input)).toThrow(message);
  });

  it('takes a deadline to start in either form, and an onFailure as JSON', () => {
    expect(parseTaskSpec({ ...valid, ttlSeconds: 60 }).expiry).toEqual({ ttlSeconds: 60 });
    expect(parseTaskSpec({ ...valid, expiresAt: '2030-01-01T01:00:00+01:00' }).expiry).toEqual({
      at: Date.parse('2030-01-01T00:00:00Z'),
    });
    const spec = parseTaskSpec({ ...valid, onFailure: { queue: 'undo', payload: { x: 1 } } });
    expect(JSON.parse(spec.onFailureJson ?? '')).toMatchObject({ queue: 'undo', payload: { x: 1 } });
    const big = { ...valid, onFailure: { queue: 'undo', payload: 'x'.repeat(LIMITS.onFailureBytes) } };
    expect(() => parseTaskSpec(big)).toThrow(PayloadTooLargeError);
  });

  it('accepts a payload of exactly the limit and rejects one byte more with 413', () => {
    // A JSON string costs two quote bytes.
    const atLimit = 'x'.repeat(LIMITS.payloadBytes - 2);
    expect(parseTaskSpec({ queue: 'q', payload: atLimit }).payloadBytes).toBe(LIMITS.payloadBytes);
    const over = () => parseTaskSpec({ queue: 'q', payload: `${atLimit}x` });
    expect(over).toThrow(PayloadTooLargeError);
    try {
      over();
    } catch (error) {
      expect((error as PayloadTooLargeError).statusCode).toBe(413);
    }
  });

  it('counts payload size in UTF-8 bytes, not characters', () => {
    expect(parseTaskSpec({ queue: 'q', payload: 'é' }).payloadBytes).toBe(4);
  });

  it('takes a debounce within its bounds, its longest wait a day unless given', () => {
    expect(
      parseTaskSpec({ ...valid, debounce: { key: 'issue/42:a@b+c=d-e_f.g', windowSeconds: 1 } }).debounce,
    ).toEqual({
      key: 'issue/42:a@b+c=d-e_f.g',
      windowSeconds: 1,
      maxWaitSeconds: 86_400,
    });
    expect(
      parseTaskSpec({
        ...valid,
        debounce: { key: 'k'.repeat(128), windowSeconds: 3_600, maxWaitSeconds: 3_600 },
      }).debounce?.maxWaitSeconds,
    ).toBe(3_600);
  });

  it.each([
    ['a window of 0', { key: 'k', windowSeconds: 0 }, {}, /debounce\.windowSeconds/],
    ['a window over an hour', { key: 'k', windowSeconds: 3_601 }, {}, /debounce\.windowSeconds/],
    [
      'a longest wait below the window',
      { key: 'k', windowSeconds: 60, maxWaitSeconds: 59 },
      {},
      /maxWaitSeconds/,
    ],
    [
      'a longest wait over a day',
      { key: 'k', windowSeconds: 60, maxWaitSeconds: 86_401 },
      {},
      /maxWaitSeconds/,
    ],
    ['a key with #', { key: 'a#b', windowSeconds: 1 }, {}, /debounce\.key/],
    ['a key over 128', { key: 'k'.repeat(129), windowSeconds: 1 }, {}, /debounce\.key/],
    ['with a delay', { key: 'k', windowSeconds: 1 }, { delaySeconds: 5 }, /not with delaySeconds/],
    [
      'with a moment to expire',
      { key: 'k', windowSeconds: 1 },
      { expiresAt: '2030-01-01T00:00:00Z' },
      /not with expiresAt/,
    ],
    [
      'with dependencies',
      { key: 'k', windowSeconds: 1 },
      { dependsOn: [`t_${'a'.repeat(26)}`] },
      /not with dependsOn/,
    ],
  ])('refuses a debounce %s', (_, debounce, extra, message) => {
    expect(() => parseTaskSpec({ ...valid, ...extra, debounce })).toThrow(ValidationError);
    expect(() => parseTaskSpec({ ...valid, ...extra, debounce })).toThrow(message);
  });
});
