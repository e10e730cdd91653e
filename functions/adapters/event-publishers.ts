/**
 * Where lifecycle events go: an EventBridge bus in AWS, a file and an in-memory feed on this machine. Publishing
 * is best effort: an event lost to an outage never fails the operation that caused it.
 */
import { appendFile } from 'node:fs/promises';
import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import type { EventPublisher } from '#core/ports/event-publisher';
import { EVENT_SOURCE, type SchedulerEvent } from '#domain/events';
import type { EventPage } from '#sdk/lifecycle-events';

export const noEvents: EventPublisher = { publish: async () => undefined };

/** PutEvents in batches of ten, the API's limit. */
export class EventBridgePublisher implements EventPublisher {
  constructor(
    private readonly client: EventBridgeClient,
    private readonly busName: string,
  ) {}

  async publish(events: readonly SchedulerEvent[]): Promise<void> {
    for (let i = 0; i < events.length; i += 10) {
      await this.client.send(
        new PutEventsCommand({
          Entries: events.slice(i, i + 10).map((event) => ({
            EventBusName: this.busName,
            Source: EVENT_SOURCE,
            DetailType: event.type,
            Detail: JSON.stringify(event),
            Time: new Date(event.time),
          })),
        }),
      );
    }
  }
}

/**
 * Local mode: every event appended to a JSON-lines file, and the latest kept in memory with a sequence number
 * for `GET /v1/events?since=`.
 */
export class LocalEventFeed implements EventPublisher {
  private readonly events: { sequence: number; event: SchedulerEvent }[] = [];
  private sequence = 0;

  constructor(
    private readonly file?: string,
    private readonly keep = 10_000,
  ) {}

  async publish(events: readonly SchedulerEvent[]): Promise<void> {
    for (const event of events) {
      this.events.push({ sequence: ++this.sequence, event });
    }
    if (this.events.length > this.keep) this.events.splice(0, this.events.length - this.keep);
    if (this.file && events.length > 0) {
      await appendFile(this.file, events.map((e) => `${JSON.stringify(e)}\n`).join(''));
    }
  }

  /**
   * Events after sequence `since`, oldest first, at most `limit`; `latest` is the newest sequence, so a reader
   * whose `since` is past it knows the feed began anew.
   */
  read(since: number, limit: number): EventPage {
    const page = this.events.filter((e) => e.sequence > since).slice(0, limit);
    return {
      events: page.map((e) => ({ sequence: e.sequence, ...e.event })),
      next: page.at(-1)?.sequence ?? since,
      latest: this.sequence,
    };
  }
}
