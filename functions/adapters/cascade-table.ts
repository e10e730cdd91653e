/**
 * Cancellations that reach a task's descendants, in the tasks table:
 * - `("cascade#<rootTaskId>", "meta")`: when the walk began and ended, and its counters (`cancelled`, `added`,
 *   `walked`: the tasks put to walk and walked, so `added - walked` are still to walk);
 * - `("cascade#<rootTaskId>", "walk#<taskId>")`: a task whose children are still to be looked at;
 * - `("cascades#open", "<startedAt>#<rootTaskId>")`: the walk in the list of those not finished, for the supervisor.
 * Children are found through the `children` index (a child's `parentTaskId`). Counters are kept by `ADD`: a walk
 * step done again after a failure counts twice, so they tell progress, not the truth; the entries to walk do.
 */
import {
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { CascadeProgress, CascadeStore } from '#core/ports/cascade-store';
import { CHILDREN_INDEX, TASK_PART } from './tables';

type Item = Record<string, unknown>;

const partition = (rootTaskId: string) => `cascade#${rootTaskId}`;
const META = 'meta';
const walkPart = (taskId: string) => `walk#${taskId}`;
const OPEN_PARTITION = 'cascades#open';
const openPart = (startedAt: number, rootTaskId: string) =>
  `${String(startedAt).padStart(15, '0')}#${rootTaskId}`;

export class CascadeTable implements CascadeStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  async start(rootTaskId: string, now: number, purgeAt: number): Promise<void> {
    const begun = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { taskId: partition(rootTaskId), part: META },
        UpdateExpression:
          'SET startedAt = if_not_exists(startedAt, :now), purgeAt = :purgeAt, cancelled = if_not_exists(cancelled, :zero), added = if_not_exists(added, :one), walked = if_not_exists(walked, :zero) REMOVE finishedAt',
        ExpressionAttributeValues: { ':now': now, ':purgeAt': purgeAt, ':zero': 0, ':one': 1 },
        ReturnValues: 'ALL_NEW',
      }),
    );
    const startedAt = Number(begun.Attributes?.startedAt ?? now);
    await this.put([
      { taskId: partition(rootTaskId), part: walkPart(rootTaskId), purgeAt },
      { taskId: OPEN_PARTITION, part: openPart(startedAt, rootTaskId), rootTaskId, purgeAt },
    ]);
  }

  async toWalk(rootTaskId: string, limit: number): Promise<string[]> {
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'taskId = :p AND begins_with(part, :walk)',
        ExpressionAttributeValues: { ':p': partition(rootTaskId), ':walk': walkPart('') },
        ConsistentRead: true,
        Limit: limit,
      }),
    );
    return (output.Items ?? []).map((item) => String(item.part).slice(walkPart('').length));
  }

  async walked(
    rootTaskId: string,
    steps: readonly { readonly walked: string; readonly children: readonly string[] }[],
    cancelled: number,
    purgeAt: number,
  ): Promise<void> {
    const children = steps.flatMap((step) => step.children);
    // The children first: a failure between the two leaves their parents to walk again, never a child unwalked.
    await this.put(
      children.map((child) => ({ taskId: partition(rootTaskId), part: walkPart(child), purgeAt })),
    );
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { taskId: partition(rootTaskId), part: META },
        UpdateExpression: 'ADD cancelled :cancelled, added :added, walked :walked',
        ExpressionAttributeValues: {
          ':cancelled': cancelled,
          ':added': children.length,
          ':walked': steps.length,
        },
      }),
    );
    await this.delete(steps.map((step) => ({ taskId: partition(rootTaskId), part: walkPart(step.walked) })));
  }

  async finish(rootTaskId: string, now: number): Promise<void> {
    const meta = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { taskId: partition(rootTaskId), part: META },
        UpdateExpression: 'SET finishedAt = if_not_exists(finishedAt, :now)',
        ConditionExpression: 'attribute_exists(startedAt)',
        ExpressionAttributeValues: { ':now': now },
        ReturnValues: 'ALL_NEW',
      }),
    );
    await this.delete([
      { taskId: OPEN_PARTITION, part: openPart(Number(meta.Attributes?.startedAt), rootTaskId) },
    ]);
  }

  async progress(rootTaskId: string): Promise<CascadeProgress | undefined> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { taskId: partition(rootTaskId), part: META } }),
    );
    const item = output.Item;
    if (!item) return undefined;
    const finishedAt = typeof item.finishedAt === 'number' ? item.finishedAt : undefined;
    return {
      rootTaskId,
      startedAt: Number(item.startedAt),
      cancelled: Number(item.cancelled ?? 0),
      pending: finishedAt === undefined ? Math.max(0, Number(item.added ?? 0) - Number(item.walked ?? 0)) : 0,
      ...(finishedAt === undefined ? {} : { finishedAt }),
    };
  }

  async open(limit: number): Promise<string[]> {
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'taskId = :p',
        ExpressionAttributeValues: { ':p': OPEN_PARTITION },
        Limit: limit,
      }),
    );
    return (output.Items ?? []).map((item) => String(item.rootTaskId));
  }

  async childrenOf(parentTaskId: string, limit = Number.POSITIVE_INFINITY): Promise<string[]> {
    const children: string[] = [];
    let startKey: Item | undefined;
    do {
      const output = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: CHILDREN_INDEX,
          KeyConditionExpression: 'parentTaskId = :p',
          ExpressionAttributeValues: { ':p': parentTaskId },
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of output.Items ?? [])
        if (item.part === TASK_PART.state) children.push(String(item.taskId));
      startKey = output.LastEvaluatedKey;
    } while (startKey && children.length < limit);
    return children.slice(0, limit);
  }

  private async put(items: readonly Item[]): Promise<void> {
    await this.batch(items.map((Item) => ({ PutRequest: { Item } })));
  }

  private async delete(keys: readonly Item[]): Promise<void> {
    await this.batch(keys.map((Key) => ({ DeleteRequest: { Key } })));
  }

  /** Writes in requests of 25, sending again what DynamoDB left unprocessed. */
  private async batch(requests: readonly Item[]): Promise<void> {
    for (let i = 0; i < requests.length; i += 25) {
      let pending: Item[] | undefined = requests.slice(i, i + 25);
      for (let attempt = 0; pending && pending.length > 0; attempt++) {
        if (attempt > 0)
          await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 25 * 2 ** attempt)));
        const output = await this.doc.send(
          new BatchWriteCommand({ RequestItems: { [this.tableName]: pending } as never }),
        );
        pending = output.UnprocessedItems?.[this.tableName] as Item[] | undefined;
        if (attempt > 8 && pending && pending.length > 0) throw new Error('the cascade could not be written');
      }
    }
  }
}
