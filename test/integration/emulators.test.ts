import { randomUUID } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DeleteTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localDynamoDbClient, localSqsClient } from '../../local/emulators/clients';

const uniqueName = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

describe('DynamoDB Local', () => {
  const tableName = uniqueName('smoke');
  let ddb: DynamoDBClient;

  beforeAll(async () => {
    ddb = localDynamoDbClient(inject('dynamodbEndpoint'));
    await ddb.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      }),
    );
  });

  afterAll(async () => {
    await ddb?.send(new DeleteTableCommand({ TableName: tableName }));
    ddb?.destroy();
  });

  it('rejects the second conditional put with ConditionalCheckFailedException', async () => {
    const put = (owner: string) =>
      ddb.send(
        new PutItemCommand({
          TableName: tableName,
          Item: { pk: { S: 'lease#1' }, owner: { S: owner } },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );

    await put('first');
    await expect(put('second')).rejects.toBeInstanceOf(ConditionalCheckFailedException);

    const { Item } = await ddb.send(
      new GetItemCommand({ TableName: tableName, Key: { pk: { S: 'lease#1' } }, ConsistentRead: true }),
    );
    expect(Item?.owner).toEqual({ S: 'first' });
  });
});

describe('SQS emulator (fauxqs)', () => {
  const queueName = uniqueName('smoke');
  let sqs: SQSClient;
  let queueUrl: string;

  beforeAll(async () => {
    sqs = localSqsClient(inject('sqsEndpoint'));
    const created = await sqs.send(new CreateQueueCommand({ QueueName: queueName }));
    if (!created.QueueUrl) throw new Error('CreateQueue returned no QueueUrl');
    queueUrl = created.QueueUrl;
  });

  afterAll(async () => {
    if (queueUrl) await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
    sqs?.destroy();
  });

  it('sends, receives and deletes a message', async () => {
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'hello' }));

    const received = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: 1 }),
    );
    expect(received.Messages).toHaveLength(1);
    const [message] = received.Messages ?? [];
    expect(message?.Body).toBe('hello');

    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message?.ReceiptHandle }));
    const after = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0 }));
    expect(after.Messages ?? []).toHaveLength(0);
  });

  it('holds back a message sent with DelaySeconds until the delay has passed', async () => {
    const sentAt = Date.now();
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'later', DelaySeconds: 2 }));

    const immediate = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0 }));
    expect(immediate.Messages ?? []).toHaveLength(0);

    const later = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 5 }));
    const elapsed = Date.now() - sentAt;
    expect(later.Messages?.map((m) => m.Body)).toEqual(['later']);
    expect(elapsed).toBeGreaterThanOrEqual(1_900);
    expect(elapsed).toBeLessThan(4_000);

    await sqs.send(
      new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: later.Messages?.[0]?.ReceiptHandle }),
    );
  });
});
