/**
 * A payload (its item, its S3 object, its `onFailure`) and a dependent's inputs live as long as their task may
 * need them, however long that is: long backoffs, a long wait on dependencies, a paused queue, a redrive. The
 * emulators run neither DynamoDB's TTL nor S3's lifecycle rule: `simulateExpiry` deletes what they would, at the
 * test clock's time.
 */
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { DeleteCommand, DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEntryOfPayloadPart, payloadItemKey } from '#adapters/task-items';
import { HINT_PAYLOAD_BYTES } from '#domain/hint';
import { onFailureTaskIdOf } from '#domain/ids';
import { randomTextPayload, seededRandom } from '#local/seeded-random';
import { type Expiry, simulateExpiry } from '#test/expiry';
import { claimUntil, collectedEvents, createTestStack, startAgent, type TestStack } from '#test/stack';

const DAY_MS = 86_400_000;
const WEEK_SECONDS = 7 * 86_400;

describe('payload lifetimes', () => {
  let stack: TestStack;
  let expiry: Expiry;
  const collected = collectedEvents();
  beforeAll(async () => {
    // Backoff draws near their cap, so each retry of a task with a 7-day backoff waits almost 7 days.
    stack = await createTestStack({
      payloadBucket: true,
      random: () => 0.999,
      queues: ['work', 'deps', 'paused', 'redrive', 'cost', 'old', 'gone', 'again', 'hooks', 'suspended'],
      events: collected.publisher,
    });
    expiry = simulateExpiry(stack);
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** Moves the clock, lets the supervisor pass (hints sent, sessions swept), then purges what has expired. */
  const passDays = async (days: number) => {
    stack.clock.advance(days * DAY_MS);
    await stack.scheduler.supervise();
    return expiry.purge();
  };

  /** Claims the task with a session opened now (the last one lapsed while the clock moved). */
  const claimOne = async (agentId: string, taskId: string) => {
    const session = await stack.scheduler.openSession(agentId);
    const [claimed] = await claimUntil(stack.scheduler, { agentId, sessionId: session.sessionId }, 1);
    if (claimed?.taskId !== taskId) {
      const { status, error, attempt } = await stack.scheduler.getTask(taskId);
      expect.fail(`task ${taskId} not claimed: ${JSON.stringify({ status, attempt, error })}`);
    }
    return claimed;
  };

  it('a task whose backoffs carry it past its payload’s first purge time is claimed with its S3 payload, and its onFailure runs when it dies', async () => {
    const { scheduler } = stack;
    const payload = randomTextPayload(40_000, seededRandom(29));
    const { task } = await scheduler.submit({
      queue: 'work',
      payload,
      maxAttempts: 6,
      backoffBaseSeconds: WEEK_SECONDS,
      backoffMaxSeconds: WEEK_SECONDS,
      onFailure: { queue: 'hooks', payload: { alert: 'research gave up' } },
    });
    expect((await scheduler.getTask(task.taskId)).payloadInObject).toBe(true);
    const { agentId } = await startAgent(scheduler);
    // Five failed attempts a week apart: 35 days, past the 21 days (queue age and retention) set at submit.
    for (let attempt = 1; attempt <= 5; attempt++) {
      const claimed = await claimOne(agentId, task.taskId);
      expect(claimed?.payload).toEqual(payload);
      await scheduler.fail(
        { agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
        { message: `attempt ${attempt} failed` },
      );
      await passDays(7.01);
    }
    const last = await claimOne(agentId, task.taskId);
    expect(last?.payload).toEqual(payload);
    await scheduler.fail(
      { agentId, taskId: task.taskId, leaseEpoch: last?.leaseEpoch ?? 0 },
      { message: 'gave up', retryable: false },
    );
    expect((await scheduler.getTask(task.taskId)).status).toBe('dead');
    const hook = await scheduler.getTask(onFailureTaskIdOf(task.taskId));
    expect(hook).toMatchObject({ queue: 'hooks', failureOf: { taskId: task.taskId } });
  });

  it('a dependent that waits 30 days on its dependency keeps its payload, its onFailure and its input', async () => {
    const { scheduler } = stack;
    const { task: dependency } = await scheduler.submit({ queue: 'deps', payload: { step: 1 } });
    const { task: dependent } = await scheduler.submit({
      queue: 'deps',
      payload: { step: 2 },
      dependsOn: [dependency.taskId],
      onFailure: { queue: 'hooks', payload: { alert: 'step 2 failed' } },
      maxAttempts: 3,
      backoffBaseSeconds: WEEK_SECONDS,
      backoffMaxSeconds: WEEK_SECONDS,
    });
    const { agentId } = await startAgent(scheduler, { queues: ['deps'] });
    // The dependency is claimed only after 30 days (its own payload re-armed on the way), then succeeds.
    for (let day = 0; day < 30; day += 3) await passDays(3);
    const first = await claimOne(agentId, dependency.taskId);
    await scheduler.complete(
      { agentId, taskId: dependency.taskId, leaseEpoch: first?.leaseEpoch ?? 0 },
      'one',
    );
    // The dependent runs; its retry waits a week, then two more weeks go by before it dies.
    let claimed = await claimOne(agentId, dependent.taskId);
    expect(claimed).toMatchObject({ payload: { step: 2 } });
    expect(claimed?.dependencies?.[dependency.taskId]).toMatchObject({ status: 'succeeded', result: 'one' });
    await scheduler.fail(
      { agentId, taskId: dependent.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
      { message: 'no' },
    );
    await passDays(7.01);
    claimed = await claimOne(agentId, dependent.taskId);
    expect(claimed?.dependencies?.[dependency.taskId]).toMatchObject({ status: 'succeeded', result: 'one' });
    await scheduler.fail(
      { agentId, taskId: dependent.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
      { message: 'no' },
    );
    await passDays(7.01);
    claimed = await claimOne(agentId, dependent.taskId);
    expect(claimed).toMatchObject({ payload: { step: 2 } });
    expect(claimed?.dependencies?.[dependency.taskId]).toMatchObject({ status: 'succeeded', result: 'one' });
    await scheduler.fail(
      { agentId, taskId: dependent.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
      { message: 'no', retryable: false },
    );
    expect(await scheduler.getTask(onFailureTaskIdOf(dependent.taskId))).toMatchObject({ queue: 'hooks' });
  });

  it('a result kept once for its dependents lasts as long as a dependent that waits 60 days on another dependency', async () => {
    const { scheduler } = stack;
    await scheduler.pauseQueue('paused');
    const { task: early } = await scheduler.submit({ queue: 'deps', payload: { step: 'early' } });
    const { task: late } = await scheduler.submit({ queue: 'paused', payload: { step: 'late' } });
    const { task: join } = await scheduler.submit({
      queue: 'deps',
      payload: { step: 'join' },
      dependsOn: [early.taskId, late.taskId],
    });
    const { agentId } = await startAgent(scheduler, { queues: ['deps', 'paused'] });
    const first = await claimOne(agentId, early.taskId);
    await scheduler.complete(
      { agentId, taskId: early.taskId, leaseEpoch: first?.leaseEpoch ?? 0 },
      'early result',
    );
    // The join waits on the paused one for 60 days: past the early result's first purge time.
    for (let day = 0; day < 60; day += 3) await passDays(3);
    await scheduler.resumeQueue('paused');
    await scheduler.reconcile({ everything: true });
    const second = await claimOne(agentId, late.taskId);
    await scheduler.complete(
      { agentId, taskId: late.taskId, leaseEpoch: second?.leaseEpoch ?? 0 },
      'late result',
    );
    const claimed = await claimOne(agentId, join.taskId);
    expect(claimed?.dependencies).toMatchObject({
      [early.taskId]: { status: 'succeeded', result: 'early result' },
      [late.taskId]: { status: 'succeeded', result: 'late result' },
    });
  });

  it('a task in a queue paused for 40 days is claimed with its payload once the queue resumes', async () => {
    const { scheduler } = stack;
    await scheduler.pauseQueue('paused');
    const { task } = await scheduler.submit({
      queue: 'paused',
      payload: randomTextPayload(30_000, seededRandom(7)),
    });
    for (let day = 0; day < 40; day += 2) await passDays(2);
    await scheduler.resumeQueue('paused');
    await scheduler.reconcile({ everything: true });
    const { agentId } = await startAgent(scheduler, { queues: ['paused'] });
    const claimed = await claimOne(agentId, task.taskId);
    expect(claimed?.payload).toEqual(randomTextPayload(30_000, seededRandom(7)));
  });

  it('a task redriven 6 days after a death 20 days into its life runs with its payload', async () => {
    const { scheduler } = stack;
    const { task } = await scheduler.submit({
      queue: 'redrive',
      payload: { redriven: true },
      maxAttempts: 1,
    });
    for (let day = 0; day < 20; day += 4) await passDays(4);
    const { agentId } = await startAgent(scheduler, { queues: ['redrive'] });
    const claimed = await claimOne(agentId, task.taskId);
    await scheduler.fail(
      { agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
      { message: 'broken input' },
    );
    expect((await scheduler.getTask(task.taskId)).status).toBe('dead');
    await passDays(6);
    await scheduler.redrive(task.taskId);
    const again = await claimOne(agentId, task.taskId);
    expect(again?.payload).toEqual({ redriven: true });
  });

  it('a task suspended for 28 days resumes with its S3 payload and its input; one whose wait times out into a death 25 days on has its onFailure run', async () => {
    const { scheduler } = stack;
    const payload = randomTextPayload(40_000, seededRandom(31));
    const { agentId } = await startAgent(scheduler, { queues: ['suspended'], maxConcurrency: 2 });
    const { task: dependency } = await scheduler.submit({ queue: 'suspended', payload: { first: true } });
    const done = await claimOne(agentId, dependency.taskId);
    await scheduler.complete({ agentId, taskId: dependency.taskId, leaseEpoch: done.leaseEpoch }, 'input');
    const { task: approved } = await scheduler.submit({
      queue: 'suspended',
      payload,
      dependsOn: [dependency.taskId],
      onFailure: { queue: 'hooks', payload: { alert: 'approval failed' } },
    });
    const { task: doomed } = await scheduler.submit({
      queue: 'suspended',
      payload: { doomed: true },
      onFailure: { queue: 'hooks', payload: { alert: 'nobody answered' } },
    });
    for (const [task, timeoutSeconds, onTimeout] of [
      [approved, 29 * 86_400, 'resume'],
      [doomed, 25 * 86_400, 'fail'],
    ] as const) {
      const claimed = await claimOne(agentId, task.taskId);
      await scheduler.wait(
        { agentId, taskId: task.taskId, leaseEpoch: claimed.leaseEpoch },
        { timeoutSeconds, onTimeout },
      );
    }
    const { waitpointId } = await scheduler.getTask(approved.taskId);

    for (let day = 0; day < 28; day += 4) await passDays(4);
    await scheduler.answerWaitpoint(waitpointId ?? '', { outcome: 'completed', data: { yes: true } });
    const resumed = await claimOne(agentId, approved.taskId);

    expect(resumed.payload).toEqual(payload);
    expect(resumed.dependencies?.[dependency.taskId]).toMatchObject({ status: 'succeeded', result: 'input' });
    expect(resumed.waitpoint).toMatchObject({ outcome: 'completed', data: { yes: true } });
    expect(await scheduler.getTask(doomed.taskId)).toMatchObject({
      status: 'dead',
      error: { message: expect.stringContaining('WaitpointTimeout') },
    });
    expect(await scheduler.getTask(onFailureTaskIdOf(doomed.taskId))).toMatchObject({
      queue: 'hooks',
      failureOf: { taskId: doomed.taskId },
    });
    // The resumed task's onFailure is still there for a death after the wait.
    await scheduler.fail(
      { agentId, taskId: approved.taskId, leaseEpoch: resumed.leaseEpoch },
      { message: 'rejected downstream', retryable: false },
    );
    expect(await scheduler.getTask(onFailureTaskIdOf(approved.taskId))).toMatchObject({ queue: 'hooks' });
  });

  /** The payload item of a task, read straight from the table, where its state item's layout puts it. */
  const payloadItem = async (taskId: string) => {
    const task = await stack.ctx.tasks.get(taskId);
    if (!task) return undefined;
    const output = await DynamoDBDocumentClient.from(stack.dynamodb).send(
      new GetCommand({
        TableName: stack.ctx.tasks.tableName,
        Key: payloadItemKey(task),
        ConsistentRead: true,
      }),
    );
    return output.Item;
  };
  /** The task a payload item's key names: its partition (layout 1), or the id in its sort key (layout 2). */
  const taskOfPayloadKey = (taskId: string, part: string): string | undefined =>
    part.startsWith('payload#') ? taskId : listEntryOfPayloadPart(part)?.taskId;

  it('a task that lives 10 days costs no write more; the retry that carries it past keeps its payload once', async () => {
    const { scheduler } = stack;
    // What keeps a payload: updates of payload items and copies of objects, by key (other tests' tasks share them).
    const updated: string[] = [];
    const copied: string[] = [];
    stack.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        const key = (args.input as { Key?: { taskId?: unknown; part?: unknown } }).Key;
        const text = (value: unknown) => String((value as { S?: string })?.S ?? value);
        const owner = taskOfPayloadKey(text(key?.taskId), text(key?.part));
        if (context.commandName === 'UpdateItemCommand' && owner !== undefined && text(key?.part) !== 'state')
          updated.push(owner);
        return next(args);
      },
      { step: 'initialize', name: 'countPayloadUpdates' },
    );
    const objects = stack.ctx.payloads.payloadObjects?.objects;
    objects?.s3.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'CopyObjectCommand')
          copied.push(String((args.input as { Key?: string }).Key));
        return next(args);
      },
      { step: 'initialize', name: 'countCopies' },
    );
    const keeps = () => ({
      items: updated.filter((id) => id === task.taskId).length,
      copies: copied.filter((key) => key.startsWith(`payloads/${task.taskId}/`)).length,
    });
    const payload = randomTextPayload(40_000, seededRandom(10));
    const { task } = await scheduler.submit({
      queue: 'cost',
      payload,
      maxAttempts: 10,
      backoffBaseSeconds: 2 * 86_400,
      backoffMaxSeconds: 2 * 86_400,
    });
    const purgeAtFirst = (await payloadItem(task.taskId))?.purgeAt;
    const { agentId } = await startAgent(scheduler, { queues: ['cost'] });
    const failOnce = async () => {
      const claimed = await claimOne(agentId, task.taskId);
      expect(claimed?.payload).toEqual(payload);
      await scheduler.fail(
        { agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
        { message: 'x' },
      );
      await passDays(2.01);
    };
    // Five retries two days apart: the last is claimable 10.04 days after the first, short of 10.5 (21 days less
    // the retention and the guard).
    for (let i = 0; i < 5; i++) await failOnce();
    expect(keeps()).toEqual({ items: 0, copies: 0 });
    expect((await payloadItem(task.taskId))?.purgeAt).toBe(purgeAtFirst);
    // The sixth is claimable 12 days in: its payload is kept from then, once.
    await failOnce();
    expect(keeps()).toEqual({ items: 1, copies: 1 });
    const kept = await scheduler.getTask(task.taskId);
    expect((await payloadItem(task.taskId))?.purgeAt).toBe(kept.payloadPurgeAt);
    expect(kept.payloadPurgeAt).toBeGreaterThan(Number(purgeAtFirst) + 11 * 86_400);
    const head = await objects?.s3.send(
      new HeadObjectCommand({ Bucket: objects.bucketName, Key: `payloads/${task.taskId}/${task.specHash}` }),
    );
    expect(head?.Metadata).toEqual({ 'kept-until': String(kept.payloadPurgeAt) });
    await failOnce();
    expect(keeps()).toEqual({ items: 1, copies: 1 });
  });

  it('a task submitted before its purge time was recorded (state and payload as written then) is kept by the same rule', async () => {
    const { scheduler } = stack;
    const payload = randomTextPayload(30_000, seededRandom(11));
    const { task } = await scheduler.submit({
      queue: 'old',
      payload,
      onFailure: { queue: 'hooks', payload: { old: true } },
    });
    // The state item as the functions before this change wrote it: no payloadPurgeAt. Its payload item and object
    // are what they wrote: purge time its first claimable time plus the queue age and the retention.
    await DynamoDBDocumentClient.from(stack.dynamodb).send(
      new UpdateCommand({
        TableName: stack.ctx.tasks.tableName,
        Key: { taskId: task.taskId, part: 'state' },
        UpdateExpression: 'REMOVE payloadPurgeAt',
      }),
    );
    expect((await scheduler.getTask(task.taskId)).payloadPurgeAt).toBeUndefined();
    expect((await payloadItem(task.taskId))?.purgeAt).toBe(Math.ceil(task.createdAt / 1_000) + 21 * 86_400);
    // Thirty days in line, no agent; then claimed with its payload, dead, and its onFailure made.
    for (let day = 0; day < 30; day += 2) await passDays(2);
    expect((await scheduler.getTask(task.taskId)).payloadPurgeAt).toBeGreaterThan(
      Math.ceil(stack.clock.now() / 1_000),
    );
    const { agentId } = await startAgent(scheduler, { queues: ['old'] });
    const claimed = await claimOne(agentId, task.taskId);
    expect(claimed?.payload).toEqual(payload);
    await scheduler.fail(
      { agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
      { message: 'done for', retryable: false },
    );
    expect(await scheduler.getTask(onFailureTaskIdOf(task.taskId))).toMatchObject({ queue: 'hooks' });
  });

  it('a task whose payload is truly gone ends dead saying so, and its lost onFailure is announced', async () => {
    const { scheduler } = stack;
    const { task } = await scheduler.submit({
      queue: 'gone',
      // Over what a hint carries: the claim reads the payload item, and finds none.
      payload: { n: 1, pad: 'x'.repeat(HINT_PAYLOAD_BYTES) },
      onFailure: { queue: 'hooks', payload: { never: true } },
    });
    const item = await payloadItem(task.taskId);
    await DynamoDBDocumentClient.from(stack.dynamodb).send(
      new DeleteCommand({
        TableName: stack.ctx.tasks.tableName,
        Key: { taskId: item?.taskId, part: item?.part },
      }),
    );
    const { agentId, sessionId } = await startAgent(scheduler, { queues: ['gone'] });
    expect(await claimUntil(scheduler, { agentId, sessionId }, 1, 2_000)).toEqual([]);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({
      status: 'dead',
      error: { message: 'the payload no longer exists' },
    });
    const ofTask = collected.events
      .filter((e) => e.taskId === task.taskId)
      .map((e) => [e.type, e.data?.reason]);
    expect(ofTask).toEqual([
      ['task.dead', 'the payload no longer exists'],
      ['task.onFailureLost', 'the onFailure is no longer kept; nothing submitted'],
    ]);
    const hook = await DynamoDBDocumentClient.from(stack.dynamodb).send(
      new GetCommand({
        TableName: stack.ctx.tasks.tableName,
        Key: { taskId: onFailureTaskIdOf(task.taskId), part: 'state' },
      }),
    );
    expect(hook.Item).toBeUndefined();
  });

  it('a submission sent again after its payload was kept longer does not shorten it', async () => {
    const { scheduler } = stack;
    const spec = {
      queue: 'again',
      payload: randomTextPayload(20_000, seededRandom(12)),
      idempotencyKey: 'kept-then-sent-again',
      maxAttempts: 5,
      backoffBaseSeconds: WEEK_SECONDS,
      backoffMaxSeconds: WEEK_SECONDS,
    };
    const { task } = await scheduler.submit(spec);
    await passDays(8);
    const { agentId } = await startAgent(scheduler, { queues: ['again'] });
    const claimed = await claimOne(agentId, task.taskId);
    await scheduler.fail(
      { agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
      { message: 'x' },
    );
    // Claimable again 15 days in: kept until 36 days in. The same submission now writes its payload again, with
    // the time a submission of day 8 gets (29 days in); the time kept is put back.
    const kept = (await scheduler.getTask(task.taskId)).payloadPurgeAt;
    expect(kept).toBeGreaterThan(Math.ceil(task.createdAt / 1_000) + 35 * 86_400);
    expect((await payloadItem(task.taskId))?.purgeAt).toBe(kept);
    expect((await scheduler.submit(spec)).created).toBe(false);
    expect((await payloadItem(task.taskId))?.purgeAt).toBe(kept);
  });
});
