/**
 * A schedule declared as infrastructure: when it fires, a task is submitted from its template. Each fire is
 * recorded once (keyed by the scheduled time, never by the delivery) even though EventBridge Scheduler delivers at
 * least once.
 */
import type { Priority } from '../functions/domain/priority';
import { SCHEDULE_NAME } from '../functions/domain/schedule';

/** What happens when a fire comes while the previous run of the same schedule is still going. */
export type OverlapPolicy = 'skip' | 'bufferOne' | 'allowAll' | 'cancelOther';

/** What happens to fires missed while the scheduler was down. */
export type MissedRunPolicy = 'skip' | 'runOnce' | 'runAll';

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

export interface TaskScheduleProps {
  /** Unique among the scheduler's schedules: letters, digits, '-' and '_', up to 64. */
  readonly name: string;
  /**
   * An EventBridge Scheduler expression: `cron(min hour day-of-month month day-of-week year)`,
   * `rate(n unit)` or `at(yyyy-mm-ddThh:mm:ss)`. Validated at synth.
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

/** A schedule's name: the same rule as the API's. */
export const SCHEDULE_NAME_PATTERN = SCHEDULE_NAME;
