/**
 * The local event feed (`GET /v1/events?since=`), read on from where the last read stopped and kept to its
 * newest 1,000 events, shared by the views that show events and draw from them. A first read asks where the feed
 * stands and reads its newest 1,000 (not the 10,000 it keeps, of which 1,000 would be kept); after that, one request
 * per refresh, or pages of 1,000 to catch up.
 */
import { api, type EventPage, type FeedEvent } from './api';

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
  private started = false;

  async read(signal?: AbortSignal): Promise<void> {
    if (!this.started) {
      this.started = true;
      let first: EventPage;
      try {
        first = await api.listEvents(0, 1, signal);
      } catch (error) {
        this.started = false;
        throw error;
      }
      // Another read may have gone on meanwhile: never back.
      if (this.since === 0 && this.events.length === 0) this.since = Math.max(0, first.latest - this.keep);
    }
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
