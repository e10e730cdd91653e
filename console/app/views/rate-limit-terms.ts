/**
 * A named rate limit's terms and use, in a few words and a bar; and new terms set in a form
 * (`POST /v1/rate-limits/{name}`), the server's refusal shown in it.
 */
import { api, type RateLimit, type RateLimitTerms, type RateWindowUse } from '../api';
import { formDialog } from '../dialog';
import { type Child, el, uniqueId } from '../dom';
import { field, formValue, input, select } from '../fields';
import { time } from '../format';

const PERIODS: readonly RateLimitTerms['per'][] = ['second', 'minute', 'hour', 'day'];

const isBudget = (terms: Pick<RateLimitTerms, 'per'>) => terms.per === 'hour' || terms.per === 'day';

/** Units as a person reads them: no float noise (0.30000000000000004 shows as 0.3). */
export const units = (n: number) => String(Number(n.toPrecision(12)));

/** "90000 per minute". */
export const describeTerms = (terms: RateLimitTerms) => `${units(terms.limit)} per ${terms.per}`;

/** A rate's burst (by default its limit); a budget has none. */
export const describeBurst = (terms: RateLimitTerms) =>
  terms.burst !== undefined
    ? units(terms.burst)
    : isBudget(terms)
      ? 'none'
      : `${units(terms.limit)} (the limit)`;

/** The window open now: its start and end, as times. */
export const windowSpan = (window: RateWindowUse): Child[] => [time(window.start), ' to ', time(window.end)];

/** "3 of 10" and a bar of the same, named `label` for assistive technology. */
export function usage(used: number, capacity: number, label: string): Child[] {
  return [
    el('span', { class: 'use-text' }, `${units(used)} of ${units(capacity)}`),
    el('meter', { class: 'use-bar', min: 0, max: capacity, value: used, 'aria-label': label }),
  ];
}

/** What a limit has used of its window now: its units, or, per key, what each key's window holds. */
export function limitUse(limit: RateLimit): Child[] {
  if (limit.window.used === undefined) return [`by key, ${units(limit.window.capacity)} each`];
  return usage(limit.window.used, limit.window.capacity, `Use of ${limit.name} now`);
}

function termsOf(form: HTMLFormElement): RateLimitTerms {
  const number = (name: string, label: string) => {
    const text = formValue(form, name);
    if (text === '') return undefined;
    const value = Number(text);
    if (!Number.isFinite(value)) throw new Error(`${label}: a number.`);
    return value;
  };
  const limit = number('limit', 'Limit');
  if (limit === undefined) throw new Error('Limit: the units a period, more than 0.');
  const burst = number('burst', 'Burst');
  const perKey = form.elements.namedItem('perKey');
  return {
    limit,
    per: formValue(form, 'per') as RateLimitTerms['per'],
    ...(burst === undefined ? {} : { burst }),
    ...(perKey instanceof HTMLInputElement && perKey.checked ? { perKey: true } : {}),
  };
}

/** A checkbox with its label beside it and, if given, a hint read out as its description. */
function checkbox(name: string, label: string, checked: boolean, hint: string): HTMLElement {
  const id = uniqueId('field');
  const hintId = uniqueId('hint');
  return el(
    'div',
    { class: 'field check' },
    el('input', { type: 'checkbox', name, id, checked, 'aria-describedby': hintId }),
    el('label', { for: id }, label),
    el('p', { id: hintId, class: 'hint' }, hint),
  );
}

/** Opens the terms form of the limit `name`; resolves with the limit as set, or `undefined` when kept as is. */
export async function editTerms(
  name: string,
  current: RateLimitTerms,
  trigger: HTMLElement,
): Promise<RateLimit | undefined> {
  let set: RateLimit | undefined;
  await formDialog({
    title: `Set new terms for rate limit ${name}?`,
    text: 'Grants follow the new terms at once, and the tasks waiting for the limit are sent again. Terms set here replace those the construct declares.',
    trigger,
    fields: [
      field(
        'Limit',
        input('limit', {
          type: 'number',
          inputmode: 'decimal',
          min: 0,
          step: 'any',
          required: true,
          value: current.limit,
        }),
        'Units a period, more than 0: a rate’s average, a budget’s whole window.',
      ),
      field(
        'Per',
        select(
          'per',
          PERIODS.map((per) => ({ value: per, label: per })),
          current.per,
        ),
        'Second or minute: a rate. Hour or day: a budget, over the hours or days of UTC.',
      ),
      field(
        'Burst',
        input('burst', { type: 'number', inputmode: 'decimal', min: 0, step: 'any', value: current.burst }),
        'A rate’s units at once (empty: the limit). A budget has none.',
      ),
      checkbox(
        'perKey',
        'Per key',
        current.perKey === true,
        'Each key a task names (a tenant, an API key) has windows of its own.',
      ),
    ],
    submit: async (form) => {
      set = await api.setRateLimit(name, termsOf(form));
    },
  });
  return set;
}
