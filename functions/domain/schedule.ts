/**
 * A schedule's shape: its name, expression, task template and policies as the API and the construct take them,
 * the record kept of it, and the backend that makes it fire (EventBridge Scheduler in AWS, a local scheduler on
 * this machine).
 */
import { z } from 'zod';
import type * as Sdk from '#sdk/types';
import { PRIORITIES } from './priority';
import { jsonValueSchema, LIMITS, queueNameSchema } from './task-spec';
import { accepts } from './wire-match';

export const SCHEDULE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export const taskTemplateSchema = accepts<Sdk.TaskTemplate>()(
  z.strictObject({
    queue: queueNameSchema,
    priority: z.enum(PRIORITIES).optional(),
    payload: jsonValueSchema.optional(),
    maxAttempts: z.int().min(1).max(LIMITS.maxAttempts).optional(),
    timeoutSeconds: z.int().min(1).max(LIMITS.timeoutSeconds).optional(),
  }),
);

export const scheduleSpecSchema = accepts<Sdk.ScheduleSpec>()(
  z.strictObject({
    name: z.string().regex(SCHEDULE_NAME, 'a schedule name is 1 to 64 letters, digits, "-" or "_"'),
    expression: z.string().min(1).max(256),
    timeZone: z.string().min(1).max(64).default('UTC'),
    task: taskTemplateSchema,
    overlap: z.enum(['skip', 'bufferOne', 'allowAll', 'cancelOther']).default('skip'),
    missedRuns: z.enum(['skip', 'runOnce', 'runAll']).default('skip'),
    enabled: z.boolean().default(true),
    description: z.string().max(256).optional(),
  }),
);

export type ScheduleSpec = z.output<typeof scheduleSpecSchema>;

export interface ScheduleRecord extends ScheduleSpec {
  readonly createdAt: number;
  /** `api`: created at run time; `declared`: part of the deployed infrastructure. */
  readonly source: 'api' | 'declared';
}

/** What makes a schedule fire. */
export interface ScheduleBackend {
  put(record: ScheduleRecord): Promise<void>;
  /** Removes the schedule and any early fire armed for it. */
  remove(name: string): Promise<void>;
  /**
   * Arms a one-time fire of `schedule` for the occurrence at `scheduledTime`, delivered a little ahead of it, so the
   * task can be held until that exact time (where deliveries are not punctual, as EventBridge's within their
   * minute). Absent where schedules fire on time.
   */
  armEarlyFire?(schedule: EarlyFireSpec, scheduledTime: number): Promise<void>;
}

export interface EarlyFireSpec {
  readonly name: string;
  readonly expression: string;
  readonly timeZone: string;
  readonly task: object;
  readonly overlap?: string;
  readonly missedRuns?: string;
}
