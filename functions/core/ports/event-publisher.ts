/**
 * Where lifecycle events go. Publishing is best effort: an event lost to an outage never fails the operation
 * that caused it.
 */
import type { SchedulerEvent } from '#domain/events';

export interface EventPublisher {
  publish(events: readonly SchedulerEvent[]): Promise<void>;
}
