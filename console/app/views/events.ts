/**
 * The live lifecycle events of the local stack, newest on top. In AWS they go to the EventBridge bus: there the
 * view shows the changes it sees among the newest tasks instead.
 */

import { el } from '../dom';
import { sharedEventFeed } from '../event-feed';
import { time } from '../format';
import { DataTable } from '../table';
import { TaskChanges, WATCHED } from '../task-changes';
import type { View, ViewContext } from '../view';
import { eventRow } from './event-row';
import { taskLink } from './task-link';

/** Events shown at most. */
const SHOWN = 500;

export const eventsView: View = (root, context) => {
  root.append(el('h1', {}, 'Events'));
  if (context.session.events !== 'poll') {
    taskChangesFeed(root, context);
    return;
  }
  const feed = sharedEventFeed();
  const table = new DataTable('Events', ['Time', 'Type', 'Task', 'Agent', 'Queue', 'Details']);
  root.append(
    el(
      'p',
      { class: 'lead' },
      `The local stack’s lifecycle events as they happen, newest first; the last ${SHOWN} are shown.`,
    ),
    table.element,
  );

  let shown = -1;
  context.poll(async () => {
    await feed.read(context.signal);
    const newest = feed.events.at(-1)?.sequence ?? 0;
    if (newest === shown) return;
    shown = newest;
    table.rows(feed.events.slice(-SHOWN).reverse().map(eventRow), 'No events yet.');
  });
};

/** A deployed stack's feed: what changed among its newest tasks, read at each refresh while the view is shown. */
function taskChangesFeed(root: HTMLElement, context: ViewContext): void {
  const changes = new TaskChanges(SHOWN);
  const table = new DataTable('Task changes', ['Time', 'Change', 'Task', 'Agent', 'Queue']);
  root.append(
    el(
      'p',
      { class: 'lead' },
      `Lifecycle events go to the EventBridge bus in AWS, where rules and consumers read them. Here: the changes seen among the ${WATCHED} newest tasks since this view was opened, newest first.`,
    ),
    table.element,
  );
  let shown = -1;
  context.poll(async () => {
    await changes.read(context.signal);
    const newest = changes.changes.at(-1)?.sequence ?? 0;
    if (newest === shown) return;
    shown = newest;
    table.rows(
      changes.changes
        .slice()
        .reverse()
        .map(({ sequence, task, from }) => [
          time(task.updatedAt),
          from === undefined
            ? `new: ${task.status}`
            : from === task.status
              ? task.status
              : `${from} → ${task.status}`,
          taskLink(task.taskId, `change:${sequence}`),
          task.owner ?? '',
          task.queue,
        ]),
      'No changes yet.',
    );
  });
}
