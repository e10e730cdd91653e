import {
  ConditionalCheckFailedException,
  ProvisionedThroughputExceededException,
} from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { translatingAwsErrors } from '#adapters/aws-errors';
import { ServiceUnavailableError } from '#domain/errors';

/** An adapter whose calls fail as told, and which calls itself. */
class Store {
  calls = 0;
  constructor(private readonly failure?: Error) {}
  async read(): Promise<string> {
    this.calls++;
    if (this.failure) throw this.failure;
    return 'read';
  }
  async readTwice(): Promise<string[]> {
    return [await this.read(), await this.read()];
  }
  name(): string {
    return 'store';
  }
}

describe('translatingAwsErrors', () => {
  it('answers throttling that outlasted the retries as ServiceUnavailableError, keeping the cause', async () => {
    const throttled = new ProvisionedThroughputExceededException({ message: 'Rate exceeded', $metadata: {} });
    const store = translatingAwsErrors(new Store(throttled));

    const error = await store.read().catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error).toMatchObject({ statusCode: 503, cause: throttled });
  });

  it('lets every other error through unchanged, so the adapter and its callers still see a failed condition', async () => {
    const failed = new ConditionalCheckFailedException({ message: 'no', $metadata: {} });
    const store = translatingAwsErrors(new Store(failed));

    await expect(store.read()).rejects.toBe(failed);
  });

  it('leaves answers, synchronous methods and the adapter’s own state as they are', async () => {
    const inner = new Store();
    const store = translatingAwsErrors(inner);

    expect(await store.readTwice()).toEqual(['read', 'read']);
    expect(store.name()).toBe('store');
    expect(store.calls).toBe(2);
    expect(inner.calls).toBe(2);
  });
});
