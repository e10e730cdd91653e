import { describe, expect, it } from 'vitest';
import { HINT_PAYLOAD_BYTES, hintPayloadOf } from '#domain/hint';

const task = { specHash: 'spec' };

describe('the payload a hint carries', () => {
  it('is a small payload kept in DynamoDB, with its specification', () => {
    const json = JSON.stringify({ text: 'x'.repeat(1_000) });
    expect(hintPayloadOf(task, json)).toEqual({ specHash: 'spec', json });
    expect(hintPayloadOf({ ...task, payloadInObject: true }, json)).toBeUndefined();
  });

  it('is bounded by its text as the hint holds it, escaped: ten hints stay one SQS request', () => {
    // Under the bound as text, over it once escaped inside the hint (each quote and backslash doubles).
    const quoted = JSON.stringify({ text: '"'.repeat(2_000) });
    expect(Buffer.byteLength(quoted)).toBeLessThan(HINT_PAYLOAD_BYTES);
    expect(hintPayloadOf(task, quoted)).toBeUndefined();
    const plain = JSON.stringify({ text: 'y'.repeat(HINT_PAYLOAD_BYTES - 20) });
    expect(Buffer.byteLength(JSON.stringify(plain))).toBeLessThanOrEqual(HINT_PAYLOAD_BYTES);
    expect(hintPayloadOf(task, plain)).toBeDefined();
  });
});
