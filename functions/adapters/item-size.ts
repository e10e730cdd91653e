/**
 * The size DynamoDB bills an item at, by the rules of the developer guide ("Item sizes and formats",
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html): each attribute's
 * name in UTF-8 bytes plus its value's size, where
 * - a string or binary is its length in bytes (UTF-8 for strings);
 * - a number is about one byte per two significant digits, plus one;
 * - a boolean or null is one byte;
 * - a list or map is 3 bytes, plus one byte and the size of each element (a map's keys count as names);
 * - a set is the sum of its elements' sizes.
 *
 * Values are the SDK's marshalled `AttributeValue`s (`{ S: '…' }`, `{ N: '…' }`, …).
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');

/** Bytes of a number: its significant digits (leading and trailing zeros dropped), two to a byte, plus one. */
export function numberSize(text: string): number {
  const digits = text
    .replace(/^[-+]/, '')
    .replace(/[eE].*$/, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

export function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + utf8(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + b.byteLength, 0);
  if (value.L !== undefined) return value.L.reduce((sum, v) => sum + 1 + valueSize(v), 3);
  if (value.M !== undefined)
    return Object.entries(value.M).reduce((sum, [name, v]) => sum + 1 + utf8(name) + valueSize(v), 3);
  return 0;
}

/** An item's billed size in bytes; 0 for no item. */
export function itemSize(item: Readonly<Record<string, AttributeValue>> | undefined): number {
  if (!item) return 0;
  return Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + valueSize(value), 0);
}

/** Write units of writing an item of `bytes` (1 KB each, at least one). */
export const writeUnitsFor = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));

/** Read units of reading `bytes` (4 KB each, at least one), halved when eventually consistent. */
export const readUnitsFor = (bytes: number, consistent: boolean) =>
  Math.max(1, Math.ceil(bytes / 4096)) * (consistent ? 1 : 0.5);
