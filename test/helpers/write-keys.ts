/**
 * Every write a DynamoDB client sends, item by item: single writes, each item of a transaction and of a batch
 * write, with the table, the item's key values (partition first) and the write as sent, before or after the document
 * client's marshalling.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** Inputs seen before or after the document client's marshalling: plain values or `{ S }`. */
type Attribute = string | { S?: string } | unknown;

export interface WriteInput {
  readonly TableName?: string;
  readonly Key?: Record<string, Attribute>;
  readonly Item?: Record<string, Attribute>;
  readonly UpdateExpression?: string;
  readonly ExpressionAttributeNames?: Record<string, string>;
}

export interface ItemWrite {
  readonly table: string;
  /** The partition key's value. */
  readonly pk: string;
  /** The sort key's value ('' for a table without one). */
  readonly sk: string;
  readonly input: WriteInput;
}

const text = (value: Attribute): string =>
  typeof value === 'string' ? value : String((value as { S?: string } | undefined)?.S ?? '');

/** Calls `record` with each item written through `client` from now on; the returned function stops it. */
export function recordItemWrites(
  client: Pick<DynamoDBClient, 'middlewareStack'>,
  record: (write: ItemWrite) => void,
): () => void {
  const name = `recordItemWrites${Math.random().toString(36).slice(2)}`;
  const one = (input: WriteInput) => {
    const [pk, sk] = Object.values(input.Key ?? input.Item ?? {});
    record({ table: input.TableName ?? '', pk: text(pk), sk: sk === undefined ? '' : text(sk), input });
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as WriteInput & {
        TransactItems?: { Update?: WriteInput; Put?: WriteInput; Delete?: WriteInput }[];
        RequestItems?: Record<
          string,
          { PutRequest?: { Item: WriteInput['Item'] }; DeleteRequest?: { Key: WriteInput['Key'] } }[]
        >;
      };
      const command = context.commandName ?? '';
      if (['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand'].includes(command)) one(input);
      for (const item of input.TransactItems ?? []) {
        const write = item.Update ?? item.Put ?? item.Delete;
        if (write) one(write);
      }
      if (command === 'BatchWriteItemCommand')
        for (const [TableName, requests] of Object.entries(input.RequestItems ?? {}))
          for (const request of requests)
            one(
              request.PutRequest
                ? { TableName, Item: request.PutRequest.Item ?? {} }
                : { TableName, Key: request.DeleteRequest?.Key ?? {} },
            );
      return next(args);
    },
    { step: 'initialize', name },
  );
  return () => {
    client.middlewareStack.remove(name);
  };
}
