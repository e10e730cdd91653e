/**
 * What an agent's follow-up tasks may reach, and what a refused one leaves: a child goes only to the queues agents
 * may submit to (its `onFailure` too), depends only on tasks of its own tree, and a refusal writes nothing, in the
 * table or the bucket.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ParentLease } from '#core/children';
import { randomTextPayload, seededRandom } from '#local/seeded-random';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('follow-up tasks: what they reach, what a refusal leaves', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['plans', 'steps', 'private'],
      settings: { agentSubmitQueues: ['plans', 'steps'] },
      payloadBucket: true,
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** Every item of the tasks table and every object of the bucket, as text: equal snapshots mean nothing written. */
  const snapshot = async () => {
    const lines: string[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await stack.ctx.sessions.doc.send(
        new ScanCommand({ TableName: stack.ctx.tasks.tableName, ConsistentRead: true, ExclusiveStartKey }),
      );
      for (const item of page.Items ?? []) lines.push(JSON.stringify(item));
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    const objects = stack.ctx.payloads.payloadObjects;
    if (!objects) throw new Error('the stack has no payload bucket');
    const listed = await objects.objects.s3.send(
      new ListObjectsV2Command({ Bucket: objects.objects.bucketName }),
    );
    return JSON.stringify([lines.sort(), (listed.Contents ?? []).map((o) => o.Key).sort()]);
  };

  /** A plan submitted by the operator and held by a new agent: the lease a child is submitted under. */
  async function heldPlan(): Promise<{ lease: ParentLease; agent: { agentId: string; sessionId: string } }> {
    const { scheduler } = stack;
    const { task } = await scheduler.submit({ queue: 'plans', payload: {}, maxAttempts: 3 });
    const agent = await startAgent(scheduler, { queues: ['plans'], maxConcurrency: 5 });
    const [held] = await claimUntil(scheduler, agent, 1, 3_000);
    expect(held?.taskId).toBe(task.taskId);
    return {
      lease: { agentId: agent.agentId, parentTaskId: task.taskId, leaseEpoch: held?.leaseEpoch ?? 0 },
      agent,
    };
  }

  // A payload large enough to go to the bucket: a refusal must leave no object either.
  const big = () => randomTextPayload(50_000, seededRandom(7));

  it('a child’s onFailure goes only to a queue agents may submit to', async () => {
    const { scheduler } = stack;
    const { lease } = await heldPlan();
    const before = await snapshot();
    const spec = { key: 'escape', queue: 'steps', payload: {}, onFailure: { queue: 'private', payload: {} } };
    await expect(scheduler.submitChild(lease, spec)).rejects.toMatchObject({
      code: 'Forbidden',
      statusCode: 403,
    });
    const [item] = await scheduler.submitChildren(lease, [spec]);
    expect(item).toMatchObject({ ok: false, error: { code: 'Forbidden', status: 403 } });
    expect(await snapshot()).toBe(before);
    // To an allowed queue it is taken.
    const allowed = await scheduler.submitChild(lease, {
      ...spec,
      onFailure: { queue: 'steps', payload: {} },
    });
    expect(allowed.created).toBe(true);
  });

  it('a child depends only on tasks of its own tree; any other is answered as a task that does not exist', async () => {
    const { scheduler } = stack;
    const { lease } = await heldPlan();
    const { task: foreign } = await scheduler.submit({ queue: 'steps', payload: { secret: true } });
    const absent = `t_${'q'.repeat(26)}`;
    const before = await snapshot();
    const refusal = async (dependency: string) => {
      const error = await scheduler
        .submitChild(lease, { key: 'peek', queue: 'steps', payload: {}, dependsOn: [dependency] })
        .then(
          () => undefined,
          (e: { code: string; statusCode: number; message: string }) => e,
        );
      return {
        code: error?.code,
        status: error?.statusCode,
        message: error?.message.replace(dependency, 'ID'),
      };
    };
    const toForeign = await refusal(foreign.taskId);
    expect(toForeign).toEqual(await refusal(absent));
    expect(toForeign.status).toBe(400);
    expect(await snapshot()).toBe(before);

    // Its siblings and its parent are its tree.
    const sibling = await scheduler.submitChild(lease, { key: 'sibling', queue: 'steps', payload: {} });
    const join = await scheduler.submitChild(lease, {
      key: 'join',
      queue: 'steps',
      payload: {},
      dependsOn: [sibling.task.taskId, lease.parentTaskId],
    });
    expect(join.task.status).toBe('waiting');
  });

  it('a child whose parent’s lease is lost between its checks and its transaction leaves no payload behind', async () => {
    const { scheduler } = stack;
    const { lease, agent } = await heldPlan();
    const before = await snapshot();
    // The parent is finished by its own agent (another call) after the child's checks, before its transaction.
    stack.interleave(
      (operation) => operation === 'TransactWriteItemsCommand',
      () =>
        stack
          .sibling()
          .complete({ agentId: agent.agentId, taskId: lease.parentTaskId, leaseEpoch: lease.leaseEpoch }),
    );
    await expect(
      scheduler.submitChild(lease, { key: 'raced', queue: 'steps', payload: big() }),
    ).rejects.toMatchObject({
      statusCode: 409,
    });
    // Only the parent's end changed the table.
    const after = JSON.parse(await snapshot()) as [string[], string[]];
    const parentPartition = (line: string) => line.includes(`"taskId":"${lease.parentTaskId}"`);
    const [beforeItems, beforeObjects] = JSON.parse(before) as [string[], string[]];
    expect(after[0].filter((line) => !parentPartition(line))).toEqual(
      beforeItems.filter((line) => !parentPartition(line)),
    );
    expect(after[1]).toEqual(beforeObjects);
  });

  it('a refused child writes nothing: a stale epoch, a finished or taken-back parent, a missing dependency', async () => {
    const { scheduler, clock } = stack;
    const { lease, agent } = await heldPlan();
    const spec = (key: string) => ({ key, queue: 'steps', payload: big() });
    const before = await snapshot();

    const stale = { ...lease, leaseEpoch: lease.leaseEpoch + 1 };
    await expect(scheduler.submitChild(stale, spec('stale'))).rejects.toMatchObject({ statusCode: 409 });
    const [staleItem] = await scheduler.submitChildren(stale, [spec('stale-batch')]);
    expect(staleItem).toMatchObject({ ok: false, error: { code: 'LeaseLost', status: 409 } });
    expect(await snapshot()).toBe(before);

    const ghost = `t_${'q'.repeat(26)}`;
    await expect(
      scheduler.submitChild(lease, { ...spec('ghost'), dependsOn: [ghost] }),
    ).rejects.toMatchObject({ statusCode: 400 });
    expect(await snapshot()).toBe(before);

    // The parent finished: a late child.
    await scheduler.complete({
      agentId: agent.agentId,
      taskId: lease.parentTaskId,
      leaseEpoch: lease.leaseEpoch,
    });
    const finished = await snapshot();
    await expect(scheduler.submitChild(lease, spec('late'))).rejects.toMatchObject({ statusCode: 409 });
    const [lateItem] = await scheduler.submitChildren(lease, [spec('late-batch')]);
    expect(lateItem).toMatchObject({ ok: false, error: { status: 409 } });
    expect(await snapshot()).toBe(finished);

    // A parent taken back from its agent (its lease ran out) and finished by another.
    const second = await heldPlan();
    clock.advance((stack.ctx.settings.leaseTtlSeconds + 1) * 1_000);
    await scheduler.supervise();
    // Plans of the earlier tests were taken back too: the other agent claims until it holds this one.
    const other = await startAgent(scheduler, { queues: ['plans'], maxConcurrency: 10 });
    const claimed = await claimUntil(scheduler, other, 10, 2_000, 10);
    const again = claimed.find((t) => t.taskId === second.lease.parentTaskId);
    if (!again) throw new Error('the plan taken back was not claimed again');
    await scheduler.complete({ agentId: other.agentId, taskId: again.taskId, leaseEpoch: again.leaseEpoch });
    const taken = await snapshot();
    // Only the holder learns that its lease is gone; to this agent the task is now another's, as if missing.
    await expect(scheduler.submitChild(second.lease, spec('taken'))).rejects.toMatchObject({
      statusCode: 404,
    });
    await expect(scheduler.submitChildren(second.lease, [spec('taken-batch')])).rejects.toMatchObject({
      statusCode: 404,
    });
    expect(await snapshot()).toBe(taken);
  });

  it('a child sent once the agent’s session has expired, before any sweep, is refused and writes nothing', async () => {
    const { scheduler, clock } = stack;
    const { lease } = await heldPlan();
    // The attempt's deadline is far off; only the session, which no heartbeat kept, is over.
    clock.advance((stack.ctx.settings.leaseTtlSeconds + 1) * 1_000);
    const before = await snapshot();
    await expect(
      scheduler.submitChild(lease, { key: 'after-expiry', queue: 'steps', payload: big() }),
    ).rejects.toMatchObject({ code: 'LeaseLost', statusCode: 409 });
    const [item] = await scheduler.submitChildren(lease, [
      { key: 'after-expiry-batch', queue: 'steps', payload: {} },
    ]);
    expect(item).toMatchObject({ ok: false, error: { code: 'LeaseLost', status: 409 } });
    expect(await snapshot()).toBe(before);
  });
});
