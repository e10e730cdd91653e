/**
 * Requests the adapters of the tasks table share: batched reads and writes sent until DynamoDB has processed
 * them, a purge time moved later, and the pages of a task's inputs.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { Expression } from './expression';
import { inputPart } from './tables';
import type { Item } from './task-items';

/** One table of a client: what every request below is sent with. */
export interface TableAccess {
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
}

/** Reads items by key, 100 keys per request, retrying unprocessed keys. */
export async function batchGet(
  { doc, tableName }: TableAccess,
  keys: readonly Item[],
  consistent: boolean,
): Promise<Item[]> {
  const items: Item[] = [];
  await untilProcessed(keys, 100, 'BatchGetItem', async (pending) => {
    const output = await doc.send(
      new BatchGetCommand({
        RequestItems: { [tableName]: { Keys: [...pending], ConsistentRead: consistent } },
      }),
    );
    items.push(...(output.Responses?.[tableName] ?? []));
    return output.UnprocessedKeys?.[tableName]?.Keys;
  });
  return items;
}

/** Puts and deletes items (`PutRequest`, `DeleteRequest`), 25 to a request, retrying unprocessed ones. */
export async function batchWrite({ doc, tableName }: TableAccess, writes: readonly Item[]): Promise<void> {
  await untilProcessed(writes, 25, 'BatchWriteItem', async (pending) => {
    const output = await doc.send(new BatchWriteCommand({ RequestItems: { [tableName]: [...pending] } }));
    return output.UnprocessedItems?.[tableName];
  });
}

/** Moves an item's purge time to `purgeAt` if it exists and is to be purged earlier. False if it does not exist. */
export async function extendPurge(
  { doc, tableName }: TableAccess,
  key: Item,
  attribute: string,
  purgeAt: number,
): Promise<boolean> {
  const e = new Expression();
  try {
    await doc.send(
      new UpdateCommand({
        TableName: tableName,
        Key: key,
        UpdateExpression: `SET ${e.n(attribute)} = ${e.v(purgeAt)}`,
        ConditionExpression: `attribute_exists(${e.n('taskId')}) AND (attribute_not_exists(${e.n(attribute)}) OR ${e.n(attribute)} < ${e.v(purgeAt)})`,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        ...e.attributes(),
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return error.Item !== undefined;
    throw error;
  }
}

/** The input items kept for a task, page after page (a query bills the whole items it reads, projected or not). */
export async function* inputItems(
  { doc, tableName }: TableAccess,
  taskId: string,
  options: { projected?: readonly string[]; consistent: boolean },
): AsyncGenerator<Item> {
  let startKey: Item | undefined;
  do {
    const e = new Expression();
    const output = await doc.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: `${e.n('taskId')} = ${e.v(taskId)} AND begins_with(${e.n('part')}, ${e.v(inputPart(''))})`,
        ...(options.projected
          ? { ProjectionExpression: options.projected.map((name) => e.n(name)).join(', ') }
          : {}),
        ExclusiveStartKey: startKey,
        ...(options.consistent ? { ConsistentRead: true } : {}),
        ...e.attributes(),
      }),
    );
    yield* output.Items ?? [];
    startKey = output.LastEvaluatedKey;
  } while (startKey);
}

/**
 * Sends `all` in requests of at most `size`, and sends again whatever DynamoDB left unprocessed (it may under
 * load), backing off up to a second; ten rounds per request at most.
 */
async function untilProcessed<T>(
  all: readonly T[],
  size: number,
  operation: string,
  send: (pending: readonly T[]) => Promise<readonly T[] | undefined>,
): Promise<void> {
  for (let i = 0; i < all.length; i += size) {
    let pending: readonly T[] | undefined = all.slice(i, i + size);
    for (let round = 0; pending && pending.length > 0; round++) {
      if (round >= 10) throw new Error(`${operation} left items unprocessed after retries`);
      if (round > 0) await sleep(Math.min(1_000, 25 * 2 ** round));
      pending = await send(pending);
    }
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
