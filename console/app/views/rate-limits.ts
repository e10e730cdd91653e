/**
 * Named rate limits (`GET /v1/rate-limits`), by name: each one's terms and the use of its window open now, drawn as a
 * bar per limit (`rate-limit-use.ts`) above the table. Each links to its page, with a per-key limit's keys and a form
 * for new terms.
 */
import { api, type RateLimit } from '../api';
import { el, link, replaceKeepingFocus } from '../dom';
import { rateLimitHref } from '../router';
import { DataTable } from '../table';
import type { View } from '../view';
import { describeBurst, describeTerms, limitUse, windowSpan } from './rate-limit-terms';
import { limitsUse } from './rate-limit-use';

export const rateLimitsView: View = (root, context) => {
  const table = new DataTable('Rate limits', [
    'Name',
    'Terms',
    'Burst',
    'Per key',
    'Window open now',
    'Used',
    'Source',
  ]);
  const picture = el('div', { 'data-field': 'limits-use' });
  root.append(
    el('h1', {}, 'Rate limits'),
    el(
      'p',
      { class: 'lead' },
      'Limits the fleet shares: a task naming one is granted only with its units. Use is that of the window open now; a per-key limit counts each key apart, listed on its page.',
    ),
    picture,
    table.element,
  );

  const row = (limit: RateLimit) => [
    link(rateLimitHref(limit.name), limit.name, { 'data-key': `rate-limit:${limit.name}` }),
    describeTerms(limit),
    describeBurst(limit),
    limit.perKey ? 'yes' : 'no',
    windowSpan(limit.window),
    el('div', { class: 'use' }, ...limitUse(limit)),
    limit.source,
  ];

  let shown = '';
  context.poll(async () => {
    const limits = await api.listRateLimits(context.signal);
    // Drawn at each refresh: the tick of where each window stands moves on while the use stays.
    replaceKeepingFocus(picture, [limitsUse(limits, Date.now())]);
    const key = JSON.stringify(limits);
    if (key === shown) return;
    shown = key;
    table.rows(
      limits.map(row),
      'No rate limits: declare them in the construct (rateLimits), or set one with agent-scheduler rate-limits set.',
    );
  });
};
