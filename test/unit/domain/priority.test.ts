import { describe, expect, it } from 'vitest';
import { claimOrder, DEFAULT_PRIORITY_WEIGHTS, PRIORITIES, promote } from '#domain/priority';

describe('claim order', () => {
  it.each([
    [0, 'critical'],
    [0.69, 'critical'],
    [0.7, 'high'],
    [0.84, 'high'],
    [0.85, 'normal'],
    [0.94, 'normal'],
    [0.95, 'low'],
    [0.999, 'low'],
  ])('random %f looks at %s first', (random, first) => {
    const order = claimOrder(random);
    expect(order[0]).toBe(first);
    expect([...order].sort()).toEqual([...PRIORITIES].sort());
  });

  it('after the drawn tier, the others follow most urgent first', () => {
    expect(claimOrder(0.99)).toEqual(['low', 'critical', 'high', 'normal']);
    expect(claimOrder(0.9)).toEqual(['normal', 'critical', 'high', 'low']);
  });

  it('gives the low tier its weighted share of first looks', () => {
    const draws = 10_000;
    let lowFirst = 0;
    for (let i = 0; i < draws; i++) if (claimOrder((i + 0.5) / draws)[0] === 'low') lowFirst++;
    const total = Object.values(DEFAULT_PRIORITY_WEIGHTS).reduce((a, b) => a + b, 0);
    expect(lowFirst / draws).toBeCloseTo(DEFAULT_PRIORITY_WEIGHTS.low / total, 3);
  });

  it('falls back to strict order when every weight is zero', () => {
    expect(claimOrder(0.5, { critical: 0, high: 0, normal: 0, low: 0 })).toEqual([...PRIORITIES]);
  });

  it('promotes one step, critical stays critical', () => {
    expect(PRIORITIES.map(promote)).toEqual(['critical', 'critical', 'high', 'normal']);
  });
});
