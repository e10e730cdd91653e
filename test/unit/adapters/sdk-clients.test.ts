import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it, vi } from 'vitest';
import { withoutSdkLogging } from '#adapters/sdk-clients';

const recordingLogger = () => ({ debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() });

/** Answers every request at the build step, before anything goes on the wire. */
function answering(client: DynamoDBClient, answer: () => object): DynamoDBClient {
  client.middlewareStack.add(() => async () => ({ output: { $metadata: {}, ...answer() }, response: {} }), {
    step: 'build',
    name: 'answerLocally',
  });
  return client;
}

const config = { region: 'us-east-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } };

describe('withoutSdkLogging', () => {
  it('takes out the middleware that filters every request and response for the SDK logger', async () => {
    const logger = recordingLogger();
    const logged = answering(new DynamoDBClient({ ...config, logger }), () => ({ Item: { pk: { S: 'x' } } }));
    await logged.send(new GetItemCommand({ TableName: 'tasks', Key: { pk: { S: 'x' } } }));
    // The SDK's own behaviour, so this test notices if the middleware is renamed.
    expect(logger.info).toHaveBeenCalledTimes(1);

    const quietLogger = recordingLogger();
    const quiet = answering(
      withoutSdkLogging(new DynamoDBClient({ ...config, logger: quietLogger })),
      () => ({
        Item: { pk: { S: 'x' } },
      }),
    );
    const output = await quiet.send(new GetItemCommand({ TableName: 'tasks', Key: { pk: { S: 'x' } } }));
    expect(output.Item).toEqual({ pk: { S: 'x' } });
    expect(quietLogger.info).not.toHaveBeenCalled();
  });

  it('leaves errors to reach the caller unchanged', async () => {
    const logger = recordingLogger();
    const client = withoutSdkLogging(new SQSClient({ ...config, logger }));
    client.middlewareStack.add(
      () => async () => {
        throw Object.assign(new Error('queue gone'), { name: 'QueueDoesNotExist' });
      },
      { step: 'build', name: 'failLocally' },
    );
    await expect(
      client.send(new SendMessageCommand({ QueueUrl: 'https://sqs.example/q', MessageBody: '{}' })),
    ).rejects.toMatchObject({ name: 'QueueDoesNotExist', message: 'queue gone' });
    expect(logger.error).not.toHaveBeenCalled();
  });
});
