/**
 * One named rate limit (`GET /v1/rate-limits/{name}`): its terms, its window open now and its use, for a per-key
 * limit the keys that used that window most (up to 100); refreshed. "Set terms" changes them.
 */
import { api, type RateLimit } from '../api';
import { button, type Child, el, replaceKeepingFocus } from '../dom';
import { time } from '../format';
import { ApiError } from '../http';
import { DataTable } from '../table';
import type { View } from '../view';
import {
  describeBurst,
  describeTerms,
  editTerms,
  limitUse,
  units,
  usage,
  windowSpan,
} from './rate-limit-terms';

function details(limit: RateLimit): HTMLElement {
  const entries: [string, Child | Child[], string][] = [
    ['Terms', describeTerms(limit), 'terms'],
    ['Burst', describeBurst(limit), 'burst'],
    ['Per key', limit.perKey ? 'yes: each key has windows of its own' : 'no', 'per-key'],
    ['Window open now', windowSpan(limit.window), 'window'],
    ['Capacity', units(limit.window.capacity), 'capacity'],
    ['Used', limitUse(limit), 'used'],
    ['Source', limit.source === 'set' ? 'set by an operator' : 'declared in the construct', 'source'],
    ['Updated', time(limit.updatedAt, limit.source === 'set' ? 'unknown' : 'with the deployment'), 'updated'],
  ];
  const list = el('dl', { class: 'fields' });
  for (const [term, value, name] of entries) {
    list.append(
      el('dt', {}, term),
      el('dd', { 'data-field': name }, ...(Array.isArray(value) ? value : [value])),
    );
  }
  return list;
}

export const rateLimitView =
  (name: string): View =>
  (root, context) => {
    const actions = el('div', { class: 'toolbar' });
    const about = el('div', {}, el('p', {}, 'Loading…'));
    const keysTable = new DataTable('Keys', ['Key', 'Used']);
    const keys = el(
      'div',
      { hidden: true },
      el('h2', {}, 'Keys'),
      el(
        'p',
        { class: 'note' },
        'The keys that took units in the window open now, most used first (up to 100). Each key’s window holds the capacity above.',
      ),
      keysTable.element,
    );
    root.append(el('h1', {}, `Rate limit ${name}`), actions, about, keys);

    let current: RateLimit | undefined;
    const setTerms = async (trigger: HTMLElement) => {
      if (!current) return;
      const set = await editTerms(name, current, trigger);
      if (set) await context.act(async () => `Rate limit ${set.name} now takes ${describeTerms(set)}.`);
    };

    let shown = '';
    const show = (limit: RateLimit) => {
      current = limit;
      const key = JSON.stringify(limit);
      if (key === shown) return;
      shown = key;
      replaceKeepingFocus(actions, [
        button('Set terms', (b) => void setTerms(b), { class: 'primary', 'data-key': 'set-terms' }),
      ]);
      replaceKeepingFocus(about, [details(limit)]);
      keys.hidden = !limit.perKey;
      if (limit.perKey) {
        const capacity = limit.window.capacity;
        keysTable.rows(
          (limit.keys ?? []).map((k) => [
            k.key,
            el('div', { class: 'use' }, ...usage(k.used, capacity, `Use of key ${k.key} now`)),
          ]),
          'No key has taken units in the window open now.',
        );
      }
    };

    context.poll(async () => {
      let limit: RateLimit;
      try {
        limit = await api.getRateLimit(name, context.signal);
      } catch (error) {
        // No such limit, or not a name: say so in place of the details.
        if (error instanceof ApiError && (error.status === 404 || error.status === 400)) {
          shown = '';
          current = undefined;
          keys.hidden = true;
          replaceKeepingFocus(actions, []);
          replaceKeepingFocus(about, [el('p', {}, 'This rate limit could not be read.')]);
        }
        throw error;
      }
      show(limit);
    });
  };
