/**
 * A schedule fired: submit a task from its template. The idempotency key is made of the schedule's name and the
 * scheduled time, never the delivery's execution id (which changes on every retry), so a fire delivered twice
 * creates one task. Used by the schedule-fire function in AWS and by the local scheduler.
 */
import { z } from 'zod';
import { ValidationError } from '#domain/errors';
import { PRIORITIES } from '#domain/priority';
import { describeIssues, queueNameSchema } from '#domain/task-spec';
import type { Scheduler } from './scheduler';

export const scheduleFireSchema = z.object({
  schedule: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  scheduledTime: z.iso.datetime({ offset: true }),
  executionId: z.string().optional(),
  attempt: z.union([z.string(), z.number()]).optional(),
  overlap: z.string().optional(),
  missedRuns: z.string().optional(),
  task: z.object({
    queue: queueNameSchema,
    priority: z.enum(PRIORITIES).optional(),
    payload: z.json().optional(),
    maxAttempts: z.int().optional(),
    timeoutSeconds: z.int().optional(),
  }),
});

export type ScheduleFire = z.input<typeof scheduleFireSchema>;

/** The idempotency key of one occurrence of a schedule. */
export const occurrenceKey = (schedule: string, scheduledTime: string | number) =>
  `schedule:${schedule}:${new Date(scheduledTime).toISOString()}`;

export async function fireSchedule(
  scheduler: Scheduler,
  event: unknown,
): Promise<{ taskId: string; created: boolean }> {
  const parsed = scheduleFireSchema.safeParse(event);
  if (!parsed.success) throw new ValidationError(describeIssues(parsed.error));
  const fire = parsed.data;
  const { task, created } = await scheduler.submit({
    payload: {},
    ...fire.task,
    idempotencyKey: occurrenceKey(fire.schedule, fire.scheduledTime),
  });
  return { taskId: task.taskId, created };
}

/** Placeholders EventBridge Scheduler fills in at each delivery. */
export const SCHEDULER_CONTEXT = {
  scheduledTime: '<aws.scheduler.scheduled-time>',
  executionId: '<aws.scheduler.execution-id>',
  attempt: '<aws.scheduler.attempt-number>',
} as const;

/**
 * The input a schedule hands to the fire function, in AWS as locally: its name, the scheduled time, its policies
 * and the task template. The construct and the run-time backend both build it here.
 */
export function scheduleFireInput(schedule: {
  name: string;
  overlap?: string;
  missedRuns?: string;
  task: Record<string, unknown> | object;
}) {
  return {
    schedule: schedule.name,
    ...SCHEDULER_CONTEXT,
    overlap: schedule.overlap ?? 'skip',
    missedRuns: schedule.missedRuns ?? 'skip',
    task: schedule.task,
  };
}
