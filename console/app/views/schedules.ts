/**
 * Schedules, a page at a time. The API gives no next fire times: the expression and its time zone say when.
 */
import { api, type Schedule } from '../api';
import { el, link } from '../dom';
import { Pager } from '../pager';
import { scheduleHref } from '../router';
import { DataTable } from '../table';
import type { View } from '../view';

const PAGE_SIZE = 50;

export const schedulesView: View = (root, context) => {
  const table = new DataTable('Schedules', [
    'Name',
    'Expression',
    'Time zone',
    'Queue',
    'Overlap',
    'Missed runs',
    'Enabled',
    'Source',
  ]);
  const pager = new Pager('schedules', () => void poller.now());
  root.append(el('h1', {}, 'Schedules'), table.element, pager.element);

  const row = (schedule: Schedule) => [
    link(scheduleHref(schedule.name), schedule.name, { 'data-key': `schedule:${schedule.name}` }),
    el('code', {}, schedule.expression),
    schedule.timeZone,
    schedule.task.queue,
    schedule.overlap,
    schedule.missedRuns,
    schedule.enabled ? 'yes' : 'no',
    schedule.source,
  ];

  let shown = '';
  const poller = context.poll(async () => {
    const cursor = pager.cursor;
    const page = await api.listSchedules({ cursor, limit: PAGE_SIZE }, context.signal);
    if (cursor !== pager.cursor) return;
    pager.update(page.nextCursor);
    const key = JSON.stringify([cursor, page.schedules]);
    if (key === shown) return;
    shown = key;
    table.rows(page.schedules.map(row), 'No schedules.');
  });
};
