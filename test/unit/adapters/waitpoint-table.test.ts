/**
 * The waitpoint table's transactions on DynamoDB's refusals: one cancelled only by another transaction writing
 * the same item is sent again; one refused by a condition is not.
 */
import { DynamoDBClient, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { WaitpointTable } from '#adapters/waitpoint-table';
import { ServiceUnavailableError } from '#domain/errors';
import type { Waitpoint } from '#domain/waitpoint';

const doc = mockClient(DynamoDBDocumentClient);
afterAll(() => {
  doc.restore();
});
const table = new WaitpointTable(
  DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'eu-west-1' })),
  'tasks',
);
const NOW = Date.UTC(2026, 11, 7);
const waitpoint: Waitpoint = {
  waitpointId: `w_${'a'.repeat(26)}`,
  taskId: `t_${'b'.repeat(26)}`,
  leaseEpoch: 1,
  status: 'open',
  onTimeout: 'resume',
  timeoutAt: NOW + 60_000,
  createdAt: NOW,
  tokenHash: 'hash',
};
const cancelled = (...codes: string[]) =>
  new TransactionCanceledException({
    message: 'cancelled',
    $metadata: {},
    CancellationReasons: codes.map((Code) => ({ Code })),
  });
const suspend = () =>
  table.suspend(
    waitpoint.taskId,
    { agentId: `a_${'c'.repeat(26)}`, sessionId: `s_${'d'.repeat(26)}`, leaseEpoch: 1 },
    { waitpoint, dueAt: waitpoint.timeoutAt, purgeAt: 0 },
    NOW,
  );

describe('the waitpoint table', () => {
  afterEach(() => doc.reset());

  it('sends a transaction cancelled only by a conflicting one again, and it lands', async () => {
    doc
      .on(TransactWriteCommand)
      .rejectsOnce(cancelled('TransactionConflict', 'None', 'None'))
      .resolves({});

    expect(await suspend()).toBe(true);
    expect(doc.commandCalls(TransactWriteCommand)).toHaveLength(2);
  });

  it('does not send again one a condition refused', async () => {
    doc.on(TransactWriteCommand).rejects(cancelled('ConditionalCheckFailed', 'None', 'TransactionConflict'));

    expect(await suspend()).toBe(false);
    expect(doc.commandCalls(TransactWriteCommand)).toHaveLength(1);
  });

  it('answers 503 after a few conflicts in a row, for the caller to retry', async () => {
    doc.on(TransactWriteCommand).rejects(cancelled('TransactionConflict', 'None', 'None'));

    await expect(suspend()).rejects.toThrow(ServiceUnavailableError);
    expect(doc.commandCalls(TransactWriteCommand)).toHaveLength(4);
  });
});
