/** One schedule: its definition and task template, read once, and its occurrence ledger, refreshed. */
import { api, type Occurrence, type Schedule } from '../api';
import { type Child, el, replaceKeepingFocus } from '../dom';
import { jsonBlock, time } from '../format';
import { isAbort } from '../http';
import { alertError, messageOf } from '../status';
import { DataTable } from '../table';
import type { View } from '../view';
import { taskLink } from './task-link';

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
  return [list, el('h2', {}, 'Task template'), jsonBlock(schedule.task, 'Task template')];
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

    api.getSchedule(name, context.signal).then(
      (schedule) => replaceKeepingFocus(about, definition(schedule)),
      (error) => {
        if (isAbort(error) || context.signal.aborted) return;
        replaceKeepingFocus(about, [el('p', {}, 'The schedule could not be read.')]);
        alertError(messageOf(error));
      },
    );

    let shown = '';
    context.poll(async () => {
      const occurrences = await api.listOccurrences(name, context.signal);
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
