import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { itemSize, numberSize, readUnitsFor, valueSize, writeUnitsFor } from '#adapters/item-size';

describe('item sizes as DynamoDB bills them', () => {
  it('counts a string in UTF-8 bytes and each attribute name', () => {
    expect(itemSize(marshall({ pk: 'abc' }))).toBe(2 + 3);
    // "é" is two bytes in UTF-8, "€" three.
    expect(itemSize(marshall({ name: 'é€' }))).toBe(4 + 5);
  });

  it('sizes numbers by their significant digits, two to a byte, plus one', () => {
    expect(numberSize('7')).toBe(2);
    expect(numberSize('12')).toBe(2);
    expect(numberSize('123')).toBe(3);
    // Leading and trailing zeros are not significant.
    expect(numberSize('1000000')).toBe(2);
    expect(numberSize('0.0012')).toBe(2);
    expect(numberSize('-1795732702756')).toBe(8);
  });

  it('sizes lists and maps with 3 bytes of their own and one per element; sets by their elements', () => {
    expect(valueSize({ L: [{ S: 'ab' }, { BOOL: true }] })).toBe(3 + 1 + 2 + 1 + 1);
    expect(valueSize({ M: { k: { S: 'v' } } })).toBe(3 + 1 + 1 + 1);
    expect(valueSize({ M: {} })).toBe(3);
    expect(valueSize({ SS: ['ab', 'c'] })).toBe(3);
    expect(valueSize({ NULL: true })).toBe(1);
    expect(valueSize({ B: new Uint8Array(10) })).toBe(10);
  });

  it('turns bytes into units: 1 KB a write unit, 4 KB a read unit, halved when eventually consistent', () => {
    expect(writeUnitsFor(0)).toBe(1);
    expect(writeUnitsFor(1024)).toBe(1);
    expect(writeUnitsFor(1025)).toBe(2);
    expect(readUnitsFor(4096, true)).toBe(1);
    expect(readUnitsFor(4097, true)).toBe(2);
    expect(readUnitsFor(5000, false)).toBe(1);
    expect(readUnitsFor(0, false)).toBe(0.5);
  });
});
