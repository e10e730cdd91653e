/**
 * Tasks, newest first, by queue, status, concurrency key, creation time and attention: the filters `GET /v1/tasks`
 * takes. Cursor paging; a form to submit a task.
 */
import { api, TASK_STATUSES, type TaskSummary } from '../api';
import { button, el, uniqueId } from '../dom';
import { field, input, type Option, select, setOptions } from '../fields';
import { time } from '../format';
import { Pager } from '../pager';
import { alertError, messageOf } from '../status';
import { DataTable } from '../table';
import type { View, ViewContext } from '../view';
import { submitTask } from './submit-task';
import { taskLink } from './task-link';

const PAGE_SIZE = 50;

const queueOptions = (queues: readonly string[]): Option[] => [
  { value: '', label: 'All queues' },
  ...queues.map((name) => ({ value: name, label: name })),
];

/** A `datetime-local` value (the browser's time zone) as ISO-8601 UTC; '' for none, or a value not a time. */
function isoOf(local: string): string {
  if (local === '') return '';
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? '' : date.toISOString();
}

/** A task as a row of the list; one the starvation ladder marked says so beside its status. */
const taskRow = (task: TaskSummary) => [
  taskLink(task.taskId),
  task.queue,
  task.priority,
  task.needsAttention
    ? [task.status, ' ', el('span', { class: 'badge paused' }, 'needs attention')]
    : task.status,
  `${task.attempt} of ${task.maxAttempts}`,
  task.owner ?? 'none',
  time(task.createdAt),
  time(task.updatedAt),
];

/**
 * The filter form: queue, status, concurrency key, creation times and attention. `read` gives them as
 * `GET /v1/tasks` takes them; `changed` runs at each change (not as a field is half typed).
 */
function taskFilters(changed: () => void) {
  const queueSelect = select('queue', queueOptions([]));
  const statusSelect = select('status', [
    { value: '', label: 'All statuses' },
    ...TASK_STATUSES.map((status) => ({ value: status, label: status })),
  ]);
  const noteId = uniqueId('tasks-note');
  const createdAfter = input('createdAfter', { type: 'datetime-local', 'aria-describedby': noteId });
  const createdBefore = input('createdBefore', { type: 'datetime-local', 'aria-describedby': noteId });
  const concurrencyKey = input('concurrencyKey', { type: 'text', autocomplete: 'off', maxlength: '128' });
  const attentionSelect = select('attention', [
    { value: '', label: 'All tasks' },
    { value: 'true', label: 'Needs attention only' },
  ]);
  const form = el(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter tasks' },
    field('Queue', queueSelect),
    field('Status', statusSelect),
    field('Concurrency key', concurrencyKey),
    field('Created after', createdAfter),
    field('Created before', createdBefore),
    field('Attention', attentionSelect),
  );
  form.addEventListener('submit', (event) => event.preventDefault());
  form.addEventListener('change', changed);
  const note = el(
    'p',
    { class: 'note', id: noteId },
    'Newest first. Created after and Created before are in your time zone; leave one empty for no bound. Needs attention only keeps the tasks the starvation ladder marked, from the tasks read: a page may be short.',
  );
  return {
    form,
    note,
    setQueues: (queues: readonly string[]) =>
      setOptions(queueSelect, queueOptions(queues), queueSelect.value),
    read: () => ({
      queue: queueSelect.value,
      status: statusSelect.value,
      concurrencyKey: concurrencyKey.value.trim(),
      createdAfter: isoOf(createdAfter.value),
      createdBefore: isoOf(createdBefore.value),
      ...(attentionSelect.value === 'true' ? { attention: true } : {}),
    }),
  };
}

/**
 * The "Submit task" button, and the notice naming the task it submitted. `queuesNow` gives the queues to offer,
 * read first if need be.
 */
function submitControls(context: ViewContext, queuesNow: () => Promise<readonly string[]>) {
  const notice = el('p', { class: 'notice', hidden: true });
  const submitAndShow = async (trigger: HTMLElement, queues: readonly string[]) => {
    const task = await submitTask(queues, trigger);
    if (!task) return;
    notice.hidden = false;
    notice.replaceChildren('Submitted task ', taskLink(task.taskId, 'submitted'), ` to ${task.queue}.`);
    await context.act(async () => `Task ${task.taskId} submitted to ${task.queue}: ${task.status}.`);
  };
  let submitting = false;
  const openSubmit = async (trigger: HTMLElement) => {
    if (submitting) return;
    submitting = true;
    try {
      const queues = await queuesNow();
      // Left while the queues were read: no dialog over another view.
      if (context.signal.aborted) return;
      await submitAndShow(trigger, queues);
    } finally {
      submitting = false;
    }
  };
  return {
    button: button('Submit task', openSubmit, { class: 'primary', 'data-key': 'submit-task' }),
    notice,
  };
}

export const tasksView: View = (root, context) => {
  let queues: string[] = [];
  const filters = taskFilters(() => {
    applied = filters.read();
    pager.reset();
    void poller.now();
  });
  const table = new DataTable('Tasks', [
    'Task',
    'Queue',
    'Priority',
    'Status',
    'Attempt',
    'Owner agent',
    'Created',
    'Updated',
  ]);
  const pager = new Pager('tasks', () => void poller.now());
  const submit = submitControls(context, async () => {
    if (queues.length === 0) await loadQueues();
    return queues;
  });

  root.append(
    el('h1', {}, 'Tasks'),
    el('div', { class: 'toolbar' }, submit.button),
    submit.notice,
    filters.form,
    filters.note,
    table.element,
    pager.element,
  );

  async function loadQueues(): Promise<void> {
    try {
      queues = (await api.listQueues(context.signal)).map((q) => q.name);
      filters.setQueues(queues);
    } catch (error) {
      if (!context.signal.aborted) alertError(`Queues could not be read: ${messageOf(error)}`);
    }
  }

  /** The filters as last applied (at a change), not as half typed: a refresh reads with these. */
  let applied = filters.read();
  const currentFilter = () => ({ ...applied, cursor: pager.cursor });

  let shown = '';
  const poller = context.poll(async () => {
    const filter = currentFilter();
    const page = await api.listTasks({ ...filter, limit: PAGE_SIZE }, context.signal);
    // The filters or the page changed while this read was under way: the next read shows them.
    if (JSON.stringify(filter) !== JSON.stringify(currentFilter())) return;
    pager.update(page.nextCursor);
    const key = JSON.stringify([filter, page.tasks]);
    if (key === shown) return;
    shown = key;
    table.rows(page.tasks.map(taskRow), 'No tasks match.');
  });
  void loadQueues();
};
