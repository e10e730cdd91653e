/**
 * Large payloads as S3 objects: written before the item that names them, never overwritten by a conflicting
 * submission, read back at claim; a task whose object is gone cannot run and is dead.
 */
import { DeleteObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyConflictError } from '#domain/errors';
import { randomTextPayload, seededRandom } from '#local/seeded-random';
import { claimUntil, createTestStack, startAgent, type TestStack, waitFor } from '#test/stack';

describe('payloads in S3', () => {
  let stack: TestStack;
  const bucket = () => {
    const store = stack.ctx.payloads.payloadObjects;
    if (!store) throw new Error('the stack has no payload bucket');
    return store.objects;
  };
  beforeAll(async () => {
    stack = await createTestStack({ payloadBucket: true });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('a reused idempotency key with another payload is refused and leaves the first payload as it was; success deletes it', async () => {
    const { scheduler } = stack;
    const first = randomTextPayload(50_000, seededRandom(1));
    const { task } = await scheduler.submit({ queue: 'work', payload: first, idempotencyKey: 'big-1' });
    await expect(
      scheduler.submit({
        queue: 'work',
        payload: randomTextPayload(50_000, seededRandom(2)),
        idempotencyKey: 'big-1',
      }),
    ).rejects.toBeInstanceOf(IdempotencyConflictError);

    const agent = await startAgent(scheduler);
    const [claimed] = await claimUntil(scheduler, agent, 1);
    expect(claimed?.taskId).toBe(task.taskId);
    expect(claimed?.payload).toEqual(first);
    const objects = bucket();
    const keys = async () =>
      ((await objects.s3.send(new ListObjectsV2Command({ Bucket: objects.bucketName }))).Contents ?? []).map(
        (o) => o.Key,
      );
    expect(await keys()).toContain(`payloads/${task.taskId}/${task.specHash}`);
    await scheduler.complete({
      agentId: agent.agentId,
      taskId: task.taskId,
      leaseEpoch: claimed?.leaseEpoch ?? 0,
    });
    // The task succeeded: its object goes at once. The conflicting submission's object waits for the lifecycle rule.
    const left = await keys();
    expect(left).not.toContain(`payloads/${task.taskId}/${task.specHash}`);
    expect(left.filter((key) => key?.startsWith(`payloads/${task.taskId}/`))).toHaveLength(1);
  });

  it('a small payload stays in DynamoDB; a task whose object is gone is dead, not handed out', async () => {
    const { scheduler } = stack;
    const objects = bucket();
    const listed = async () =>
      (await objects.s3.send(new ListObjectsV2Command({ Bucket: objects.bucketName }))).Contents ?? [];
    const before = (await listed()).length;
    await scheduler.submit({ queue: 'work', payload: randomTextPayload(2_000, seededRandom(3)) });
    expect((await listed()).length).toBe(before);

    const { task } = await scheduler.submit({
      queue: 'work',
      payload: randomTextPayload(50_000, seededRandom(4)),
    });
    const key = (await listed())
      .map((o) => o.Key ?? '')
      .find((k) => k.startsWith(`payloads/${task.taskId}/`));
    expect(key).toBeDefined();
    await objects.s3.send(new DeleteObjectCommand({ Bucket: objects.bucketName, Key: key }));

    const agent = await startAgent(scheduler, { maxConcurrency: 2 });
    const handedOut: string[] = [];
    await waitFor(async () => {
      handedOut.push(...(await scheduler.claim({ ...agent, max: 2 })).map((t) => t.taskId));
      return (await scheduler.getTask(task.taskId))?.status !== 'queued';
    });
    expect(handedOut).not.toContain(task.taskId);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({ status: 'dead' });
  });
});
