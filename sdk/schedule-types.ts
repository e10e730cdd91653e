/**
 * The schedules' shapes on the wire: a schedule's specification (as `createSchedule` takes it and the
 * `AgentScheduler` construct's props declare it), the schedule as the server has it, and its occurrences.
 * Re-exported by `types.ts` with every other wire shape.
 */
import type { Priority } from './vocabulary.js';

/** What happens when a fire comes while the previous run of the same schedule is still going. */
export type OverlapPolicy = 'skip' | 'bufferOne' | 'allowAll' | 'cancelOther';

/** What happens to fires missed while the scheduler was down. */
export type MissedRunPolicy = 'skip' | 'runOnce' | 'runAll';

/** The task a schedule submits at each fire. */
export interface TaskTemplate {
  /** The task queue the task goes to; must be one of the scheduler's queues. */
  readonly queue: string;
  /** @default 'normal' */
  readonly priority?: Priority;
  /** @default {} */
  readonly payload?: unknown;
  /** @default 3 */
  readonly maxAttempts?: number;
  /** @default 900 */
  readonly timeoutSeconds?: number;
}

/**
 * A schedule: created through the API (`createSchedule`), or declared in the `AgentScheduler` construct's props,
 * which take this same shape.
 */
export interface ScheduleSpec {
  /** Unique among the scheduler's schedules: letters, digits, '-' and '_', up to 64. */
  readonly name: string;
  /**
   * An EventBridge Scheduler expression: `cron(min hour day-of-month month day-of-week year)`,
   * `rate(n unit)` or `at(yyyy-mm-ddThh:mm:ss)`.
   */
  readonly expression: string;
  /** IANA time zone the expression is read in. @default 'UTC' */
  readonly timeZone?: string;
  readonly task: TaskTemplate;
  /** @default 'skip' - a run still going suppresses the next one */
  readonly overlap?: OverlapPolicy;
  /** @default 'skip' - fires missed during downtime are not made up */
  readonly missedRuns?: MissedRunPolicy;
  /** @default true */
  readonly enabled?: boolean;
  /** @default - none */
  readonly description?: string;
}

/** A schedule as the server has it: the defaults of its specification filled in. */
export interface Schedule extends ScheduleSpec {
  readonly timeZone: string;
  readonly overlap: OverlapPolicy;
  readonly missedRuns: MissedRunPolicy;
  readonly enabled: boolean;
  /** `api`: created through the API; `declared`: part of the deployed infrastructure, never deleted here. */
  readonly source: 'api' | 'declared';
  /** When it was created through the API; absent for a declared one. */
  readonly createdAt?: string;
  /** Its next fire times (up to 5, ISO 8601 in UTC); none while it is disabled, nor for a declared rate(). */
  readonly nextFires: readonly string[];
}

/** A schedule in a list: its task template without the payload (`getSchedule` has it). */
export type ScheduleSummary = Omit<Schedule, 'task'> & { readonly task: Omit<TaskTemplate, 'payload'> };

export interface SchedulePage {
  readonly schedules: readonly ScheduleSummary[];
  /** Absent on the last page. */
  readonly nextCursor?: string;
}

/** One scheduled time of a schedule and what happened at it. */
export interface Occurrence {
  readonly scheduledTime: string;
  readonly status: 'fired' | 'skipped';
  readonly taskId?: string;
  /** Why it was skipped: `overlap`. */
  readonly reason?: string;
  readonly recordedAt: string;
}
