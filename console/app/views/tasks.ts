/**
 * Tasks, newest first, by queue, status and creation time: the filters `GET /v1/tasks` takes. Cursor paging; a
 * form to submit a task.
 */
import { api, TASK_STATUSES, type TaskSummary } from '../api';
import { button, el, uniqueId } from '../dom';
import { field, input, type Option, select, setOptions } from '../fields';
import { time } from '../format';
import { Pager } from '../pager';
import { alertError, messageOf } from '../status';
import { DataTable } from '../table';
import type { View } from '../view';
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

export const tasksView: View = (root, context) => {
  let queues: string[] = [];
  const queueSelect = select('queue', queueOptions(queues));
  const statusSelect = select('status', [
    { value: '', label: 'All statuses' },
    ...TASK_STATUSES.map((status) => ({ value: status, label: status })),
  ]);
  const noteId = uniqueId('tasks-note');
  const createdAfter = input('createdAfter', { type: 'datetime-local', 'aria-describedby': noteId });
  const createdBefore = input('createdBefore', { type: 'datetime-local', 'aria-describedby': noteId });
  const concurrencyKey = input('concurrencyKey', { type: 'text', autocomplete: 'off', maxlength: '128' });
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
  const submitted = el('p', { class: 'notice', hidden: true });

  let submitting = false;
  const openSubmit = async (trigger: HTMLElement) => {
    if (submitting) return;
    submitting = true;
    try {
      if (queues.length === 0) await loadQueues();
      // Left while the queues were read: no dialog over another view.
      if (context.signal.aborted) return;
      await submitAndShow(trigger);
    } finally {
      submitting = false;
    }
  };
  const submitAndShow = async (trigger: HTMLElement) => {
    const task = await submitTask(queues, trigger);
    if (!task) return;
    submitted.hidden = false;
    submitted.replaceChildren('Submitted task ', taskLink(task.taskId, 'submitted'), ` to ${task.queue}.`);
    await context.act(async () => `Task ${task.taskId} submitted to ${task.queue}: ${task.status}.`);
  };

  const filters = el(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter tasks' },
    field('Queue', queueSelect),
    field('Status', statusSelect),
    field('Concurrency key', concurrencyKey),
    field('Created after', createdAfter),
    field('Created before', createdBefore),
  );
  filters.addEventListener('submit', (event) => event.preventDefault());
  filters.addEventListener('change', () => {
    applied = readFilters();
    pager.reset();
    void poller.now();
  });

  root.append(
    el('h1', {}, 'Tasks'),
    el(
      'div',
      { class: 'toolbar' },
      button('Submit task', openSubmit, { class: 'primary', 'data-key': 'submit-task' }),
    ),
    submitted,
    filters,
    el(
      'p',
      { class: 'note', id: noteId },
      'Newest first. Created after and Created before are in your time zone; leave one empty for no bound.',
    ),
    table.element,
    pager.element,
  );

  async function loadQueues(): Promise<void> {
    try {
      queues = (await api.listQueues(context.signal)).map((q) => q.name);
      setOptions(queueSelect, queueOptions(queues), queueSelect.value);
    } catch (error) {
      if (!context.signal.aborted) alertError(`Queues could not be read: ${messageOf(error)}`);
    }
  }

  const row = (task: TaskSummary) => [
    taskLink(task.taskId),
    task.queue,
    task.priority,
    task.status,
    `${task.attempt} of ${task.maxAttempts}`,
    task.owner ?? 'none',
    time(task.createdAt),
    time(task.updatedAt),
  ];

  /** The filters as last applied (at a change), not as half typed: a refresh reads with these. */
  const readFilters = () => ({
    queue: queueSelect.value,
    status: statusSelect.value,
    concurrencyKey: concurrencyKey.value.trim(),
    createdAfter: isoOf(createdAfter.value),
    createdBefore: isoOf(createdBefore.value),
  });
  let applied = readFilters();
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
    table.rows(page.tasks.map(row), 'No tasks match.');
  });
  void loadQueues();
};
