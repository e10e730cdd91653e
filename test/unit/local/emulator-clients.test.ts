import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { type EmulatorClientOptions, localDynamoDbClient } from '#local/emulators/clients';

/** The `Authorization` header a client of an emulator sends, caught after signing and answered locally. */
async function authorizationOf(options?: EmulatorClientOptions): Promise<string> {
  const client = localDynamoDbClient('http://127.0.0.1:1', options);
  let header = '';
  client.middlewareStack.addRelativeTo(
    (() => async (args: { request: { headers: Record<string, string> } }) => {
      header = args.request.headers.authorization ?? '';
      return { output: { $metadata: {} }, response: {} };
    }) as never,
    { relation: 'after', toMiddleware: 'httpSigningMiddleware', name: 'answerLocally' },
  );
  await client.send(new GetItemCommand({ TableName: 'tasks', Key: { pk: { S: 'x' } } }));
  return header;
}

describe('clients of the emulators', () => {
  it('send a SigV4-shaped header with the local access key, and compute no signature', async () => {
    const header = await authorizationOf();
    expect(header).toMatch(/^AWS4-HMAC-SHA256 Credential=local\/\d{8}\/us-east-1\/\w+\/aws4_request, /);
    expect(header).toContain('Signature=0');
  });

  it('sign as in AWS when asked (the bench)', async () => {
    const header = await authorizationOf({ signRequests: true });
    expect(header).toMatch(/^AWS4-HMAC-SHA256 Credential=local\/\d{8}\/us-east-1\/dynamodb\/aws4_request, /);
    expect(header).toMatch(/Signature=[0-9a-f]{64}$/);
  });
});
