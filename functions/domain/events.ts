/**
 * Lifecycle events: what the scheduler tells the world. Schema version 1, published as EventBridge events with
 * `source: "agent-scheduler"`, `detail-type` the event's type, and `detail` this object. Consumers match on
 * `detail-type` and read `detail.version` before relying on fields; fields are only ever added within a version.
 */
export const EVENT_SOURCE = 'agent-scheduler';
export const EVENT_SCHEMA_VERSION = 1;

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
  'schedule.fired',
  'schedule.skipped',
  'queue.noCapableAgent',
  'role.picked',
  'role.released',
  'role.lost',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** The events of a task's ordinary way from submit to success: published only when asked for (cost). */
export const ROUTINE_EVENT_TYPES: ReadonlySet<EventType> = new Set([
  'task.submitted',
  'task.claimed',
  'task.completed',
]);

export interface SchedulerEvent {
  readonly version: typeof EVENT_SCHEMA_VERSION;
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

export function schedulerEvent(
  type: EventType,
  now: number,
  fields: Omit<SchedulerEvent, 'version' | 'type' | 'time'> = {},
): SchedulerEvent {
  return { version: EVENT_SCHEMA_VERSION, type, time: new Date(now).toISOString(), ...fields };
}
