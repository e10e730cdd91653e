/**
 * Amazon EventBridge Scheduler schedule expressions: parsing, validation and fire times.
 *
 * - `cron(minutes hours day-of-month month day-of-week year)`, evaluated in the schedule's time zone.
 * - `rate(value unit)`: fixed intervals from the schedule's start, whatever the time zone.
 * - `at(yyyy-mm-ddThh:mm:ss)`: once, at that wall-clock time in the schedule's time zone.
 *
 * Daylight saving time, as EventBridge Scheduler documents it for cron: a local time the clocks skip at
 * spring-forward does not fire that day; a local time the clocks show twice at fall-back fires once, at its
 * first occurrence. A rate() counts elapsed time (a day is 24 hours), so clock changes do not move it.
 * An at() inside a spring-forward gap fires when the clocks would show it had they not jumped, that is moved
 * forward by the length of the gap (02:30 in a 02:00→03:00 gap fires at 03:30); a repeated at() time fires
 * at its first occurrence.
 *
 * Sources: EventBridge Scheduler User Guide, "Schedule types" (cron, rate, at, time zones, DST); EventBridge
 * User Guide, "Cron expressions reference" and "Rate expressions reference"; Scheduler API reference
 * (StartDate / EndDate); AWS re:Post "How can I adjust my Amazon EventBridge schedule for daylight saving?".
 */

export type RateUnit = 'minute' | 'hour' | 'day';

/** A date and time as a clock in the schedule's time zone shows it (month 1-12). */
export interface WallClockTime {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

/** Day-of-week numbers follow EventBridge: 1 = SUN … 7 = SAT. */
export type CronDayRule =
  | { readonly kind: 'daysOfMonth'; readonly days: readonly number[] }
  | { readonly kind: 'lastDayOfMonth' }
  /** `LW`: the last Monday-to-Friday of the month. */
  | { readonly kind: 'lastWeekdayOfMonth' }
  /** `15W`: the Monday-to-Friday nearest that day, without leaving the month. */
  | { readonly kind: 'nearestWeekday'; readonly day: number }
  | { readonly kind: 'daysOfWeek'; readonly days: readonly number[] }
  /** `5L`: the last such day of the week in the month. */
  | { readonly kind: 'lastDayOfWeek'; readonly dayOfWeek: number }
  /** `6#3`: the nth such day of the week in the month. */
  | { readonly kind: 'nthDayOfWeek'; readonly dayOfWeek: number; readonly nth: number };

export type ScheduleExpression =
  | {
      readonly kind: 'cron';
      readonly expression: string;
      readonly minutes: readonly number[];
      readonly hours: readonly number[];
      readonly days: CronDayRule;
      readonly months: readonly number[];
      readonly years: readonly number[];
    }
  | {
      readonly kind: 'rate';
      readonly expression: string;
      readonly value: number;
      readonly unit: RateUnit;
      readonly intervalMs: number;
    }
  | { readonly kind: 'at'; readonly expression: string; readonly wallClockTime: WallClockTime };

export class ScheduleExpressionError extends Error {
  constructor(
    readonly expression: string,
    readonly reason: string,
    readonly scheduleName?: string,
  ) {
    const subject = scheduleName === undefined ? '' : `schedule ${scheduleName}: `;
    super(`${subject}invalid schedule expression "${expression}": ${reason}`);
    this.name = 'ScheduleExpressionError';
  }
}

/** A time zone that is not an IANA name: the expression may be fine, the zone it is read in is not. */
export class UnknownTimeZoneError extends Error {
  constructor(
    readonly timeZone: string,
    readonly scheduleName?: string,
  ) {
    const subject = scheduleName === undefined ? '' : `schedule ${scheduleName}: `;
    super(`${subject}unknown time zone "${timeZone}" (expected an iana name such as Europe/Paris)`);
    this.name = 'UnknownTimeZoneError';
  }
}

export interface FireTimeOptions {
  /** IANA name of the zone the expression is evaluated in; UTC by default. */
  readonly timeZone?: string;
  /** Only fire times strictly after this instant (ms since the epoch) count. */
  readonly after: number;
  /** The schedule's StartDate: the first fire of a rate(), no cron() fire before it. at() ignores it. */
  readonly startAt?: number;
  /** The schedule's EndDate: no fire after it. at() ignores it. */
  readonly endAt?: number;
}

export interface NextFireTimesOptions extends FireTimeOptions {
  readonly limit: number;
}

export const DEFAULT_TIME_ZONE = 'UTC';

/** Parse an expression; throws ScheduleExpressionError naming the expression and what is wrong with it. */
export function parseScheduleExpression(expression: string): ScheduleExpression {
  return naming(expression, undefined, () => parseOrThrowReason(expression));
}

/**
 * Synth-time check of an expression and its time zone; `scheduleName` is put in front of the message. A bad
 * expression is a `ScheduleExpressionError`, an unknown time zone an `UnknownTimeZoneError`.
 */
export function validateScheduleExpression(
  expression: string,
  timeZone?: string,
  scheduleName?: string,
): void {
  naming(expression, scheduleName, () => parseOrThrowReason(expression));
  if (timeZone !== undefined) assertTimeZone(timeZone, scheduleName);
}

/**
 * The fire times strictly after `after`, at most `limit` of them, in order. A rate() is anchored on `startAt`
 * (its first fire), or on `after` when there is no start, as if the schedule had been created then.
 */
export function nextFireTimes(
  expression: string | ScheduleExpression,
  options: NextFireTimesOptions,
): number[] {
  const schedule = typeof expression === 'string' ? parseScheduleExpression(expression) : expression;
  const timeZone = options.timeZone ?? DEFAULT_TIME_ZONE;
  assertTimeZone(timeZone);
  assertInstant('after', options.after);
  if (options.startAt !== undefined) assertInstant('startAt', options.startAt);
  if (options.endAt !== undefined) assertInstant('endAt', options.endAt);
  if (!Number.isInteger(options.limit) || options.limit < 0) {
    throw new RangeError(`limit must be a whole number of fire times, got ${options.limit}`);
  }
  if (options.limit === 0) return [];

  switch (schedule.kind) {
    case 'cron':
      return cronFireTimes(schedule, timeZone, options);
    case 'rate':
      return rateFireTimes(schedule, options);
    case 'at': {
      const instant =
        firstInstantShowing(schedule.wallClockTime, timeZone) ??
        instantPastGap(schedule.wallClockTime, timeZone);
      return instant > options.after ? [instant] : [];
    }
  }
}

export function nextFireTime(
  expression: string | ScheduleExpression,
  options: FireTimeOptions,
): number | undefined {
  return nextFireTimes(expression, { ...options, limit: 1 })[0];
}

// ---------------------------------------------------------------------------------------------------------
// Parsing

/** A reason an expression is invalid; wrapped into ScheduleExpressionError with the expression. */
class InvalidSyntax extends Error {}

function invalid(reason: string): never {
  throw new InvalidSyntax(reason);
}

/** Runs `check`, turning the reason it gives up with into a ScheduleExpressionError naming the expression. */
function naming<T>(expression: string, scheduleName: string | undefined, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof InvalidSyntax) {
      throw new ScheduleExpressionError(expression, error.message, scheduleName);
    }
    throw error;
  }
}

function parseOrThrowReason(expression: string): ScheduleExpression {
  const match = /^(cron|rate|at)\((.*)\)$/.exec(expression);
  const kind = match?.[1];
  const body = match?.[2];
  if (kind === undefined || body === undefined) {
    invalid(
      'expected cron(minutes hours day-of-month month day-of-week year), rate(value unit) or at(yyyy-mm-ddThh:mm:ss)',
    );
  }
  if (kind === 'cron') return parseCron(expression, body);
  if (kind === 'rate') return parseRate(expression, body);
  return { kind: 'at', expression, wallClockTime: parseAt(body) };
}

const RATE_UNIT_MS: Record<RateUnit, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

function parseRate(expression: string, body: string): ScheduleExpression {
  const match = /^(\d+) (minute|hour|day)(s?)$/.exec(body);
  const [, digits, unit, plural] = match ?? [];
  if (digits === undefined || unit === undefined || plural === undefined) {
    invalid('expected rate(value unit) with unit minute, minutes, hour, hours, day or days');
  }
  const value = Number(digits);
  if (value < 1 || digits.startsWith('0')) {
    invalid(`rate value must be a positive whole number, got ${digits}`);
  }
  // EventBridge's documented rule: rate(1 hours) and rate(5 hour) are both invalid.
  if (value === 1 && plural) invalid(`a rate of 1 takes the singular unit: rate(1 ${unit})`);
  if (value > 1 && !plural) invalid(`a rate above 1 takes the plural unit: rate(${value} ${unit}s)`);
  const rateUnit = unit as RateUnit;
  const intervalMs = value * RATE_UNIT_MS[rateUnit];
  if (!Number.isSafeInteger(intervalMs)) invalid(`rate value ${digits} is too large`);
  return { kind: 'rate', expression, value, unit: rateUnit, intervalMs };
}

function parseAt(body: string): WallClockTime {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/.exec(body);
  if (match === null) invalid('expected at(yyyy-mm-ddThh:mm:ss)');
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0] = match.slice(1).map(Number);
  if (year < 1970) invalid(`year ${year} is before 1970`);
  if (month < 1 || month > 12) invalid(`month ${month} is out of range 1-12`);
  if (day < 1 || day > daysInMonth(year, month)) invalid(`${body.slice(0, 10)} is not a calendar date`);
  if (hour > 23 || minute > 59 || second > 59) invalid(`${body.slice(11)} is not a time of day`);
  return { year, month, day, hour, minute, second };
}

interface CronField {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  /** Names standing for min, min + 1, … */
  readonly names?: readonly string[];
  /** Largest increment after "/"; undefined where "/" is not allowed. */
  readonly maxStep?: number;
  /**
   * A range whose end comes before its start wraps past the field's maximum: hours `20-2` are 20-23 then 0-2,
   * days of the week `FRI-MON` are FRI, SAT, SUN, MON (Quartz's meaning; AWS's cron reference shows
   * `cron(0/30 20-2 ? * MON-FRI *)`). Minutes and years do not wrap.
   */
  readonly wraps?: boolean;
}

// Value ranges and wildcards from the EventBridge cron reference. The step bounds are Quartz's, whose syntax
// and 1970-2199 years EventBridge shares (EventBridge refuses cron(*/60 * * * ? *) too).
const MINUTES: CronField = { name: 'minutes', min: 0, max: 59, maxStep: 59 };
const HOURS: CronField = { name: 'hours', min: 0, max: 23, maxStep: 23, wraps: true };
const DAY_OF_MONTH: CronField = { name: 'day-of-month', min: 1, max: 31, maxStep: 31, wraps: true };
const MONTH: CronField = {
  name: 'month',
  min: 1,
  max: 12,
  maxStep: 12,
  wraps: true,
  names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
};
const DAY_OF_WEEK: CronField = {
  name: 'day-of-week',
  min: 1,
  max: 7,
  wraps: true,
  names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'],
};
const YEAR: CronField = { name: 'year', min: 1970, max: 2199, maxStep: 229 };

const SUNDAY = 1;
const SATURDAY = 7;

function parseCron(expression: string, body: string): ScheduleExpression {
  const fields = body.split(' ');
  if (fields.length !== 6) {
    invalid(
      `expected 6 fields separated by single spaces (minutes hours day-of-month month day-of-week year), got ${fields.length}`,
    );
  }
  const [minutes = '', hours = '', dayOfMonth = '', month = '', dayOfWeek = '', year = ''] = fields;

  if (dayOfMonth === '?' && dayOfWeek === '?') invalid('day-of-month and day-of-week cannot both be "?"');
  if (dayOfMonth !== '?' && dayOfWeek !== '?') {
    invalid('one of day-of-month and day-of-week must be "?" (they cannot both be set, nor both be "*")');
  }
  return {
    kind: 'cron',
    expression,
    minutes: parseList(minutes, MINUTES),
    hours: parseList(hours, HOURS),
    days: dayOfMonth === '?' ? parseDayOfWeek(dayOfWeek) : parseDayOfMonth(dayOfMonth),
    months: parseList(month, MONTH),
    years: parseList(year, YEAR),
  };
}

function parseDayOfMonth(field: string): CronDayRule {
  if (field === 'L') return { kind: 'lastDayOfMonth' };
  if (field === 'LW') return { kind: 'lastWeekdayOfMonth' };
  const nearestWeekday = /^(\d{1,2})W$/.exec(field)?.[1];
  if (nearestWeekday !== undefined) {
    return { kind: 'nearestWeekday', day: parseValue(nearestWeekday, DAY_OF_MONTH) };
  }
  if (field.includes('#')) invalid('"#" is only allowed in day-of-week');
  if (/[LW]/.test(field)) {
    invalid(`"L" and "W" stand alone in day-of-month (L, LW or one day such as 15W), got ${field}`);
  }
  return { kind: 'daysOfMonth', days: parseList(field, DAY_OF_MONTH) };
}

function parseDayOfWeek(field: string): CronDayRule {
  // "L" alone is the last day of the week: Saturday.
  if (field === 'L') return { kind: 'daysOfWeek', days: [SATURDAY] };
  const lastOfMonth = /^(\w{1,3})L$/.exec(field)?.[1];
  if (lastOfMonth !== undefined) {
    return { kind: 'lastDayOfWeek', dayOfWeek: parseValue(lastOfMonth, DAY_OF_WEEK) };
  }
  const nth = /^(\w{1,3})#(\d+)$/.exec(field);
  if (nth?.[1] !== undefined && nth[2] !== undefined) {
    const dayOfWeek = parseValue(nth[1], DAY_OF_WEEK);
    const occurrence = Number(nth[2]);
    if (occurrence < 1 || occurrence > 5) invalid(`the occurrence after "#" must be 1-5, got ${nth[2]}`);
    return { kind: 'nthDayOfWeek', dayOfWeek, nth: occurrence };
  }
  if (field.includes('#')) {
    invalid(`"#" takes exactly one day of the week and one occurrence, such as 6#3, got ${field}`);
  }
  if (field.includes('L')) {
    invalid(`"L" stands alone in day-of-week (L, or one day such as 5L), got ${field}`);
  }
  return { kind: 'daysOfWeek', days: parseList(field, DAY_OF_WEEK) };
}

/** A field made of `,`-separated items, each `*`, a value, a range `a-b`, optionally stepped by `/n`. */
function parseList(field: string, spec: CronField): number[] {
  const values = new Set<number>();
  for (const item of field.split(',')) {
    for (const value of parseListItem(item, spec)) values.add(value);
  }
  return [...values].sort((a, b) => a - b);
}

function parseListItem(item: string, spec: CronField): number[] {
  const [range = '', stepText, ...extra] = item.split('/');
  if (extra.length > 0) invalid(`"${item}" has more than one "/" in ${spec.name}`);
  if (stepText !== undefined && spec.maxStep === undefined) invalid(`"/" is not allowed in ${spec.name}`);

  let first = spec.min;
  let last = spec.max;
  if (range !== '*') {
    const [from = '', to, ...more] = range.split('-');
    if (more.length > 0) invalid(`"${range}" is not a range of ${spec.name}`);
    first = parseValue(from, spec);
    // "a/n" runs from a to the end of the field.
    last = to !== undefined ? parseValue(to, spec) : stepText !== undefined ? spec.max : first;
    if (first > last && !spec.wraps) invalid(`range ${range} of ${spec.name} runs backwards`);
  }

  const step = stepText === undefined ? 1 : parseStep(stepText, spec);
  // A wrapped range is walked as one run past the maximum, so a step carries over: hours 20-2/3 are 20, 23, 2.
  const width = spec.max - spec.min + 1;
  const span = first <= last ? last - first + 1 : width - (first - last) + 1;
  const values: number[] = [];
  for (let offset = 0; offset < span; offset += step) {
    const value = first + offset;
    values.push(value > spec.max ? value - width : value);
  }
  return values;
}

function parseStep(text: string, spec: CronField): number {
  const step = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  const maxStep = spec.maxStep ?? 0;
  if (!(step >= 1 && step <= maxStep)) invalid(`increment "/${text}" in ${spec.name} must be 1-${maxStep}`);
  return step;
}

function parseValue(text: string, spec: CronField): number {
  const nameIndex = spec.names?.indexOf(text) ?? -1;
  if (nameIndex >= 0) return spec.min + nameIndex;
  const allowed = `${spec.min}-${spec.max}${spec.names ? ` or ${spec.names[0]}-${spec.names.at(-1)}` : ''}`;
  if (!/^\d{1,4}$/.test(text)) invalid(`"${text}" is not a ${spec.name} value (${allowed})`);
  const value = Number(text);
  if (value < spec.min || value > spec.max) invalid(`${spec.name} value ${value} is out of range ${allowed}`);
  return value;
}

// ---------------------------------------------------------------------------------------------------------
// Fire times

type CronExpression = Extract<ScheduleExpression, { kind: 'cron' }>;
type RateExpression = Extract<ScheduleExpression, { kind: 'rate' }>;

function cronFireTimes(cron: CronExpression, timeZone: string, options: NextFireTimesOptions): number[] {
  // Fire times are whole minutes, so "at or after startAt" is "after startAt - 1 ms".
  const after = options.startAt === undefined ? options.after : Math.max(options.after, options.startAt - 1);
  const fireTimes: number[] = [];
  for (const wallClock of cronWallClockTimes(cron, wallClockAt(after, timeZone))) {
    // Undefined inside a spring-forward gap: EventBridge skips that fire.
    const instant = firstInstantShowing(wallClock, timeZone);
    if (instant === undefined || instant <= after) continue;
    if (options.endAt !== undefined && instant > options.endAt) break;
    fireTimes.push(instant);
    if (fireTimes.length >= options.limit) break;
  }
  return fireTimes;
}

/**
 * The wall-clock times the expression names, in order, from `from` (its minute included) on. Each field is
 * walked only over its own values and the days are computed per month, so a sparse expression costs a few
 * steps per year, never a minute-by-minute scan.
 *
 * Taking first occurrences only keeps wall-clock order and instant order the same, even across a fall-back,
 * which is why the caller may stop at the first time past `endAt`.
 */
function* cronWallClockTimes(cron: CronExpression, from: WallClockTime): Generator<WallClockTime> {
  for (const year of cron.years) {
    if (year < from.year) continue;
    const fromThisYear = year === from.year;
    for (const month of cron.months) {
      if (fromThisYear && month < from.month) continue;
      const fromThisMonth = fromThisYear && month === from.month;
      for (const day of daysMatching(cron.days, year, month)) {
        if (fromThisMonth && day < from.day) continue;
        const fromThisDay = fromThisMonth && day === from.day;
        for (const hour of cron.hours) {
          if (fromThisDay && hour < from.hour) continue;
          const fromThisHour = fromThisDay && hour === from.hour;
          for (const minute of cron.minutes) {
            if (fromThisHour && minute < from.minute) continue;
            yield { year, month, day, hour, minute, second: 0 };
          }
        }
      }
    }
  }
}

/** The days of the month the rule selects, ascending. */
function daysMatching(rule: CronDayRule, year: number, month: number): number[] {
  const lastDay = daysInMonth(year, month);
  const dayOfWeekOf = (day: number) => dayOfWeek(year, month, day);
  switch (rule.kind) {
    case 'daysOfMonth':
      return rule.days.filter((day) => day <= lastDay);
    case 'lastDayOfMonth':
      return [lastDay];
    case 'lastWeekdayOfMonth': {
      const weekday = dayOfWeekOf(lastDay);
      return [weekday === SATURDAY ? lastDay - 1 : weekday === SUNDAY ? lastDay - 2 : lastDay];
    }
    case 'nearestWeekday': {
      // A day the month does not have (31W in April) does not fire, as plain 31 would not.
      if (rule.day > lastDay) return [];
      const weekday = dayOfWeekOf(rule.day);
      // The nearest weekday never leaves the month: Saturday the 1st moves to Monday the 3rd, a Sunday that
      // ends the month to the Friday before.
      if (weekday === SATURDAY) return [rule.day === 1 ? 3 : rule.day - 1];
      if (weekday === SUNDAY) return [rule.day === lastDay ? rule.day - 2 : rule.day + 1];
      return [rule.day];
    }
    case 'daysOfWeek': {
      const days: number[] = [];
      for (let day = 1; day <= lastDay; day++) {
        if (rule.days.includes(dayOfWeekOf(day))) days.push(day);
      }
      return days;
    }
    case 'lastDayOfWeek':
      return [lastDay - ((dayOfWeekOf(lastDay) - rule.dayOfWeek + 7) % 7)];
    case 'nthDayOfWeek': {
      const firstSuchDay = 1 + ((rule.dayOfWeek - dayOfWeekOf(1) + 7) % 7);
      const day = firstSuchDay + 7 * (rule.nth - 1);
      return day <= lastDay ? [day] : [];
    }
  }
}

function rateFireTimes(rate: RateExpression, options: NextFireTimesOptions): number[] {
  const anchor = options.startAt ?? options.after;
  let occurrence = anchor > options.after ? 0 : Math.floor((options.after - anchor) / rate.intervalMs) + 1;
  const fireTimes: number[] = [];
  while (fireTimes.length < options.limit) {
    const instant = anchor + occurrence * rate.intervalMs;
    if (options.endAt !== undefined && instant > options.endAt) break;
    fireTimes.push(instant);
    occurrence++;
  }
  return fireTimes;
}

// ---------------------------------------------------------------------------------------------------------
// Calendar and time zones

const DAY_MS = 86_400_000;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** 1 = Sunday … 7 = Saturday, as in cron. */
function dayOfWeek(year: number, month: number, day: number): number {
  return new Date(Date.UTC(year, month - 1, day)).getUTCDay() + 1;
}

// Every component of an IANA zone name starts with a capital (Europe/Paris, Etc/GMT+5, UTC); this refuses
// what Intl would also take but EventBridge does not document: offsets, lower-case spellings.
const IANA_NAME = /^[A-Z][A-Za-z0-9_+-]*(\/[A-Z][A-Za-z0-9_+-]*)*$/;

const wallClockFormats = new Map<string, Intl.DateTimeFormat>();

function assertTimeZone(timeZone: string, scheduleName?: string): void {
  if (!IANA_NAME.test(timeZone) || wallClockFormat(timeZone) === undefined) {
    throw new UnknownTimeZoneError(timeZone, scheduleName);
  }
}

function wallClockFormat(timeZone: string): Intl.DateTimeFormat | undefined {
  let format = wallClockFormats.get(timeZone);
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      return undefined;
    }
    wallClockFormats.set(timeZone, format);
  }
  return format;
}

function wallClockAt(instant: number, timeZone: string): WallClockTime {
  const shown = new Date(instant + offsetAt(instant, timeZone));
  return {
    year: shown.getUTCFullYear(),
    month: shown.getUTCMonth() + 1,
    day: shown.getUTCDate(),
    hour: shown.getUTCHours(),
    minute: shown.getUTCMinutes(),
    second: shown.getUTCSeconds(),
  };
}

/** How far the zone's clocks are ahead of UTC at `instant`, in ms. */
function offsetAt(instant: number, timeZone: string): number {
  if (timeZone === 'UTC') return 0;
  const format = wallClockFormat(timeZone);
  if (format === undefined) throw new RangeError(`unknown time zone ${timeZone}`);
  const part: Partial<Record<Intl.DateTimeFormatPartTypes, number>> = {};
  for (const { type, value } of format.formatToParts(instant)) part[type] = Number(value);
  const shownAsUtc = Date.UTC(
    part.year ?? 0,
    (part.month ?? 1) - 1,
    part.day ?? 1,
    part.hour ?? 0,
    part.minute ?? 0,
    part.second ?? 0,
  );
  return shownAsUtc - (instant - (((instant % 1_000) + 1_000) % 1_000));
}

function asUtc(time: WallClockTime): number {
  return Date.UTC(time.year, time.month - 1, time.day, time.hour, time.minute, time.second);
}

/**
 * The first instant the zone's clocks show `time`, or undefined when they never do (spring-forward gap).
 * The offsets a day either side cover any single clock change near `time`.
 */
function firstInstantShowing(time: WallClockTime, timeZone: string): number | undefined {
  const shown = asUtc(time);
  let first: number | undefined;
  for (const offset of new Set([offsetAt(shown - DAY_MS, timeZone), offsetAt(shown + DAY_MS, timeZone)])) {
    const instant = shown - offset;
    if (offsetAt(instant, timeZone) === offset && (first === undefined || instant < first)) first = instant;
  }
  return first;
}

/** A time inside a spring-forward gap read with the offset in force before it: moved on by the gap's length. */
function instantPastGap(time: WallClockTime, timeZone: string): number {
  const shown = asUtc(time);
  return shown - offsetAt(shown - DAY_MS, timeZone);
}

function assertInstant(name: string, value: number): void {
  if (!Number.isFinite(value)) {
    throw new RangeError(`${name} must be a finite epoch in milliseconds, got ${value}`);
  }
}
