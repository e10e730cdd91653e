/**
 * The Rate limits view's picture: a bar per limit of the units used of its window open now, a tick on it where the
 * window stands (a budget used faster than its day passes runs out before the day ends), each bar named in words;
 * the table below has the same figures. A per-key limit's keys each have a window of their own: its page draws them.
 */
import type { RateLimit } from '../api';
import { el, uniqueId } from '../dom';
import { px, svg } from '../svg';
import { units } from './rate-limit-terms';

/** How far into its window `now` is, 0 to 1. */
export function windowPassed(limit: Pick<RateLimit, 'window'>, now: number): number {
  const start = Date.parse(limit.window.start);
  const end = Date.parse(limit.window.end);
  if (!(end > start)) return 0;
  return Math.min(1, Math.max(0, (now - start) / (end - start)));
}

const percent = (fraction: number) => `${Math.round(fraction * 100)}%`;

/** One limit's row: its name, the bar, the figures; the bar named for assistive technology. */
function row(limit: RateLimit, now: number): HTMLElement {
  const passed = windowPassed(limit, now);
  const { used, capacity } = limit.window;
  if (used === undefined)
    return el(
      'li',
      { class: 'use-row' },
      el('span', { class: 'use-name' }, limit.name),
      el('span', { class: 'use-by-key' }, `by key, ${units(capacity)} each: its page draws its keys`),
    );
  const share = capacity > 0 ? Math.min(1, used / capacity) : 0;
  const label = `${limit.name}: ${units(used)} of ${units(capacity)} used (${percent(share)}), ${percent(passed)} of the window passed`;
  return el(
    'li',
    { class: 'use-row', 'data-limit': limit.name },
    el('span', { class: 'use-name' }, limit.name),
    svg(
      'svg',
      {
        role: 'img',
        'aria-label': label,
        viewBox: '0 0 100 12',
        preserveAspectRatio: 'none',
        class: `use-track${share >= 1 ? ' full' : ''}`,
        'data-used': px(share * 100),
      },
      svg('rect', { x: 0, y: 0, width: 100, height: 12, class: 'use-room' }),
      svg('rect', { x: 0, y: 0, width: px(share * 100), height: 12, class: 'use-taken' }),
      svg('line', { x1: px(passed * 100), x2: px(passed * 100), y1: 0, y2: 12, class: 'use-now' }),
    ),
    el('span', { class: 'use-figures' }, `${units(used)} of ${units(capacity)}`),
  );
}

/** The figure of all the limits, or nothing when there are none. */
export function limitsUse(limits: readonly RateLimit[], now: number): HTMLElement | undefined {
  if (limits.length === 0) return undefined;
  const captionId = uniqueId('limits-use');
  return el(
    'figure',
    { class: 'picture', 'aria-labelledby': captionId },
    el(
      'figcaption',
      { id: captionId, class: 'note' },
      'Units used of each limit’s window open now; the tick marks how much of the window has passed.',
    ),
    el('ul', { class: 'use-rows' }, ...limits.map((limit) => row(limit, now))),
  );
}
