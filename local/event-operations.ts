/**
 * `GET /v1/events?since=N&limit=M`: the local stack's lifecycle events, oldest first, from the feed the local
 * publisher keeps (in AWS they go to the EventBridge bus instead, and the route is not deployed).
 */
import type { LocalEventFeed } from '#adapters/event-publishers';
import { ValidationError } from '#domain/errors';
import type { Operation } from '../functions/http/http-api';

export const EVENTS_PAGE = { default: 100, max: 1_000 } as const;

const digits = (name: string, value: string | null, fallback: number, min: number, max: number) => {
  if (value === null) return fallback;
  const n = /^\d{1,12}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= min && n <= max)) throw new ValidationError(`${name}: an integer from ${min} to ${max}`);
  return n;
};

export const eventOperations = (feed: LocalEventFeed): Record<string, Operation> => ({
  listEvents: async (request) => {
    const since = digits('since', request.query.get('since'), 0, 0, 999_999_999_999);
    const limit = digits('limit', request.query.get('limit'), EVENTS_PAGE.default, 1, EVENTS_PAGE.max);
    return { status: 200, body: feed.read(since, limit) };
  },
});
