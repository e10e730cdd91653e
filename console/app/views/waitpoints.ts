/**
 * Open waitpoints (`GET /v1/waitpoints?status=open`), oldest first: the tasks suspended until someone answers, with
 * how long each has waited and a bar of how much of its time before the timeout that is. Each links to its task,
 * whose page approves or rejects the wait.
 */
import { api, type Waitpoint } from '../api';
import { el } from '../dom';
import { duration, time } from '../format';
import { Pager } from '../pager';
import { DataTable } from '../table';
import type { View } from '../view';
import { taskLink } from './task-link';

const PAGE_SIZE = 50;

const waitedText = (waitpoint: Waitpoint, now: number) =>
  duration(Math.max(0, (now - Date.parse(waitpoint.createdAt)) / 1_000));

export const waitpointsView: View = (root, context) => {
  const table = new DataTable('Open waitpoints', [
    'Waitpoint',
    'Task',
    'Created',
    'Waited',
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

  /** How long it has waited, and a bar of how much of its time before the timeout that is. */
  const waited = (waitpoint: Waitpoint, now: number) => {
    const created = Date.parse(waitpoint.createdAt);
    const span = Math.max(1, Date.parse(waitpoint.timeoutAt) - created);
    const seconds = Math.max(0, (now - created) / 1_000);
    return el(
      'div',
      { class: 'use' },
      el('span', { class: 'use-text', 'data-field': 'waited' }, waitedText(waitpoint, now)),
      el('meter', {
        class: 'use-bar',
        min: 0,
        max: span / 1_000,
        value: Math.min(seconds, span / 1_000),
        'aria-label': `Share of its time before the timeout that waitpoint ${waitpoint.waitpointId} has waited`,
      }),
    );
  };

  const row = (waitpoint: Waitpoint, now: number) => [
    el('span', { class: 'id' }, waitpoint.waitpointId),
    taskLink(waitpoint.taskId),
    time(waitpoint.createdAt),
    waited(waitpoint, now),
    time(waitpoint.timeoutAt),
    waitpoint.onTimeout,
  ];

  let shown = '';
  const poller = context.poll(async () => {
    const cursor = pager.cursor;
    const page = await api.listWaitpoints({ cursor, limit: PAGE_SIZE }, context.signal);
    if (cursor !== pager.cursor) return;
    pager.update(page.nextCursor);
    // How long each has waited grows at every refresh: shown again when it reads otherwise.
    const now = Date.now();
    const key = JSON.stringify([cursor, page.waitpoints, page.waitpoints.map((w) => waitedText(w, now))]);
    if (key === shown) return;
    shown = key;
    table.rows(
      page.waitpoints.map((waitpoint) => row(waitpoint, now)),
      cursor === undefined
        ? 'No open waitpoints: no task waits for an answer.'
        : 'No open waitpoints on this page: go back to the first page.',
    );
  });
};
