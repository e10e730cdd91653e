import { describe, expect, it } from 'vitest';
import { noteAwsCall } from '#local/function-scope';
import { AWS_ROUND_TRIP_MS, billed, modelledDuration } from '../../../bench/lambda-duration';

const call = (service: string, startedMs: number, endedMs: number, operation = 'GetItemCommand') => ({
  service,
  operation,
  startedMs,
  endedMs,
});

describe('a handler’s duration as Lambda would bill it', () => {
  it('keeps the handler’s own time and prices each wait at the round trip of AWS', () => {
    // 100 ms here, of which 60 waiting on two DynamoDB requests one after the other.
    const modelled = modelledDuration(100, [call('dynamodb', 10, 40), call('dynamodb', 50, 80)]);
    expect(modelled.ownMs).toBe(40);
    expect(modelled.awsMs).toBe(2 * (AWS_ROUND_TRIP_MS.dynamodb ?? 0));
    expect(modelled.billedMs).toBe(50);
  });

  it('prices requests sent together as one wait, at the slowest of them', () => {
    const modelled = modelledDuration(100, [
      call('dynamodb', 10, 70),
      call('sqs', 20, 60, 'ReceiveMessageCommand'),
      call('dynamodb', 30, 90, 'TransactWriteItemsCommand'),
    ]);
    expect(modelled.ownMs).toBe(20);
    expect(modelled.awsMs).toBe(AWS_ROUND_TRIP_MS['dynamodb:TransactWriteItemsCommand']);
  });

  it('bills a handler that made no request its whole time, and never less than nothing of its own', () => {
    expect(modelledDuration(12.2, [])).toEqual({ ownMs: 12.2, awsMs: 0, billedMs: 13 });
    expect(modelledDuration(5, [call('s3', 0, 8)]).ownMs).toBe(0);
  });

  it('bills an invocation run through `billed` at its modelled duration, a failed one too', async () => {
    const durations: number[] = [];
    const slowWait = async () => {
      const startedMs = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 60));
      noteAwsCall({
        service: 'dynamodb',
        operation: 'GetItemCommand',
        startedMs,
        endedMs: performance.now(),
      });
    };
    await billed(durations, slowWait);
    await expect(
      billed(durations, async () => {
        await slowWait();
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(durations).toHaveLength(2);
    // 60 ms of waiting here is one DynamoDB round trip in AWS.
    for (const ms of durations) expect(ms).toBeLessThan(40);
    for (const ms of durations) expect(ms).toBeGreaterThanOrEqual(AWS_ROUND_TRIP_MS.dynamodb ?? 0);
  });
});
