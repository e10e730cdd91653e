/** The limits of a queue: shown in a few words, and changed in a form (`POST /v1/queues/{name}/limits`). */
import { api, type QueueLimits } from '../api';
import { formDialog } from '../dialog';
import { field, formValue, input } from '../fields';

const FIELDS = [
  {
    name: 'maxConcurrency',
    label: 'Max concurrency',
    hint: 'Tasks of the queue leased at once, across all agents: 1 to 100000.',
    attrs: { min: 1, max: 100_000, step: 1 },
  },
  {
    name: 'ratePerSecond',
    label: 'Rate per second',
    hint: 'Claims a second, across all agents: 0.001 to 10000.',
    attrs: { min: 0.001, max: 10_000, step: 'any' },
  },
  {
    name: 'burst',
    label: 'Burst',
    hint: 'Claims at once above the rate: 1 to 10000 (by default the rate, at least 1).',
    attrs: { min: 1, max: 10_000, step: 1 },
  },
  {
    name: 'perKeyConcurrency',
    label: 'Per-key concurrency',
    hint: 'Tasks of one concurrency key leased at once: 1 to 100000.',
    attrs: { min: 1, max: 100_000, step: 1 },
  },
] as const;

/** "at most 5 leased, 2 claims/s (burst 4), 1 per key", or "none". */
export function describeLimits(limits: QueueLimits): string {
  const parts = [
    limits.maxConcurrency !== undefined && `at most ${limits.maxConcurrency} leased`,
    limits.ratePerSecond !== undefined &&
      `${limits.ratePerSecond} claims/s${limits.burst !== undefined ? ` (burst ${limits.burst})` : ''}`,
    limits.ratePerSecond === undefined && limits.burst !== undefined && `burst ${limits.burst}`,
    limits.perKeyConcurrency !== undefined && `${limits.perKeyConcurrency} per key`,
  ].filter((part): part is string => typeof part === 'string');
  return parts.length > 0 ? parts.join(', ') : 'none';
}

function limitsOf(form: HTMLFormElement): QueueLimits {
  const limits: Record<string, number> = {};
  for (const { name, label } of FIELDS) {
    const text = formValue(form, name);
    if (text === '') continue;
    const value = Number(text);
    if (!Number.isFinite(value)) throw new Error(`${label}: a number, or empty for no limit.`);
    limits[name] = value;
  }
  return limits;
}

/** Opens the limits form of `queue`; resolves with whether the limits were saved. */
export function editLimits(queue: string, current: QueueLimits, trigger: HTMLElement): Promise<boolean> {
  return formDialog({
    title: `Change the limits of queue ${queue}?`,
    text: `Claims from ${queue} follow the new limits at once. Leave a field empty for no limit; all empty removes every limit.`,
    trigger,
    fields: FIELDS.map(({ name, label, hint, attrs }) =>
      field(
        label,
        input(name, { type: 'number', inputmode: 'decimal', value: current[name], ...attrs }),
        hint,
      ),
    ),
    submit: async (form) => {
      await api.setQueueLimits(queue, limitsOf(form));
    },
  });
}
