import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { payloadAttributes, payloadJsonOf } from '#adapters/task-items';

describe('payload attributes', () => {
  it('keeps a short payload as JSON text', () => {
    expect(payloadAttributes('{"a":1}')).toEqual({ payload: '{"a":1}' });
  });

  it('deflates a long payload when that is smaller, and reads it back as the same text', () => {
    const json = JSON.stringify({
      rows: Array.from({ length: 100 }, (_, i) => ({ id: i, state: 'pending' })),
    });
    const stored = payloadAttributes(json);
    expect('payloadDeflated' in stored).toBe(true);
    if (!('payloadDeflated' in stored)) return;
    expect(stored.payloadDeflated.length).toBeLessThan(json.length / 4);
    expect(payloadJsonOf({ taskId: 't', ...stored })).toBe(json);
  });

  it('random base64 text, the hardest JSON for deflate, still shrinks by about a quarter', () => {
    const json = JSON.stringify(randomBytes(3_000).toString('base64'));
    const stored = payloadAttributes(json);
    if (!('payloadDeflated' in stored)) throw new Error('stored as text');
    expect(stored.payloadDeflated.length).toBeLessThan(json.length * 0.8);
    expect(payloadJsonOf({ taskId: 't', ...stored })).toBe(json);
  });

  it('an item with neither attribute has no payload', () => {
    expect(payloadJsonOf({ taskId: 't' })).toBeUndefined();
  });
});
