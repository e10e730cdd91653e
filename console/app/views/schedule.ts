/**
 * One schedule: its definition, next fire times and task template, read once and read again only once its next
 * fire has passed; and its occurrence ledger, refreshed.
 */
import { api, type Occurrence, type Schedule } from '../api';
import { type Child, el, replaceKeepingFocus, uniqueId } from '../dom';
import { jsonBlock, knowsTimeZone, time, zonedTime } from '../format';
import { isAbort } from '../http';
import { alertError, messageOf } from '../status';
import { DataTable } from '../table';
import type { View } from '../view';
import { taskLink } from './task-link';

/** Least time between two reads of the schedule (a browser clock ahead of the server's). */
const REREAD_MS = 10_000;

/** The upcoming fire times in the schedule's time zone; nothing when the server does not send them. */
function nextFires(schedule: Schedule): HTMLElement[] {
  if (schedule.nextFires === undefined) return [];
  const headingId = uniqueId('next-fires');
  const heading = el('h2', { id: headingId }, 'Next fires');
  if (schedule.nextFires.length === 0) {
    return [
      heading,
      el('p', {}, schedule.enabled ? 'None: the schedule fires no more.' : 'None: the schedule is disabled.'),
    ];
  }
  return [
    heading,
    el(
      'p',
      { class: 'note' },
      knowsTimeZone(schedule.timeZone)
        ? `In the schedule’s time zone, ${schedule.timeZone}.`
        : `This browser does not know the schedule’s time zone, ${schedule.timeZone}: the times are in UTC.`,
    ),
    el(
      'ul',
      { class: 'plain', 'aria-labelledby': headingId },
      ...schedule.nextFires.map((fire) => el('li', {}, zonedTime(fire, schedule.timeZone))),
    ),
  ];
}

function definition(schedule: Schedule): HTMLElement[] {
  const entries: [string, Child][] = [
    ['Expression', el('code', {}, schedule.expression)],
    ['Time zone', schedule.timeZone],
    ['Enabled', schedule.enabled ? 'yes' : 'no'],
    ['Overlap', schedule.overlap],
    ['Missed runs', schedule.missedRuns],
    ['Source', schedule.source],
    ['Created', schedule.source === 'declared' ? 'with the deployment' : time(schedule.createdAt)],
    ['Description', schedule.description ?? 'none'],
  ];
  const list = el('dl', { class: 'fields' });
  for (const [term, value] of entries) list.append(el('dt', {}, term), el('dd', {}, value));
  return [
    list,
    ...nextFires(schedule),
    el('h2', {}, 'Task template'),
    jsonBlock(schedule.task, 'Task template'),
  ];
}

const outcome = (occurrence: Occurrence) =>
  occurrence.reason ? `${occurrence.status} (${occurrence.reason})` : occurrence.status;

export const scheduleView =
  (name: string): View =>
  (root, context) => {
    const about = el('div', {}, el('p', {}, 'Loading…'));
    const table = new DataTable('Occurrences', ['Scheduled time', 'Outcome', 'Task', 'Recorded at']);
    root.append(
      el('h1', {}, `Schedule ${name}`),
      about,
      el('h2', {}, 'Occurrences'),
      el('p', { class: 'note' }, 'Newest first; the ledger keeps the last 100.'),
      table.element,
    );

    let scheduleShown = '';
    /** When to read the schedule again: once its next fire has passed, for the fires after it. */
    let readAgainAt = Number.POSITIVE_INFINITY;
    const showSchedule = (schedule: Schedule) => {
      const next = Date.parse(schedule.nextFires?.[0] ?? '');
      // Once its next fire has passed, or a minute from now at the latest: it may be changed elsewhere.
      readAgainAt = Math.max(
        Math.min(Number.isNaN(next) ? Number.POSITIVE_INFINITY : next, Date.now() + 60_000),
        Date.now() + REREAD_MS,
      );
      const key = JSON.stringify(schedule);
      if (key === scheduleShown) return;
      scheduleShown = key;
      replaceKeepingFocus(about, definition(schedule));
    };

    api.getSchedule(name, context.signal).then(showSchedule, (error) => {
      if (isAbort(error) || context.signal.aborted) return;
      // Read again at a later refresh.
      readAgainAt = Date.now() + REREAD_MS;
      replaceKeepingFocus(about, [el('p', {}, 'The schedule could not be read.')]);
      alertError(messageOf(error));
    });

    let shown = '';
    context.poll(async () => {
      const [occurrences] = await Promise.all([
        api.listOccurrences(name, context.signal),
        Date.now() >= readAgainAt ? api.getSchedule(name, context.signal).then(showSchedule) : undefined,
      ]);
      const key = JSON.stringify(occurrences);
      if (key === shown) return;
      shown = key;
      table.rows(
        occurrences.map((o) => [
          time(o.scheduledTime),
          outcome(o),
          o.taskId ? taskLink(o.taskId, `occurrence:${o.scheduledTime}`) : 'none',
          time(o.recordedAt),
        ]),
        'Nothing recorded yet.',
      );
    });
  };
