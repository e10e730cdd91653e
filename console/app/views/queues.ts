/**
 * Queues: depth by priority, age of the oldest queued task, leases, pause and limits, from `GET /v1/queues`; above
 * them the pause of the whole scheduler, from `GET /v1/scheduler`; below them each queue's last hour
 * (`queue-charts.ts`) and the supervisor's figures, from `GET /v1/scheduler/stats`.
 */
import {
  api,
  type CycleFigures,
  type CycleIds,
  PRIORITIES,
  type QueueStats,
  type SchedulerControl,
  type SchedulerStats,
} from '../api';
import { button, el, replaceKeepingFocus } from '../dom';
import { duration, time } from '../format';
import { DataTable } from '../table';
import type { View } from '../view';
import { queueChartsSection } from './queue-charts';
import { describeLimits, editLimits } from './queue-limits';
import { taskLink } from './task-link';

/** Each figure of a pass, as people read it, in the order the API lists them. */
const FIGURES: readonly [keyof CycleFigures, string][] = [
  ['pendingRuns', 'Queued tasks looked at'],
  ['activeRuns', 'Leased tasks looked at'],
  ['sessionsScanned', 'Sessions scanned'],
  ['leasesRecovered', 'Leases recovered'],
  ['wakeAttempts', 'Wake attempts'],
  ['wakesSucceeded', 'Wakes succeeded'],
  ['wakesFailed', 'Wakes failed'],
  ['noMatchingSession', 'No live session serves them'],
  ['recentlyNotified', 'Left alone: notified recently'],
  ['unclaimable', 'Unclaimable: paused'],
  ['starved', 'Starved'],
  ['spawnRequested', 'Workers asked for'],
  ['needsAttention', 'Marked as needing attention'],
  ['errors', 'Errors'],
];

/** The first tasks the last pass counted in a figure, as links (one task may be in several figures); how many more. */
const tasksOf = (figure: string, ids: readonly string[] | undefined) =>
  !ids || ids.length === 0
    ? ''
    : [
        ...ids.slice(0, 3).flatMap((id, i) => [i > 0 ? ' ' : '', taskLink(id, `stats:${figure}:${id}`)]),
        ids.length > 3 ? ` +${ids.length - 3}` : '',
      ];

const capitalised = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

export const queuesView: View = (root, context) => {
  const table = new DataTable('Queues', [
    'Queue',
    ...PRIORITIES.map(capitalised),
    'Oldest queued',
    'Leased',
    'State',
    'Limits',
    'Actions',
  ]);
  const note = el('p', { class: 'note' });
  // Each queue's last hour, below the queues: queued and claims a minute.
  const charts = queueChartsSection(context);
  // The supervisor's figures, below the queues: what its passes found and did.
  const stats = new DataTable('Supervisor', ['Figure', 'Last pass', 'Total', 'Tasks of the last pass']);
  const statsLead = el('p', { class: 'lead', 'data-field': 'supervisor-passes' });
  const statsErrors = el('div', { 'data-field': 'supervisor-errors' });
  // The whole scheduler's state and its pause or resume, above the queues it holds back.
  const whole = el('div', { class: 'toolbar', role: 'group', 'aria-label': 'Scheduler' });
  const wholeNote = el('p', { class: 'note', 'data-field': 'scheduler-note' });
  root.append(
    el('h1', {}, 'Queues'),
    el('p', { class: 'lead' }, 'Tasks waiting by priority, tasks leased now, and each queue’s controls.'),
    whole,
    wholeNote,
    table.element,
    note,
    charts.section,
    el('h2', {}, 'Supervisor'),
    statsLead,
    stats.element,
    statsErrors,
  );

  const toggleScheduler = async (control: SchedulerControl, trigger: HTMLElement) => {
    const pausing = !control.paused;
    await context.confirmThenAct(
      {
        title: pausing ? 'Pause the whole scheduler?' : 'Resume the whole scheduler?',
        text: pausing
          ? 'Within 2 s agents are given no task and woken for none, in every queue. Tasks already leased go on; submissions, sweeps, retries and schedule fires continue, and their tasks queue up.'
          : 'Agents claim from every queue again (a queue paused on its own stays paused), and the idle agents are woken.',
        trigger,
      },
      async () => {
        const now = pausing ? await api.pauseScheduler() : await api.resumeScheduler();
        return now.paused ? 'Scheduler paused: no grants and no wakes in any queue.' : 'Scheduler resumed.';
      },
    );
  };

  const showScheduler = (control: SchedulerControl) => {
    const verb = control.paused ? 'Resume scheduler' : 'Pause scheduler';
    replaceKeepingFocus(whole, [
      el('span', {}, 'Scheduler'),
      el(
        'span',
        { class: `badge ${control.paused ? 'paused' : 'running'}`, 'data-field': 'scheduler-state' },
        control.paused ? 'paused' : 'running',
      ),
      button(verb, (b) => toggleScheduler(control, b), {
        'data-key': 'pause:scheduler',
        class: control.paused ? 'primary' : 'secondary',
      }),
    ]);
    wholeNote.textContent = control.paused
      ? 'Paused: no queue gives tasks to claims and no agent is woken; queued work waits for the resume.'
      : '';
  };

  const showStats = (figures: SchedulerStats) => {
    const last = figures.lastPass;
    const { passes } = figures.cumulative;
    replaceKeepingFocus(
      statsLead,
      last
        ? [`${passes} passes; the last at `, time(last.at), `, in ${last.durationMs} ms.`]
        : [`${passes} passes: no pass recorded yet.`],
    );
    stats.rows(
      FIGURES.map(([figure, label]) => [
        label,
        last === undefined ? '' : String(last[figure]),
        String(figures.cumulative[figure]),
        tasksOf(figure, last?.ids[figure as keyof CycleIds]),
      ]),
      '',
    );
    replaceKeepingFocus(
      statsErrors,
      figures.lastErrors.length === 0
        ? []
        : [
            el('p', {}, 'Last errors, of the pass at ', time(figures.lastErrors[0]?.at), ':'),
            el(
              'ul',
              {},
              ...figures.lastErrors.map((e) => el('li', {}, `${e.step}: ${e.name}: ${e.message}`)),
            ),
          ],
    );
  };

  const togglePaused = async (queue: QueueStats, trigger: HTMLElement) => {
    const pausing = !queue.paused;
    await context.confirmThenAct(
      {
        title: `${pausing ? 'Pause' : 'Resume'} queue ${queue.name}?`,
        text: pausing
          ? `Agents claim nothing from ${queue.name} until it is resumed. Tasks already leased go on; retries and sweeps continue.`
          : `Agents claim from ${queue.name} again, and its idle agents are woken.`,
        trigger,
      },
      async () => {
        const control = pausing ? await api.pauseQueue(queue.name) : await api.resumeQueue(queue.name);
        return `Queue ${control.name} ${control.paused ? 'paused' : 'resumed'}.`;
      },
    );
  };

  const changeLimits = async (queue: QueueStats, trigger: HTMLElement) => {
    if (await editLimits(queue.name, queue.limits, trigger)) {
      await context.act(async () => `Limits of queue ${queue.name} saved.`);
    }
  };

  const row = (queue: QueueStats) => {
    const queued = PRIORITIES.reduce((sum, p) => sum + (queue.depth[p] ?? 0), 0);
    const verb = queue.paused ? 'Resume' : 'Pause';
    return [
      queue.name,
      ...PRIORITIES.map((p) => String(queue.depth[p] ?? 0)),
      queued > 0 ? duration(queue.oldestAgeSeconds) : 'none queued',
      String(queue.running),
      el(
        'span',
        { class: `badge ${queue.paused ? 'paused' : 'running'}` },
        queue.paused ? 'paused' : 'running',
      ),
      describeLimits(queue.limits),
      el(
        'div',
        { class: 'row-actions' },
        button(verb, (b) => togglePaused(queue, b), {
          'aria-label': `${verb} ${queue.name}`,
          'data-key': `pause:${queue.name}`,
          class: 'secondary',
        }),
        button('Limits', (b) => changeLimits(queue, b), {
          'aria-label': `Limits for ${queue.name}`,
          'data-key': `limits:${queue.name}`,
          class: 'secondary',
        }),
      ),
    ];
  };

  let shown = '';
  let shownScheduler = '';
  let shownStats = '';
  context.poll(async () => {
    const [queues, scheduler, figures] = await Promise.all([
      api.listQueues(context.signal),
      api.getSchedulerControl(context.signal),
      api.getSchedulerStats(context.signal),
      charts.prepare(),
    ]);
    const statsKey = JSON.stringify(figures);
    if (statsKey !== shownStats) {
      shownStats = statsKey;
      showStats(figures);
    }
    const schedulerKey = JSON.stringify(scheduler);
    if (schedulerKey !== shownScheduler) {
      shownScheduler = schedulerKey;
      showScheduler(scheduler);
    }
    const key = JSON.stringify(queues);
    if (key !== shown) {
      shown = key;
      table.rows(queues.map(row), 'No queues are declared.');
      note.textContent = queues.some((q) => q.truncated)
        ? 'The counts stopped at their bound: they are lower bounds.'
        : '';
    }
    await charts.show(queues);
  });
};
