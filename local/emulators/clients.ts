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

/** What every client of an emulator is given: its endpoint, the region and the dummy credentials. */
const emulatorConfig = (endpoint: string) =>
  ({ region: LOCAL_REGION, endpoint, credentials: LOCAL_CREDENTIALS, maxAttempts: 3 }) as const;

export function localDynamoDbClient(endpoint: string): DynamoDBClient {
  return withoutSdkLogging(new DynamoDBClient(emulatorConfig(endpoint)));
}

export function localSqsClient(endpoint: string): SQSClient {
  return withoutSdkLogging(new SQSClient(emulatorConfig(endpoint)));
}

/** fauxqs serves S3 on the SQS endpoint; path-style addressing keeps the bucket out of the host name. */
export function localS3Client(endpoint: string): S3Client {
  return withoutSdkLogging(new S3Client({ ...emulatorConfig(endpoint), forcePathStyle: true }));
}
