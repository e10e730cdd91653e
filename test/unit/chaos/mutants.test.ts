/**
 * Each deliberate bug of the chaos run changes what the adapters send, and only the write it is about: a mutant
 * that changed nothing would leave the chaos checker's negative controls proving nothing.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import {
  DynamoDBDocumentClient,
  GetCommand,
  TransactWriteCommand,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ending, requeueAfter } from '#core/timing';
import type { Waitpoint } from '#domain/waitpoint';
import { mockContext, NOW, sessionItem, stateItem } from '#test/mock-context';
import { answerWithoutConditions, applyMutant, checkpointWithoutFence, type Mutant } from '#test/mutants';
import type { WiredContext } from '#wiring/context';

const ddb = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);
// The client's prototype is shared with the files that run after this one in its worker.
afterAll(() => {
  ddb.restore();
  sqs.restore();
});

const TASK = 't_aaaaaaaaaaaaaaaaaaaaaaaaaa';
const LEASE = { agentId: 'a_agent', sessionId: 's_session', leaseEpoch: 1 };

/** The updates a write sends, with their attribute names and values put back in place. */
async function updatesSent(
  write: (ctx: WiredContext) => Promise<unknown>,
  mutate?: (ctx: WiredContext) => void,
) {
  ddb.reset();
  ddb.on(UpdateCommand).resolves({ Attributes: stateItem({ status: 'queued' }) });
  ddb.on(UpdateCommand, { Key: { leaseId: 'session#a_agent' } }).resolves({ Attributes: sessionItem() });
  const ctx = mockContext();
  mutate?.(ctx);
  await write(ctx);
  const inputs = ddb.commandCalls(UpdateCommand).map((call) => call.args[0].input);
  // DynamoDB refuses a request that names an attribute or a value none of its expressions uses.
  for (const input of inputs) expect(unusedPlaceholders(input)).toEqual([]);
  return inputs.map(readable);
}

/** The placeholders a request defines that neither its update nor its condition uses. */
function unusedPlaceholders(input: UpdateCommandInput): string[] {
  const text = `${input.UpdateExpression ?? ''} ${input.ConditionExpression ?? ''}`;
  const used = new Set(text.match(/#n\d+|:v\d+/g));
  return [
    ...Object.keys(input.ExpressionAttributeNames ?? {}),
    ...Object.keys(input.ExpressionAttributeValues ?? {}),
  ].filter((placeholder) => !used.has(placeholder));
}

/** `#n0 = :v1` as `status = "leased"`, so two writes can be compared whatever their placeholders. */
function readable(input: UpdateCommandInput): { update: string; condition: string } {
  const names = input.ExpressionAttributeNames ?? {};
  const values = input.ExpressionAttributeValues ?? {};
  const fill = (text = '') =>
    text.replace(/#n\d+/g, (n) => names[n] ?? n).replace(/:v\d+/g, (v) => JSON.stringify(values[v]));
  return { update: fill(input.UpdateExpression), condition: fill(input.ConditionExpression) };
}

const complete = (ctx: WiredContext) =>
  ctx.tasks.finish(TASK, LEASE, { event: 'complete', to: ending(ctx, NOW, 'succeeded') }, NOW);
const failRetried = (ctx: WiredContext) =>
  ctx.tasks.finish(
    TASK,
    LEASE,
    { event: 'fail', to: requeueAfter(ctx, NOW, 1_000), error: { message: 'x', retryable: true } },
    NOW,
  );
const failDead = (ctx: WiredContext) =>
  ctx.tasks.finish(
    TASK,
    LEASE,
    { event: 'fail', to: ending(ctx, NOW, 'dead'), error: { message: 'x', retryable: true } },
    NOW,
  );
const reclaim = (ctx: WiredContext) =>
  ctx.tasks.takeBack(
    { taskId: TASK, status: 'leased', leaseEpoch: 1 },
    {
      event: 'reclaim',
      to: requeueAfter(ctx, NOW, 0),
      error: { message: 'lease expired (session)', retryable: true },
    },
    NOW,
  );
const heartbeat = (ctx: WiredContext) => ctx.sessions.heartbeat('a_agent', 's_session', NOW, 30_000);
const checkpoint = (ctx: WiredContext) => ctx.tasks.checkpoint(TASK, LEASE, '{"at":1}', NOW);

const writes = { complete, failRetried, reclaim, heartbeat, checkpoint };

describe('the chaos mutants', () => {
  afterEach(() => ddb.reset());

  it('completeWithoutEpoch: a completion is fenced by nothing but the status', async () => {
    const [right] = await updatesSent(complete);
    const [mutated] = await updatesSent(complete, (ctx) => applyMutant(ctx, 'completeWithoutEpoch'));
    expect(right?.condition).toMatch(/owner = "a_agent" AND sessionId = "s_session" AND leaseEpoch = 1/);
    expect(mutated).toEqual({ update: right?.update, condition: 'status = "leased"' });
  });

  it('sweepWithoutEpoch: a reclaim takes whatever lease is there', async () => {
    const [right] = await updatesSent(reclaim);
    const [mutated] = await updatesSent(reclaim, (ctx) => applyMutant(ctx, 'sweepWithoutEpoch'));
    expect(right?.condition).toBe('status = "leased" AND leaseEpoch = 1');
    expect(mutated).toEqual({ update: right?.update, condition: 'status = "leased"' });
  });

  it('terminalThenRequeueInTwoWrites: a retried failure is written dead at its epoch, then queued from dead', async () => {
    const [right, ...none] = await updatesSent(failRetried);
    const [dead] = await updatesSent(failDead);
    const [first, second] = await updatesSent(failRetried, (ctx) =>
      applyMutant(ctx, 'terminalThenRequeueInTwoWrites'),
    );
    expect(none).toEqual([]);
    // The first write is the owner's terminal failure, fenced by its lease, as a failure that is not retried is.
    expect(first).toEqual(dead);
    expect(first?.condition).toBe(right?.condition);
    expect(first?.update).toMatch(/status = "dead"/);
    expect(first?.update).toMatch(
      /lastFinish = \{"kind":"fail","leaseEpoch":1,"agentId":"a_agent","status":"dead"\}/,
    );
    // The second puts the retry back in the queue from `dead`, at that epoch, and back in the due index.
    expect(second?.condition).toBe('status = "dead" AND leaseEpoch = 1');
    expect(second?.update).toMatch(
      /^SET status = "queued", updatedAt = \d+, dueShard = "due#\d+", dueAt = \d+, readyAt = \d+, /,
    );
    expect(second?.update).toMatch(/dueShard = "due#\d+"/);
    expect(second?.update).toMatch(/REMOVE .*finishedAt, purgeAt$/);
    expect(second?.update).not.toMatch(/redrives/);
  });

  it('heartbeatRevivesExpiredLease: a heartbeat extends a session that has expired or ended', async () => {
    const [right] = await updatesSent(heartbeat);
    const [mutated] = await updatesSent(heartbeat, (ctx) => applyMutant(ctx, 'heartbeatRevivesExpiredLease'));
    expect(right?.condition).toMatch(/expiresAt > \d+ AND attribute_not_exists\(endedAt\)/);
    expect(mutated?.condition).toBe('sessionId = "s_session"');
  });

  it('checkpointWithoutFence: any one clause of the lease will do', async () => {
    const [right] = await updatesSent(checkpoint);
    const [mutated] = await updatesSent(checkpoint, checkpointWithoutFence);
    expect(right?.condition).toBe(
      `status = "leased" AND owner = "a_agent" AND sessionId = "s_session" AND leaseEpoch = 1 AND leaseDeadline > ${NOW}`,
    );
    expect(mutated?.condition).toBe(
      `status = "leased" AND (owner = "a_agent" OR sessionId = "s_session" OR leaseEpoch = 1 OR leaseDeadline > ${NOW})`,
    );
  });

  it('answerWithoutConditions: a waitpoint’s end is written whatever its status and its task’s; a suspension as it was', async () => {
    const waitpoint: Waitpoint = {
      waitpointId: 'w_aaaaaaaaaaaaaaaaaaaaaaaaaa',
      taskId: TASK,
      leaseEpoch: 1,
      status: 'open',
      onTimeout: 'resume',
      timeoutAt: NOW + 60_000,
      createdAt: NOW,
      tokenHash: 'hash',
    };
    /** The updates of each transaction a write sends, readable; and their placeholders none of them uses. */
    const transactionsSent = async (write: (ctx: WiredContext) => Promise<unknown>, mutated: boolean) => {
      ddb.reset();
      ddb.on(TransactWriteCommand).resolves({});
      const ctx = mockContext();
      const undo = mutated ? answerWithoutConditions(ctx) : undefined;
      await write(ctx);
      undo?.();
      return ddb.commandCalls(TransactWriteCommand).map((call) =>
        (call.args[0].input.TransactItems ?? []).flatMap((item) => {
          if (!item.Update) return [];
          const input = item.Update as UpdateCommandInput;
          expect(unusedPlaceholders(input)).toEqual([]);
          return [readable(input)];
        }),
      );
    };
    const resolve = (ctx: WiredContext) =>
      ctx.waitpoints.resolve(
        waitpoint,
        { outcome: 'completed', dataJson: '{}', resolutionHash: 'h', to: requeueAfter(ctx, NOW, 0) },
        NOW,
      );
    const suspend = (ctx: WiredContext) =>
      ctx.waitpoints.suspend(TASK, LEASE, { waitpoint, dueAt: NOW + 60_000, purgeAt: 0 }, NOW);

    const [right] = await transactionsSent(resolve, false);
    const [mutated] = await transactionsSent(resolve, true);

    expect(right?.map((u) => u.condition)).toEqual([
      'status = "open"',
      'status = "suspended" AND waitpointId = "w_aaaaaaaaaaaaaaaaaaaaaaaaaa"',
    ]);
    expect(mutated).toEqual(right?.map((u) => ({ update: u.update, condition: '' })));
    expect(await transactionsSent(suspend, true)).toEqual(await transactionsSent(suspend, false));
  });

  it('settleOutsideFinish: a finish that settles usage is written alone, its settlement in an update of its own', async () => {
    const settling = (ctx: WiredContext) =>
      ctx.tasks.finish(
        TASK,
        LEASE,
        {
          event: 'complete',
          to: ending(ctx, NOW, 'succeeded'),
          settle: [{ name: 'budget', window: 0, end: 86_400_000, purgeAt: 1, delta: -7 }],
        },
        NOW,
      );
    const sent = async (mutated: boolean) => {
      ddb.reset();
      ddb.on(UpdateCommand).resolves({ Attributes: stateItem({ status: 'succeeded' }) });
      ddb.on(TransactWriteCommand).resolves({});
      ddb.on(GetCommand).resolves({ Item: stateItem({ status: 'succeeded' }) });
      const ctx = mockContext();
      if (mutated) applyMutant(ctx, 'settleOutsideFinish');
      await settling(ctx);
      return {
        transactions: ddb.commandCalls(TransactWriteCommand).map((call) => ({
          token: call.args[0].input.ClientRequestToken,
          keys: (call.args[0].input.TransactItems ?? []).map((item) => item.Update?.Key),
        })),
        updates: ddb.commandCalls(UpdateCommand).map((call) => ({
          key: call.args[0].input.Key,
          ...readable(call.args[0].input),
        })),
      };
    };

    const right = await sent(false);
    expect(right.updates).toEqual([]);
    expect(right.transactions).toEqual([
      {
        token: expect.any(String),
        keys: [
          { taskId: TASK, part: 'state' },
          { taskId: 'rate#budget', part: 'w#000000000000000#' },
        ],
      },
    ]);
    const mutated = await sent(true);
    expect(mutated.transactions).toEqual([]);
    expect(mutated.updates).toHaveLength(2);
    expect(mutated.updates[0]?.key).toEqual({ taskId: TASK, part: 'state' });
    expect(mutated.updates[0]?.update).toMatch(/lastFinish = \{"kind":"complete"/);
    expect(mutated.updates[1]).toEqual({
      key: { taskId: 'rate#budget', part: 'w#000000000000000#' },
      update: 'ADD used -7',
      condition: '',
    });
  });

  const mutants: Mutant[] = [
    'completeWithoutEpoch',
    'sweepWithoutEpoch',
    'terminalThenRequeueInTwoWrites',
    'heartbeatRevivesExpiredLease',
    'settleOutsideFinish',
  ];
  it.each(mutants)('%s leaves every other write as it was', async (mutant) => {
    const touched: Record<Mutant, (keyof typeof writes)[]> = {
      completeWithoutEpoch: ['complete'],
      sweepWithoutEpoch: ['reclaim'],
      terminalThenRequeueInTwoWrites: ['failRetried'],
      heartbeatRevivesExpiredLease: ['heartbeat'],
      // Only a finish that settles usage, which none of these is.
      settleOutsideFinish: [],
    };
    for (const [name, write] of Object.entries(writes)) {
      if (touched[mutant].includes(name as keyof typeof writes)) continue;
      expect(await updatesSent(write, (ctx) => applyMutant(ctx, mutant))).toEqual(await updatesSent(write));
    }
  });
});
