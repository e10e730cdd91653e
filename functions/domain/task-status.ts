/**
 * The task state machine.
 *
 *   waiting ── unblock, once every dependency succeeded ──▶ queued
 *     (a task submitted with `dependsOn`; cancel and expire leave it as they leave `queued`)
 *
 *            claim                complete
 *   queued ─────────▶ leased ─────────────▶ succeeded
 *     ▲  ▲              │ │ │
 *     │  └─── release ──┘ │ └── fail / reclaim, attempts left ──▶ queued (after a backoff)
 *     │                   └──── fail / reclaim, none left ─────▶ dead ── redrive ──▶ queued
 *     │                   └──── wait ──▶ suspended ── resume (its waitpoint completed, rejected or timed out) ──▶ queued
 *     │                                  └──────── its waitpoint timed out, `onTimeout: 'fail'` ──▶ dead
 *     ├── cancel from queued, leased or suspended ──▶ cancelled
 *     └── expire from queued, once its deadline to start passed ──▶ expired
 *
 * `succeeded`, `cancelled`, `expired` and `dead` are terminal; only `redrive` leaves `dead`, on an operator's word.
 * A `leased` task always has an owner (agent + session) and a lease epoch, the fencing token every write of
 * that owner must present. The store enforces each arrow with a conditional write; this module only says
 * which arrows exist, so the rules can be read and tested in one place.
 */
import { TASK_STATUSES, type TaskStatus, TERMINAL_STATUSES } from '#sdk/vocabulary';
import { InvalidTransitionError } from './errors';

// The statuses are the wire's: declared once, in the SDK's types.
export { TASK_STATUSES, type TaskStatus, TERMINAL_STATUSES };

export const isTerminal = (status: TaskStatus): boolean => TERMINAL_STATUSES.has(status);

export const isTaskStatus = (value: unknown): value is TaskStatus =>
  typeof value === 'string' && (TASK_STATUSES as readonly string[]).includes(value);

export type TaskEvent =
  | 'claim'
  | 'complete'
  | 'fail'
  | 'release'
  | 'reclaim'
  | 'cancel'
  | 'redrive'
  | 'expire'
  | 'unblock'
  | 'wait'
  | 'resume'
  | 'timeOut';

/**
 * For each status, the events it accepts and the statuses each may lead to. `fail` and `reclaim` lead to
 * `queued` or `dead` depending on the retry policy (see `retry-policy.ts`).
 */
export const TRANSITIONS: Readonly<Record<TaskStatus, Partial<Record<TaskEvent, readonly TaskStatus[]>>>> = {
  waiting: { unblock: ['queued'], cancel: ['cancelled'], expire: ['expired'] },
  queued: { claim: ['leased'], cancel: ['cancelled'], expire: ['expired'] },
  leased: {
    complete: ['succeeded'],
    fail: ['queued', 'dead'],
    release: ['queued'],
    reclaim: ['queued', 'dead'],
    cancel: ['cancelled'],
    wait: ['suspended'],
  },
  // No lease is held: only its waitpoint's outcome, an operator's cancel or its deadline to start move it.
  suspended: { resume: ['queued'], timeOut: ['dead'], cancel: ['cancelled'], expire: ['expired'] },
  dead: { redrive: ['queued'] },
  succeeded: {},
  cancelled: {},
  expired: {},
};

export function canTransition(from: TaskStatus, event: TaskEvent, to?: TaskStatus): boolean {
  const targets = TRANSITIONS[from][event];
  if (!targets) return false;
  return to === undefined || targets.includes(to);
}

/** Throws `InvalidTransitionError` unless `event` may move a task from `from` to `to`. */
export function assertTransition(taskId: string, from: TaskStatus, event: TaskEvent, to?: TaskStatus): void {
  if (!canTransition(from, event, to)) {
    throw new InvalidTransitionError(`task ${taskId} is ${from}; ${event} is not allowed`, {
      context: { taskId, from, event, to },
    });
  }
}

/**
 * The statuses a write of `event` may start from to reach `to`: the store turns this into the status part of the
 * write's condition, so no write can move a task along an arrow this table does not have.
 */
export function statusesFrom(event: TaskEvent, to: TaskStatus): readonly TaskStatus[] {
  return TASK_STATUSES.filter((status) => canTransition(status, event, to));
}
