/**
 * Schedules, a page at a time, each with its next fire time in its own time zone (when the server gives them).
 */
import { api, type Schedule } from '../api';
import { el, link } from '../dom';
import { zonedTime } from '../format';
import { Pager } from '../pager';
import { scheduleHref } from '../router';
import { type Cell, DataTable } from '../table';
import type { View } from '../view';

const PAGE_SIZE = 50;

const COLUMNS = ['Name', 'Expression', 'Time zone', 'Queue', 'Overlap', 'Missed runs', 'Enabled', 'Source'];
/** Shown only when the server sends `nextFires` (an older one does not). */
const NEXT_FIRES = 'Next fires';

export const schedulesView: View = (root, context) => {
  const table = new DataTable('Schedules', COLUMNS);
  const pager = new Pager('schedules', () => void poller.now());
  root.append(el('h1', {}, 'Schedules'), table.element, pager.element);

  const nextFire = (schedule: Schedule): Cell => {
    const first = schedule.nextFires?.[0];
    return first === undefined ? 'none' : zonedTime(first, schedule.timeZone);
  };

  const row = (schedule: Schedule, withNextFires: boolean): Cell[] => [
    link(scheduleHref(schedule.name), schedule.name, { 'data-key': `schedule:${schedule.name}` }),
    el('code', {}, schedule.expression),
    schedule.timeZone,
    schedule.task.queue,
    schedule.overlap,
    schedule.missedRuns,
    schedule.enabled ? 'yes' : 'no',
    schedule.source,
    ...(withNextFires ? [nextFire(schedule)] : []),
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
    const withNextFires = page.schedules.some((schedule) => schedule.nextFires !== undefined);
    table.setColumns(withNextFires ? [...COLUMNS, NEXT_FIRES] : COLUMNS);
    table.rows(
      page.schedules.map((schedule) => row(schedule, withNextFires)),
      'No schedules.',
    );
  });
};
