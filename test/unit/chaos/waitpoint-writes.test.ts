/**
 * The record of the waitpoints' writes reads the transactions the waitpoint table sends: the waitpoint as the
 * suspension put it and as its end left it, and its task's state with each transaction's update applied to the
 * last one recorded.
 */
import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { ending, requeueAfter } from '#core/timing';
import type { Waitpoint } from '#domain/waitpoint';
import { mockContext, NOW, stateItem } from '#test/mock-context';
import type { WiredContext } from '#wiring/context';
import type { WaitpointVersion } from '../../../chaos/waitpoint-history';
import { applyUpdate, type TransactItem, waitpointRecorder } from '../../../chaos/waitpoint-writes';

const ddb = mockClient(DynamoDBDocumentClient);
afterAll(() => {
  ddb.restore();
});

const TASK = 't_aaaaaaaaaaaaaaaaaaaaaaaaaa';
const LEASE = { agentId: 'a_agent', sessionId: 's_session', leaseEpoch: 1 };
const waitpoint: Waitpoint = {
  waitpointId: 'w_aaaaaaaaaaaaaaaaaaaaaaaaaa',
  taskId: TASK,
  leaseEpoch: 1,
  status: 'open',
  onTimeout: 'fail',
  timeoutAt: NOW + 60_000,
  createdAt: NOW,
  tokenHash: 'hash',
};

describe('the record of waitpoint writes', () => {
  let ctx: WiredContext;
  let versions: WaitpointVersion[];
  let states: Map<string, Record<string, unknown>>;
  let record: ReturnType<typeof waitpointRecorder>;
  beforeEach(() => {
    ddb.reset();
    ddb.on(TransactWriteCommand).resolves({});
    ctx = mockContext();
    versions = [];
    states = new Map([
      [TASK, stateItem({ owner: 'a_agent', sessionId: 's_session', leaseDeadline: NOW + 2_000 })],
    ]);
    record = waitpointRecorder(versions, {
      last: (taskId) => states.get(taskId),
      record: (state) => states.set(String(state.taskId), state),
    });
  });

  /** Records the transaction a write sends, as committed under `token`. */
  async function recorded(write: () => Promise<unknown>, token: string) {
    await write();
    const [call] = ddb.commandCalls(TransactWriteCommand).slice(-1);
    record((call?.args[0].input.TransactItems ?? []) as TransactItem[], () => token);
  }
  const suspend = () =>
    ctx.waitpoints.suspend(TASK, LEASE, { waitpoint, dueAt: waitpoint.timeoutAt, purgeAt: 0 }, NOW);

  it('reads a suspension: the waitpoint open, its task suspended with no owner or deadline, its finish the wait', async () => {
    await recorded(suspend, 'one');

    expect(versions).toEqual([
      {
        at: NOW,
        waitpointId: waitpoint.waitpointId,
        taskId: TASK,
        write: 'one',
        leaseEpoch: 1,
        status: 'open',
        onTimeout: 'fail',
        timeoutAt: NOW + 60_000,
        taskStatus: 'suspended',
      },
    ]);
    const state = states.get(TASK);
    expect(state).toMatchObject({
      status: 'suspended',
      leaseEpoch: 1,
      updatedAt: NOW,
      lastFinish: { kind: 'wait', leaseEpoch: 1, agentId: 'a_agent' },
    });
    expect(state).not.toHaveProperty('owner');
    expect(state).not.toHaveProperty('leaseDeadline');
  });

  it('reads an end: the outcome and its data, and the task moved; a transaction answered twice once', async () => {
    await recorded(suspend, 'one');
    const answer = () =>
      ctx.waitpoints.resolve(
        waitpoint,
        {
          outcome: 'completed',
          dataJson: '{"ok":1}',
          resolutionHash: 'h',
          to: requeueAfter(ctx, NOW + 5, 0),
        },
        NOW + 5,
      );
    await recorded(answer, 'two');
    await recorded(answer, 'two');

    expect(versions.map((v) => [v.write, v.status, v.at, v.dataJson, v.taskStatus])).toEqual([
      ['one', 'open', NOW, undefined, 'suspended'],
      ['two', 'completed', NOW + 5, '{"ok":1}', 'queued'],
    ]);
    expect(states.get(TASK)).toMatchObject({ status: 'queued', leaseEpoch: 1, updatedAt: NOW + 5 });
  });

  it('reads a timeout that fails its task: dead, with the error it wrote', async () => {
    await recorded(suspend, 'one');
    await recorded(
      () =>
        ctx.waitpoints.resolve(
          waitpoint,
          {
            outcome: 'timedOut',
            resolutionHash: 't',
            to: ending(ctx, NOW + 60_001, 'dead'),
            error: { message: 'WaitpointTimeout: it timed out', retryable: false },
          },
          NOW + 60_001,
        ),
      'two',
    );

    expect(versions[1]).toMatchObject({
      status: 'timedOut',
      taskStatus: 'dead',
      taskError: 'WaitpointTimeout: it timed out',
    });
  });

  it('applies SET, REMOVE and a number’s ADD to top-level attributes, arithmetic included, leaving nested paths out', () => {
    const item = applyUpdate(
      { a: 1, b: 2, c: 3, n: 5, t: 100, k: 7 },
      {
        UpdateExpression:
          'SET #n0 = :v0, #n1 = #n1 - :v1, #n2.#n3 = :v2, #n6 = #n7 + :v3, #n8 = if_not_exists(#n8, :v4) + :v5, #n9 = if_not_exists(#n10, :v6) REMOVE #n4, #n5 ADD #n11 :v7, #n12 :v8',
        ExpressionAttributeNames: {
          '#n0': 'a',
          '#n1': 'n',
          '#n2': 'm',
          '#n3': 'x',
          '#n4': 'b',
          '#n5': 'c',
          '#n6': 'deadline',
          '#n7': 't',
          '#n8': 'count',
          '#n9': 'since',
          '#n10': 'absent',
          '#n11': 'k',
          '#n12': 'added',
        },
        ExpressionAttributeValues: {
          ':v0': 'one',
          ':v1': 1,
          ':v2': 'deep',
          ':v3': 50,
          ':v4': 0,
          ':v5': 1,
          ':v6': 9,
          ':v7': 3,
          ':v8': 2,
        },
      },
    );
    expect(item).toEqual({ a: 'one', n: 4, t: 100, deadline: 150, count: 1, since: 9, k: 10, added: 2 });
  });
});
