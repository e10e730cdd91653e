/**
 * One task: its specification and state, the waitpoint it is suspended on, lineage, dependencies, output, its flow
 * as a graph and its attempts on a time axis, the actions its status allows, its payload (read once, when asked: it
 * may be 256 KB, and in S3) and (in local mode, when asked) its events.
 */
import { api, REDRIVABLE_STATUS, type Task, TERMINAL_STATUSES, type Waitpoint } from '../api';
import { button, type Child, el, mainRegion, replaceKeepingFocus } from '../dom';
import { sharedEventFeed } from '../event-feed';
import { bytes, jsonBlock, time } from '../format';
import { ApiError, isAbort } from '../http';
import { alertError, messageOf } from '../status';
import { DataTable } from '../table';
import type { View, ViewContext } from '../view';
import { eventRow } from './event-row';
import {
  approveWaitpoint,
  cancelTask,
  cancelTree,
  clearAttention,
  redriveTask,
  rejectWaitpoint,
  type Suspension,
} from './task-actions';
import { attemptsSection } from './task-attempts';
import { flowSection } from './task-flow';
import { taskLink } from './task-link';

type Entry = readonly [term: string, value: Child | readonly Child[], field?: string];

function definitions(entries: readonly Entry[]): HTMLElement {
  const list = el('dl', { class: 'fields' });
  for (const [term, value, name] of entries) {
    const children = Array.isArray(value) ? (value as readonly Child[]) : [value as Child];
    list.append(el('dt', {}, term), el('dd', name ? { 'data-field': name } : {}, ...children));
  }
  return list;
}

const optionalLink = (taskId: string | undefined, key: string) => (taskId ? taskLink(taskId, key) : 'none');

function linkList(taskIds: readonly string[] | undefined, key: string): Child {
  if (!taskIds || taskIds.length === 0) return 'none';
  return el('ul', { class: 'plain' }, ...taskIds.map((id) => el('li', {}, taskLink(id, `${key}:${id}`))));
}

const output = (title: string, value: unknown) =>
  el(
    'section',
    { class: 'output' },
    el('h3', {}, title),
    value === undefined ? el('p', {}, 'none') : jsonBlock(value, title),
  );

/** The task's suspension, when it is suspended on a waitpoint. */
const suspensionOf = (task: Task): Suspension | undefined =>
  task.status === 'suspended' && task.waitpointId !== undefined
    ? { taskId: task.taskId, waitpointId: task.waitpointId }
    : undefined;

/** What the task waits on; `waitpoint` is `undefined` when it could not be read. */
function waitpointSection(suspension: Suspension | undefined, waitpoint: Waitpoint | undefined): Child[] {
  if (!suspension) return [];
  const known = (value: (found: Waitpoint) => Child) => (waitpoint ? value(waitpoint) : 'unknown');
  return [
    el('h2', {}, 'Waitpoint'),
    el(
      'p',
      {},
      'The task is suspended until its waitpoint is answered: Approve resumes it with the data given, Reject with the reason given.',
    ),
    definitions([
      ['Waitpoint', el('span', { class: 'id' }, suspension.waitpointId), 'waitpoint'],
      ['Created', known((found) => time(found.createdAt))],
      ['Times out at', known((found) => time(found.timeoutAt)), 'timeout-at'],
      ['On timeout', known((found) => found.onTimeout)],
    ]),
  ];
}

/** The last progress its holder reported: a bar for the percentage, the line, the data; refreshed with the task. */
function progressSection(progress: Task['progress']): Child[] {
  if (!progress) return [];
  return [
    el('h2', {}, 'Progress'),
    progress.percent !== undefined &&
      el(
        'progress',
        { max: 100, value: progress.percent, 'aria-label': 'Progress', 'data-key': 'progress-bar' },
        `${progress.percent}%`,
      ),
    definitions([
      ['Done', progress.percent === undefined ? 'not said' : `${progress.percent}%`, 'progress-percent'],
      ['Message', progress.message ?? 'none', 'progress-message'],
      ['Reported', time(progress.at)],
      ['By attempt', String(progress.attempt)],
    ]),
    progress.data !== undefined && jsonBlock(progress.data, 'Progress data'),
  ];
}

function details(task: Task, waitpoint: Waitpoint | undefined): Child[] {
  return [
    definitions([
      ['Queue', task.queue],
      ['Priority', task.priority],
      ['Status', task.status, 'status'],
      [
        'Needs attention',
        task.needsAttention
          ? 'yes: it waited claimable past the starvation ladder’s last step, and raised the alarm'
          : 'no',
        'needs-attention',
      ],
      ['Attempt', `${task.attempt} of ${task.maxAttempts}`],
      // A server before snoozes names no limit.
      ['Snoozes', task.maxSnoozes === undefined ? 'none' : `${task.snoozes ?? 0} of ${task.maxSnoozes}`],
      [
        'Timeout',
        task.maxTimeoutSeconds === undefined
          ? `${task.timeoutSeconds} s`
          : `${task.timeoutSeconds} s, extensible to ${task.maxTimeoutSeconds} s`,
      ],
      ['Lease epoch', String(task.leaseEpoch)],
      ['Owner', task.owner ?? 'none'],
      ['Lease deadline', time(task.leaseDeadline)],
      ['Not before', time(task.notBefore)],
      ['Expires at', time(task.expiresAt)],
      ['Concurrency key', task.concurrencyKey ?? 'none'],
      [
        'Requires',
        task.require
          ? Object.entries(task.require)
              .map(([name, value]) => `${name}=${value}`)
              .join(', ')
          : 'nothing',
      ],
      ['Idempotency key', task.idempotencyKey ?? 'none'],
      ['Payload', bytes(task.payloadBytes)],
      ['Created', time(task.createdAt)],
      ['Updated', time(task.updatedAt)],
      ['Finished', time(task.finishedAt, 'not yet')],
    ]),
    ...progressSection(task.progress),
    ...(task.cascade
      ? [
          el('h2', {}, 'Cancellation of descendants'),
          definitions([
            ['Descendants cancelled', String(task.cascade.cancelled), 'cascade-cancelled'],
            [
              'State',
              task.cascade.done ? 'done' : `${task.cascade.pending} still to look at`,
              'cascade-state',
            ],
            ['Started', time(task.cascade.startedAt)],
            ['Finished', time(task.cascade.finishedAt, 'not yet')],
          ]),
        ]
      : []),
    ...waitpointSection(suspensionOf(task), waitpoint),
    el('h2', {}, 'Lineage'),
    definitions([
      ['Parent', optionalLink(task.parentTaskId, 'parent')],
      ['Root', optionalLink(task.rootTaskId, 'root')],
      [
        'Failure of',
        task.failureOf
          ? [
              taskLink(task.failureOf.taskId, 'failure-of'),
              task.failureOf.error ? ` (its error: ${task.failureOf.error.message})` : '',
            ]
          : 'none',
      ],
      ['On-failure task', optionalLink(task.onFailureTaskId, 'on-failure')],
    ]),
    el('h2', {}, 'Dependencies'),
    task.dependencyCount === undefined
      ? el('p', {}, 'Submitted without dependencies.')
      : definitions([
          ['Dependencies', String(task.dependencyCount)],
          ['Waiting on', linkList(task.waitingOn, 'waiting-on')],
          ['Failed dependency', optionalLink(task.failedDependency, 'failed-dependency')],
          ['On dependency failure', task.onDependencyFailure ?? 'cancel'],
        ]),
    el('h2', {}, 'Output'),
    output('Result', task.result),
    output('Error', task.error),
    output('Checkpoint', task.checkpoint),
  ];
}

/** The payload's section: its size, and a button that reads it once (the refresh reads the task without it). */
function payloadSection(taskId: string, context: ViewContext) {
  const section = el('section', { 'aria-labelledby': 'task-payload', hidden: true });
  const size = el('p', {});
  let loading = false;
  const show = async (pressed: HTMLButtonElement) => {
    if (loading) return;
    loading = true;
    pressed.setAttribute('aria-disabled', 'true');
    try {
      const task = await api.getTaskWithPayload(taskId, context.signal);
      const block =
        'payload' in task
          ? jsonBlock(task.payload, 'Payload')
          : el(
              'p',
              { tabindex: -1 },
              task.payloadGone
                ? 'The payload is no longer kept: one stored in S3 is deleted when its task succeeds, and any once its retention has passed.'
                : 'The server sent no payload.',
            );
      size.remove();
      pressed.replaceWith(block);
      // Focus goes to what replaced the button: the payload's region (in a wrapper when truncated).
      (block.querySelector('pre') ?? block).focus();
    } catch (error) {
      if (!isAbort(error) && !context.signal.aborted) {
        alertError(`The payload could not be read: ${messageOf(error)}`);
      }
      pressed.removeAttribute('aria-disabled');
    } finally {
      loading = false;
    }
  };
  section.append(
    el('h2', { id: 'task-payload' }, 'Payload'),
    size,
    button('Show payload', (b) => void show(b), { class: 'secondary', 'data-key': 'show-payload' }),
  );
  return {
    section,
    showFor: (task: Task) => {
      section.hidden = false;
      size.textContent = `${bytes(task.payloadBytes)}, read from the server only when asked.`;
    },
    hide: () => {
      if (section.contains(document.activeElement)) mainRegion()?.focus({ preventScroll: true });
      section.hidden = true;
    },
  };
}

/**
 * The task's events, from the local feed, read only once asked for: `read` does nothing until then. `refresh`
 * reads at once, when they are asked for.
 */
function eventsSection(taskId: string, context: ViewContext, refresh: () => void) {
  const section = el('section', { 'aria-labelledby': 'task-events' });
  const feed = context.session.events === 'poll' ? sharedEventFeed() : undefined;
  let table: DataTable | undefined;
  let shown = '';
  section.append(el('h2', { id: 'task-events' }, 'Events'));
  if (!feed) {
    section.append(el('p', {}, 'Events are on the EventBridge bus in AWS.'));
  } else {
    section.append(
      el(
        'p',
        {},
        `This task’s events among the last ${feed.keep.toLocaleString('en')} events of the local feed; older ones are not looked at.`,
      ),
      button(
        'Show events',
        (b) => {
          table = new DataTable('Events of this task', ['Time', 'Type', 'Agent', 'Details']);
          b.replaceWith(table.element);
          table.element.focus();
          refresh();
        },
        { class: 'secondary', 'data-key': 'show-events' },
      ),
    );
  }
  const read = async () => {
    if (!table || !feed) return;
    await feed.read(context.signal);
    const mine = feed.events.filter((event) => event.taskId === taskId).reverse();
    const key = JSON.stringify(mine.map((event) => event.sequence));
    if (key === shown) return;
    shown = key;
    table.rows(
      mine.map((event) => {
        const [when, type, , agent, , more] = eventRow(event);
        return [when, type, agent, more];
      }),
      'No events of this task among them.',
    );
  };
  return { section, read };
}

export const taskView =
  (taskId: string): View =>
  (root, context) => {
    const actions = el('div', { class: 'toolbar' });
    const body = el('div', {}, el('p', {}, 'Loading…'));
    const payload = payloadSection(taskId, context);
    const events = eventsSection(taskId, context, () => void poller.now());
    const flow = flowSection(taskId, context);
    const attempts = attemptsSection(context);
    root.append(
      el('h1', {}, `Task ${taskId}`),
      actions,
      body,
      flow.section,
      attempts.section,
      payload.section,
      events.section,
    );

    const actionButtons = (task: Task): Child[] => {
      const suspension = suspensionOf(task);
      return [
        suspension &&
          button('Approve', (b) => approveWaitpoint(suspension, b, context), {
            class: 'primary',
            'data-key': 'approve-waitpoint',
          }),
        suspension &&
          button('Reject', (b) => rejectWaitpoint(suspension, b, context), {
            class: 'secondary',
            'data-key': 'reject-waitpoint',
          }),
        !TERMINAL_STATUSES.has(task.status) &&
          button('Cancel task', (b) => cancelTask(task.taskId, b, context), {
            class: 'danger',
            'data-key': 'cancel-task',
          }),
        // Any task may have led to others; an ended one's descendants may still run.
        task.cascade?.done !== true &&
          button('Cancel with descendants', (b) => cancelTree(task.taskId, b, context), {
            class: 'danger',
            'data-key': 'cancel-tree',
          }),
        task.needsAttention === true &&
          button('Clear attention', () => clearAttention(task.taskId, context), {
            class: 'secondary',
            'data-key': 'clear-attention',
          }),
        task.status === REDRIVABLE_STATUS &&
          button('Redrive task', (b) => redriveTask(task.taskId, b, context), {
            class: 'primary',
            'data-key': 'redrive-task',
          }),
      ];
    };

    let shown = '';
    const showTask = (task: Task, waitpoint: Waitpoint | undefined) => {
      const key = JSON.stringify([task, waitpoint]);
      if (key === shown) return;
      shown = key;
      replaceKeepingFocus(actions, actionButtons(task));
      replaceKeepingFocus(body, details(task, waitpoint));
      payload.showFor(task);
    };

    /** The waitpoint read last: read once, not at every refresh (its times never change while it is open). */
    let looked: Waitpoint | undefined;
    const waitpointOf = async (suspension: Suspension | undefined): Promise<Waitpoint | undefined> => {
      if (!suspension) return undefined;
      if (looked?.waitpointId !== suspension.waitpointId)
        looked = await api.getWaitpoint(suspension.waitpointId, context.signal);
      return looked;
    };

    const readTask = async () => {
      let task: Task;
      try {
        task = await api.getTask(taskId, context.signal);
      } catch (error) {
        // No such task, or not a task id: say so in place of the details.
        if (error instanceof ApiError && (error.status === 404 || error.status === 400)) {
          shown = '';
          payload.hide();
          replaceKeepingFocus(actions, []);
          replaceKeepingFocus(body, [el('p', {}, 'This task could not be read.')]);
        }
        throw error;
      }
      // A waitpoint that could not be read leaves the task shown, its times "unknown", and the error alerted.
      const [waitpoint] = await Promise.allSettled([waitpointOf(suspensionOf(task))]);
      const read = waitpoint.status === 'fulfilled' ? waitpoint.value : undefined;
      showTask(task, read);
      await Promise.all([flow.read(task), attempts.read(task, read ?? looked)]);
      if (waitpoint.status === 'rejected') throw waitpoint.reason;
    };

    const poller = context.poll(async () => {
      await Promise.all([readTask(), events.read()]);
    });
  };
