/**
 * The units the meter counts are the units AWS bills: DynamoDB Local's reports where they follow AWS's rules (held
 * to them here, item by item, so a change of the emulator shows), and the meter's own figure where Local reports
 * nothing (a failed condition, a cancelled transaction, a query that reads nothing).
 */
import { randomUUID } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DeleteTableCommand,
  type DynamoDBClient,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactGetCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { AwsMeter } from '#adapters/aws-meter';
import { itemSize, readUnitsFor, writeUnitsFor } from '#adapters/item-size';
import { localDynamoDbClient } from '../../local/emulators/clients';

const text = (bytes: number) => 'x'.repeat(bytes);
const sizeOf = (item: Record<string, unknown>) => itemSize(marshall(item));

describe('units as AWS bills them', () => {
  const TableName = `billing-${randomUUID().slice(0, 8)}`;
  let raw: DynamoDBClient;
  let doc: DynamoDBDocumentClient;
  const meter = new AwsMeter();
  const last = () => meter.requests.at(-1);

  beforeAll(async () => {
    raw = localDynamoDbClient(inject('dynamodbEndpoint'));
    meter.attach(raw, 'dynamodb');
    doc = DynamoDBDocumentClient.from(raw);
    await raw.send(
      new CreateTableCommand({
        TableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'g', AttributeType: 'S' },
        ],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        GlobalSecondaryIndexes: [
          {
            IndexName: 'byG',
            KeySchema: [{ AttributeName: 'g', KeyType: 'HASH' }],
            Projection: { ProjectionType: 'KEYS_ONLY' },
          },
        ],
      }),
    );
  });
  afterAll(async () => {
    await raw?.send(new DeleteTableCommand({ TableName }));
  });
  beforeEach(() => meter.reset());

  describe('DynamoDB Local sizes items as AWS does', () => {
    it('a put: 1 KB a unit of the item written', async () => {
      const item = { pk: 'put', v: text(1_500) };
      await doc.send(new PutCommand({ TableName, Item: item }));
      expect(last()?.writeUnits).toBe(writeUnitsFor(sizeOf(item)));
      expect(last()?.writeUnits).toBe(2);
    });

    it('an update: the larger of the item before and after', async () => {
      const before = { pk: 'shrink', v: text(3_500) };
      await doc.send(new PutCommand({ TableName, Item: before }));
      await doc.send(
        new UpdateCommand({
          TableName,
          Key: { pk: 'shrink' },
          UpdateExpression: 'SET v = :v',
          ExpressionAttributeValues: { ':v': text(100) },
        }),
      );
      expect(last()?.writeUnits).toBe(writeUnitsFor(sizeOf(before)));
      expect(last()?.writeUnits).toBe(4);
    });

    it('a read: the whole item in 4 KB units, halved when eventually consistent, whatever the projection', async () => {
      const item = { pk: 'read', v: text(5_000) };
      await doc.send(new PutCommand({ TableName, Item: item }));
      await doc.send(new GetCommand({ TableName, Key: { pk: 'read' } }));
      expect(last()?.readUnits).toBe(readUnitsFor(sizeOf(item), false));
      await doc.send(
        new GetCommand({ TableName, Key: { pk: 'read' }, ConsistentRead: true, ProjectionExpression: 'pk' }),
      );
      expect(last()?.readUnits).toBe(readUnitsFor(sizeOf(item), true));
      expect(last()?.readUnits).toBe(2);
    });

    it('an index: one write when an entry comes or goes, two when its key changes, none otherwise', async () => {
      await doc.send(new PutCommand({ TableName, Item: { pk: 'indexed', g: 'one', v: 'a' } }));
      expect(last()?.indexWriteUnits).toBe(1);
      const update = (expression: string, values: Record<string, unknown>) =>
        doc.send(
          new UpdateCommand({
            TableName,
            Key: { pk: 'indexed' },
            UpdateExpression: expression,
            ExpressionAttributeValues: values,
          }),
        );
      await update('SET v = :v', { ':v': 'b' });
      expect(last()?.indexWriteUnits).toBe(0);
      await update('SET g = :g', { ':g': 'two' });
      expect(last()?.indexWriteUnits).toBe(2);
    });
  });

  describe('a transaction, from its items', () => {
    it('bills every item twice at its size, a condition check too, and each index entry once', async () => {
      const items = [
        { pk: 'tx-a', v: text(500) },
        { pk: 'tx-b', v: text(1_500) },
      ];
      await doc.send(
        new TransactWriteCommand({ TransactItems: items.map((Item) => ({ Put: { TableName, Item } })) }),
      );
      expect(last()).toMatchObject({ ok: true, writeUnits: 2 * (1 + 2), indexWriteUnits: 0 });
      await doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              ConditionCheck: { TableName, Key: { pk: 'tx-a' }, ConditionExpression: 'attribute_exists(pk)' },
            },
            {
              Update: {
                TableName,
                Key: { pk: 'tx-b' },
                UpdateExpression: 'SET g = :g',
                ExpressionAttributeValues: { ':g': 'listed' },
              },
            },
          ],
        }),
      );
      // The check of tx-a (1 unit, twice), the update of tx-b (2 units, twice), its new index entry (1).
      expect(last()).toMatchObject({ ok: true, writeUnits: 2 * 1 + 2 * 2 + 1, indexWriteUnits: 1 });
    });

    it('holds DynamoDB Local’s figure for a transactional read to AWS’s rule', async () => {
      await doc.send(
        new TransactGetCommand({ TransactItems: [{ Get: { TableName, Key: { pk: 'read' } } }] }),
      );
      expect(last()?.readUnits).toBe(2 * readUnitsFor(sizeOf({ pk: 'read', v: text(5_000) }), true));
    });
  });

  describe('what Local reports nothing for', () => {
    it('bills a write whose condition fails at the size of the item it found', async () => {
      await doc.send(new PutCommand({ TableName, Item: { pk: 'taken', v: text(2_500) } }));
      const refused = doc.send(
        new PutCommand({ TableName, Item: { pk: 'taken' }, ConditionExpression: 'attribute_not_exists(pk)' }),
      );
      await expect(refused).rejects.toBeInstanceOf(ConditionalCheckFailedException);
      expect(last()).toMatchObject({ ok: false, writeUnits: 3, failedWriteUnits: 3 });
    });

    it('bills a transaction cancelled by a condition once for each action', async () => {
      await doc.send(new PutCommand({ TableName, Item: { pk: 'held', v: text(1_100) } }));
      const cancelled = doc.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName, Item: { pk: 'fresh' } } },
            {
              Update: {
                TableName,
                Key: { pk: 'held' },
                UpdateExpression: 'SET w = :w',
                ConditionExpression: 'attribute_not_exists(pk)',
                ExpressionAttributeValues: { ':w': 1 },
              },
            },
          ],
        }),
      );
      await expect(cancelled).rejects.toBeInstanceOf(TransactionCanceledException);
      expect(last()).toMatchObject({ ok: false, writeUnits: 1 + 2 });
    });

    it('bills a query that reads nothing the minimum read', async () => {
      await doc.send(
        new QueryCommand({
          TableName,
          IndexName: 'byG',
          KeyConditionExpression: 'g = :g',
          ExpressionAttributeValues: { ':g': 'nobody' },
        }),
      );
      expect(last()?.readUnits).toBe(0.5);
    });

    it('leaves a write that says what it wants on a failed condition as it is', async () => {
      const input = {
        TableName,
        Item: { pk: 'taken' },
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'NONE' as const,
      };
      await expect(doc.send(new PutCommand(input))).rejects.toBeInstanceOf(ConditionalCheckFailedException);
      // Not told the item, the meter bills the least a write costs.
      expect(last()).toMatchObject({ writeUnits: 1 });
    });
  });
});
