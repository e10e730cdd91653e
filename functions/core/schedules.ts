/**
 * Schedules created at run time through the API. Each is recorded in the schedule store and handed to a backend
 * that makes it fire: EventBridge Scheduler in AWS, the local scheduler on this machine. Schedules declared in the
 * construct are infrastructure: listed, never deleted through the API.
 */
import { ConflictError, ScheduleNotFoundError, ValidationError } from '#domain/errors';
import {
  SCHEDULE_NAME,
  type ScheduleBackend,
  type ScheduleRecord,
  type ScheduleSpec,
  scheduleSpecSchema,
} from '#domain/schedule';
import {
  ScheduleExpressionError,
  UnknownTimeZoneError,
  validateScheduleExpression,
} from '#domain/schedule-expression';
import { describeIssues } from '#domain/task-spec';
import type { SchedulerContext } from './context';
import { armEarlyFireAfter } from './fire-schedule';

export function parseScheduleSpec(ctx: SchedulerContext, input: unknown): ScheduleSpec {
  const parsed = scheduleSpecSchema.safeParse(input);
  if (!parsed.success) throw new ValidationError(describeIssues(parsed.error));
  const spec = parsed.data;
  try {
    validateScheduleExpression(spec.expression, spec.timeZone, spec.name);
  } catch (error) {
    // The field is named: an unknown time zone is not the expression's fault.
    if (error instanceof UnknownTimeZoneError) {
      throw new ValidationError(
        `timeZone: unknown time zone "${error.timeZone}" (expected an IANA name such as Europe/Paris)`,
      );
    }
    if (error instanceof ScheduleExpressionError || error instanceof RangeError) {
      throw new ValidationError(error.message.slice(0, 280));
    }
    throw error;
  }
  if (!ctx.queues.directory.has(spec.task.queue)) {
    throw new ValidationError(`task.queue: ${spec.task.queue} does not exist`);
  }
  return spec;
}

export async function createSchedule(ctx: SchedulerContext, backend: ScheduleBackend, input: unknown) {
  const spec = parseScheduleSpec(ctx, input);
  if (declaredSchedules(ctx).some((s) => s.name === spec.name)) {
    throw new ConflictError(`a schedule named ${spec.name} is declared in the infrastructure`);
  }
  const record: ScheduleRecord = { ...spec, createdAt: ctx.now(), source: 'api' };
  if (!(await ctx.schedules.create(record))) throw new ConflictError(`a schedule named ${spec.name} exists`);
  try {
    await backend.put(record);
  } catch (error) {
    // Without a way to fire, the record would be a lie: take it back.
    await ctx.schedules.delete(spec.name);
    throw error;
  }
  // Where deliveries are spread over the minute, a cron's first occurrence gets its early fire now, as every later
  // one gets it from the fire before (a rate counts from EventBridge's own start: its first is left to it).
  if (record.expression.startsWith('cron('))
    await armEarlyFireAfter(
      ctx,
      backend,
      {
        name: record.name,
        expression: record.expression,
        timeZone: record.timeZone,
        task: record.task,
        overlap: record.overlap,
        missedRuns: record.missedRuns,
      },
      record.createdAt,
    );
  return record;
}

export const getSchedule = (ctx: SchedulerContext, name: string): Promise<ScheduleRecord | undefined> =>
  ctx.schedules.get(name);

export async function deleteSchedule(
  ctx: SchedulerContext,
  backend: ScheduleBackend,
  name: string,
): Promise<void> {
  if (!SCHEDULE_NAME.test(name))
    throw new ScheduleNotFoundError(`schedule ${name.slice(0, 64)} does not exist`);
  if (declaredSchedules(ctx).some((s) => s.name === name)) {
    throw new ConflictError(`schedule ${name} is declared in the infrastructure; remove it there`);
  }
  const record = await getSchedule(ctx, name);
  if (!record) throw new ScheduleNotFoundError(`schedule ${name} does not exist`);
  await backend.remove(name);
  await ctx.schedules.delete(name);
}

/** The schedules declared in the infrastructure, as records (they are listed, never stored). */
export function declaredSchedules(ctx: SchedulerContext): ScheduleRecord[] {
  return ctx.declaredSchedules.map((input) => ({
    ...parseScheduleSpec(ctx, input),
    createdAt: 0,
    source: 'declared',
  }));
}

export async function listSchedules(ctx: SchedulerContext): Promise<ScheduleRecord[]> {
  const records = [...declaredSchedules(ctx), ...(await ctx.schedules.list())];
  // By code unit, the order a cursor (the last name of a page) resumes in.
  return records.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** One page of schedules by name, after `startAfter`; `lastName` is set when more follow. */
export async function listSchedulePage(
  ctx: SchedulerContext,
  limit: number,
  startAfter?: string,
): Promise<{ schedules: ScheduleRecord[]; lastName?: string }> {
  const all = await listSchedules(ctx);
  const after = startAfter === undefined ? all : all.filter((s) => s.name > startAfter);
  const schedules = after.slice(0, limit);
  const last = schedules.at(-1);
  return after.length > limit && last ? { schedules, lastName: last.name } : { schedules };
}

/** A schedule, declared or created through the API, by name. */
export async function findSchedule(ctx: SchedulerContext, name: string): Promise<ScheduleRecord> {
  const found = SCHEDULE_NAME.test(name)
    ? (declaredSchedules(ctx).find((s) => s.name === name) ?? (await getSchedule(ctx, name)))
    : undefined;
  if (!found) throw new ScheduleNotFoundError(`schedule ${name.slice(0, 64)} does not exist`);
  return found;
}
