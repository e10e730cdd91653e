/**
 * Turn messages on the wire: what a requirement lane's turn carries (its set, its key's hash), what a key's lane turn
 * carries (as before labels), and how received bodies are read: a turn that says it has requirements but not which
 * well-formed set is no turn at all (poison), never a key's turn that any agent could take.
 */
import { ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { QueueDirectory, TaskQueues } from '#adapters/task-queues';

const sqs = mockClient(SQSClient);
afterAll(() => {
  sqs.restore();
});
const URLS = { critical: 'u/c', high: 'u/h', normal: 'u/n', low: 'u/l' };
const queues = new TaskQueues(new SQSClient({ region: 'eu-west-1' }), new QueueDirectory({ work: URLS }));
const LANE = 'A'.repeat(22);
const KEY = 'B'.repeat(22);
const TOKEN = 'tok12345';

const received = async (...bodies: unknown[]) => {
  sqs.on(ReceiveMessageCommand).resolves({
    Messages: bodies.map((body, n) => ({
      Body: typeof body === 'string' ? body : JSON.stringify(body),
      ReceiptHandle: `r${n}`,
      MessageId: `m${n}`,
    })),
  });
  return queues.receive('work', 'normal', { max: 10, visibilityTimeoutSeconds: 30, waitTimeSeconds: 0 });
};

describe('turn messages', () => {
  afterEach(() => sqs.reset());

  it('a requirement lane’s turn carries its set and its key’s hash; a key’s lane turn only its key', async () => {
    sqs.on(SendMessageCommand).resolves({});
    await queues.sendTurn('work', 'normal', {
      keyHash: LANE,
      token: TOKEN,
      require: { gpu: 'h100' },
      concurrencyKeyHash: KEY,
    });
    await queues.sendTurn('work', 'normal', { keyHash: KEY, token: TOKEN, concurrencyKeyHash: KEY });
    const [withSet, keyed] = sqs.commandCalls(SendMessageCommand).map((c) => c.args[0].input);
    expect(JSON.parse(withSet?.MessageBody ?? '')).toEqual({
      v: 1,
      turn: LANE,
      token: TOKEN,
      req: { gpu: 'h100' },
      key: KEY,
    });
    expect(withSet?.MessageGroupId).toBe(LANE);
    // As a release before labels wrote and reads it.
    expect(JSON.parse(keyed?.MessageBody ?? '')).toEqual({ v: 1, turn: KEY, token: TOKEN });
  });

  it('reads a set’s turn with its set, a key’s turn as its key’s, and a malformed set as poison', async () => {
    const { turns, poison } = await received(
      { v: 1, turn: LANE, token: TOKEN, req: { gpu: '*' } },
      { v: 1, turn: LANE, token: TOKEN, req: { gpu: 'h100' }, key: KEY },
      { v: 1, turn: KEY, token: TOKEN },
      { v: 1, turn: LANE, token: TOKEN, req: {} },
      { v: 1, turn: LANE, token: TOKEN, req: { 'bad name': 'x' } },
      { v: 1, turn: LANE, token: TOKEN, req: 'gpu' },
      { v: 1, turn: LANE, token: TOKEN, req: { gpu: 'x' }, key: 'short' },
    );
    expect(
      turns.map(({ keyHash, concurrencyKeyHash, require }) => ({ keyHash, concurrencyKeyHash, require })),
    ).toEqual([
      { keyHash: LANE, concurrencyKeyHash: undefined, require: { gpu: '*' } },
      { keyHash: LANE, concurrencyKeyHash: KEY, require: { gpu: 'h100' } },
      { keyHash: KEY, concurrencyKeyHash: KEY, require: undefined },
    ]);
    expect(poison.map((p) => p.receiptHandle)).toEqual(['r3', 'r4', 'r5', 'r6']);
  });
});
