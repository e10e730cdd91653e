/**
 * Tables and queues of their own on the emulators, for a benchmark or a chaos run: on emulators given by
 * endpoint (the test suite's), or on emulators started here in memory. `dispose()` leaves nothing behind.
 */
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { TableNames } from '#adapters/tables';
import type { QueueDirectory } from '#adapters/task-queues';
import { localDynamoDbClient, localS3Client, localSqsClient } from './emulators/clients';
import { startDynamoDbLocal } from './emulators/dynamodb-local';
import { startSqsEmulator } from './emulators/sqs';
import { provisionPayloadBucket, provisionQueues, provisionTables, tableNamesFor } from './provision';

export interface ScratchStack {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly tables: TableNames;
  readonly queues: QueueDirectory;
  /** S3 on the SQS emulator, and a bucket of this stack's own for large payloads. */
  readonly s3: S3Client;
  readonly payloadBucket: string;
  dispose(): Promise<void>;
}

export async function scratchStack(options: {
  readonly name: string;
  readonly queues: readonly string[];
  readonly endpoints?: { readonly dynamodb: string; readonly sqs: string } | undefined;
}): Promise<ScratchStack> {
  const [dynamodbLocal, sqsEmulator] = options.endpoints
    ? [undefined, undefined]
    : await Promise.all([startDynamoDbLocal({ inMemory: true }), startSqsEmulator({})]);
  const dynamodb = localDynamoDbClient(options.endpoints?.dynamodb ?? dynamodbLocal?.endpoint ?? '');
  const sqs = localSqsClient(options.endpoints?.sqs ?? sqsEmulator?.endpoint ?? '');
  const s3 = localS3Client(options.endpoints?.sqs ?? sqsEmulator?.endpoint ?? '');
  const prefix = `${options.name}${Date.now().toString(36)}`;
  const tables = tableNamesFor(prefix);
  await provisionTables(dynamodb, tables);
  const queues = await provisionQueues(sqs, prefix, options.queues);
  const payloadBucket = await provisionPayloadBucket(s3, prefix);
  return {
    dynamodb,
    sqs,
    tables,
    queues,
    s3,
    payloadBucket,
    dispose: async () => {
      // Emulators of our own go with their data; shared ones keep running without our tables.
      if (options.endpoints) {
        await Promise.all(
          Object.values(tables).map((TableName) =>
            dynamodb.send(new DeleteTableCommand({ TableName })).catch(() => undefined),
          ),
        );
      }
      await Promise.all([dynamodbLocal?.stop(), sqsEmulator?.stop()]);
    },
  };
}
