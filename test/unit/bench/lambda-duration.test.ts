import { describe, expect, it } from 'vitest';
import { AWS_ROUND_TRIP_MS, modelledDuration } from '../../../bench/lambda-duration';

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
});
