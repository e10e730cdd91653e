/**
 * The supervisor's cumulative item: one unconditional `UpdateItem` a pass, an `ADD` for every counter and `passes`
 * (so overlapping passes both count), a `SET` of the last pass, and of the last errors only when the pass met any.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, UpdateCommand, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CycleStatsTable } from '#adapters/cycle-stats-table';
import { CYCLE_FIGURES, type CycleFigures, cycleIds } from '#core/cycle-figures';

const doc = mockClient(DynamoDBDocumentClient);
afterAll(() => {
  doc.restore();
});
afterEach(() => doc.reset());
const table = new CycleStatsTable(
  DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'eu-west-1' })),
  'leases',
);
const figures = Object.fromEntries(CYCLE_FIGURES.map((name, i) => [name, i])) as CycleFigures;
const pass = { at: Date.UTC(2026, 11, 7), durationMs: 120, figures, ids: cycleIds(() => []), errors: [] };

/** The names an update's clause of `action` names, resolved through its placeholders. */
function named(input: UpdateCommandInput, action: 'ADD' | 'SET'): string[] {
  const clause = (input.UpdateExpression ?? '')
    .split(/ (?=SET |REMOVE |ADD )/)
    .find((c) => c.startsWith(action));
  return (clause?.slice(action.length + 1).split(', ') ?? []).map(
    (part) => input.ExpressionAttributeNames?.[part.split(/[ =]/)[0] ?? ''] ?? part,
  );
}

describe('the cycle stats item', () => {
  it('adds every counter and the pass in one unconditional write, and sets the last pass', async () => {
    // Prepare
    doc.on(UpdateCommand).resolves({});

    // Act
    await table.add(pass);

    // Assess
    expect(doc).toHaveReceivedCommandTimes(UpdateCommand, 1);
    const input = doc.commandCalls(UpdateCommand)[0]?.args[0].input as UpdateCommandInput;
    expect(input.Key).toEqual({ leaseId: 'stats#supervisor' });
    expect(input.ConditionExpression).toBeUndefined();
    expect(named(input, 'ADD').sort()).toEqual(['passes', ...CYCLE_FIGURES].sort());
    expect(named(input, 'SET')).toEqual(['kind', 'lastPass']);
  });

  it('sets the last errors, with their pass’s time, only when the pass met some', async () => {
    doc.on(UpdateCommand).resolves({});
    const errors = [{ step: 'reconcile', name: 'ThrottlingException', message: 'slow down' }];

    await table.add({ ...pass, errors });

    const input = doc.commandCalls(UpdateCommand)[0]?.args[0].input as UpdateCommandInput;
    expect(named(input, 'SET')).toEqual(['kind', 'lastPass', 'lastErrors', 'lastErrorsAt']);
    expect(Object.values(input.ExpressionAttributeValues ?? {})).toContainEqual(errors);
  });
});
