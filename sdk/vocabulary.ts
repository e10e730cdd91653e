/**
 * The words of the wire: a task's priorities and statuses. Declared here once, for the SDK, the server (its domain
 * re-exports them) and the console's page alike.
 */

/** A task's priorities, the most urgent first: a claim's tiers, and the order a queue's depth is counted in. */
export const PRIORITIES = ['critical', 'high', 'normal', 'low'] as const;
export type Priority = (typeof PRIORITIES)[number];

/**
 * `waiting`: for its dependencies; `suspended`: its agent waits for a person or a callback (a waitpoint), holding no
 * lease; `expired`: not started by its deadline.
 */
export const TASK_STATUSES = [
  'waiting',
  'queued',
  'leased',
  'suspended',
  'succeeded',
  'dead',
  'cancelled',
  'expired',
] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Statuses a task does not leave on its own: only a redrive takes a `dead` task back to the queue. */
export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set<TaskStatus>([
  'succeeded',
  'dead',
  'cancelled',
  'expired',
]);
