/**
 * The wake timer on SQS: the exact requests an arm sends (delays rounded up as a hint's are, capped at SQS's 15
 * minutes, ten to a request), refusals surfaced, and the reader's decoding of what it receives.
 */
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { decodeTimedWake, encodeTimedWake, WakeTimerQueue } from '#adapters/wake-timer-queue';
import type { TimedWake } from '#core/ports/push-channel';

const NOW = Date.UTC(2026, 10, 27, 6, 0, 0);
const URL = 'https://sqs.local/000/wake-timer';
const sqs = mockClient(SQSClient);
// The client's prototype is shared with the files that run after this one in its worker.
afterAll(() => {
  sqs.restore();
});
const timer = new WakeTimerQueue(new SQSClient({ region: 'eu-west-1' }), URL, () => NOW);
const wake = (queue: string, afterMs: number, count = 1): TimedWake => ({
  queue,
  at: NOW + afterMs,
  count,
  reason: 'due',
});

describe('the wake timer queue', () => {
  afterEach(() => sqs.reset());

  it('delays each wake to its time in whole seconds, rounded up, at most 15 minutes', async () => {
    sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
    await timer.arm([wake('a', 3_000), wake('b', 2_001, 4), wake('c', 0), wake('d', 3_600_000)]);
    expect(sqs).toHaveReceivedCommandTimes(SendMessageBatchCommand, 1);
    const entries = sqs.commandCalls(SendMessageBatchCommand)[0]?.args[0].input.Entries ?? [];
    expect(entries.map((e) => e.DelaySeconds)).toEqual([3, 3, 0, 900]);
    // The message carries the exact time: a wake delivered early (past 15 minutes) is armed again for the rest.
    expect(entries.map((e) => decodeTimedWake(e.MessageBody ?? ''))).toEqual([
      wake('a', 3_000),
      wake('b', 2_001, 4),
      wake('c', 0),
      wake('d', 3_600_000),
    ]);
    expect(sqs.commandCalls(SendMessageBatchCommand)[0]?.args[0].input.QueueUrl).toBe(URL);
  });

  it('carries the tasks’ requirements, so the wake goes only to agents that meet them', async () => {
    sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
    const labelled: TimedWake = { ...wake('a', 1_000), require: { gpu: 'h100' } };
    await timer.arm([labelled]);
    const [entry] = sqs.commandCalls(SendMessageBatchCommand)[0]?.args[0].input.Entries ?? [];
    expect(decodeTimedWake(entry?.MessageBody ?? '')).toEqual(labelled);
    expect(decodeTimedWake(encodeTimedWake({ ...wake('a', 1_000), require: {} }))).toEqual(wake('a', 1_000));
    expect(
      decodeTimedWake(
        JSON.stringify({ v: 1, queue: 'a', at: NOW, count: 1, reason: 'due', require: { 'a b': 'x' } }),
      ),
    ).toBeUndefined();
  });

  it('sends ten wakes a request', async () => {
    sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
    await timer.arm(Array.from({ length: 23 }, (_, i) => wake(`q${i}`, 1_000)));
    expect(
      sqs.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input.Entries?.length),
    ).toEqual([10, 10, 3]);
  });

  it('throws when SQS refuses some wakes, so the caller can say so', async () => {
    sqs.on(SendMessageBatchCommand).resolves({
      Successful: [],
      Failed: [{ Id: '1', Code: 'InternalError', SenderFault: false }],
    });
    await expect(timer.arm([wake('a', 1_000), wake('b', 1_000)])).rejects.toThrow(
      '1 of 2 timed wakes were not armed',
    );
  });

  it('the reader takes only well-formed wakes', () => {
    expect(decodeTimedWake(encodeTimedWake(wake('work', 5_000, 3)))).toEqual(wake('work', 5_000, 3));
    for (const body of [
      'not json',
      '{}',
      JSON.stringify({ v: 2, queue: 'work', at: NOW, count: 1, reason: 'due' }),
      JSON.stringify({ v: 1, queue: 'no spaces allowed', at: NOW, count: 1, reason: 'due' }),
      JSON.stringify({ v: 1, queue: 'work', at: NOW, count: 0, reason: 'due' }),
      JSON.stringify({ v: 1, queue: 'work', at: -1, count: 1, reason: 'due' }),
      JSON.stringify({ v: 1, queue: 'work', at: NOW, count: 1, reason: 'due', extra: true }),
    ])
      expect(decodeTimedWake(body), body).toBeUndefined();
  });
});
