/**
 * The lifecycle events the scheduler publishes: their types, an event as published, and the local stack's feed of
 * them (`GET /v1/events`). Declared here once, for the SDK, the server and the console's page alike.
 */

/** The lifecycle events the scheduler publishes (to EventBridge; in local mode, also on `GET /v1/events`). */
export const EVENT_TYPES = [
  'task.submitted',
  'task.claimed',
  'task.completed',
  'task.failed',
  'task.dead',
  'task.lost',
  'task.cancelled',
  'task.expired',
  'task.starved',
  'task.onFailureLost',
  'agent.online',
  'agent.offline',
  'agent.spawnRequested',
  'schedule.fired',
  'schedule.skipped',
  'queue.noCapableAgent',
  'role.picked',
  'role.released',
  'role.lost',
  'rateLimit.saturated',
  'budget.exhausted',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * A lifecycle event as the scheduler publishes it (the `detail` of an EventBridge event, `detail-type` its type).
 * Fields are only ever added within a version.
 */
export interface SchedulerEvent {
  readonly version: number;
  readonly type: EventType;
  /** When it happened (ISO). */
  readonly time: string;
  readonly taskId?: string;
  readonly agentId?: string;
  readonly queue?: string;
  readonly schedule?: string;
  readonly role?: string;
  /** Type-specific fields: `leaseEpoch`, `attempt`, `reason`, `status`, `scheduledTime`, … */
  readonly data?: Readonly<Record<string, unknown>>;
}

/** An event as the local stack's feed (`GET /v1/events`) lists it, numbered in the order it happened. */
export interface FeedEvent extends SchedulerEvent {
  readonly sequence: number;
}

/** A page of the local stack's event feed. */
export interface EventPage {
  readonly events: readonly FeedEvent[];
  /** The sequence of the last event on the page: pass it as `since` to read on. */
  readonly next: number;
  /** The newest sequence the feed holds; below a `since` given, the feed counts anew (the local stack restarted). */
  readonly latest: number;
}
