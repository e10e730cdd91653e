/**
 * The Queues view's last hour (`queue-history.ts`): for each queue a small line of its queued tasks and bars of the
 * claims it granted a minute, with the same numbers in a table. Locally from the event feed, at each refresh of the
 * view, for nothing; for a deployed stack from CloudWatch through the console server, once a minute, its cost said.
 */
import { api, type QueueStats, type Session } from '../api';
import { el, uniqueId } from '../dom';
import { sharedEventFeed } from '../event-feed';
import { ApiError } from '../http';
import { hoursFromEvents, hoursFromMetrics, MINUTES, type Minute, type QueueHour } from '../queue-history';
import { px, svg } from '../svg';
import type { ViewContext } from '../view';

/** CloudWatch is read again after this: its points are by minute. */
export const METRICS_EVERY_MS = 60_000;
/** Queues whose last hour is read at once (the console server reads 50 at most). */
const METRICS_QUEUES_MAX = 50;
/** GetMetricData's price: $0.01 per 1,000 metrics asked for; two a queue a read. */
const DOLLARS_PER_METRIC = 0.01 / 1_000;
const W = 240;
const H = 56;

const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const PRIORITY_SUM = (queue: QueueStats) => Object.values(queue.depth).reduce((sum, n) => sum + (n ?? 0), 0);

/** The note under the heading: where the numbers come from, and what reading them costs. */
export function costNote(session: Session, queues: number): string {
  if (session.events === 'poll')
    return 'Worked out in this page from the local stack’s event feed, which the page reads anyway: it costs nothing. Claims are counted from the events; the queued count is the API’s now, worked back through the events, so releases, resumed waits and unblocked dependents (which publish none) can make earlier minutes off by those.';
  if (session.metrics === 'cloudwatch') {
    const hourly = ((queues * 2 * (60 * 60_000)) / METRICS_EVERY_MS) * DOLLARS_PER_METRIC;
    return `Read from CloudWatch once a minute while this view is shown: GetMetricData of two metrics a queue (QueueDepth from the supervisor, Claims from the agent API), $0.01 per 1,000 metrics: $${hourly.toFixed(4)} an hour for these ${queues} ${queues === 1 ? 'queue' : 'queues'}.`;
  }
  return 'A deployed stack’s last hour is read from CloudWatch with AWS credentials: start the console with --auth iam to see it.';
}

const values = (minutes: readonly Minute[], pick: (m: Minute) => number | undefined) =>
  minutes.map(pick).filter((v): v is number => v !== undefined);

/** A chart's frame: an image named by its text alternative, its base line, and what it draws. */
function spark(label: string, ...marks: SVGElement[]): SVGSVGElement {
  return svg(
    'svg',
    {
      role: 'img',
      'aria-label': label,
      viewBox: `0 0 ${W} ${H}`,
      preserveAspectRatio: 'none',
      class: 'spark',
    },
    svg('line', { x1: 0, x2: W, y1: H - 1, y2: H - 1, class: 'axis' }),
    ...marks,
  );
}

/** The queued line: a polyline per run of known minutes. */
function queuedChart(hour: QueueHour, label: string): SVGSVGElement {
  const top = Math.max(1, ...values(hour.minutes, (m) => m.queued));
  const x = (i: number) => (i + 0.5) * (W / MINUTES);
  const y = (v: number) => H - 2 - (v / top) * (H - 4);
  const runs: string[][] = [[]];
  hour.minutes.forEach((m, i) => {
    if (m.queued === undefined) runs.push([]);
    else runs.at(-1)?.push(`${px(x(i))},${px(y(m.queued))}`);
  });
  return spark(
    label,
    ...runs
      .filter((run) => run.length > 0)
      .map((run) =>
        run.length === 1
          ? svg('circle', {
              cx: run[0]?.split(',')[0],
              cy: run[0]?.split(',')[1],
              r: 1.5,
              class: 'spark-dot',
            })
          : svg('polyline', { points: run.join(' '), class: 'spark-line' }),
      ),
  );
}

/** The claims bars, one a minute. */
function claimsChart(hour: QueueHour, label: string): SVGSVGElement {
  const top = Math.max(1, ...values(hour.minutes, (m) => m.claims));
  const slot = W / MINUTES;
  return spark(
    label,
    ...hour.minutes.flatMap((m, i) => {
      if (!m.claims) return [];
      const height = (m.claims / top) * (H - 4);
      return [
        svg('rect', {
          x: px(i * slot + 0.5),
          y: px(H - 1 - height),
          width: px(slot - 1),
          height: px(height),
          class: 'spark-bar',
        }),
      ];
    }),
  );
}

/** The numbers minute by minute, newest first, in a table built when it is first opened (most never are). */
function numbers(name: string, known: readonly Minute[]): HTMLDetailsElement {
  const details = el('details', {}, el('summary', {}, `The numbers of ${name}`));
  details.addEventListener('toggle', () => {
    if (!details.open || details.querySelector('table')) return;
    details.append(
      el(
        'table',
        { class: 'numbers' },
        el('caption', { class: 'visually-hidden' }, `Queue ${name}, minute by minute, newest first`),
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            ...['Minute', 'Queued at its end', 'Claims'].map((h) => el('th', { scope: 'col' }, h)),
          ),
        ),
        el(
          'tbody',
          {},
          ...known
            .slice()
            .reverse()
            .map((m) =>
              el(
                'tr',
                {},
                el('td', {}, el('time', { datetime: new Date(m.at).toISOString() }, clock.format(m.at))),
                el('td', {}, m.queued === undefined ? 'unknown' : String(m.queued)),
                el('td', {}, m.claims === undefined ? 'unknown' : String(m.claims)),
              ),
            ),
        ),
      ),
    );
  });
  return details;
}

/** One queue: its two charts, their scales and span in words, and the numbers in a table. */
function queueCard(hour: QueueHour): HTMLElement {
  const known = hour.minutes.filter((m) => m.queued !== undefined || m.claims !== undefined);
  // The latest count known: now's locally, the last minute CloudWatch has a point for.
  const queuedNow = values(hour.minutes, (m) => m.queued).at(-1);
  const queuedTop = Math.max(0, ...values(hour.minutes, (m) => m.queued));
  const claimsTotal = values(hour.minutes, (m) => m.claims).reduce((sum, n) => sum + n, 0);
  const claimsTop = Math.max(0, ...values(hour.minutes, (m) => m.claims));
  const captionId = uniqueId('queue-hour');
  const first = hour.minutes[0]?.at ?? 0;
  return el(
    'figure',
    { class: 'chart', 'aria-labelledby': captionId, 'data-queue': hour.name },
    el('figcaption', { id: captionId }, `Queue ${hour.name}, last hour`),
    el('p', { class: 'chart-label' }, `Queued: last ${queuedNow ?? 'unknown'}, at most ${queuedTop}`),
    queuedChart(
      hour,
      `Queued in ${hour.name} over the last hour: last ${queuedNow ?? 'unknown'}, at most ${queuedTop}`,
    ),
    el('p', { class: 'chart-label' }, `Claims a minute: ${claimsTotal} in all, at most ${claimsTop}`),
    claimsChart(
      hour,
      `Claims of ${hour.name} a minute over the last hour: ${claimsTotal} in all, at most ${claimsTop} in one minute`,
    ),
    el(
      'p',
      { class: 'chart-span', 'aria-hidden': 'true' },
      el('span', {}, clock.format(first)),
      el('span', {}, 'now'),
    ),
    numbers(hour.name, known),
  );
}

export function queueChartsSection(context: ViewContext) {
  const headingId = uniqueId('queues-hour');
  const note = el('p', { class: 'note', 'data-field': 'charts-cost' });
  const grid = el('div', { class: 'charts' });
  const section = el(
    'section',
    { 'aria-labelledby': headingId },
    el('h2', { id: headingId }, 'Last hour'),
    note,
    grid,
  );
  const feed = context.session.events === 'poll' ? sharedEventFeed() : undefined;
  let shown = '';
  /** The CloudWatch answer read last, and for which queues. */
  let read: { at: number; names: string; hours: QueueHour[] } | undefined;
  let openDetails = new Set<string>();

  const draw = (hours: QueueHour[]) => {
    const key = JSON.stringify(hours);
    if (key === shown) return;
    shown = key;
    // A table someone opened stays open through a refresh.
    openDetails = new Set(
      [...grid.querySelectorAll<HTMLElement>('figure[data-queue]')]
        .filter((figure) => figure.querySelector('details')?.open)
        .map((figure) => figure.dataset.queue ?? ''),
    );
    grid.replaceChildren(
      ...hours.map((hour) => {
        const card = queueCard(hour);
        if (openDetails.has(hour.name)) card.querySelector('details')?.setAttribute('open', '');
        return card;
      }),
    );
  };

  /** Reads what the local stack's chart is drawn from: the event feed, beside the view's other reads. */
  const prepare = async () => {
    if (feed) await feed.read(context.signal);
  };

  /** Shows the last hour of `queues` (as `GET /v1/queues` just counted them), `prepare` done. */
  const show = async (queues: readonly QueueStats[]) => {
    note.textContent = costNote(context.session, queues.length);
    const now = Date.now();
    if (feed) {
      // The page keeps the newest 1,000 events: all of them since the stack started while the first is its first.
      const complete = feed.events[0]?.sequence === 1;
      draw(
        hoursFromEvents(
          queues.map((q) => ({ name: q.name, queued: PRIORITY_SUM(q) })),
          feed.events,
          now,
          complete,
        ),
      );
      return;
    }
    if (context.session.metrics !== 'cloudwatch' || queues.length === 0) {
      grid.replaceChildren();
      return;
    }
    const asked = queues.slice(0, METRICS_QUEUES_MAX).map((q) => q.name);
    const names = asked.join(',');
    if (!read || read.names !== names || now - read.at >= METRICS_EVERY_MS) {
      try {
        read = {
          at: now,
          names,
          hours: hoursFromMetrics(await api.queueMetrics(asked, context.signal), now),
        };
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        // Said here, and tried again in a minute: not an alert at every refresh, nor a read.
        read = { at: now, names, hours: [] };
        shown = '';
        grid.replaceChildren(el('p', {}, `The last hour could not be read: ${error.message}`));
        return;
      }
    }
    if (read.hours.length > 0) draw(read.hours);
  };
  return { section, prepare, show };
}
