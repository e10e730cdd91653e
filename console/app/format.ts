/** How values are shown: times, ages, sizes, JSON. */
import { type Child, el } from './dom';

/** Most bytes of text a `<pre>` shows. */
export const PRE_BYTES = 64 * 1024;

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** An ISO time as local readable time, the ISO kept in `datetime`; "none" when absent. */
export function time(iso: string | null | undefined, absent = 'none'): Child {
  if (!iso) return absent;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return el('time', { datetime: iso }, dateTime.format(date));
}

const zoneFormats = new Map<string, Intl.DateTimeFormat>();

/** The format of times in `timeZone`, its zone named; UTC (so named) when the engine does not know the zone. */
function zoneFormat(timeZone: string, seconds: boolean): Intl.DateTimeFormat {
  const key = `${timeZone} ${seconds}`;
  let format = zoneFormats.get(key);
  if (!format) {
    // `dateStyle`/`timeStyle` cannot be combined with `timeZoneName`: the same parts, one by one.
    const options: Intl.DateTimeFormatOptions = {
      year: 'numeric',
      month: 'short',
      day: 'numeric',
      hour: 'numeric',
      minute: '2-digit',
      ...(seconds ? { second: '2-digit' } : {}),
      timeZoneName: 'short',
    };
    try {
      format = new Intl.DateTimeFormat(undefined, { ...options, timeZone });
    } catch {
      format = new Intl.DateTimeFormat(undefined, { ...options, timeZone: 'UTC' });
    }
    zoneFormats.set(key, format);
  }
  return format;
}

/** Whether this browser knows the IANA zone (an older one may not know a newer zone's name). */
export function knowsTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat(undefined, { timeZone });
    return true;
  } catch {
    return false;
  }
}

/**
 * An ISO time as readable time in the IANA zone `timeZone` (in UTC, named so, where the browser does not know it), the zone named ("Nov 25, 2026, 11:00 AM GMT+1"),
 * the ISO kept in `datetime`. Seconds are shown only when the time has some.
 */
export function zonedTime(iso: string, timeZone: string): Child {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return el('time', { datetime: iso }, zoneFormat(timeZone, date.getUTCSeconds() !== 0).format(date));
}

/** Seconds as "42 s", "3 min 5 s", "2 h 10 min", "3 d 4 h". */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  if (s < 86_400)
    return `${Math.floor(s / 3600)} h${s % 3600 >= 60 ? ` ${Math.floor((s % 3600) / 60)} min` : ''}`;
  return `${Math.floor(s / 86_400)} d${s % 86_400 >= 3600 ? ` ${Math.floor((s % 86_400) / 3600)} h` : ''}`;
}

export const bytes = (n: number) =>
  n < 1024
    ? `${n} bytes`
    : n < 1024 * 1024
      ? `${(n / 1024).toFixed(1)} KB`
      : `${(n / 1048576).toFixed(1)} MB`;

/** A JSON value as indented text in a `<pre>`, at most `PRE_BYTES` of it, saying so when cut. */
export function jsonBlock(value: unknown, label: string): HTMLElement {
  const text = JSON.stringify(value, null, 2) ?? String(value);
  const encoded = new TextEncoder().encode(text);
  const pre = el('pre', { tabindex: 0, role: 'region', 'aria-label': label, 'data-key': `json:${label}` });
  if (encoded.length <= PRE_BYTES) {
    pre.textContent = text;
    return pre;
  }
  // Cut on bytes, then drop a character the cut split in two.
  pre.textContent = new TextDecoder().decode(encoded.subarray(0, PRE_BYTES)).replace(/\uFFFD$/, '');
  return el('div', {}, pre, el('p', { class: 'note' }, `(truncated: ${encoded.length} bytes in all)`));
}

/** A list of names as text: "a, b, c", or `empty` when there are none. */
export const names = (values: readonly string[] | undefined, empty = 'none') =>
  values && values.length > 0 ? values.join(', ') : empty;
