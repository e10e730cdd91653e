import { unmarshall } from '@aws-sdk/util-dynamodb';

const ATTRIBUTE_TYPES = new Set(['S', 'N', 'B', 'BOOL', 'NULL', 'M', 'L', 'SS', 'NS', 'BS']);

/** An item (or a map of expression values) as plain values, whether it comes marshalled (`{ S: "x" }`) or not. */
export function plainItem(item: Record<string, unknown>): Record<string, unknown> {
  const marshalled = Object.values(item).every((value) => {
    const keys = typeof value === 'object' && value !== null ? Object.keys(value) : [];
    return keys.length === 1 && ATTRIBUTE_TYPES.has(keys[0] ?? '');
  });
  return marshalled ? unmarshall(item as Record<string, never>) : item;
}
