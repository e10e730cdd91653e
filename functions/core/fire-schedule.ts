/**
 * A schedule fired: submit a task from its template. The idempotency key is made of the schedule's name and the
 * scheduled time, never the delivery's execution id (which changes on every retry), so a fire delivered twice
 * creates one task. Used by the schedule-fire function in AWS and by the local scheduler.
 */
import { z } from 'zod';
import { errorName, ValidationError } from '#domain/errors';
import { taskIdForIdempotencyKey } from '#domain/ids';
import { PRIORITIES } from '#domain/priority';
import { type EarlyFireSpec, SCHEDULE_NAME, type ScheduleBackend } from '#domain/schedule';
import { nextFireTime } from '#domain/schedule-expression';
import { describeIssues, jsonValueSchema, queueNameSchema } from '#domain/task-spec';
import { traceparentSchema } from '#domain/trace-context';
import { cancelTask } from './cancel';
import type { SchedulerContext } from './context';
import { emit } from './events';
import { type Occurrence, readOccurrences, recordOccurrence } from './occurrences';
import { submitTask } from './submit';

export const scheduleFireSchema = z.object({
  schedule: z.string().regex(SCHEDULE_NAME),
  scheduledTime: z.iso.datetime({ offset: true }),
  executionId: z.string().optional(),
  attempt: z.union([z.string(), z.number()]).optional(),
  overlap: z.string().optional(),
  missedRuns: z.string().optional(),
  /** The schedule's expression and time zone, to arm the early fire of the next occurrence. */
  expression: z.string().max(256).optional(),
  timeZone: z.string().max(64).optional(),
  /**
   * The trace context of the fire's span, when the function records spans: the task joins its trace. Beside the
   * template rather than in it, so that the early fire armed from the template carries none.
   */
  traceparent: traceparentSchema.optional(),
  task: z.object({
    queue: queueNameSchema,
    priority: z.enum(PRIORITIES).optional(),
    payload: jsonValueSchema.optional(),
    maxAttempts: z.int().optional(),
    timeoutSeconds: z.int().optional(),
  }),
});

export type ScheduleFire = z.input<typeof scheduleFireSchema>;

/** A fire's event with the trace context of the span it runs in; anything that is not an object as it is. */
export const withFireTrace = (event: unknown, traceparent: string | undefined): unknown =>
  traceparent === undefined || typeof event !== 'object' || event === null || Array.isArray(event)
    ? event
    : { ...event, traceparent };

/** The idempotency key of one occurrence of a schedule. */
export const occurrenceKey = (schedule: string, scheduledTime: string | number) =>
  `schedule:${schedule}:${new Date(scheduledTime).toISOString()}`;

export interface FireOutcome {
  readonly scheduledTime: string;
  readonly status: 'fired' | 'skipped';
  readonly taskId?: string;
  readonly reason?: string;
  /** False when this delivery repeated an occurrence already recorded. */
  readonly created: boolean;
}

const isOpen = (status: string | undefined) => status === 'queued' || status === 'leased';

/**
 * One fire of a schedule: decide by its overlap policy, record the occurrence (once per scheduled time), and
 * submit the task (once per occurrence, by idempotency key).
 *
 * Overlap policies, looking at the tasks of earlier occurrences still open:
 * - `skip`: any still open → this occurrence is skipped;
 * - `bufferOne`: one may wait behind a running one; a second waiting one is skipped;
 * - `allowAll`: always run;
 * - `cancelOther`: cancel the open ones, then run.
 */
export async function fireSchedule(ctx: SchedulerContext, event: unknown): Promise<FireOutcome> {
  const parsed = scheduleFireSchema.safeParse(event);
  if (!parsed.success) throw new ValidationError(describeIssues(parsed.error));
  const fire = parsed.data;
  const scheduledTime = new Date(fire.scheduledTime).toISOString();
  const known = await readOccurrences(ctx, fire.schedule);
  const recorded = known.find((o) => o.scheduledTime === scheduledTime);
  if (recorded) return settle(ctx, fire, recorded, { recordedNow: false });

  const overlap = fire.overlap ?? 'skip';
  const earlier = known
    .filter((o) => o.status === 'fired' && o.taskId && o.scheduledTime < scheduledTime)
    .slice(0, 10);
  const open = (await Promise.all(earlier.map((o) => ctx.tasks.get(o.taskId ?? '')))).filter((task) =>
    isOpen(task?.status),
  );
  let skipReason: string | undefined;
  if (open.length > 0) {
    if (overlap === 'skip') skipReason = 'overlap';
    if (overlap === 'bufferOne' && open.some((task) => task?.status === 'queued')) skipReason = 'overlap';
    if (overlap === 'cancelOther') {
      for (const task of open) if (task) await cancelTask(ctx, task.taskId).catch(() => undefined);
    }
  }
  const occurrence: Occurrence = skipReason
    ? { scheduledTime, status: 'skipped', reason: skipReason, recordedAt: ctx.now() }
    : {
        scheduledTime,
        status: 'fired',
        taskId: taskIdForIdempotencyKey(occurrenceKey(fire.schedule, scheduledTime)),
        recordedAt: ctx.now(),
      };
  const outcome = await recordOccurrence(ctx, fire.schedule, occurrence, known);
  if (outcome.recorded) {
    await emit(ctx, [
      {
        type: occurrence.status === 'fired' ? 'schedule.fired' : 'schedule.skipped',
        fields: {
          schedule: fire.schedule,
          queue: fire.task.queue,
          ...(occurrence.taskId ? { taskId: occurrence.taskId } : {}),
          data: { scheduledTime, ...(occurrence.reason ? { reason: occurrence.reason } : {}) },
        },
      },
    ]);
  }
  return outcome.recorded
    ? settle(ctx, fire, occurrence, { recordedNow: true })
    : settle(ctx, fire, outcome.existing, { recordedNow: false });
}

/**
 * Makes sure a fired occurrence has its task (a delivery may have died between the record and the submit; the
 * submit is idempotent by key) and answers with the occurrence.
 */
async function settle(
  ctx: SchedulerContext,
  fire: z.output<typeof scheduleFireSchema>,
  occurrence: Occurrence,
  { recordedNow }: { readonly recordedNow: boolean },
): Promise<FireOutcome> {
  if (occurrence.status === 'fired') {
    // A fire delivered ahead of its time holds the task until exactly then.
    await submitTask(
      ctx,
      {
        payload: {},
        ...fire.task,
        idempotencyKey: occurrenceKey(fire.schedule, occurrence.scheduledTime),
        ...(fire.traceparent === undefined ? {} : { traceparent: fire.traceparent }),
      },
      { notBefore: Date.parse(occurrence.scheduledTime) },
    );
  }
  await armNextEarlyFire(ctx, fire, Date.parse(occurrence.scheduledTime));
  return {
    scheduledTime: occurrence.scheduledTime,
    status: occurrence.status,
    ...(occurrence.taskId ? { taskId: occurrence.taskId } : {}),
    ...(occurrence.reason ? { reason: occurrence.reason } : {}),
    created: recordedNow,
  };
}

/** Early fires closer than this to now are not armed: the recurring schedule's own delivery will do. */
const EARLY_FIRE_MIN_LEAD_MS = 30_000;

/**
 * Arms the early fire of the occurrence after `after`, where the backend needs one. Every fire re-arms the next,
 * so the chain survives a lost link: the recurring schedule's own delivery, within its minute, arms it again.
 */
async function armNextEarlyFire(
  ctx: SchedulerContext,
  fire: z.output<typeof scheduleFireSchema>,
  after: number,
) {
  if (!fire.expression || !ctx.scheduleBackend) return;
  await armEarlyFireAfter(
    ctx,
    ctx.scheduleBackend,
    {
      name: fire.schedule,
      expression: fire.expression,
      timeZone: fire.timeZone ?? 'UTC',
      task: fire.task,
      ...(fire.overlap ? { overlap: fire.overlap } : {}),
      ...(fire.missedRuns ? { missedRuns: fire.missedRuns } : {}),
    },
    after,
  );
}

/**
 * Arms the early fire of `schedule`'s first occurrence after `after`, where the backend needs one and the
 * occurrence is far enough ahead. Never throws: the recurring schedule still fires.
 */
export async function armEarlyFireAfter(
  ctx: SchedulerContext,
  backend: ScheduleBackend,
  schedule: EarlyFireSpec,
  after: number,
): Promise<void> {
  if (!backend.armEarlyFire) return;
  try {
    const next = nextFireTime(schedule.expression, { after, timeZone: schedule.timeZone });
    if (next === undefined || next - ctx.now() < EARLY_FIRE_MIN_LEAD_MS) return;
    await backend.armEarlyFire(schedule, next);
  } catch (error) {
    ctx.log.warn('could not arm the next early fire; the recurring schedule still fires', {
      schedule: schedule.name,
      error: errorName(error),
    });
  }
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
  expression: string;
  timeZone?: string;
  overlap?: string;
  missedRuns?: string;
  task: Record<string, unknown> | object;
}) {
  return {
    schedule: schedule.name,
    ...SCHEDULER_CONTEXT,
    expression: schedule.expression,
    timeZone: schedule.timeZone ?? 'UTC',
    overlap: schedule.overlap ?? 'skip',
    missedRuns: schedule.missedRuns ?? 'skip',
    task: schedule.task,
  };
}
