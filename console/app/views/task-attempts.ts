/**
 * A task's attempts on its page, as bars on a time axis (`attempts.ts`): each from its claim to its end, coloured by
 * how it ended, its last progress report a dot on it; the same in a table. Locally from the event feed the page
 * reads anyway, one request a refresh; a deployed stack's events go to EventBridge, so there only the task's record
 * is shown.
 */

import type { Task, Waitpoint } from '../api';
import { type Attempt, type AttemptHistory, attemptsOf, timeTicks } from '../attempts';
import { type Child, el, replaceKeepingFocus, uniqueId } from '../dom';
import { sharedEventFeed } from '../event-feed';
import { duration, time } from '../format';
import { px, svg } from '../svg';
import { DataTable } from '../table';
import type { ViewContext } from '../view';

const ROW = 30;
const BAR = 16;
const LABEL = 92;
const AXIS = 26;

const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });

/** The colour class of an end. */
function tone(attempt: Attempt): string {
  switch (attempt.end) {
    case 'running':
      return 'running';
    case 'succeeded':
      return 'done';
    case 'failed, retried':
    case 'failed, dead':
    case 'lease lost':
      return 'failed';
    case 'cancelled':
      return 'ended';
    case 'suspended':
    case 'snoozed or suspended':
      return 'waiting';
  }
}

const endText = (a: Attempt) =>
  `${a.end}${a.detail ? ` (${a.detail})` : ''}${a.endUnknown ? ', end not recorded: by then at the latest' : ''}`;

function summary(history: AttemptHistory): string {
  const by = new Map<string, number>();
  for (const a of history.attempts) by.set(a.end, (by.get(a.end) ?? 0) + 1);
  const ends = [...by].map(([end, n]) => `${n} ${end}`).join(', ');
  const n = history.attempts.length;
  return `${n} ${n === 1 ? 'claim' : 'claims'}: ${ends}`;
}

/** The bars, on an axis `width` pixels wide. */
function chart(history: AttemptHistory, width: number, label: string): SVGSVGElement {
  const plot = width - LABEL - 16;
  const span = Math.max(1, history.to - history.from);
  const x = (t: number) => LABEL + ((t - history.from) / span) * plot;
  const height = history.attempts.length * ROW + AXIS + 8;
  const axisY = history.attempts.length * ROW + 4;
  const ticks = timeTicks(history.from, history.to, Math.max(2, Math.floor(plot / 90)));
  return svg(
    'svg',
    {
      role: 'img',
      'aria-label': label,
      width,
      height,
      viewBox: `0 0 ${width} ${height}`,
      class: 'timeline',
    },
    ...ticks.map((t) =>
      svg(
        'g',
        { class: 'tick' },
        svg('line', { x1: px(x(t)), x2: px(x(t)), y1: 0, y2: axisY, class: 'grid' }),
        // Kept inside the picture: a label is about 80 px wide.
        svg(
          'text',
          { x: px(Math.min(width - 42, Math.max(LABEL + 40, x(t)))), y: axisY + 16, class: 'axis-label' },
          clock.format(t),
        ),
      ),
    ),
    svg('line', { x1: LABEL, x2: LABEL + plot, y1: axisY, y2: axisY, class: 'axis' }),
    ...history.attempts.map((a, i) => {
      const y = i * ROW + (ROW - BAR) / 2;
      const left = x(a.claimedAt);
      const barWidth = Math.max(3, x(a.endedAt) - left);
      return svg(
        'g',
        { class: `bar tone-${tone(a)}${a.endUnknown ? ' unknown-end' : ''}` },
        svg('title', {}, `Attempt ${a.attempt} (lease ${a.leaseEpoch}): ${endText(a)}`),
        svg('text', { x: 4, y: px(y + BAR - 3), class: 'row-label' }, `Attempt ${a.attempt}`),
        svg('rect', { x: px(left), y: px(y), width: px(barWidth), height: BAR, rx: 3 }),
        a.progressAt !== undefined &&
          svg('circle', { cx: px(x(a.progressAt)), cy: px(y + BAR / 2), r: 4, class: 'progress-dot' }),
      );
    }),
  );
}

export function attemptsSection(context: ViewContext) {
  const headingId = uniqueId('task-attempts');
  const feed = context.session.events === 'poll' ? sharedEventFeed() : undefined;
  const picture = el('div', { class: 'picture-wrap' });
  const note = el('p', { class: 'note' });
  // The colours, for the eye; the table below says each attempt's end in words.
  const legend = el(
    'p',
    { class: 'legend', 'aria-hidden': 'true' },
    ...(
      [
        ['running', 'running'],
        ['done', 'succeeded'],
        ['failed', 'failed or lost'],
        ['waiting', 'given back'],
        ['ended', 'cancelled'],
      ] as const
    ).map(([tone, text]) => el('span', {}, el('span', { class: `swatch tone-${tone}` }), text)),
  );
  const table = new DataTable('Attempts', ['Attempt', 'Lease', 'Agent', 'Claimed', 'Ended', 'How', 'Lasted']);
  const section = el(
    'section',
    { 'aria-labelledby': headingId },
    el('h2', { id: headingId }, 'Attempts'),
    feed
      ? el(
          'p',
          { class: 'lead' },
          `Each claim of the task, from the last ${feed.keep.toLocaleString('en')} events of the local feed: a bar from its claim to its end. Heartbeats are not events; the dot is its last progress report.`,
        )
      : el(
          'p',
          { class: 'lead' },
          'Attempts are pieced together from the lifecycle events, which a deployed stack sends to its EventBridge bus: here, what the task’s record holds.',
        ),
    picture,
    note,
  );
  if (feed) section.append(legend, table.element);

  let shown = '';
  const showHistory = (history: AttemptHistory) => {
    const width = Math.max(320, Math.min(960, Math.floor(section.clientWidth || 640)));
    const key = JSON.stringify([history, width]);
    if (key === shown) return;
    shown = key;
    if (history.attempts.length === 0) {
      picture.replaceChildren();
      note.textContent = 'Not claimed among these events.';
      table.rows([], 'No claims.');
      return;
    }
    const label = `Attempts of the task, ${summary(history)}`;
    picture.replaceChildren(chart(history, width, label));
    note.textContent = `Submitted ${clock.format(history.submittedAt)}; ${summary(history)}.`;
    table.rows(
      history.attempts.map((a): Child[] => [
        String(a.attempt),
        String(a.leaseEpoch),
        a.agentId ?? 'unknown',
        time(new Date(a.claimedAt).toISOString()),
        a.end === 'running' ? 'not yet' : time(new Date(a.endedAt).toISOString()),
        endText(a),
        duration((a.endedAt - a.claimedAt) / 1_000),
      ]),
      'No claims.',
    );
  };

  /** Without a feed: the record's facts, in a few lines. */
  const showRecord = (task: Task) => {
    const key = JSON.stringify([
      task.attempt,
      task.status,
      task.leaseDeadline,
      task.progress?.at,
      task.finishedAt,
    ]);
    if (key === shown) return;
    shown = key;
    replaceKeepingFocus(
      note,
      [
        `Attempt ${task.attempt} of ${task.maxAttempts}; `,
        task.status === 'leased'
          ? ['running, its deadline ', time(task.leaseDeadline), '; ']
          : `${task.status}; `,
        task.progress
          ? ['last progress at ', time(task.progress.at), ` by attempt ${task.progress.attempt}; `]
          : '',
        'finished ',
        time(task.finishedAt, 'not yet'),
        '.',
      ].flat(),
    );
  };

  const read = async (task: Task, waitpoint: Waitpoint | undefined) => {
    if (!feed) {
      showRecord(task);
      return;
    }
    await feed.read(context.signal);
    showHistory(attemptsOf(task, feed.events, waitpoint, Date.now()));
  };
  return { section, read };
}
