/**
 * Cron ranges that wrap past a field's maximum (`20-2` hours, `FRI-MON`), as AWS's own cron reference uses them:
 * each field keeps its own meaning, 20-23 then 0-2. Fire times are checked against a brute force over every
 * minute, which knows nothing of the parser.
 */
import { describe, expect, it } from 'vitest';
import { nextFireTimes, parseScheduleExpression } from '#domain/schedule-expression';

const MINUTE = 60_000;

/** Every minute from `after` (exclusive) that `matches`, up to `limit` of them, scanning at most `days`. */
function bruteForce(after: number, limit: number, days: number, matches: (date: Date) => boolean): number[] {
  const found: number[] = [];
  const start = Math.floor(after / MINUTE) * MINUTE + MINUTE;
  for (let t = start; t < start + days * 86_400_000 && found.length < limit; t += MINUTE) {
    if (matches(new Date(t))) found.push(t);
  }
  return found;
}

const inSet = (values: readonly number[]) => (value: number) => values.includes(value);

// Each case gives the expected meaning field by field, written out by hand (getUTCDay: 0 = Sunday).
const cases: [string, (d: Date) => boolean][] = [
  [
    'cron(0/30 20-2 ? * MON-FRI *)',
    (d) =>
      d.getUTCMinutes() % 30 === 0 &&
      inSet([20, 21, 22, 23, 0, 1, 2])(d.getUTCHours()) &&
      inSet([1, 2, 3, 4, 5])(d.getUTCDay()),
  ],
  [
    'cron(15 9 ? * FRI-MON *)',
    (d) => d.getUTCMinutes() === 15 && d.getUTCHours() === 9 && inSet([5, 6, 0, 1])(d.getUTCDay()),
  ],
  ['cron(0 22-1/2 * * ? *)', (d) => d.getUTCMinutes() === 0 && inSet([22, 0])(d.getUTCHours())],
  ['cron(0 20-2/3 * * ? *)', (d) => d.getUTCMinutes() === 0 && inSet([20, 23, 2])(d.getUTCHours())],
  [
    'cron(5 0 29-2 * ? *)',
    (d) => d.getUTCMinutes() === 5 && d.getUTCHours() === 0 && inSet([29, 30, 31, 1, 2])(d.getUTCDate()),
  ],
  [
    'cron(0 12 1 NOV-FEB ? *)',
    (d) =>
      d.getUTCMinutes() === 0 &&
      d.getUTCHours() === 12 &&
      d.getUTCDate() === 1 &&
      inSet([10, 11, 0, 1])(d.getUTCMonth()),
  ],
  [
    'cron(0 6 ? * SAT-SUN *)',
    (d) => d.getUTCMinutes() === 0 && d.getUTCHours() === 6 && inSet([6, 0])(d.getUTCDay()),
  ],
];

describe('cron ranges that wrap', () => {
  it.each(cases)('%s fires as the brute force says', (expression, matches) => {
    const after = Date.UTC(2026, 9, 27, 13, 7);
    const expected = bruteForce(after, 40, 500, matches);
    expect(expected.length).toBeGreaterThan(0);
    expect(nextFireTimes(expression, { after, limit: expected.length })).toEqual(expected);
  });

  it('keeps each field’s values in order, the wrapped part included', () => {
    const parsed = parseScheduleExpression('cron(0/30 20-2 ? * MON-FRI *)');
    expect(parsed.kind === 'cron' && parsed.hours).toEqual([0, 1, 2, 20, 21, 22, 23]);
  });

  it.each([
    ['cron(50-10 * * * ? *)', 'range 50-10 of minutes runs backwards'],
    ['cron(0 0 1 1 ? 2030-2025)', 'range 2030-2025 of year runs backwards'],
  ])('%s still runs backwards: minutes and years do not wrap', (expression, reason) => {
    expect(() => parseScheduleExpression(expression)).toThrow(reason);
  });
});
