/**
 * Schedules created at run time through the API. Each is recorded in the leases table (`schedule#<name>`) and
 * handed to a backend that makes it fire: EventBridge Scheduler in AWS, the local scheduler on this machine.
 * Schedules declared in the construct are infrastructure: listed, never deleted through the API.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
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

const recordId = (name: string) => `schedule#${name}`;

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
  try {
    await ctx.sessions.doc.send(
      new PutCommand({
        TableName: ctx.sessions.tableName,
        Item: itemOf(record),
        ConditionExpression: 'attribute_not_exists(leaseId)',
      }),
    );
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) {
      throw new ConflictError(`a schedule named ${spec.name} exists`);
    }
    throw error;
  }
  try {
    await backend.put(record);
  } catch (error) {
    // Without a way to fire, the record would be a lie: take it back.
    await ctx.sessions.doc.send(
      new DeleteCommand({ TableName: ctx.sessions.tableName, Key: { leaseId: recordId(spec.name) } }),
    );
    throw error;
  }
  return record;
}

export async function getSchedule(ctx: SchedulerContext, name: string): Promise<ScheduleRecord | undefined> {
  const output = await ctx.sessions.doc.send(
    new GetCommand({
      TableName: ctx.sessions.tableName,
      Key: { leaseId: recordId(name) },
      ConsistentRead: true,
    }),
  );
  return output.Item ? (recordFromItem(output.Item) ?? undefined) : undefined;
}

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
  await ctx.sessions.doc.send(
    new DeleteCommand({ TableName: ctx.sessions.tableName, Key: { leaseId: recordId(name) } }),
  );
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
  const records: ScheduleRecord[] = declaredSchedules(ctx);
  for (const item of await ctx.sessions.scanKind('schedule')) {
    const record = recordFromItem(item);
    if (record) records.push(record);
  }
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

/**
 * The stored item. The task template is kept as JSON text, as a task's payload is: DynamoDB's map conversion
 * cannot carry every key JSON can (`__proto__` is dropped or refused), and the template is sent as it was given.
 */
function itemOf(record: ScheduleRecord): Record<string, unknown> {
  const { task, ...rest } = record;
  return { leaseId: recordId(record.name), kind: 'schedule', ...rest, taskJson: JSON.stringify(task) };
}

function recordFromItem(item: Record<string, unknown>): ScheduleRecord | null {
  const parsed = scheduleSpecSchema.safeParse({
    name: item.name,
    expression: item.expression,
    timeZone: item.timeZone,
    // Records written before the template was kept as text hold it as a map.
    task: typeof item.taskJson === 'string' ? JSON.parse(item.taskJson) : item.task,
    overlap: item.overlap,
    missedRuns: item.missedRuns,
    enabled: item.enabled,
    ...(item.description === undefined ? {} : { description: item.description }),
  });
  if (!parsed.success) return null;
  return { ...parsed.data, createdAt: Number(item.createdAt), source: 'api' };
}
