/**
 * Tables and queues on the emulators, for the local stack, a benchmark or a chaos run: on emulators given by
 * endpoint (the test suite's), or on emulators started here (in memory, or the local stack's store on disk).
 * `dispose()` leaves nothing behind but a store on disk.
 */
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { TableNames } from '#adapters/tables';
import type { QueueDirectory } from '#adapters/task-queues';
import { localDynamoDbClient, localS3Client, localSqsClient } from './emulators/clients';
import { startDynamoDbLocal } from './emulators/dynamodb-local';
import { startSqsEmulator } from './emulators/sqs';
import {
  provisionPayloadBucket,
  provisionQueues,
  provisionTables,
  provisionWakeTimerQueue,
  tableNamesFor,
} from './provision';

export interface EmulatorEndpoints {
  readonly dynamodb: string;
  readonly sqs: string;
}

export interface ScratchStackOptions {
  /** The tables' and queues' prefix, with the time, the process and a count after it unless `exactNames`. */
  readonly name: string;
  readonly queues: readonly string[];
  /** Emulators to use; started here, and stopped by `dispose()`, when absent. */
  readonly endpoints?: EmulatorEndpoints | undefined;
  /**
   * Names are `name` exactly, as the local stack's are, to find its tables again after a restart.
   * @default false: the time follows the name, so runs on shared emulators never meet
   */
  readonly exactNames?: boolean;
  /** Where a DynamoDB Local started here keeps its data. @default in memory */
  readonly dbPath?: string | undefined;
  /** A bucket of the stack's own for large payloads. @default true */
  readonly payloadBucket?: boolean;
  /** The wake timer's queue (`<prefix>-wake-timer`). @default false */
  readonly wakeTimer?: boolean;
  /** The clients sign their requests (see `EmulatorClientOptions`). @default false */
  readonly signRequests?: boolean;
}

export interface ScratchStack {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly tables: TableNames;
  readonly queues: QueueDirectory;
  /** S3 on the SQS emulator. */
  readonly s3: S3Client;
  /** The stack's bucket for large payloads, unless it was asked for none. */
  readonly payloadBucket: string | undefined;
  /** The wake timer's queue URL, when it was asked for. */
  readonly wakeTimerQueue: string | undefined;
  readonly endpoints: EmulatorEndpoints;
  /** The JVM of a DynamoDB Local started here. */
  readonly dynamodbPid: number | undefined;
  dispose(): Promise<void>;
}

/** Scratch stacks named so far by this process. */
let named = 0;

/**
 * The names' prefix of a scratch stack: `name`, unless `exactNames` followed by the time, the process and a count,
 * so that stacks started in one millisecond (runs side by side in one process, or in two) never share a table: a
 * table is created only if absent, and the first run to end would delete it under the other.
 */
export function scratchPrefix(options: Pick<ScratchStackOptions, 'name' | 'exactNames'>): string {
  if (options.exactNames) return options.name;
  return `${options.name}${Date.now().toString(36)}x${process.pid.toString(36)}x${(named++).toString(36)}`;
}

export async function scratchStack(options: ScratchStackOptions): Promise<ScratchStack> {
  const [dynamodbLocal, sqsEmulator] = options.endpoints
    ? [undefined, undefined]
    : await Promise.all([
        startDynamoDbLocal(options.dbPath === undefined ? { inMemory: true } : { dbPath: options.dbPath }),
        startSqsEmulator({}),
      ]);
  const endpoints = options.endpoints ?? {
    dynamodb: dynamodbLocal?.endpoint ?? '',
    sqs: sqsEmulator?.endpoint ?? '',
  };
  const signing = { signRequests: options.signRequests ?? false };
  const dynamodb = localDynamoDbClient(endpoints.dynamodb, signing);
  const sqs = localSqsClient(endpoints.sqs, signing);
  const s3 = localS3Client(endpoints.sqs, signing);
  const prefix = scratchPrefix(options);
  const tables = tableNamesFor(prefix);
  await provisionTables(dynamodb, tables);
  const queues = await provisionQueues(sqs, prefix, options.queues);
  const payloadBucket =
    options.payloadBucket === false ? undefined : await provisionPayloadBucket(s3, prefix);
  const wakeTimerQueue = options.wakeTimer ? await provisionWakeTimerQueue(sqs, prefix) : undefined;
  return {
    dynamodb,
    sqs,
    tables,
    queues,
    s3,
    payloadBucket,
    wakeTimerQueue,
    endpoints,
    dynamodbPid: dynamodbLocal?.pid,
    dispose: async () => {
      // Emulators of our own go with their data; shared ones keep running without our tables.
      if (options.endpoints) {
        await Promise.all(
          Object.values(tables).map((TableName) =>
            dynamodb.send(new DeleteTableCommand({ TableName })).catch(() => undefined),
          ),
        );
      }
      // Both are stopped even if one fails to.
      await Promise.allSettled([dynamodbLocal?.stop(), sqsEmulator?.stop()]);
    },
  };
}
