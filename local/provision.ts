/**
 * Creates the tables and queues the CDK construct would create, from the same definitions, on the local
 * emulators. Used by the local runner and by the integration tests (with unique names per test file).
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { BucketAlreadyOwnedByYou, CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createTableInput, TABLE_DEFINITIONS, type TableDefinition, type TableNames } from '#adapters/tables';
import { HINT_MAX_RECEIVES, type PriorityQueueUrls, QueueDirectory } from '#adapters/task-queues';
import { PRIORITIES } from '#domain/priority';

/** SQS receives after which a message moves to the queue's DLQ; the construct uses the same number. */
/** Seconds a received hint stays hidden; the construct uses the same number. */
export const HINT_VISIBILITY_SECONDS = 30;
const RETENTION_SECONDS = 14 * 24 * 60 * 60;

export function tableNamesFor(prefix: string): TableNames {
  return {
    tasks: `${prefix}-tasks`,
    agents: `${prefix}-agents`,
    leases: `${prefix}-leases`,
    connections: `${prefix}-connections`,
  };
}

export async function provisionTables(dynamodb: DynamoDBClient, names: TableNames): Promise<void> {
  const byId = {
    Tasks: names.tasks,
    Agents: names.agents,
    Leases: names.leases,
    Connections: names.connections,
  } as const;
  await Promise.all(
    TABLE_DEFINITIONS.map(async (definition) => {
      const TableName = byId[definition.id];
      if (TableName === undefined) return;
      try {
        await dynamodb.send(new CreateTableCommand(createTableInput(definition, TableName)));
      } catch (error) {
        if (!(error instanceof ResourceInUseException)) throw error;
        // A table kept from an earlier release (local data): it gets the indexes added since, as a deploy would.
        await addMissingIndexes(dynamodb, definition, TableName);
        return;
      }
      if (definition.timeToLiveAttribute) {
        await dynamodb.send(
          new UpdateTimeToLiveCommand({
            TableName,
            TimeToLiveSpecification: { AttributeName: definition.timeToLiveAttribute, Enabled: true },
          }),
        );
      }
    }),
  );
}

/** Creates the indexes `definition` declares that the existing table `TableName` lacks, one at a time. */
async function addMissingIndexes(
  dynamodb: DynamoDBClient,
  definition: TableDefinition,
  TableName: string,
): Promise<void> {
  const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName }));
  const present = new Set((Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName));
  const wanted = createTableInput(definition, TableName);
  for (const index of wanted.GlobalSecondaryIndexes ?? []) {
    if (present.has(index.IndexName)) continue;
    const keys = new Set(index.KeySchema?.map((key) => key.AttributeName));
    await dynamodb.send(
      new UpdateTableCommand({
        TableName,
        AttributeDefinitions: wanted.AttributeDefinitions?.filter((a) => keys.has(a.AttributeName)),
        GlobalSecondaryIndexUpdates: [
          {
            Create: { IndexName: index.IndexName, KeySchema: index.KeySchema, Projection: index.Projection },
          },
        ],
      }),
    );
  }
}

/** SQS queue names for a task queue: `<prefix>-<queue>-<priority>`, and `<prefix>-<queue>-dlq`. */
export const sqsQueueName = (prefix: string, queue: string, suffix: string) => `${prefix}-${queue}-${suffix}`;

export async function provisionQueues(
  sqs: SQSClient,
  prefix: string,
  queues: readonly string[],
): Promise<QueueDirectory> {
  const directory: Record<string, PriorityQueueUrls> = {};
  for (const queue of queues) {
    const dlq = await sqs.send(
      new CreateQueueCommand({
        QueueName: sqsQueueName(prefix, queue, 'dlq'),
        Attributes: { MessageRetentionPeriod: String(RETENTION_SECONDS) },
      }),
    );
    const dlqAttributes = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }),
    );
    const dlqArn = dlqAttributes.Attributes?.QueueArn;
    if (!dlqArn) throw new Error(`the DLQ of ${queue} has no ARN`);
    const urls = await Promise.all(
      PRIORITIES.map(async (priority) => {
        const created = await sqs.send(
          new CreateQueueCommand({
            QueueName: sqsQueueName(prefix, queue, priority),
            Attributes: {
              MessageRetentionPeriod: String(RETENTION_SECONDS),
              VisibilityTimeout: String(HINT_VISIBILITY_SECONDS),
              RedrivePolicy: JSON.stringify({
                deadLetterTargetArn: dlqArn,
                maxReceiveCount: HINT_MAX_RECEIVES,
              }),
            },
          }),
        );
        return [priority, created.QueueUrl ?? ''] as const;
      }),
    );
    if (!dlq.QueueUrl || urls.some(([, url]) => !url))
      throw new Error(`could not create the queues of ${queue}`);
    directory[queue] = { ...(Object.fromEntries(urls) as PriorityQueueUrls), deadLetter: dlq.QueueUrl };
  }
  return new QueueDirectory(directory);
}

/** The bucket for large payloads, `<prefix>-payloads` in S3's alphabet; creating it again is harmless. */
export async function provisionPayloadBucket(s3: S3Client, prefix: string): Promise<string> {
  const bucketName = `${prefix.toLowerCase().replace(/[^a-z0-9-]/g, '-')}-payloads`.slice(-63);
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucketName }));
  } catch (error) {
    if (!(error instanceof BucketAlreadyOwnedByYou)) throw error;
  }
  return bucketName;
}

/**
 * The wake timer's queue, `<prefix>-wake-timer`, as the construct creates it (its dead letters are the stack's
 * concern, not a local one); creating it again is harmless.
 */
export async function provisionWakeTimerQueue(sqs: SQSClient, prefix: string): Promise<string> {
  const created = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${prefix}-wake-timer`,
      Attributes: { MessageRetentionPeriod: String(60 * 60), VisibilityTimeout: '60' },
    }),
  );
  if (!created.QueueUrl) throw new Error('could not create the wake timer queue');
  return created.QueueUrl;
}
