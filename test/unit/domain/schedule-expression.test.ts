import { describe, expect, it } from 'vitest';
import {
  nextFireTime,
  nextFireTimes,
  parseScheduleExpression,
  ScheduleExpressionError,
  UnknownTimeZoneError,
  validateScheduleExpression,
} from '#domain/schedule-expression';

const at = (iso: string): number => Date.parse(iso);
const isoTimes = (instants: number[]): string[] => instants.map((instant) => new Date(instant).toISOString());

describe('schedule expression syntax', () => {
  it.each([
    // cron: the documented fields and wildcards
    'cron(0 12 * * ? *)',
    'cron(0 9 ? * MON-FRI *)',
    'cron(0/15 * * * ? *)',
    'cron(*/5 * * * ? *)',
    'cron(10-50/10 * * * ? *)',
    'cron(0 8,12,18 * * ? *)',
    'cron(0 0 1,15 * ? *)',
    'cron(0 0 1/10 * ? *)',
    'cron(0 0 ? JAN,JUL * *)',
    'cron(0 0 1 JAN-MAR ? *)',
    'cron(0 0 1 */3 ? *)',
    'cron(0 0 ? * SUN,SAT *)',
    'cron(0 0 ? * 1,7 *)',
    'cron(0 0 ? * * *)',
    'cron(59 23 31 12 ? 2199)',
    'cron(0 0 1 1 ? 1970)',
    'cron(0 0 1 1 ? 2030-2040/2)',
    'cron(0 0 L * ? *)',
    'cron(0 0 LW * ? *)',
    'cron(0 10 15W * ? *)',
    'cron(0 10 1W * ? *)',
    'cron(0 10 ? * L *)',
    'cron(0 10 ? * 5L *)',
    'cron(0 10 ? * FRIL *)',
    'cron(0 10 ? * 6#3 *)',
    'cron(0 10 ? * FRI#5 *)',
    // rate: singular for 1, plural above
    'rate(1 minute)',
    'rate(5 minutes)',
    'rate(1 hour)',
    'rate(12 hours)',
    'rate(1 day)',
    'rate(7 days)',
    // at: a real calendar date and time
    'at(2027-06-15T09:30:00)',
    'at(2028-02-29T23:59:59)',
  ])('accepts %s', (expression) => {
    // Act / Assess
    expect(() => validateScheduleExpression(expression)).not.toThrow();
  });

  it.each([
    // cron: shape
    ['cron(0 12 * * ?)', 'expected 6 fields'],
    ['cron(0 0 12 * * ? *)', 'expected 6 fields'],
    ['cron(0  12 * * ? *)', 'expected 6 fields separated by single spaces'],
    ['cron()', 'expected 6 fields'],
    ['cron 0 12 * * ? *', 'expected cron('],
    [' cron(0 12 * * ? *)', 'expected cron('],
    ['every(5 minutes)', 'expected cron('],
    // cron: day-of-month and day-of-week, exactly one of them "?"
    ['cron(0 12 * * * *)', 'one of day-of-month and day-of-week must be "?"'],
    ['cron(0 12 ? * ? *)', 'cannot both be "?"'],
    ['cron(0 12 1 * MON *)', 'one of day-of-month and day-of-week must be "?"'],
    // cron: ranges
    ['cron(60 12 * * ? *)', 'minutes value 60 is out of range 0-59'],
    ['cron(0 24 * * ? *)', 'hours value 24 is out of range 0-23'],
    ['cron(0 0 0 * ? *)', 'day-of-month value 0 is out of range 1-31'],
    ['cron(0 0 32 * ? *)', 'day-of-month value 32 is out of range 1-31'],
    ['cron(0 0 1 13 ? *)', 'month value 13 is out of range 1-12 or JAN-DEC'],
    ['cron(0 0 1 0 ? *)', 'month value 0 is out of range'],
    ['cron(0 0 ? * 0 *)', 'day-of-week value 0 is out of range 1-7 or SUN-SAT'],
    ['cron(0 0 ? * 8 *)', 'day-of-week value 8 is out of range'],
    ['cron(0 0 1 1 ? 1969)', 'year value 1969 is out of range 1970-2199'],
    ['cron(0 0 1 1 ? 2200)', 'year value 2200 is out of range'],
    ['cron(50-10 * * * ? *)', 'range 50-10 of minutes runs backwards'],
    ['cron(0 0 ? * * 2030-2025)', 'range 2030-2025 of year runs backwards'],
    // cron: steps
    ['cron(*/0 * * * ? *)', 'increment "/0" in minutes must be 1-59'],
    ['cron(*/60 * * * ? *)', 'increment "/60" in minutes must be 1-59'],
    ['cron(0/5/2 * * * ? *)', 'more than one "/"'],
    ['cron(0 0 ? * 1/2 *)', '"/" is not allowed in day-of-week'],
    // cron: names and special characters where they do not belong
    ['cron(0 0 1 JANUARY ? *)', '"JANUARY" is not a month value'],
    ['cron(0 0 1 jan ? *)', '"jan" is not a month value'],
    ['cron(0 0 ? * MONDAY *)', '"MONDAY" is not a day-of-week value'],
    ['cron(0 0 ? MON * *)', '"MON" is not a month value'],
    ['cron(0 0 1,L * ? *)', '"L" and "W" stand alone in day-of-month'],
    ['cron(0 0 1-15W * ? *)', '"L" and "W" stand alone in day-of-month'],
    ['cron(0 0 32W * ? *)', 'day-of-month value 32 is out of range'],
    ['cron(0 0 3#2 * ? *)', '"#" is only allowed in day-of-week'],
    ['cron(0 0 ? * 2W *)', '"2W" is not a day-of-week value'],
    ['cron(0 0 ? * 6#6 *)', 'the occurrence after "#" must be 1-5'],
    ['cron(0 0 ? * 6#0 *)', 'the occurrence after "#" must be 1-5'],
    ['cron(0 0 ? * 3#1,6#3 *)', '"#" takes exactly one day of the week'],
    ['cron(0 0 ? * 1,5L *)', '"L" stands alone in day-of-week'],
    ['cron(0 0 ? * 8L *)', 'day-of-week value 8 is out of range'],
    ['cron(0 0 L * L *)', 'one of day-of-month and day-of-week must be "?"'],
    ['cron(0 0 L-2 * ? *)', '"L" and "W" stand alone in day-of-month'],
    ['cron(a 0 * * ? *)', '"a" is not a minutes value'],
    ['cron(0 0 1--2 * ? *)', '"1--2" is not a range of day-of-month'],
    // rate
    ['rate(0 minutes)', 'rate value must be a positive whole number, got 0'],
    ['rate(05 minutes)', 'rate value must be a positive whole number, got 05'],
    ['rate(1 minutes)', 'a rate of 1 takes the singular unit: rate(1 minute)'],
    ['rate(1 hours)', 'a rate of 1 takes the singular unit: rate(1 hour)'],
    ['rate(5 hour)', 'a rate above 1 takes the plural unit: rate(5 hours)'],
    ['rate(2 day)', 'a rate above 1 takes the plural unit: rate(2 days)'],
    ['rate(5 seconds)', 'expected rate(value unit)'],
    ['rate(1 week)', 'expected rate(value unit)'],
    ['rate(-5 minutes)', 'expected rate(value unit)'],
    ['rate(1.5 hours)', 'expected rate(value unit)'],
    ['rate(5 Minutes)', 'expected rate(value unit)'],
    ['rate(5minutes)', 'expected rate(value unit)'],
    // at
    ['at(2027-06-15 09:30:00)', 'expected at(yyyy-mm-ddThh:mm:ss)'],
    ['at(2027-06-15T09:30)', 'expected at(yyyy-mm-ddThh:mm:ss)'],
    ['at(2027-06-15T09:30:00Z)', 'expected at(yyyy-mm-ddThh:mm:ss)'],
    ['at(2027-06-15T09:30:00.000)', 'expected at(yyyy-mm-ddThh:mm:ss)'],
    ['at(2027-13-01T00:00:00)', 'month 13 is out of range 1-12'],
    ['at(2027-02-29T00:00:00)', '2027-02-29 is not a calendar date'],
    ['at(2027-04-31T00:00:00)', '2027-04-31 is not a calendar date'],
    ['at(2027-06-15T24:00:00)', '24:00:00 is not a time of day'],
    ['at(2027-06-15T09:60:00)', '09:60:00 is not a time of day'],
    ['at(1969-12-31T23:59:59)', 'year 1969 is before 1970'],
    ['', 'expected cron('],
  ])('rejects %s: %s', (expression, reason) => {
    // Act
    const act = () => parseScheduleExpression(expression);

    // Assess
    expect(act).toThrow(ScheduleExpressionError);
    expect(act).toThrow(`invalid schedule expression "${expression}": `);
    expect(act).toThrow(reason);
  });

  it('names the schedule and the expression in a synth-time error, in lower case', () => {
    // Prepare
    const expression = 'cron(0 12 * * * *)';

    // Act
    const act = () => validateScheduleExpression(expression, 'UTC', 'nightly-report');

    // Assess
    expect(act).toThrow(
      'schedule nightly-report: invalid schedule expression "cron(0 12 * * * *)": one of day-of-month and ' +
        'day-of-week must be "?" (they cannot both be set, nor both be "*")',
    );
  });

  it.each(['Europe/Paris', 'America/New_York', 'UTC', 'Etc/GMT+5', 'America/Argentina/Buenos_Aires'])(
    'accepts the time zone %s',
    (timeZone) => {
      expect(() => validateScheduleExpression('rate(5 minutes)', timeZone)).not.toThrow();
    },
  );

  it.each(['Mars/Olympus_Mons', 'europe/paris', '+01:00', 'GMT+1', ''])(
    'rejects the time zone "%s"',
    (timeZone) => {
      // Act
      const act = () => validateScheduleExpression('cron(0 12 * * ? *)', timeZone, 'daily');

      // Assess: the zone is named, not the expression, which is fine
      expect(act).toThrow(UnknownTimeZoneError);
      expect(act).not.toThrow(ScheduleExpressionError);
      expect(act).toThrow(
        `schedule daily: unknown time zone "${timeZone}" (expected an iana name such as Europe/Paris)`,
      );
    },
  );

  it('parses what each kind needs to fire', () => {
    expect(parseScheduleExpression('cron(0/20 9-11 ? * 6#3 2030)')).toEqual({
      kind: 'cron',
      expression: 'cron(0/20 9-11 ? * 6#3 2030)',
      minutes: [0, 20, 40],
      hours: [9, 10, 11],
      days: { kind: 'nthDayOfWeek', dayOfWeek: 6, nth: 3 },
      months: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
      years: [2030],
    });
    expect(parseScheduleExpression('rate(2 hours)')).toEqual({
      kind: 'rate',
      expression: 'rate(2 hours)',
      value: 2,
      unit: 'hour',
      intervalMs: 7_200_000,
    });
    expect(parseScheduleExpression('at(2027-06-15T09:30:05)')).toEqual({
      kind: 'at',
      expression: 'at(2027-06-15T09:30:05)',
      wallClockTime: { year: 2027, month: 6, day: 15, hour: 9, minute: 30, second: 5 },
    });
  });
});

describe('fire times', () => {
  it.each([
    {
      expression: 'cron(0 12 * * ? *)',
      timeZone: 'UTC',
      after: '2027-01-01T12:00:00Z',
      expected: ['2027-01-02T12:00:00.000Z', '2027-01-03T12:00:00.000Z', '2027-01-04T12:00:00.000Z'],
    },
    {
      // Friday 1 January 2027, then the next Monday; Paris is UTC+1 in winter.
      expression: 'cron(0 9 ? * MON-FRI *)',
      timeZone: 'Europe/Paris',
      after: '2027-01-01T00:00:00Z',
      expected: ['2027-01-01T08:00:00.000Z', '2027-01-04T08:00:00.000Z', '2027-01-05T08:00:00.000Z'],
    },
    {
      // UTC+2 in summer; Friday 2 July 2027, then Monday the 5th.
      expression: 'cron(0 9 ? * MON-FRI *)',
      timeZone: 'Europe/Paris',
      after: '2027-07-02T06:00:00Z',
      expected: ['2027-07-02T07:00:00.000Z', '2027-07-05T07:00:00.000Z', '2027-07-06T07:00:00.000Z'],
    },
    {
      expression: 'cron(0 0 L * ? *)',
      timeZone: 'UTC',
      after: '2028-01-31T00:00:00Z',
      expected: ['2028-02-29T00:00:00.000Z', '2028-03-31T00:00:00.000Z', '2028-04-30T00:00:00.000Z'],
    },
    {
      // The 15th of May 2027 is a Saturday (→ Friday 14th), of August 2027 a Sunday (→ Monday 16th).
      expression: 'cron(0 10 15W 5,8 ? 2027)',
      timeZone: 'UTC',
      after: '2027-01-01T00:00:00Z',
      expected: ['2027-05-14T10:00:00.000Z', '2027-08-16T10:00:00.000Z'],
    },
    {
      // 1 May 2027 is a Saturday: the nearest weekday in May is Monday the 3rd, not Friday 30 April.
      expression: 'cron(0 10 1W 5 ? 2027)',
      timeZone: 'UTC',
      after: '2027-01-01T00:00:00Z',
      expected: ['2027-05-03T10:00:00.000Z'],
    },
    {
      // 31 October 2027 is a Sunday: the nearest weekday in October is Friday the 29th.
      expression: 'cron(0 10 31W 10 ? 2027)',
      timeZone: 'UTC',
      after: '2027-01-01T00:00:00Z',
      expected: ['2027-10-29T10:00:00.000Z'],
    },
    {
      // 31 July 2027 is a Saturday; 30 June 2027 a Wednesday.
      expression: 'cron(0 10 LW 6,7 ? 2027)',
      timeZone: 'UTC',
      after: '2027-01-01T00:00:00Z',
      expected: ['2027-06-30T10:00:00.000Z', '2027-07-30T10:00:00.000Z'],
    },
    {
      // Third Friday: January 2027 starts on a Friday.
      expression: 'cron(0 10 ? * 6#3 *)',
      timeZone: 'UTC',
      after: '2027-01-01T00:00:00Z',
      expected: ['2027-01-15T10:00:00.000Z', '2027-02-19T10:00:00.000Z', '2027-03-19T10:00:00.000Z'],
    },
    {
      // A fifth Friday exists only in some months.
      expression: 'cron(0 10 ? * 6#5 *)',
      timeZone: 'UTC',
      after: '2027-01-01T00:00:00Z',
      expected: ['2027-01-29T10:00:00.000Z', '2027-04-30T10:00:00.000Z', '2027-07-30T10:00:00.000Z'],
    },
    {
      // Last Thursday.
      expression: 'cron(0 10 ? * 5L *)',
      timeZone: 'UTC',
      after: '2027-01-01T00:00:00Z',
      expected: ['2027-01-28T10:00:00.000Z', '2027-02-25T10:00:00.000Z', '2027-03-25T10:00:00.000Z'],
    },
    {
      // "L" alone in day-of-week is Saturday.
      expression: 'cron(0 10 ? * L *)',
      timeZone: 'UTC',
      after: '2027-01-01T00:00:00Z',
      expected: ['2027-01-02T10:00:00.000Z', '2027-01-09T10:00:00.000Z'],
    },
    {
      expression: 'cron(0 0 1 1 ? 2030)',
      timeZone: 'UTC',
      after: '2027-01-01T00:00:00Z',
      expected: ['2030-01-01T00:00:00.000Z'],
    },
    {
      expression: 'cron(0 0 31 * ? 2027)',
      timeZone: 'UTC',
      after: '2027-01-31T00:00:00Z',
      expected: ['2027-03-31T00:00:00.000Z', '2027-05-31T00:00:00.000Z', '2027-07-31T00:00:00.000Z'],
    },
    {
      // The minute of `after` itself does not fire again; the next one does.
      expression: 'cron(10-50/20 * * * ? *)',
      timeZone: 'UTC',
      after: '2027-01-01T00:10:30Z',
      expected: ['2027-01-01T00:30:00.000Z', '2027-01-01T00:50:00.000Z', '2027-01-01T01:10:00.000Z'],
    },
    {
      expression: 'cron(0 9 * * ? *)',
      timeZone: 'Asia/Kolkata',
      after: '2027-01-01T00:00:00Z',
      expected: ['2027-01-01T03:30:00.000Z', '2027-01-02T03:30:00.000Z'],
    },
  ])('$expression in $timeZone after $after', ({ expression, timeZone, after, expected }) => {
    // Act
    const fireTimes = nextFireTimes(expression, { timeZone, after: at(after), limit: expected.length + 1 });

    // Assess
    expect(isoTimes(fireTimes).slice(0, expected.length)).toEqual(expected);
  });

  it('returns nothing more once the last year of a cron has passed', () => {
    expect(
      nextFireTimes('cron(0 0 1 1 ? 2030)', { after: at('2027-01-01T00:00:00Z'), limit: 3 }),
    ).toHaveLength(1);
    expect(nextFireTime('cron(0 0 1 1 ? 2030)', { after: at('2030-01-01T00:00:00Z') })).toBeUndefined();
  });

  it('keeps a cron within its start and end dates, both included', () => {
    // Act
    const fireTimes = nextFireTimes('cron(0 12 * * ? *)', {
      after: at('2027-01-01T00:00:00Z'),
      startAt: at('2027-01-05T12:00:00Z'),
      endAt: at('2027-01-07T12:00:00Z'),
      limit: 10,
    });

    // Assess
    expect(isoTimes(fireTimes)).toEqual([
      '2027-01-05T12:00:00.000Z',
      '2027-01-06T12:00:00.000Z',
      '2027-01-07T12:00:00.000Z',
    ]);
  });

  it.each([
    {
      case: 'anchored on its start date',
      expression: 'rate(5 minutes)',
      startAt: '2027-01-01T00:02:00Z',
      after: '2027-01-01T00:10:00Z',
      expected: ['2027-01-01T00:12:00.000Z', '2027-01-01T00:17:00.000Z', '2027-01-01T00:22:00.000Z'],
    },
    {
      case: 'whose start is still ahead, starting there',
      expression: 'rate(1 hour)',
      startAt: '2027-01-01T06:30:00Z',
      after: '2027-01-01T00:00:00Z',
      expected: ['2027-01-01T06:30:00.000Z', '2027-01-01T07:30:00.000Z'],
    },
    {
      case: 'on a fire time, not repeating it',
      expression: 'rate(5 minutes)',
      startAt: '2027-01-01T00:00:00Z',
      after: '2027-01-01T00:05:00Z',
      expected: ['2027-01-01T00:10:00.000Z', '2027-01-01T00:15:00.000Z'],
    },
    {
      case: 'without a start date, from `after`',
      expression: 'rate(2 hours)',
      startAt: undefined,
      after: '2027-01-01T00:00:30Z',
      expected: ['2027-01-01T02:00:30.000Z', '2027-01-01T04:00:30.000Z'],
    },
  ])('rate(): $case', ({ expression, startAt, after, expected }) => {
    // Act
    const fireTimes = nextFireTimes(expression, {
      timeZone: 'America/New_York',
      after: at(after),
      startAt: startAt === undefined ? undefined : at(startAt),
      limit: expected.length,
    });

    // Assess
    expect(isoTimes(fireTimes)).toEqual(expected);
  });

  it('rate() stops at its end date', () => {
    const fireTimes = nextFireTimes('rate(10 minutes)', {
      after: at('2027-01-01T00:00:00Z'),
      startAt: at('2027-01-01T00:00:00Z'),
      endAt: at('2027-01-01T00:30:00Z'),
      limit: 10,
    });
    expect(isoTimes(fireTimes)).toEqual([
      '2027-01-01T00:10:00.000Z',
      '2027-01-01T00:20:00.000Z',
      '2027-01-01T00:30:00.000Z',
    ]);
  });

  it.each([
    { expression: 'at(2027-06-15T09:30:00)', timeZone: 'Asia/Tokyo', expected: '2027-06-15T00:30:00.000Z' },
    {
      expression: 'at(2027-06-15T09:30:00)',
      timeZone: 'America/New_York',
      expected: '2027-06-15T13:30:00.000Z',
    },
    { expression: 'at(2027-01-15T09:30:15)', timeZone: undefined, expected: '2027-01-15T09:30:15.000Z' },
  ])('$expression in $timeZone fires once at $expected', ({ expression, timeZone, expected }) => {
    // Act
    const fireTimes = nextFireTimes(expression, { timeZone, after: at('2027-01-01T00:00:00Z'), limit: 5 });

    // Assess
    expect(isoTimes(fireTimes)).toEqual([expected]);
  });

  it('at() does not fire again once its time has passed, and ignores start and end dates', () => {
    expect(nextFireTime('at(2027-06-15T09:30:00)', { after: at('2027-06-15T09:30:00Z') })).toBeUndefined();
    expect(
      nextFireTime('at(2027-06-15T09:30:00)', {
        after: at('2027-01-01T00:00:00Z'),
        startAt: at('2028-01-01T00:00:00Z'),
        endAt: at('2027-02-01T00:00:00Z'),
      }),
    ).toBe(at('2027-06-15T09:30:00Z'));
  });

  it('accepts an already parsed expression', () => {
    const parsed = parseScheduleExpression('cron(0 12 * * ? *)');
    expect(nextFireTime(parsed, { after: at('2027-01-01T00:00:00Z') })).toBe(at('2027-01-01T12:00:00Z'));
  });

  it.each([
    { options: { after: Number.NaN, limit: 1 }, error: 'after must be a finite epoch in milliseconds' },
    { options: { after: 0, limit: -1 }, error: 'limit must be a whole number' },
    { options: { after: 0, limit: 1.5 }, error: 'limit must be a whole number' },
    { options: { after: 0, limit: 1, timeZone: 'Nowhere/Land' }, error: 'unknown time zone "Nowhere/Land"' },
  ])('refuses options $options', ({ options, error }) => {
    expect(() => nextFireTimes('rate(5 minutes)', options)).toThrow(error);
  });

  it('returns no fire time for a limit of 0', () => {
    expect(nextFireTimes('cron(* * * * ? *)', { after: 0, limit: 0 })).toEqual([]);
  });
});

describe('daylight saving time', () => {
  it.each([
    {
      case: 'New York spring-forward: 02:30 does not exist on 2027-03-14, so that day does not fire',
      expression: 'cron(30 2 * * ? *)',
      timeZone: 'America/New_York',
      after: '2027-03-12T12:00:00Z',
      // 02:30 EST (UTC-5) on the 13th, 02:30 EDT (UTC-4) on the 15th and 16th.
      expected: ['2027-03-13T07:30:00.000Z', '2027-03-15T06:30:00.000Z', '2027-03-16T06:30:00.000Z'],
    },
    {
      case: 'New York fall-back: 01:30 happens twice on 2027-11-07 and fires once, at 01:30 EDT',
      expression: 'cron(30 1 * * ? *)',
      timeZone: 'America/New_York',
      after: '2027-11-05T12:00:00Z',
      expected: ['2027-11-06T05:30:00.000Z', '2027-11-07T05:30:00.000Z', '2027-11-08T06:30:00.000Z'],
    },
    {
      case: 'New York fall-back: every 30 minutes skips the repeated hour',
      expression: 'cron(0/30 * * * ? *)',
      timeZone: 'America/New_York',
      after: '2027-11-07T04:45:00Z',
      // 01:00 and 01:30 EDT, then 02:00 EST: 01:00 and 01:30 EST already fired an hour before.
      expected: ['2027-11-07T05:00:00.000Z', '2027-11-07T05:30:00.000Z', '2027-11-07T07:00:00.000Z'],
    },
    {
      case: 'New York fall-back: searching from inside the repeated hour',
      expression: 'cron(0/30 * * * ? *)',
      timeZone: 'America/New_York',
      after: '2027-11-07T06:10:00Z',
      expected: ['2027-11-07T07:00:00.000Z', '2027-11-07T07:30:00.000Z'],
    },
    {
      case: 'New York spring-forward: an hourly cron goes from 01:00 EST to 03:00 EDT',
      expression: 'cron(0 * * * ? *)',
      timeZone: 'America/New_York',
      after: '2027-03-14T05:30:00Z',
      expected: ['2027-03-14T06:00:00.000Z', '2027-03-14T07:00:00.000Z', '2027-03-14T08:00:00.000Z'],
    },
    {
      case: 'Berlin spring-forward: 02:30 does not exist on 2027-03-28',
      expression: 'cron(30 2 * * ? *)',
      timeZone: 'Europe/Berlin',
      after: '2027-03-26T12:00:00Z',
      // 02:30 CET (UTC+1) on the 27th, 02:30 CEST (UTC+2) from the 29th.
      expected: ['2027-03-27T01:30:00.000Z', '2027-03-29T00:30:00.000Z', '2027-03-30T00:30:00.000Z'],
    },
    {
      case: 'Berlin fall-back: 02:30 happens twice on 2027-10-31 and fires once, at 02:30 CEST',
      expression: 'cron(30 2 * * ? *)',
      timeZone: 'Europe/Berlin',
      after: '2027-10-29T12:00:00Z',
      expected: ['2027-10-30T00:30:00.000Z', '2027-10-31T00:30:00.000Z', '2027-11-01T01:30:00.000Z'],
    },
    {
      case: 'Lord Howe moves its clocks by 30 minutes: 02:15 does not exist on 2027-10-03',
      expression: 'cron(15 2 * * ? *)',
      timeZone: 'Australia/Lord_Howe',
      after: '2027-10-01T00:00:00Z',
      // 02:15 at UTC+10:30 on the 2nd, at UTC+11 from the 4th.
      expected: ['2027-10-01T15:45:00.000Z', '2027-10-03T15:15:00.000Z', '2027-10-04T15:15:00.000Z'],
    },
    {
      case: 'Santiago falls back at midnight: 23:00-23:59 of 2027-04-03 happens twice and fires once',
      expression: 'cron(0/30 * * * ? *)',
      timeZone: 'America/Santiago',
      after: '2027-04-04T02:10:00Z',
      // 23:30 at UTC-3, then 00:00 at UTC-4 on the 4th: the second 23:00 and 23:30 do not fire.
      expected: ['2027-04-04T02:30:00.000Z', '2027-04-04T04:00:00.000Z', '2027-04-04T04:30:00.000Z'],
    },
  ])('$case', ({ expression, timeZone, after, expected }) => {
    // Act
    const fireTimes = nextFireTimes(expression, { timeZone, after: at(after), limit: expected.length });

    // Assess
    expect(isoTimes(fireTimes)).toEqual(expected);
  });

  it('rate(1 day) counts 24 hours across a clock change', () => {
    // Prepare: 02:30 EST on the day before New York springs forward.
    const startAt = at('2027-03-13T07:30:00Z');

    // Act
    const fireTimes = nextFireTimes('rate(1 day)', {
      timeZone: 'America/New_York',
      startAt,
      after: startAt,
      limit: 2,
    });

    // Assess: 03:30 EDT, then 03:30 EDT again, never back to 02:30.
    expect(isoTimes(fireTimes)).toEqual(['2027-03-14T07:30:00.000Z', '2027-03-15T07:30:00.000Z']);
  });

  it.each([
    {
      case: 'inside the spring-forward gap fires moved forward by the gap (02:30 → 03:30 EDT)',
      expression: 'at(2027-03-14T02:30:00)',
      expected: '2027-03-14T07:30:00.000Z',
    },
    {
      case: 'in the repeated fall-back hour fires at the first occurrence (01:30 EDT)',
      expression: 'at(2027-11-07T01:30:00)',
      expected: '2027-11-07T05:30:00.000Z',
    },
  ])('at() $case', ({ expression, expected }) => {
    const fireTime = nextFireTime(expression, {
      timeZone: 'America/New_York',
      after: at('2027-01-01T00:00:00Z'),
    });
    expect(fireTime).toBe(at(expected));
  });
});

describe('search cost', () => {
  it.each([
    { expression: 'cron(0 0 29 2 ? *)', after: '2027-03-01T00:00:00Z', expected: '2028-02-29T00:00:00.000Z' },
    {
      expression: 'cron(0 0 1 1 ? 2199)',
      after: '2027-03-01T00:00:00Z',
      expected: '2199-01-01T00:00:00.000Z',
    },
    {
      expression: 'cron(59 23 ? * 1#5 2199)',
      after: '2027-03-01T00:00:00Z',
      expected: '2199-03-31T23:59:00.000Z',
    },
  ])(
    'finds $expected for $expression without scanning minute by minute',
    ({ expression, after, expected }) => {
      // Act
      const started = performance.now();
      const fireTime = nextFireTime(expression, { after: at(after) });
      const elapsedMs = performance.now() - started;

      // Assess
      expect(fireTime).toBe(at(expected));
      expect(elapsedMs).toBeLessThan(100);
    },
  );

  it('gives up quickly on a cron that never fires', () => {
    // Act
    const started = performance.now();
    const fireTime = nextFireTime('cron(0 0 30 2 ? *)', { timeZone: 'America/New_York', after: 0 });

    // Assess
    expect(fireTime).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(100);
  });
});
