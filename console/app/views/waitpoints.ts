/**
 * Open waitpoints (`GET /v1/waitpoints?status=open`), oldest first: the tasks suspended until someone answers.
 * Each links to its task, whose page approves or rejects the wait.
 */
import { api, type Waitpoint } from '../api';
import { el } from '../dom';
import { time } from '../format';
import { Pager } from '../pager';
import { DataTable } from '../table';
import type { View } from '../view';
import { taskLink } from './task-link';

const PAGE_SIZE = 50;

export const waitpointsView: View = (root, context) => {
  const table = new DataTable('Open waitpoints', [
    'Waitpoint',
    'Task',
    'Created',
    'Times out at',
    'On timeout',
  ]);
  const pager = new Pager('open waitpoints', () => void poller.now());
  root.append(
    el('h1', {}, 'Waitpoints'),
    el(
      'p',
      { class: 'lead' },
      'Tasks suspended until someone answers, oldest first. Open a task to approve or reject its wait; unanswered, it resumes or fails when it times out.',
    ),
    table.element,
    pager.element,
  );

  const row = (waitpoint: Waitpoint) => [
    el('span', { class: 'id' }, waitpoint.waitpointId),
    taskLink(waitpoint.taskId),
    time(waitpoint.createdAt),
    time(waitpoint.timeoutAt),
    waitpoint.onTimeout,
  ];

  let shown = '';
  const poller = context.poll(async () => {
    const cursor = pager.cursor;
    const page = await api.listWaitpoints({ cursor, limit: PAGE_SIZE }, context.signal);
    if (cursor !== pager.cursor) return;
    pager.update(page.nextCursor);
    const key = JSON.stringify([cursor, page.waitpoints]);
    if (key === shown) return;
    shown = key;
    table.rows(
      page.waitpoints.map(row),
      cursor === undefined
        ? 'No open waitpoints: no task waits for an answer.'
        : 'No open waitpoints on this page: go back to the first page.',
    );
  });
};
