/**
 * Dependencies and fan-in on the emulators: a task waits until every task it depends on succeeded, a failed one
 * cancels it (or not, on request), and no timing of a dependency's end against its dependent's submit loses the
 * resolution.
 */
import { DeleteCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ClaimedTask } from '#core/claim';
import { ValidationError } from '#domain/errors';
import { taskIdForIdempotencyKey } from '#domain/ids';
import { LIMITS } from '#domain/task-spec';
import { randomTextPayload, seededRandom } from '#local/seeded-random';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('dependencies', () => {
  let stack: TestStack;
  // A queue per test: what one test leaves queued is not another's.
  const queues = Array.from({ length: 14 }, (_, i) => `steps${i}`);
  let queue = '';
  beforeAll(async () => {
    stack = await createTestStack({ queues });
  });
  beforeEach(() => {
    queue = queues[queues.indexOf(queue) + 1] ?? '';
  });
  afterAll(async () => {
    await stack.destroy();
  });

  const submit = async (extra: Record<string, unknown> = {}) =>
    (await stack.scheduler.submit({ queue, payload: {}, ...extra })).task;

  /** Claims every task it can and completes (or fails) them as `decide` says; returns what it claimed. */
  async function runAll(
    expected: number,
    decide: (task: ClaimedTask) => { result?: unknown; fail?: string } = () => ({}),
  ): Promise<ClaimedTask[]> {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: [queue], maxConcurrency: 10 });
    const claimed = await claimUntil(scheduler, agent, expected, 3_000, 10);
    // Nothing more is claimable.
    expect(await scheduler.claim({ ...agent, max: 10 })).toEqual([]);
    for (const task of claimed) {
      const lease = { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: task.leaseEpoch };
      const outcome = decide(task);
      if (outcome.fail) await scheduler.fail(lease, { message: outcome.fail, retryable: false });
      else await scheduler.complete(lease, outcome.result);
    }
    return claimed;
  }

  it('a join waits for every dependency, then its claim carries how each ended, results included', async () => {
    const a = await submit({ payload: { step: 'a' } });
    const b = await submit({ payload: { step: 'b' } });
    const join = await submit({ dependsOn: [a.taskId, b.taskId] });
    expect(join).toMatchObject({ status: 'waiting', waitingOn: [a.taskId, b.taskId], dependencyCount: 2 });

    // First round: only a and b can run; each returns a result.
    const first = await runAll(2, (t) => ({ result: { from: (t.payload as { step: string }).step } }));
    expect(first.map((t) => t.taskId).sort()).toEqual([a.taskId, b.taskId].sort());
    const joined = await runAll(1);
    expect(joined).toHaveLength(1);
    expect(joined[0]).toMatchObject({
      taskId: join.taskId,
      dependencies: {
        [a.taskId]: { status: 'succeeded', result: { from: 'a' } },
        [b.taskId]: { status: 'succeeded', result: { from: 'b' } },
      },
    });
  });

  it('a result is kept once for its dependents, not copied into each, and each claim reads it', async () => {
    const { scheduler } = stack;
    const dependency = await submit();
    const dependents = 20;
    const batch = await scheduler.submitBatch(
      Array.from({ length: dependents }, (_, n) => ({
        queue,
        payload: { n },
        dependsOn: [dependency.taskId],
      })),
    );
    expect(batch.every((item) => item.ok)).toBe(true);
    const agent = await startAgent(scheduler, { queues: [queue], maxConcurrency: 10 });
    const [held] = await claimUntil(scheduler, agent, 1, 3_000);
    expect(held?.taskId).toBe(dependency.taskId);
    // 60 KB that do not compress much: each copy would cost tens of write units.
    const result = randomTextPayload(60_000, seededRandom(11));
    stack.meter.reset();
    await scheduler.complete(
      { agentId: agent.agentId, taskId: dependency.taskId, leaseEpoch: held?.leaseEpoch ?? 0 },
      result,
    );
    const units = stack.meter.totals((r) => r.service === 'dynamodb').writeUnits;
    // The finish writes the result on the task (~46 units) and once more for the dependents (~46); each dependent
    // then costs a few units (its input, its strike, its unblock), not a copy of ~46.
    expect(units).toBeLessThan(2 * 50 + dependents * 10);

    const claimed = await runAll(dependents);
    expect(
      claimed.every(
        (t) => JSON.stringify(t.dependencies?.[dependency.taskId]?.result) === JSON.stringify(result),
      ),
    ).toBe(true);
  });

  it('an input written with a copy of its result (before results were kept once) is still read', async () => {
    const dependency = await submit();
    const dependent = await submit({ dependsOn: [dependency.taskId] });
    const [held] = await runAll(1, () => ({ result: { kept: 'once' } }));
    expect(held?.taskId).toBe(dependency.taskId);
    // The input as the earlier code wrote it: the result copied in, no reference; the kept record gone.
    const { doc, tableName } = stack.ctx.tasks;
    await doc.send(
      new PutCommand({
        TableName: tableName,
        Item: {
          taskId: dependent.taskId,
          part: `input#${dependency.taskId}`,
          dependencyId: dependency.taskId,
          status: 'succeeded',
          payload: JSON.stringify({ copied: 'before' }),
          purgeAt: Math.ceil(Date.now() / 1_000) + 3_600,
        },
      }),
    );
    await doc.send(
      new DeleteCommand({ TableName: tableName, Key: { taskId: dependency.taskId, part: 'result' } }),
    );
    const [joined] = await runAll(1);
    expect(joined?.dependencies).toEqual({
      [dependency.taskId]: { status: 'succeeded', result: { copied: 'before' } },
    });
  });

  it('a task takes at most 100 dependents: the next is refused with 409 and writes nothing, a retry is answered', async () => {
    const { scheduler } = stack;
    const dependency = await submit({ delaySeconds: 3_600 });
    const spec = (n: number) => ({
      queue,
      payload: { n },
      dependsOn: [dependency.taskId],
      idempotencyKey: `dep-${n}`,
    });
    for (let from = 0; from < LIMITS.dependentsPerTask; from += 25) {
      const batch = await scheduler.submitBatch(
        Array.from({ length: Math.min(25, LIMITS.dependentsPerTask - from) }, (_, i) => spec(from + i)),
      );
      expect(batch.every((item) => item.ok)).toBe(true);
    }
    const over = spec(LIMITS.dependentsPerTask);
    await expect(scheduler.submit(over)).rejects.toMatchObject({ code: 'Conflict', statusCode: 409 });
    const [overItem] = await scheduler.submitBatch([over]);
    expect(overItem).toMatchObject({ ok: false, error: { code: 'Conflict', status: 409 } });
    const overId = taskIdForIdempotencyKey(over.idempotencyKey);
    // Nothing under its id: no state item, no payload item.
    const written = await stack.ctx.sessions.doc.send(
      new QueryCommand({
        TableName: stack.ctx.tasks.tableName,
        KeyConditionExpression: 'taskId = :id',
        ExpressionAttributeValues: { ':id': overId },
        ConsistentRead: true,
      }),
    );
    expect(written.Items).toEqual([]);
    // A dependent already counted is answered again, not refused.
    const again = await scheduler.submit(spec(0));
    expect(again.created).toBe(false);
    expect((await stack.ctx.tasks.get(dependency.taskId))?.dependentCount).toBe(LIMITS.dependentsPerTask);
  });

  it('a dependency that already succeeded is resolved at submit', async () => {
    const a = await submit();
    await runAll(1, () => ({ result: 42 }));
    const next = await submit({ dependsOn: [a.taskId] });
    expect((await stack.scheduler.getTask(next.taskId)).status).toBe('queued');
    const [claimed] = await runAll(1);
    expect(claimed?.dependencies).toEqual({ [a.taskId]: { status: 'succeeded', result: 42 } });
  });

  it('a dead dependency cancels its dependents, naming it, and theirs in turn; "run" runs anyway', async () => {
    const a = await submit({ maxAttempts: 1 });
    const child = await submit({ dependsOn: [a.taskId] });
    const grandchild = await submit({ dependsOn: [child.taskId] });
    const tolerant = await submit({ dependsOn: [a.taskId], onDependencyFailure: 'run' });
    await runAll(1, () => ({ fail: 'no' }));

    expect(await stack.scheduler.getTask(child.taskId)).toMatchObject({
      status: 'cancelled',
      failedDependency: a.taskId,
      error: { message: `dependency ${a.taskId} ended dead` },
    });
    expect(await stack.scheduler.getTask(grandchild.taskId)).toMatchObject({
      status: 'cancelled',
      failedDependency: child.taskId,
    });
    const [ran] = await runAll(1);
    expect(ran).toMatchObject({
      taskId: tolerant.taskId,
      dependencies: { [a.taskId]: { status: 'dead', error: { message: 'no' } } },
    });
  });

  it('refuses a dependency that does not exist, writing nothing', async () => {
    const ghost = 't_aaaaaaaaaaaaaaaaaaaaaaaaaa';
    await expect(submit({ dependsOn: [ghost], idempotencyKey: 'ghost-dependent' })).rejects.toThrow(
      ValidationError,
    );
    expect(await stack.ctx.tasks.get((await submit()).taskId)).toBeDefined();
  });

  it.each([
    ['before its record in the dependency', 'PutItemCommand'],
    ['between its record and the mark', 'UpdateItemCommand'],
  ])(
    'a dependency that ends while its dependent is submitted, %s, still releases it',
    async (_, operation) => {
      const { scheduler } = stack;
      const dependency = await submit();
      const agent = await startAgent(scheduler, { queues: [queue] });
      const [claimed] = await claimUntil(scheduler, agent, 1, 3_000);
      expect(claimed?.taskId).toBe(dependency.taskId);
      // The dependency completes just before the dependent's write named lands.
      stack.interleave(
        (op, input) =>
          op === operation &&
          JSON.stringify(input).includes(dependency.taskId) &&
          JSON.stringify(input).includes(operation === 'PutItemCommand' ? 'dependent#' : 'hasDependents'),
        () =>
          scheduler.complete(
            { agentId: agent.agentId, taskId: dependency.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
            'done',
          ),
      );
      const dependent = await submit({ dependsOn: [dependency.taskId] });
      expect((await scheduler.getTask(dependency.taskId)).status).toBe('succeeded');
      expect((await scheduler.getTask(dependent.taskId)).status).toBe('queued');
    },
  );

  it('a resolution lost to a crash is made by the recheck', async () => {
    const { scheduler, clock, faults } = stack;
    const dependency = await submit();
    const dependent = await submit({ dependsOn: [dependency.taskId] });
    const agent = await startAgent(scheduler, { queues: [queue] });
    const [claimed] = await claimUntil(scheduler, agent, 1, 3_000);
    // The completion lands; telling its dependent fails (the read of the dependency's records).
    faults.dynamodb.failNext('QueryCommand', 1, 'before');
    await scheduler.complete({
      agentId: agent.agentId,
      taskId: dependency.taskId,
      leaseEpoch: claimed?.leaseEpoch ?? 0,
    });
    expect(faults.dynamodb.injected.QueryCommand).toBe(1);
    expect((await scheduler.getTask(dependent.taskId)).status).toBe('waiting');

    clock.advance(stack.ctx.settings.dependencyRecheckSeconds * 1_000);
    const summary = await scheduler.reconcile();
    expect(summary.rechecked).toContain(dependent.taskId);
    expect((await scheduler.getTask(dependent.taskId)).status).toBe('queued');
  });

  it('a dependency cancelled by an operator, or expired at the supervisor’s pass, cancels its dependents', async () => {
    const { scheduler, clock } = stack;
    const cancelled = await submit({ delaySeconds: 3_600 });
    const first = await submit({ dependsOn: [cancelled.taskId] });
    await scheduler.cancel(cancelled.taskId);
    expect(await scheduler.getTask(first.taskId)).toMatchObject({
      status: 'cancelled',
      failedDependency: cancelled.taskId,
    });
    const expiring = await submit({ ttlSeconds: 30 });
    const second = await submit({ dependsOn: [expiring.taskId] });
    clock.advance(31_000);
    expect((await scheduler.reconcile()).expired).toContain(expiring.taskId);
    expect(await scheduler.getTask(second.taskId)).toMatchObject({
      status: 'cancelled',
      error: { message: `dependency ${expiring.taskId} ended expired` },
    });
  });

  it('a waiting task can be cancelled, and expires by its deadline like a queued one', async () => {
    const { scheduler, clock } = stack;
    const blocker = await submit({ delaySeconds: 3_600 });
    const cancelled = await submit({ dependsOn: [blocker.taskId] });
    expect((await scheduler.cancel(cancelled.taskId)).status).toBe('cancelled');
    const expiring = await submit({ dependsOn: [blocker.taskId], ttlSeconds: 60 });
    clock.advance(61_000);
    expect((await scheduler.reconcile()).expired).toContain(expiring.taskId);
    expect((await scheduler.getTask(expiring.taskId)).status).toBe('expired');
  });
});

describe('follow-up tasks submitted by agents', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['plans', 'steps', 'private'],
      settings: { agentSubmitQueues: ['plans', 'steps'] },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('a planner fans out, a join fans in, lineage is kept, and a planner run again makes no second set', async () => {
    const { scheduler } = stack;
    const { task: plan } = await scheduler.submit({ queue: 'plans', payload: { goal: 'report' } });
    const planner = await startAgent(scheduler, { queues: ['plans', 'steps'], maxConcurrency: 10 });
    const [planning] = await claimUntil(scheduler, planner, 1, 3_000);
    const parent = {
      agentId: planner.agentId,
      parentTaskId: plan.taskId,
      leaseEpoch: planning?.leaseEpoch ?? 0,
    };

    const steps = await scheduler.submitChildren(
      parent,
      ['a', 'b', 'c'].map((key) => ({ key, queue: 'steps', payload: { part: key } })),
    );
    const stepIds = steps.map((s) => (s.ok ? s.task.taskId : ''));
    expect(steps.every((s) => s.ok && s.created && s.task.parentTaskId === plan.taskId)).toBe(true);
    const join = await scheduler.submitChild(parent, {
      key: 'join',
      queue: 'steps',
      payload: {},
      dependsOn: stepIds,
    });
    expect(join.task).toMatchObject({
      status: 'waiting',
      parentTaskId: plan.taskId,
      rootTaskId: plan.taskId,
    });

    // The planner's answer was lost and it submits the same children again: the same tasks come back.
    const again = await scheduler.submitChildren(parent, [
      { key: 'a', queue: 'steps', payload: { part: 'a' } },
    ]);
    expect(again[0]).toMatchObject({ ok: true, created: false, task: { taskId: stepIds[0] } });

    await scheduler.complete({
      agentId: planner.agentId,
      taskId: plan.taskId,
      leaseEpoch: planning?.leaseEpoch ?? 0,
    });
    const ran = await claimUntil(scheduler, planner, 3, 3_000, 10);
    expect(ran.map((t) => t.taskId).sort()).toEqual([...stepIds].sort());
    expect(ran.every((t) => t.rootTaskId === plan.taskId)).toBe(true);
    for (const t of ran) {
      await scheduler.complete(
        { agentId: planner.agentId, taskId: t.taskId, leaseEpoch: t.leaseEpoch },
        { part: t.payload },
      );
    }
    const [joined] = await claimUntil(scheduler, planner, 1, 3_000);
    expect(joined?.taskId).toBe(join.task.taskId);
    expect(Object.keys(joined?.dependencies ?? {}).sort()).toEqual([...stepIds].sort());

    // Lineage shows in the listing.
    const listed = await scheduler.listTasks({ queue: 'steps', limit: 100 });
    expect(listed.tasks.filter((t) => t.parentTaskId === plan.taskId)).toHaveLength(4);
  });

  it('a parent whose lease is gone submits nothing, and agents submit only where the deployment lets them', async () => {
    const { scheduler, clock } = stack;
    const { task: plan } = await scheduler.submit({ queue: 'plans', payload: {}, maxAttempts: 2 });
    const first = await startAgent(scheduler, { queues: ['plans'] });
    const [held] = await claimUntil(scheduler, first, 1, 3_000);
    const lease = { agentId: first.agentId, parentTaskId: plan.taskId, leaseEpoch: held?.leaseEpoch ?? 0 };

    const refused = await scheduler.submitChildren(lease, [{ key: 'x', queue: 'private', payload: {} }]);
    expect(refused[0]).toMatchObject({ ok: false, error: { code: 'Forbidden', status: 403 } });

    // The lease runs out; the task is taken back and given to another agent.
    clock.advance((stack.ctx.settings.leaseTtlSeconds + 1) * 1_000);
    await scheduler.supervise();
    await expect(scheduler.submitChild(lease, { key: 'late', queue: 'steps', payload: {} })).rejects.toThrow(
      /is lost/,
    );
    const listed = await scheduler.listTasks({ queue: 'steps', limit: 100 });
    expect(listed.tasks.filter((t) => t.parentTaskId === plan.taskId)).toEqual([]);
  });
});
