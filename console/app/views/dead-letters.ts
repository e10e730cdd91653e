/** Dead tasks (`GET /v1/tasks?status=dead`), newest first, each with its last error and a redrive. */
import { api, type TaskSummary } from '../api';
import { button, el } from '../dom';
import { time } from '../format';
import { Pager } from '../pager';
import { DataTable } from '../table';
import type { View } from '../view';
import { redriveTask } from './task-actions';
import { taskLink } from './task-link';

const PAGE_SIZE = 50;
/** Longest error message shown in the table; the task's page has all of it. */
const ERROR_CHARS = 200;

const errorText = (task: TaskSummary) => {
  const message = task.error?.message ?? 'none';
  return message.length > ERROR_CHARS ? `${message.slice(0, ERROR_CHARS)}…` : message;
};

export const deadLettersView: View = (root, context) => {
  const table = new DataTable('Dead letters', [
    'Task',
    'Queue',
    'Priority',
    'Attempts',
    'Last error',
    'Died',
    'Actions',
  ]);
  const pager = new Pager('dead letters', () => void poller.now());
  root.append(
    el('h1', {}, 'Dead letters'),
    el(
      'p',
      { class: 'lead' },
      'Tasks that used all their attempts. A redrive queues one again with fresh attempts.',
    ),
    table.element,
    pager.element,
  );

  const row = (task: TaskSummary) => [
    taskLink(task.taskId),
    task.queue,
    task.priority,
    `${task.attempt} of ${task.maxAttempts}`,
    errorText(task),
    time(task.finishedAt ?? task.updatedAt),
    button('Redrive', (b) => redriveTask(task.taskId, b, context), {
      class: 'secondary',
      'aria-label': `Redrive ${task.taskId}`,
      'data-key': `redrive:${task.taskId}`,
    }),
  ];

  let shown = '';
  const poller = context.poll(async () => {
    const cursor = pager.cursor;
    const page = await api.listTasks({ status: 'dead', cursor, limit: PAGE_SIZE }, context.signal);
    if (cursor !== pager.cursor) return;
    pager.update(page.nextCursor);
    const key = JSON.stringify([cursor, page.tasks]);
    if (key === shown) return;
    shown = key;
    table.rows(
      page.tasks.map(row),
      cursor === undefined ? 'No dead tasks.' : 'No dead tasks on this page: go back to the first page.',
    );
  });
};
