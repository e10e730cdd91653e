import {
  ConditionalCheckFailedException,
  ProvisionedThroughputExceededException,
} from '@aws-sdk/client-dynamodb';
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import {
  BatchWriteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Scheduler } from '#core/scheduler';
import {
  IdempotencyConflictError,
  LeaseLostError,
  ServiceUnavailableError,
  SessionLostError,
  TaskNotFoundError,
} from '#domain/errors';
import { keyHashOf } from '#domain/lanes';
import { mockContext, NOW, recordingLog, sessionItem, stateItem } from '#test/mock-context';

const ddb = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);
// The client's prototype is shared with the files that run after this one in its worker.
afterAll(() => {
  ddb.restore();
  sqs.restore();
});

const conditionFailed = (item?: Record<string, unknown>) =>
  new ConditionalCheckFailedException({
    message: 'The conditional request failed',
    $metadata: {},
    ...(item ? { Item: marshall(item, { removeUndefinedValues: true }) } : {}),
  });

const throttled = () =>
  new ProvisionedThroughputExceededException({ message: 'Rate exceeded', $metadata: {} });

describe('error paths', () => {
  afterEach(() => {
    ddb.reset();
    sqs.reset();
  });

  it('a failed SQS send after the write still answers "created" and marks the task for the next reconcile', async () => {
    // Prepare
    const { log, entries } = recordingLog();
    const scheduler = new Scheduler(mockContext(log));
    ddb.on(BatchWriteCommand).resolves({});
    ddb.on(PutCommand).resolves({});
    ddb.on(UpdateCommand).resolves({ Attributes: stateItem() });
    sqs
      .on(SendMessageCommand)
      .rejects(Object.assign(new Error('socket hang up'), { name: 'NetworkingError' }));

    // Act
    const result = await scheduler.submit({ queue: 'work', payload: { a: 1 } });

    // Assess
    expect(result.created).toBe(true);
    const [payloadWrite] = ddb.commandCalls(BatchWriteCommand);
    const [stateWrite] = ddb.commandCalls(PutCommand);
    expect(Object.values(payloadWrite?.args[0].input.RequestItems ?? {})).toEqual([
      [
        {
          PutRequest: {
            Item: expect.objectContaining({
              taskId: expect.stringMatching(/^list#work#\d\d$/),
              part: `${String(NOW).padStart(15, '0')}#${result.task.taskId}#${result.task.specHash}`,
            }),
          },
        },
      ],
    ]);
    expect(stateWrite?.args[0].input.Item).toMatchObject({ part: 'state', status: 'queued' });
    // A task whose hint goes at submit has no due entry (the list walk gives it one if it is still open then)...
    expect(stateWrite?.args[0].input.Item).not.toHaveProperty('dueAt');
    // The payload first: a visible state item always has its payload. Then the mark: no hint, due now (an entry in
    // the due index given now), if the task is still queued at the epoch the hint was for.
    expect(ddb.calls().map((call) => call.args[0].constructor.name)).toEqual([
      'BatchWriteCommand',
      'PutCommand',
      'UpdateCommand',
    ]);
    const mark = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(mark?.Key).toEqual({ taskId: result.task.taskId, part: 'state' });
    expect(mark?.UpdateExpression).toMatch(/REMOVE #\w+/);
    expect(Object.values(mark?.ExpressionAttributeNames ?? {})).toEqual(
      expect.arrayContaining(['dueShard', 'dueAt', 'dispatchedAt', 'status', 'leaseEpoch']),
    );
    expect(Object.values(mark?.ExpressionAttributeValues ?? {})).toEqual(
      expect.arrayContaining([NOW, 'queued', 0]),
    );
    expect(entries).toEqual([
      expect.objectContaining({ level: 'warn', message: expect.stringMatching(/reconcile/) }),
    ]);
  });

  it('an idempotency key reused for another task is a 409 and sends nothing', async () => {
    const scheduler = new Scheduler(mockContext());
    ddb.on(BatchWriteCommand).resolves({});
    // The state item exists, for a task of another specification.
    ddb.on(PutCommand).rejectsOnce(conditionFailed(stateItem({ status: 'queued', specHash: 'another' })));

    await expect(
      scheduler.submit({ queue: 'work', payload: 1, idempotencyKey: 'k-1' }),
    ).rejects.toBeInstanceOf(IdempotencyConflictError);
    expect(ddb).toHaveReceivedCommandTimes(PutCommand, 1);
    expect(sqs).not.toHaveReceivedCommand(SendMessageCommand);
  });

  it('a batch whose hints SQS partly refuses is still created, and the refused ones are left to reconcile', async () => {
    const { log, entries } = recordingLog();
    const scheduler = new Scheduler(mockContext(log));
    ddb.on(BatchWriteCommand).resolves({});
    ddb.on(PutCommand).resolves({});
    ddb.on(UpdateCommand).resolves({ Attributes: stateItem() });
    sqs.on(SendMessageBatchCommand).resolves({
      Successful: [{ Id: '0', MessageId: 'm0', MD5OfMessageBody: 'x' }],
      Failed: [{ Id: '1', Code: 'InternalError', SenderFault: false }],
    });

    const results = await scheduler.submitBatch([
      { queue: 'work', payload: 1 },
      { queue: 'work', payload: 2 },
    ]);

    expect(results.map((r) => r.ok && r.created)).toEqual([true, true]);
    expect(sqs).toHaveReceivedCommandTimes(SendMessageBatchCommand, 1);
    expect(sqs).not.toHaveReceivedCommand(SendMessageCommand);
    const refused = results[1]?.ok ? results[1].task.taskId : '';
    // Only the refused one is marked for the next reconcile.
    expect(ddb.commandCalls(UpdateCommand).map((call) => call.args[0].input.Key)).toEqual([
      { taskId: refused, part: 'state' },
    ]);
    expect(entries).toEqual([
      expect.objectContaining({
        level: 'warn',
        message: expect.stringMatching(/reconcile/),
        extra: { taskId: refused },
      }),
    ]);
  });

  it('throttling that outlasts the SDK retries is a 503, not a 500', async () => {
    const scheduler = new Scheduler(mockContext());
    ddb.on(GetCommand).rejects(throttled());

    await expect(scheduler.getTask('t_aaaaaaaaaaaaaaaaaaaaaaaaaa')).rejects.toBeInstanceOf(
      ServiceUnavailableError,
    );
  });

  it('complete with a stale epoch: the condition fails, the old item shows why, LeaseLost', async () => {
    const scheduler = new Scheduler(mockContext());
    ddb.on(GetCommand).resolves({ Item: sessionItem() });
    ddb.on(UpdateCommand).rejects(conditionFailed(stateItem({ leaseEpoch: 2, owner: 'a_other' })));

    const attempt = scheduler.complete({
      agentId: 'a_agent',
      taskId: 't_aaaaaaaaaaaaaaaaaaaaaaaaaa',
      leaseEpoch: 1,
    });

    await expect(attempt).rejects.toBeInstanceOf(LeaseLostError);
    await expect(attempt).rejects.toThrow(/epoch 2/);
    expect(ddb).toHaveReceivedCommandWith(UpdateCommand, {
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      ExpressionAttributeValues: expect.objectContaining({ ':v0': 'succeeded' }),
    });
  });

  it('complete retried after its commit gets the committed outcome back', async () => {
    const scheduler = new Scheduler(mockContext());
    ddb.on(GetCommand).resolves({ Item: sessionItem() });
    ddb.on(UpdateCommand).rejects(
      conditionFailed(
        stateItem({
          status: 'succeeded',
          result: '{"ok":true}',
          lastFinish: { kind: 'complete', leaseEpoch: 1, agentId: 'a_agent', status: 'succeeded' },
        }),
      ),
    );

    const outcome = await scheduler.complete({
      agentId: 'a_agent',
      taskId: 't_aaaaaaaaaaaaaaaaaaaaaaaaaa',
      leaseEpoch: 1,
    });

    expect(outcome.replayed).toBe(true);
    expect(outcome.task).toMatchObject({ status: 'succeeded', result: { ok: true } });
  });

  it('a keyed task whose lane’s turn cannot be read at its end still completes; the turn comes when its wait ends', async () => {
    const { log, entries } = recordingLog();
    const scheduler = new Scheduler(mockContext(log));
    const keySlot = `work/key/${keyHashOf('tenant-a')}`;
    ddb
      .on(GetCommand)
      .callsFake((input: { Key: { part?: string } }) =>
        input.Key.part === 'turn' ? Promise.reject(throttled()) : { Item: sessionItem() },
      );
    ddb.on(UpdateCommand).resolves({
      Attributes: stateItem({ status: 'succeeded', concurrencyKey: 'tenant-a', queueSlots: [keySlot] }),
    });

    const outcome = await scheduler.complete({
      agentId: 'a_agent',
      taskId: 't_aaaaaaaaaaaaaaaaaaaaaaaaaa',
      leaseEpoch: 1,
    });

    expect(outcome.task.status).toBe('succeeded');
    expect(ddb).toHaveReceivedCommandWith(GetCommand, { Key: expect.objectContaining({ part: 'turn' }) });
    expect(entries).toContainEqual(
      expect.objectContaining({ level: 'warn', message: expect.stringMatching(/turn forward failed/) }),
    );
    expect(sqs).not.toHaveReceivedCommand(SendMessageCommand);
  });

  it('complete on a task that does not exist is a 404', async () => {
    const scheduler = new Scheduler(mockContext());
    ddb.on(GetCommand).resolves({ Item: sessionItem() });
    ddb.on(UpdateCommand).rejects(conditionFailed());
    ddb.on(GetCommand, { Key: { taskId: 't_aaaaaaaaaaaaaaaaaaaaaaaaaa', part: 'state' } }).resolves({});

    await expect(
      scheduler.complete({ agentId: 'a_agent', taskId: 't_aaaaaaaaaaaaaaaaaaaaaaaaaa', leaseEpoch: 1 }),
    ).rejects.toBeInstanceOf(TaskNotFoundError);
  });

  it('a heartbeat on an expired session is refused with the tasks it lost', async () => {
    const scheduler = new Scheduler(mockContext());
    ddb
      .on(UpdateCommand)
      .rejects(
        conditionFailed(
          sessionItem({ expiresAt: NOW - 1, held: { t_aaaaaaaaaaaaaaaaaaaaaaaaaa: NOW - 9_000 } }),
        ),
      );

    const attempt = scheduler.heartbeat('a_agent', 's_session');

    await expect(attempt).rejects.toBeInstanceOf(SessionLostError);
    await expect(attempt).rejects.toMatchObject({ context: { lost: ['t_aaaaaaaaaaaaaaaaaaaaaaaaaa'] } });
  });

  it('a claim whose grants are throttled returns the hints, keeps the slots and answers 503', async () => {
    // Prepare: a live session with room, one hint, a reservation that succeeds, a grant that is throttled.
    const scheduler = new Scheduler(mockContext());
    ddb.on(GetCommand).resolves({ Item: sessionItem() });
    sqs.on(ReceiveMessageCommand).resolves({});
    sqs.on(ReceiveMessageCommand, { QueueUrl: 'https://sqs.local/000/work-critical' }).resolves({
      Messages: [
        {
          MessageId: 'm1',
          ReceiptHandle: 'r1',
          Body: JSON.stringify({ v: 1, taskId: 't_aaaaaaaaaaaaaaaaaaaaaaaaaa', leaseEpoch: 0 }),
          Attributes: { SentTimestamp: String(NOW - 100) },
        },
      ],
    });
    ddb
      .on(UpdateCommand, { Key: { leaseId: 'session#a_agent' } })
      .resolves({ Attributes: sessionItem({ held: { t_aaaaaaaaaaaaaaaaaaaaaaaaaa: NOW } }) });
    ddb
      .on(UpdateCommand, { Key: { taskId: 't_aaaaaaaaaaaaaaaaaaaaaaaaaa', part: 'state' } })
      .rejects(throttled());

    // Act
    const attempt = scheduler.claim({ agentId: 'a_agent', sessionId: 's_session' });

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect(sqs).not.toHaveReceivedCommand(DeleteMessageBatchCommand);
    expect(sqs).toHaveReceivedCommandWith(ChangeMessageVisibilityCommand, {
      ReceiptHandle: 'r1',
      VisibilityTimeout: 0,
    });
    // The reservation was not released: the grant may have committed.
    expect(ddb).toHaveReceivedCommandTimes(UpdateCommand, 2);
  });

  it('a stale hint (the task is already leased) is deleted and its slot released', async () => {
    const scheduler = new Scheduler(mockContext());
    ddb.on(GetCommand).resolves({ Item: sessionItem() });
    sqs.on(ReceiveMessageCommand).resolves({});
    sqs.on(ReceiveMessageCommand, { QueueUrl: 'https://sqs.local/000/work-critical' }).resolves({
      Messages: [
        {
          MessageId: 'm1',
          ReceiptHandle: 'r1',
          Body: JSON.stringify({ v: 1, taskId: 't_aaaaaaaaaaaaaaaaaaaaaaaaaa', leaseEpoch: 0 }),
        },
      ],
    });
    ddb
      .on(UpdateCommand, { Key: { leaseId: 'session#a_agent' } })
      .resolves({ Attributes: sessionItem({ held: { t_aaaaaaaaaaaaaaaaaaaaaaaaaa: NOW } }) });
    ddb
      .on(UpdateCommand, { Key: { taskId: 't_aaaaaaaaaaaaaaaaaaaaaaaaaa', part: 'state' } })
      .rejects(conditionFailed(stateItem({ owner: 'a_other' })));

    const claimed = await scheduler.claim({ agentId: 'a_agent', sessionId: 's_session' });

    expect(claimed).toEqual([]);
    expect(sqs).toHaveReceivedCommandWith(DeleteMessageBatchCommand, {
      Entries: [{ Id: '0', ReceiptHandle: 'r1' }],
    });
    // reserve, grant, release
    expect(ddb).toHaveReceivedCommandTimes(UpdateCommand, 3);
    expect(ddb).toHaveReceivedNthCommandWith(UpdateCommand, 3, {
      Key: { leaseId: 'session#a_agent' },
      UpdateExpression: expect.stringMatching(/^REMOVE/),
    });
  });

  it('an unreadable message is deleted rather than left to bounce', async () => {
    const scheduler = new Scheduler(mockContext());
    ddb.on(GetCommand).resolves({ Item: sessionItem() });
    sqs.on(ReceiveMessageCommand).resolves({});
    sqs.on(ReceiveMessageCommand, { QueueUrl: 'https://sqs.local/000/work-critical' }).resolves({
      Messages: [{ MessageId: 'm1', ReceiptHandle: 'r-poison', Body: 'not json' }],
    });

    expect(await scheduler.claim({ agentId: 'a_agent', sessionId: 's_session' })).toEqual([]);
    expect(sqs).toHaveReceivedCommandWith(DeleteMessageBatchCommand, {
      Entries: [{ Id: '0', ReceiptHandle: 'r-poison' }],
    });
    expect(ddb).not.toHaveReceivedCommand(UpdateCommand);
  });
});
