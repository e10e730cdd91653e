/**
 * The local event feed (`GET /v1/events?since=`), read on from where the last read stopped and kept to its
 * newest 1,000 events, shared by the views that show events. A first read catches up in pages of 1,000 (the
 * feed keeps 10,000); after that, one request per refresh.
 */
import { api, type FeedEvent } from './api';

/** The most events the API returns at once. */
const PAGE = 1_000;
/** Pages one read goes through at most before leaving the rest to the next read. */
const MAX_PAGES = 11;

export class EventFeed {
  /** Events kept, the newest. */
  readonly keep = 1_000;
  /** Oldest first. */
  events: FeedEvent[] = [];
  private since = 0;

  async read(signal?: AbortSignal): Promise<void> {
    for (let pages = 0; pages < MAX_PAGES; pages++) {
      const page = await api.listEvents(this.since, PAGE, signal);
      // The feed counts from 1 again (the local stack restarted): read it anew from its start.
      if (page.latest !== undefined && page.latest < this.since) {
        this.since = 0;
        this.events = [];
        continue;
      }
      // Two views' reads may overlap when one is left mid-read: take each event once.
      const fresh = page.events.filter((event) => event.sequence > this.since);
      const last = fresh.at(-1);
      if (last) {
        this.events = [...this.events, ...fresh].slice(-this.keep);
        this.since = last.sequence;
      }
      if (page.events.length < PAGE) return;
    }
  }
}

let shared: EventFeed | undefined;

export const sharedEventFeed = (): EventFeed => {
  shared ??= new EventFeed();
  return shared;
};

/** Drops what was read: a new session reads the feed anew. */
export const forgetEventFeed = (): void => {
  shared = undefined;
};
