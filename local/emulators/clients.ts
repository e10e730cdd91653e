/**
 * SDK v3 clients pointed at the local emulators.
 *
 * Every client talking to an emulator must be given an explicit `endpoint`. For SQS this matters beyond
 * the first request: fauxqs hands out queue URLs such as `http://sqs.us-east-1.localhost:<port>/...`
 * and, without an explicit endpoint, the SQS client sends each request to the host named in the
 * `QueueUrl` (`useQueueUrlAsEndpoint`), which does not resolve on hosts without `*.localhost` DNS.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { withoutSdkLogging } from '#adapters/sdk-clients';

export const LOCAL_REGION = 'us-east-1';

/**
 * Static dummy credentials. DynamoDB Local (1.23+) rejects access keys that are not purely alphanumeric,
 * so keep these letters-only.
 */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

export interface EmulatorClientOptions {
  /**
   * Sign each request with SigV4 as in AWS. Neither emulator checks a signature (DynamoDB Local reads the access
   * key from the `Authorization` header, fauxqs reads nothing), so by default a client sends a header of that
   * form without the hashing, which is a fifth of the SDK's CPU time per request (570 µs to 460 µs per DynamoDB
   * call, measured against DynamoDB Local). The bench signs, so the handlers' own time it prices is AWS's.
   * @default false
   */
  readonly signRequests?: boolean;
}

/** A signer for the emulators: the header SigV4 would write, with no signature computed. */
const UNCHECKED_SIGNER = {
  sign: async <Request extends { headers: Record<string, string> }>(request: Request): Promise<Request> => {
    request.headers.authorization = `AWS4-HMAC-SHA256 Credential=${LOCAL_CREDENTIALS.accessKeyId}/20000101/${LOCAL_REGION}/local/aws4_request, SignedHeaders=host, Signature=0`;
    return request;
  },
};

/** What every client of an emulator is given: its endpoint, the region and the dummy credentials. */
const emulatorConfig = (endpoint: string, options: EmulatorClientOptions) => ({
  region: LOCAL_REGION,
  endpoint,
  credentials: LOCAL_CREDENTIALS,
  maxAttempts: 3,
  ...(options.signRequests ? {} : { signer: UNCHECKED_SIGNER }),
});

export function localDynamoDbClient(endpoint: string, options: EmulatorClientOptions = {}): DynamoDBClient {
  return withoutSdkLogging(new DynamoDBClient(emulatorConfig(endpoint, options)));
}

export function localSqsClient(endpoint: string, options: EmulatorClientOptions = {}): SQSClient {
  return withoutSdkLogging(new SQSClient(emulatorConfig(endpoint, options)));
}

/** fauxqs serves S3 on the SQS endpoint; path-style addressing keeps the bucket out of the host name. */
export function localS3Client(endpoint: string, options: EmulatorClientOptions = {}): S3Client {
  return withoutSdkLogging(new S3Client({ ...emulatorConfig(endpoint, options), forcePathStyle: true }));
}
