/**
 * Vitest globalSetup for the `integration` project: starts DynamoDB Local and the fauxqs SQS emulator once
 * per run and hands their endpoints to tests via `inject('dynamodbEndpoint')` / `inject('sqsEndpoint')`.
 * Build clients with `localDynamoDbClient` / `localSqsClient` from `local/emulators/clients`.
 */
import type { TestProject } from 'vitest/node';
import { type DynamoDbLocal, startDynamoDbLocal } from '../../local/emulators/dynamodb-local';
import { type SqsEmulator, startSqsEmulator } from '../../local/emulators/sqs';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    sqsEndpoint: string;
  }
}

export default async function setup({ provide }: TestProject): Promise<() => Promise<void>> {
  const started = performance.now();
  const [dynamodb, sqs] = await Promise.allSettled([
    startDynamoDbLocal({ inMemory: true }),
    startSqsEmulator({}),
  ]);
  if (dynamodb.status === 'rejected' || sqs.status === 'rejected') {
    await Promise.all([
      dynamodb.status === 'fulfilled' ? dynamodb.value.stop() : undefined,
      sqs.status === 'fulfilled' ? sqs.value.stop() : undefined,
    ]);
    throw dynamodb.status === 'rejected' ? dynamodb.reason : (sqs as PromiseRejectedResult).reason;
  }
  const emulators: [DynamoDbLocal, SqsEmulator] = [dynamodb.value, sqs.value];
  provide('dynamodbEndpoint', dynamodb.value.endpoint);
  provide('sqsEndpoint', sqs.value.endpoint);
  console.log(
    `[emulators] dynamodb ${dynamodb.value.endpoint}, sqs ${sqs.value.endpoint} (started in ${Math.round(performance.now() - started)} ms)`,
  );

  return async () => {
    await Promise.all(emulators.map((emulator) => emulator.stop()));
  };
}
