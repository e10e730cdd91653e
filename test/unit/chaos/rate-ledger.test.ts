/**
 * The rate-limited tasks' part of the chaos run's record and checker: the transactions of a grant that takes units
 * and of a finish that settles usage are read back (the task's state, the windows' changes), the writes are told
 * apart by what they write (a bar on a grant is no grant), and the ledger owes the budget each grant's estimate and
 * each reported usage less it.
 */
import {
  DynamoDBDocumentClient,
  GetCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { ending } from '#core/timing';
import { mockContext, NOW, stateItem } from '#test/mock-context';
import type { WiredContext } from '#wiring/context';
import { writeKind } from '../../../chaos/committed-writes';
import type { TaskVersion } from '../../../chaos/history';
import { BUDGET, checkLedger, ledgerViolations, owedToBudget, usageOf } from '../../../chaos/rate-ledger';
import { taskTransactionOf } from '../../../chaos/rate-writes';
import type { TransactItem } from '../../../chaos/waitpoint-writes';

const ddb = mockClient(DynamoDBDocumentClient);
afterAll(() => {
  ddb.restore();
});

const TASK = 't_aaaaaaaaaaaaaaaaaaaaaaaaaa';
const TABLES = { tasks: 'tasks', leases: 'leases' };
const take = {
  taken: { name: BUDGET, units: 40, window: 0 },
  capacity: 1e9,
  end: 86_400_000,
  purgeAt: 1,
};

describe('the record of a rate-limited task’s transactions', () => {
  let ctx: WiredContext;
  beforeEach(() => {
    ddb.reset();
    ddb.on(TransactWriteCommand).resolves({});
    ddb.on(UpdateCommand).resolves({ Attributes: stateItem() });
    ddb.on(GetCommand).resolves({ Item: stateItem() });
    ctx = mockContext();
  });
  const lastTransaction = () => {
    const [call] = ddb.commandCalls(TransactWriteCommand).slice(-1);
    return call?.args[0].input ?? expect.unreachable();
  };

  it('reads a grant’s state (its epoch and deadline reckoned from the last state) and the units it took', async () => {
    const queued = stateItem({
      status: 'queued',
      leaseEpoch: 2,
      attempt: 2,
      owner: undefined,
      timeoutMs: 30_000,
    });
    await ctx.tasks.grant(
      TASK,
      { queue: 'work', agentId: 'a_next', sessionId: 's_next', rateTakes: [take] },
      NOW,
    );
    const input = lastTransaction();
    expect(writeKind('TransactWriteItemsCommand', input, TABLES)).toBe('rateGrant');
    const write = taskTransactionOf(input.TransactItems as TransactItem[], () => queued);
    expect(write?.state).toMatchObject({
      status: 'leased',
      leaseEpoch: 3,
      attempt: 3,
      owner: 'a_next',
      sessionId: 's_next',
      leasedAt: NOW,
      leaseDeadline: NOW + 30_000,
      updatedAt: NOW,
    });
    expect(write?.windows).toEqual([{ limit: BUDGET, part: 'w#000000000000000#', delta: 40 }]);
  });

  it('reads a settling finish’s state and what it moved the window by', async () => {
    await ctx.tasks.finish(
      TASK,
      { agentId: 'a_agent', sessionId: 's_session', leaseEpoch: 1 },
      {
        event: 'complete',
        to: ending(ctx, NOW, 'succeeded'),
        settle: [{ name: BUDGET, window: 0, end: 86_400_000, purgeAt: 1, delta: -25 }],
      },
      NOW,
    );
    const input = lastTransaction();
    expect(writeKind('TransactWriteItemsCommand', input, TABLES)).toBe('rateSettle');
    const write = taskTransactionOf(input.TransactItems as TransactItem[], () => stateItem());
    expect(write?.state).toMatchObject({
      status: 'succeeded',
      leaseEpoch: 1,
      lastFinish: { kind: 'complete', leaseEpoch: 1, agentId: 'a_agent', status: 'succeeded' },
    });
    expect(write?.windows).toEqual([{ limit: BUDGET, part: 'w#000000000000000#', delta: -25 }]);
  });

  it('tells a grant from a bar on one, which names the grant in its condition only', async () => {
    await ctx.tasks.barGrant(TASK, { sessionId: 's_session', reservedAt: NOW });
    await ctx.tasks.grant(TASK, { queue: 'work', agentId: 'a_agent', sessionId: 's_session' }, NOW);
    const [bar, grant] = ddb.commandCalls(UpdateCommand).map((call) => call.args[0].input);
    expect(writeKind('UpdateItemCommand', bar ?? {}, TABLES)).toBe('taskUpdate');
    expect(writeKind('UpdateItemCommand', grant ?? {}, TABLES)).toBe('grant');
  });

  it('reads no task write from a transaction that changes no window', () => {
    const items: TransactItem[] = [
      { Update: { Key: { taskId: TASK, part: 'state' }, UpdateExpression: 'SET #n0 = :v0' } },
    ];
    expect(taskTransactionOf(items, () => stateItem())).toBeUndefined();
  });
});

describe('the budget’s ledger', () => {
  const OTHER = 't_bbbbbbbbbbbbbbbbbbbbbbbbbb';
  const version = (overrides: Partial<TaskVersion>): TaskVersion => ({
    at: NOW,
    taskId: TASK,
    status: 'leased',
    leaseEpoch: 1,
    ...overrides,
  });
  const finished = (kind: string, leaseEpoch: number, write = 'rateSettle') =>
    version({ status: 'queued', leaseEpoch, write, lastFinish: { kind, leaseEpoch, agentId: 'a_agent' } });
  const history = [
    version({ write: 'rateGrant' }),
    finished('fail', 1),
    version({ write: 'rateGrant', leaseEpoch: 2 }),
    // Taken back: its units stay taken, and nothing settles.
    version({ status: 'queued', leaseEpoch: 2, write: 'taskUpdate' }),
    version({ write: 'rateGrant', leaseEpoch: 3 }),
    finished('release', 3, 'finish'),
    version({ write: 'rateGrant', leaseEpoch: 4 }),
    finished('complete', 4),
    // A bar on the grant of a leased task, and a task naming no limit: nothing owed.
    version({ write: 'taskUpdate', leaseEpoch: 4 }),
    version({ taskId: OTHER, write: 'grant' }),
  ];
  const estimates = new Map([[TASK, 40]]);

  it('owes each grant’s estimate, and at each finish that reported usage, the usage less the estimate', () => {
    const owed = owedToBudget(history, estimates);
    expect(owed).toMatchObject({
      grants: 4,
      settledFinishes: 2,
      expected: 4 * 40 + (usageOf(TASK, 1) - 40) + (usageOf(TASK, 4) - 40),
    });
    expect(owed.byTask.get(TASK)).toBe(owed.expected);
  });

  it('is a violation when the windows hold other than that, and when a task’s own transactions do', () => {
    const expected = owedToBudget(history, estimates).expected;
    const changes = [{ taskId: TASK, write: 'rateGrant', limit: BUDGET, part: 'w#0#', delta: expected }];
    const right = checkLedger({ tasks: history, rateChanges: changes }, estimates, expected, {});
    expect(right).toMatchObject({ expected, actual: expected, difference: 0, tasksOffCount: 0 });
    expect(ledgerViolations(right)).toBe(0);

    const twice = checkLedger({ tasks: history, rateChanges: changes }, estimates, expected + 17, {});
    expect(twice).toMatchObject({ difference: 17 });
    expect(ledgerViolations(twice)).toBe(1);

    const outside = checkLedger({ tasks: history, rateChanges: [] }, estimates, expected, {});
    expect(outside).toMatchObject({ difference: 0, tasksOffCount: 1 });
    expect(ledgerViolations(outside)).toBe(1);
  });

  it('draws each lease’s usage from 0 to 200, the same for every finish of it', () => {
    const usages = Array.from({ length: 500 }, (_, i) => usageOf(`t_${i}`, 1));
    expect(Math.min(...usages)).toBe(0);
    expect(Math.max(...usages)).toBeLessThanOrEqual(200);
    expect(Math.max(...usages)).toBeGreaterThan(190);
    expect(usageOf(TASK, 3)).toBe(usageOf(TASK, 3));
  });
});
