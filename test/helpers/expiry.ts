/**
 * What deletes records in AWS and not on the emulators, run at the test clock's time: DynamoDB's TTL (items whose
 * `purgeAt` has passed) and the payload bucket's lifecycle rule (objects older than its expiration, counted from
 * their last write). DynamoDB Local keeps expired items, and the S3 emulator has no lifecycle rules.
 */
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { DeleteCommand, DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { PAYLOAD_OBJECT_PREFIX, payloadObjectDays } from '#adapters/payload-objects';
import type { TestStack } from './stack';

const DAY_MS = 86_400_000;

export interface Expiry {
  /** Deletes what TTL and the lifecycle rule would have deleted by now; answers the keys deleted. */
  purge(): Promise<{ items: { taskId: string; part: string }[]; objects: string[] }>;
}

/**
 * Starts keeping the age of each payload object by the stack's clock, as S3 counts it: from its last PUT or copy.
 * Objects written before this call count from now.
 */
export function simulateExpiry(stack: TestStack): Expiry {
  const doc = DynamoDBDocumentClient.from(stack.dynamodb);
  const store = stack.ctx.payloads.payloadObjects;
  const writtenAt = new Map<string, number>();
  const startedAt = stack.clock.now();
  store?.objects.s3.middlewareStack.add(
    (next, context) => async (args) => {
      const output = await next(args);
      const input = args.input as { Key?: string };
      if (
        (context.commandName === PutObjectCommand.name || context.commandName === CopyObjectCommand.name) &&
        input.Key
      )
        writtenAt.set(input.Key, stack.clock.now());
      return output;
    },
    { step: 'initialize', name: `expiry${Math.random()}` },
  );
  return {
    async purge() {
      const nowSeconds = stack.clock.now() / 1_000;
      const items: { taskId: string; part: string }[] = [];
      let startKey: Record<string, unknown> | undefined;
      do {
        const page = await doc.send(
          new ScanCommand({
            TableName: stack.ctx.tasks.tableName,
            ConsistentRead: true,
            ExclusiveStartKey: startKey,
          }),
        );
        for (const item of page.Items ?? []) {
          if (typeof item.purgeAt !== 'number' || item.purgeAt > nowSeconds) continue;
          const key = { taskId: String(item.taskId), part: String(item.part) };
          await doc.send(new DeleteCommand({ TableName: stack.ctx.tasks.tableName, Key: key }));
          items.push(key);
        }
        startKey = page.LastEvaluatedKey;
      } while (startKey);
      const objects: string[] = [];
      if (store) {
        const { s3, bucketName } = store.objects;
        const lifetimeMs = payloadObjectDays(stack.ctx.settings) * DAY_MS;
        const listed = await s3.send(
          new ListObjectsV2Command({ Bucket: bucketName, Prefix: PAYLOAD_OBJECT_PREFIX }),
        );
        for (const { Key } of listed.Contents ?? []) {
          if (!Key || (writtenAt.get(Key) ?? startedAt) + lifetimeMs > stack.clock.now()) continue;
          await s3.send(new DeleteObjectCommand({ Bucket: bucketName, Key }));
          objects.push(Key);
        }
      }
      return { items, objects };
    },
  };
}
