import { describe, expect, it } from 'vitest';
import {
  controlOfSlotItem,
  itemsOfStamp,
  QUEUE_SLOTS_MAX,
  SLOT_ITEMS_MAX,
  SLOTS_PER_ITEM,
  slotItemName,
  slotSpread,
} from '#domain/queue-limits';

describe('the spread of a concurrency limit’s slots', () => {
  it('gives every item its share: the shares add up to the limit, 20 at most up to 1,000, 50 items at most', () => {
    for (const max of [1, 2, 19, 20, 21, 45, 60, 999, 1_000, 1_001, 2_345, QUEUE_SLOTS_MAX]) {
      const { quotas } = slotSpread(max, 2);
      expect(quotas.reduce((a, b) => a + b, 0)).toBe(max);
      expect(quotas.length).toBeLessThanOrEqual(SLOT_ITEMS_MAX);
      expect(Math.max(...quotas) - Math.min(...quotas)).toBeLessThanOrEqual(1);
      if (max <= SLOTS_PER_ITEM * SLOT_ITEMS_MAX)
        expect(Math.max(...quotas)).toBeLessThanOrEqual(SLOTS_PER_ITEM);
    }
    expect(slotSpread(45, 2).quotas).toEqual([15, 15, 15]);
    expect(slotSpread(QUEUE_SLOTS_MAX, 2).quotas).toHaveLength(SLOT_ITEMS_MAX);
  });

  it('keeps a limit of 20 or less, and every limit in layout 1, in one item without a stamp', () => {
    expect(slotSpread(20, 2)).toEqual({ max: 20, quotas: [20] });
    expect(slotSpread(4_000, 1)).toEqual({ max: 4_000, quotas: [4_000] });
  });

  it('stamps a spread with its items and its limit, which a spread of another limit does not share', () => {
    expect(slotSpread(45, 2).stamp).toBe('3/45');
    expect(slotSpread(46, 2).stamp).not.toBe(slotSpread(45, 2).stamp);
    expect(itemsOfStamp('3/45')).toBe(3);
    expect(itemsOfStamp('3/moving')).toBe(3);
    for (const unreadable of [undefined, '', 'x/1', '0/5', '51/5', '2.5/5'])
      expect(itemsOfStamp(unreadable)).toBe(1);
  });

  it('names the first item after its control, the others apart, for queues and keys alike', () => {
    for (const control of ['q', 'q/key/abc']) {
      expect(slotItemName(control, 0)).toBe(control);
      expect(slotItemName(control, 7)).toBe(`${control}/slots/7`);
      for (const i of [0, 7]) expect(controlOfSlotItem(slotItemName(control, i))).toBe(control);
    }
  });
});
