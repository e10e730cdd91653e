/**
 * Lifecycle events: what the scheduler tells the world. Schema version 1, published as EventBridge events with
 * `source: "agent-scheduler"`, `detail-type` the event's type, and `detail` this object. Consumers match on
 * `detail-type` and read `detail.version` before relying on fields; fields are only ever added within a version.
 */
import { EVENT_TYPES, type EventType, type SchedulerEvent as WireEvent } from '#sdk/lifecycle-events';

export const EVENT_SOURCE = 'agent-scheduler';
export const EVENT_SCHEMA_VERSION = 1;

// The event types are the wire's: declared once, in the SDK's types.
export { EVENT_TYPES, type EventType };

/** The events of a task's ordinary way from submit to success: published only when asked for (cost). */
export const ROUTINE_EVENT_TYPES: ReadonlySet<EventType> = new Set([
  'task.submitted',
  'task.claimed',
  'task.completed',
]);

/** An event as published: the SDK's type of it, at this schema version. */
export interface SchedulerEvent extends WireEvent {
  readonly version: typeof EVENT_SCHEMA_VERSION;
}

export function schedulerEvent(
  type: EventType,
  now: number,
  fields: Omit<SchedulerEvent, 'version' | 'type' | 'time'> = {},
): SchedulerEvent {
  return { version: EVENT_SCHEMA_VERSION, type, time: new Date(now).toISOString(), ...fields };
}
