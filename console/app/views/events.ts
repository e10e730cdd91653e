/** The live lifecycle events of the local stack, newest on top; in AWS they go to the EventBridge bus. */

import { el } from '../dom';
import { sharedEventFeed } from '../event-feed';
import { DataTable } from '../table';
import type { View } from '../view';
import { eventRow } from './event-row';

/** Events shown at most. */
const SHOWN = 500;

export const eventsView: View = (root, context) => {
  root.append(el('h1', {}, 'Events'));
  if (context.session.events !== 'poll') {
    root.append(
      el(
        'p',
        {},
        'The event feed is local only: in AWS, lifecycle events go to the EventBridge bus, where rules and consumers read them.',
      ),
    );
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
