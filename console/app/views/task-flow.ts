/**
 * A task's flow on its page: the tasks linked to it drawn as a graph (`flow-graph.ts`), each node a link to its
 * task's page and coloured by its status, with the same nodes and edges as a list. Read from
 * `GET /v1/tasks/{taskId}/links` when the page opens, when the task changes, and every `LINKS_EVERY_MS` otherwise
 * (a child or a dependency changes without its relative changing).
 */
import { api, type Task, type TaskLinks } from '../api';
import { type Child, el, replaceKeepingFocus, uniqueId } from '../dom';
import {
  type FlowLayout,
  type FlowNode,
  LANE,
  layoutFlow,
  NODE,
  perRowFor,
  RELATION_LABELS,
  statusTone,
} from '../flow-graph';
import { ApiError } from '../http';
import { taskHref } from '../router';
import { px, svg } from '../svg';
import type { ViewContext } from '../view';
import { taskLink } from './task-link';

/** The links are read again at least this often while the page is shown: one request. */
export const LINKS_EVERY_MS = 30_000;

const statusText = (node: Pick<FlowNode, 'status'>) => node.status ?? 'not there';

/** "1 parent, 2 children, 1 dependency": what the graph holds, by relation. */
function counts(layout: FlowLayout): string {
  const by = new Map<string, number>();
  for (const node of layout.nodes)
    if (node.relation !== 'self')
      by.set(RELATION_LABELS[node.relation], (by.get(RELATION_LABELS[node.relation]) ?? 0) + 1);
  return [...by].map(([label, n]) => `${label}: ${n}`).join(', ');
}

function nodeOf(node: FlowNode, self: string): SVGElement {
  // The name is the text shown, as it reads: relation, id, status.
  const label = `${RELATION_LABELS[node.relation]} ${node.taskId} ${statusText(node)}`;
  const cx = node.x + NODE.width / 2;
  const box = [
    svg('rect', {
      x: px(node.x),
      y: px(node.y),
      width: NODE.width,
      height: NODE.height,
      rx: 8,
      class: 'node-box',
    }),
    // A space after each line, so the lines read as words, as the name says them.
    svg(
      'text',
      { x: px(cx), y: px(node.y + 18), class: 'node-relation' },
      `${RELATION_LABELS[node.relation]} `,
    ),
    svg('text', { x: px(cx), y: px(node.y + 36), class: 'node-id' }, `${node.taskId} `),
    svg('text', { x: px(cx), y: px(node.y + 52), class: 'node-status' }, statusText(node)),
  ];
  const tone = `flow-node tone-${statusTone(node.status)}${node.relation === 'self' ? ' self' : ''}`;
  // The task itself is not a link to the page it is on.
  if (node.taskId === self) return svg('g', { class: tone }, svg('title', {}, label), ...box);
  return svg(
    'a',
    {
      href: taskHref(node.taskId),
      class: tone,
      'aria-label': label,
      'data-key': `flow:${node.relation}:${node.taskId}`,
    },
    svg('title', {}, label),
    ...box,
  );
}

function drawing(layout: FlowLayout, self: string, label: string): SVGSVGElement {
  const arrow = uniqueId('flow-arrow');
  const edges = layout.edges.map((edge) => {
    if (edge.lane) {
      // Out of the side of one, along the lane, into the side of the other.
      const laneX = LANE / 2;
      const y1 = edge.from.y + NODE.height / 2;
      const y2 = edge.to.y + NODE.height / 2;
      return svg('path', {
        d: `M${px(edge.from.x)},${px(y1)} H${px(laneX)} V${px(y2)} H${px(edge.to.x - 4)}`,
        class: 'edge',
        'marker-end': `url(#${arrow})`,
      });
    }
    const x1 = edge.from.x + NODE.width / 2;
    const y1 = edge.from.y + NODE.height;
    const x2 = edge.to.x + NODE.width / 2;
    const y2 = edge.to.y - 4;
    const bend = (y2 - y1) / 2;
    return svg('path', {
      d: `M${px(x1)},${px(y1)} C${px(x1)},${px(y1 + bend)} ${px(x2)},${px(y2 - bend)} ${px(x2)},${px(y2)}`,
      class: edge.indirect ? 'edge indirect' : 'edge',
      'marker-end': `url(#${arrow})`,
    });
  });
  return svg(
    'svg',
    {
      role: 'group',
      'aria-label': label,
      width: px(layout.width + 8),
      height: px(layout.height + 8),
      viewBox: `-4 -4 ${px(layout.width + 8)} ${px(layout.height + 8)}`,
      class: 'flow-graph',
    },
    svg(
      'defs',
      {},
      svg(
        'marker',
        { id: arrow, viewBox: '0 0 8 8', refX: 7, refY: 4, markerWidth: 8, markerHeight: 8, orient: 'auto' },
        svg('path', { d: 'M0,0 L8,4 L0,8 z', class: 'edge-head' }),
      ),
    ),
    svg('g', { 'aria-hidden': 'true' }, ...edges),
    ...layout.nodes.map((node) => nodeOf(node, self)),
  );
}

/** The same nodes and edges as text: each edge a sentence, the linked task a link. */
function asList(layout: FlowLayout, self: string): HTMLElement {
  const name = (node: FlowNode): Child[] =>
    node.taskId === self
      ? ['this task']
      : [
          RELATION_LABELS[node.relation],
          ' ',
          taskLink(node.taskId, `flow-list:${node.relation}:${node.taskId}`),
          ` (${statusText(node)})`,
        ];
  return el(
    'ul',
    { class: 'picture-list' },
    ...layout.edges.map((edge) => el('li', {}, ...name(edge.from), ` ${edge.says} `, ...name(edge.to))),
  );
}

export function flowSection(taskId: string, context: ViewContext) {
  const headingId = uniqueId('task-flow');
  const body = el('div', {}, el('p', {}, 'Loading…'));
  const section = el('section', { 'aria-labelledby': headingId }, el('h2', { id: headingId }, 'Flow'), body);

  const show = (task: Task, links: TaskLinks, perRow: number) => {
    const layout = layoutFlow(task, links, perRow);
    if (layout.nodes.length === 1) {
      replaceKeepingFocus(body, [
        el(
          'p',
          { class: 'note' },
          'Linked to no other task: no parent, children, dependencies, dependents or failure hook.',
        ),
      ]);
      return;
    }
    const captionId = uniqueId('flow-caption');
    const more = [
      links.childrenTruncated && 'Only its first 50 children are drawn.',
      links.dependentsTruncated && 'Only its first 50 dependents are drawn.',
    ].filter((line): line is string => typeof line === 'string');
    replaceKeepingFocus(body, [
      el(
        'figure',
        { class: 'picture', 'aria-labelledby': captionId },
        el(
          'div',
          { class: 'picture-wrap', role: 'region', 'aria-label': 'Flow graph', tabindex: 0 },
          drawing(layout, taskId, `Flow of task ${taskId}: ${counts(layout)}`),
        ),
        el(
          'figcaption',
          { id: captionId, class: 'note' },
          `Tasks before it above, after it below, each coloured by its status: ${counts(layout)}. `,
          ...more.map((line) => `${line} `),
        ),
      ),
      el('details', {}, el('summary', {}, 'The flow as a list'), asList(layout, taskId)),
    ]);
  };

  let readFor = '';
  let readAt = 0;
  let shown = '';
  let last: { task: Task; links: TaskLinks } | undefined;
  /** Reads the links when the task changed, or once `LINKS_EVERY_MS` passed; shows them when they changed. */
  const read = async (task: Task) => {
    const state = `${task.status} ${task.updatedAt}`;
    if (state === readFor && Date.now() - readAt < LINKS_EVERY_MS) {
      redraw();
      return;
    }
    let links: TaskLinks;
    try {
      links = await api.getTaskLinks(taskId, context.signal);
    } catch (error) {
      // A server before links answers 404: say so here, and do not alert at every refresh.
      if (!(error instanceof ApiError && error.status === 404)) throw error;
      readFor = state;
      readAt = Date.now();
      shown = '';
      last = undefined;
      replaceKeepingFocus(body, [
        el('p', { class: 'note' }, 'The server does not list the tasks linked to this one.'),
      ]);
      return;
    }
    readFor = state;
    readAt = Date.now();
    last = { task, links };
    redraw();
  };
  /** Draws the links read last, as many nodes side by side as the section's width takes. */
  const redraw = () => {
    if (!last) return;
    const perRow = perRowFor(section.clientWidth || 1_000);
    const key = JSON.stringify([last.task.status, last.links, perRow]);
    if (key === shown) return;
    shown = key;
    show(last.task, last.links, perRow);
  };
  return { section, read };
}
