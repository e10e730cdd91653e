/**
 * Named rate limits in the tasks table: the limits operators set in one item (`rate-limits` / `definitions`, a map
 * by name), and each limit's windows in its partition (`rate#<name>`, see `rateWindowKey`).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { RateLimitStore, WaitingTask, WindowUse } from '#core/ports/rate-limit-store';
import { isPriority } from '#domain/priority';
import { type RateLimitDefinition, rateLimitTermsSchema } from '#domain/rate-limits';
import { Expression, updateExpression, updateIf } from './expression';
import { RATE_LIMITS_KEY, rateWindowPrefix } from './tables';
import { batchWrite } from './task-requests';

type Item = Record<string, unknown>;

/** The part of a task's record as waiting for a limit: `wait#<taskId>`. */
const WAITING = 'wait#';

/** A stored limit, or undefined when it does not read as one (written by a later release). */
function definitionOf(name: string, value: unknown): RateLimitDefinition | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { updatedAt, ...terms } = value as Item;
  const parsed = rateLimitTermsSchema.safeParse(terms);
  if (!parsed.success) return undefined;
  return { name, ...parsed.data, ...(typeof updatedAt === 'number' ? { updatedAt } : {}) };
}

export class RateLimitTable implements RateLimitStore {
  constructor(
    readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  async definitions({ consistent = false } = {}): Promise<Map<string, RateLimitDefinition>> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: RATE_LIMITS_KEY, ConsistentRead: consistent }),
    );
    const limits = (output.Item?.limits ?? {}) as Item;
    const found = new Map<string, RateLimitDefinition>();
    for (const [name, value] of Object.entries(limits)) {
      const definition = definitionOf(name, value);
      if (definition) found.set(name, definition);
    }
    return found;
  }

  async setDefinition(definition: RateLimitDefinition, most: number): Promise<boolean> {
    const { name, ...terms } = definition;
    const e = new Expression();
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: RATE_LIMITS_KEY,
          // The map is made by the first limit set; a limit's terms replace its earlier ones whole.
          UpdateExpression: updateExpression({
            set: [`${e.n('limits')} = if_not_exists(${e.n('limits')}, ${e.v({})})`],
          }),
          ...e.attributes(),
        }),
      );
      const f = new Expression();
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: RATE_LIMITS_KEY,
          UpdateExpression: updateExpression({ set: [`${f.n('limits', name)} = ${f.v(terms)}`] }),
          // A new name only while there is room: the item is read whole by claims, and must stay small.
          ConditionExpression: `attribute_exists(${f.n('limits', name)}) OR size(${f.n('limits')}) < ${f.v(most)}`,
          ...f.attributes(),
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async noteSaturation(
    name: string,
    key: string,
    note: { readonly at: number; readonly since: number; readonly purgeAt: number },
  ): Promise<boolean> {
    const e = new Expression();
    return updateIf(this.doc, {
      TableName: this.tableName,
      Key: { taskId: `rate#${name}`, part: `saturated#${key}` },
      UpdateExpression: updateExpression({
        set: [`${e.n('notedAt')} = ${e.v(note.at)}`, `${e.n('purgeAt')} = ${e.v(note.purgeAt)}`],
      }),
      ConditionExpression: `attribute_not_exists(${e.n('notedAt')}) OR ${e.n('notedAt')} < ${e.v(note.since)}`,
      ...e.attributes(),
    });
  }

  async noteWaiting(name: string, task: WaitingTask, purgeAt: number): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          taskId: `rate#${name}`,
          part: `${WAITING}${task.taskId}`,
          queue: task.queue,
          priority: task.priority,
          leaseEpoch: task.leaseEpoch,
          purgeAt,
        },
      }),
    );
  }

  async waiting(name: string, limit: number): Promise<WaitingTask[]> {
    const e = new Expression();
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: `${e.n('taskId')} = ${e.v(`rate#${name}`)} AND begins_with(${e.n('part')}, ${e.v(WAITING)})`,
        Limit: limit,
        ...e.attributes(),
      }),
    );
    return (output.Items ?? []).flatMap((item) => {
      const taskId = String(item.part).slice(WAITING.length);
      return isPriority(item.priority)
        ? [
            {
              taskId,
              queue: String(item.queue),
              priority: item.priority,
              leaseEpoch: Number(item.leaseEpoch ?? 0),
            },
          ]
        : [];
    });
  }

  async forgetWaiting(name: string, taskIds: readonly string[]): Promise<void> {
    await batchWrite(
      this,
      taskIds.map((taskId) => ({
        DeleteRequest: { Key: { taskId: `rate#${name}`, part: `${WAITING}${taskId}` } },
      })),
    );
  }

  async windowUse(name: string, window: number, limit: number): Promise<WindowUse[]> {
    const e = new Expression();
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: `${e.n('taskId')} = ${e.v(`rate#${name}`)} AND begins_with(${e.n('part')}, ${e.v(rateWindowPrefix(window))})`,
        ProjectionExpression: `${e.n('part')}, ${e.n('used')}`,
        Limit: limit,
        ...e.attributes(),
      }),
    );
    const prefix = rateWindowPrefix(window);
    return (output.Items ?? []).map((item) => ({
      key: String(item.part).slice(prefix.length),
      used: Number(item.used ?? 0),
    }));
  }
}
