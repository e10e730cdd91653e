/** One lifecycle event as table cells: time, type, task, agent, queue, and the rest in a few words. */
import type { FeedEvent } from '../api';
import type { Child } from '../dom';
import { time } from '../format';
import { taskLink } from './task-link';

/** Longest text of an event's `data` shown. */
const DATA_CHARS = 300;

function details(event: FeedEvent): string {
  const parts = [
    event.schedule !== undefined && `schedule ${event.schedule}`,
    event.role !== undefined && `role ${event.role}`,
    event.data !== undefined && Object.keys(event.data).length > 0 && JSON.stringify(event.data),
  ].filter((part): part is string => typeof part === 'string');
  const text = parts.join('; ');
  return text.length > DATA_CHARS ? `${text.slice(0, DATA_CHARS)}…` : text;
}

export const eventRow = (event: FeedEvent): Child[] => [
  time(event.time),
  event.type,
  event.taskId ? taskLink(event.taskId, `event:${event.sequence}`) : '',
  event.agentId ?? '',
  event.queue ?? '',
  details(event),
];
