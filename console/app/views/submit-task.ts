/** The "Submit task" form: queue, priority and payload, sent as `POST /v1/tasks`. */
import { api, PRIORITIES, type Task } from '../api';
import { formDialog } from '../dialog';
import { el } from '../dom';
import { field, formValue, select } from '../fields';

/** Opens the form; resolves with the task submitted, or `undefined` when kept as is. */
export async function submitTask(queues: readonly string[], trigger: HTMLElement): Promise<Task | undefined> {
  let submitted: Task | undefined;
  const payload = el('textarea', { name: 'payload', rows: 8, spellcheck: 'false', required: true });
  payload.value = '{}';
  await formDialog({
    title: 'Submit a task?',
    text: 'The task is queued at once, and an agent of its queue may claim it.',
    trigger,
    fields: [
      field(
        'Queue',
        select(
          'queue',
          queues.map((name) => ({ value: name, label: name })),
          queues[0] ?? '',
          { required: true },
        ),
      ),
      field(
        'Priority',
        select(
          'priority',
          PRIORITIES.map((p) => ({ value: p, label: p })),
          'normal',
        ),
      ),
      field('Payload (JSON)', payload, 'Any JSON value, up to 256 KB.'),
    ],
    submit: async (form) => {
      let value: unknown;
      try {
        value = JSON.parse(payload.value);
      } catch (error) {
        payload.focus();
        throw new Error(`Payload (JSON) is not valid JSON: ${(error as Error).message}`);
      }
      submitted = await api.submitTask({
        queue: formValue(form, 'queue'),
        priority: formValue(form, 'priority') as Task['priority'],
        payload: value,
      });
    },
  });
  return submitted;
}
