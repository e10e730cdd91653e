/**
 * Schedules created at run time, recorded in the leases table as `schedule#<name>` items.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ScheduleStore } from '#core/ports/schedule-store';
import { type ScheduleRecord, scheduleSpecSchema } from '#domain/schedule';
import { scanKind } from './session-table';

const recordId = (name: string) => `schedule#${name}`;

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

export class ScheduleTable implements ScheduleStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  async create(record: ScheduleRecord): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: itemOf(record),
          ConditionExpression: 'attribute_not_exists(leaseId)',
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async get(name: string): Promise<ScheduleRecord | undefined> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { leaseId: recordId(name) }, ConsistentRead: true }),
    );
    return output.Item ? (recordFromItem(output.Item) ?? undefined) : undefined;
  }

  async delete(name: string): Promise<void> {
    await this.doc.send(new DeleteCommand({ TableName: this.tableName, Key: { leaseId: recordId(name) } }));
  }

  async list(): Promise<ScheduleRecord[]> {
    const records: ScheduleRecord[] = [];
    for (const item of await scanKind(this.doc, this.tableName, 'schedule')) {
      const record = recordFromItem(item);
      if (record) records.push(record);
    }
    return records;
  }
}
