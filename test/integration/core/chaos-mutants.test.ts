/**
 * The chaos run's deliberate bugs against DynamoDB Local: each mutated write is a request DynamoDB accepts (every
 * placeholder used), and it does what the mutant's name says. A mutant DynamoDB refused would be caught only
 * because its writes fail, which proves nothing of the checker.
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { dispatch } from '#core/dispatch';
import { requeueAfter } from '#core/timing';
import { answerWithoutConditions, applyMutant, type Mutant } from '#test/mutants';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';
import { emptyHistory, recordCommittedWrites, writeKind } from '../../../chaos/committed-writes';
import { checkHistory } from '../../../chaos/history';
import { BUDGET_TERMS, checkLedger, ledgerOf, usageOf, usageReport } from '../../../chaos/rate-ledger';
import { checkWaitpoints, UNTIMED } from '../../../chaos/waitpoint-history';

describe('the chaos mutants on DynamoDB Local', () => {
  let stack: TestStack;
  const history = emptyHistory();
  beforeAll(async () => {
    // random 0: a retried failure is claimable again at once.
    stack = await createTestStack({
      random: () => 0,
      queues: ['terminal', 'sweep', 'complete', 'answer', 'settled', 'settledTwice'],
    });
    recordCommittedWrites(stack.dynamodb, stack.wiring.tables, history);
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** Switches the mutant on for this test only: its methods are the instance's own, over the prototype's. */
  function mutate(mutant: Mutant): void {
    const tasks = stack.ctx.tasks as unknown as Record<string, unknown>;
    const before = new Set(Object.keys(tasks));
    applyMutant(stack.ctx, mutant);
    onTestFinished(() => {
      for (const key of Object.keys(tasks)) if (!before.has(key)) delete tasks[key];
    });
  }

  /** A task leased at epoch 1, alone in its queue. */
  async function leasedTask(queue: string) {
    const { scheduler } = stack;
    const { task } = await scheduler.submit({ queue, payload: {}, maxAttempts: 5 });
    const agent = await startAgent(scheduler, { queues: [queue] });
    const [claimed] = await claimUntil(scheduler, agent, 1, 5_000);
    expect(claimed?.taskId).toBe(task.taskId);
    return {
      taskId: task.taskId,
      agent,
      lease: { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: 1 },
    };
  }

  const statuses = (taskId: string) =>
    history.tasks.filter((v) => v.taskId === taskId).map((v) => `${v.status}@${v.leaseEpoch}`);

  it('terminalThenRequeueInTwoWrites: a retried failure is committed dead, then queued from dead', async () => {
    mutate('terminalThenRequeueInTwoWrites');
    const { taskId, lease } = await leasedTask('terminal');
    const failed = await stack.scheduler.fail(lease, { message: 'again', retryable: true });

    expect(failed.task).toMatchObject({ status: 'queued', leaseEpoch: 1 });
    expect(statuses(taskId)).toEqual(['queued@0', 'leased@1', 'dead@1', 'queued@1']);
    const mine = { ...emptyHistory(), tasks: history.tasks.filter((v) => v.taskId === taskId) };
    expect(checkHistory(mine).terminalLeftCount).toBe(1);
  });

  it('sweepWithoutEpoch: the sweep takes back a lease granted after the one it observed', async () => {
    mutate('sweepWithoutEpoch');
    const { scheduler, ctx } = stack;
    const { taskId, agent, lease } = await leasedTask('sweep');
    const observed = await ctx.tasks.get(taskId);
    // The lease it observed ends; the task is granted again, at epoch 2.
    await scheduler.release(lease);
    const [again] = await claimUntil(scheduler, agent, 1, 5_000);
    expect(again).toMatchObject({ taskId, leaseEpoch: 2 });

    const now = ctx.now();
    const taken = await ctx.tasks.takeBack(
      observed ?? expect.unreachable(),
      {
        event: 'reclaim',
        to: requeueAfter(ctx, now, 0),
        error: { message: 'lease expired (deadline)', retryable: true },
      },
      now,
    );
    expect(taken).toMatchObject({ ok: true, task: { status: 'queued', leaseEpoch: 2 } });

    // Sent again, as the sweep does, and granted to another agent while the first still holds its lease of
    // epoch 2: the checker sees two holders.
    if (taken.ok) await dispatch(ctx, taken.task, 0, 'reclaimed');
    const other = await startAgent(scheduler, { name: 'other', queues: ['sweep'] });
    const [third] = await claimUntil(scheduler, other, 1, 5_000);
    expect(third).toMatchObject({ taskId, leaseEpoch: 3 });
    const mine = {
      ...emptyHistory(),
      tasks: history.tasks.filter((v) => v.taskId === taskId),
      sessions: history.sessions.filter((s) => s.agentId === agent.agentId || s.agentId === other.agentId),
    };
    expect(checkHistory(mine).overlapCount).toBe(1);
  });

  it('answerWithoutConditions: two callers that read a waitpoint open each end it, and the checker sees it ended twice', async () => {
    const { scheduler, ctx } = stack;
    onTestFinished(answerWithoutConditions(ctx));
    const { taskId, lease } = await leasedTask('answer');
    const { waitpoint } = await scheduler.wait(lease, { timeoutSeconds: 600 });
    // Both callers read the waitpoint open and its task suspended before either writes.
    const read = (await ctx.waitpoints.get(waitpoint.waitpointId)) ?? expect.unreachable();
    const task = (await ctx.tasks.get(taskId)) ?? expect.unreachable();
    const end = (by: string) =>
      ctx.waitpoints.resolve(
        read,
        {
          outcome: 'completed',
          dataJson: JSON.stringify({ by }),
          resolutionHash: by,
          to: requeueAfter(ctx, ctx.now(), 0, task),
        },
        ctx.now(),
      );

    expect(await end('operator')).toBe(true);
    expect(await end('callback')).toBe(true);
    expect(statuses(taskId)).toEqual(['queued@0', 'leased@1', 'suspended@1', 'queued@1', 'queued@1']);
    const verdict = checkWaitpoints(
      {
        ...emptyHistory(),
        tasks: history.tasks.filter((v) => v.taskId === taskId),
        waitpoints: history.waitpoints.filter((w) => w.taskId === taskId),
      },
      UNTIMED,
    );
    expect(verdict).toMatchObject({ suspended: 1, resolvedTwiceCount: 1, ownerWhileSuspendedCount: 0 });
  });

  it('completeWithoutEpoch: a completion of an earlier lease ends the lease that holds the task', async () => {
    mutate('completeWithoutEpoch');
    const { scheduler, ctx } = stack;
    const { taskId, agent, lease } = await leasedTask('complete');
    await scheduler.release(lease);
    const [again] = await claimUntil(scheduler, agent, 1, 5_000);
    expect(again).toMatchObject({ taskId, leaseEpoch: 2 });

    const completed = await scheduler.complete(lease, { stale: true });
    expect(completed.task).toMatchObject({ status: 'succeeded', leaseEpoch: 2 });
    expect((await ctx.tasks.get(taskId))?.lastFinish).toMatchObject({ kind: 'complete', leaseEpoch: 1 });
  });

  /** Units each task of the ledger's tests names: more than any usage (0 to 200), so every finish settles some. */
  const ESTIMATE = 1_000;

  /**
   * A task naming its own budget (`limit`), leased at epoch 1 and completed with its lease's usage while the answer
   * of the write of `lost` (a kind of `writeKind`) is lost once after it committed, and the write sent again as the
   * AWS SDK does; then the budget's ledger, for this task alone.
   */
  async function settledOnce(queue: string, limit: string, lost: string) {
    const { scheduler, wiring, faults } = stack;
    await scheduler.setRateLimit(limit, BUDGET_TERMS);
    const { task } = await scheduler.submit({
      queue,
      payload: {},
      rateLimits: [{ name: limit, units: ESTIMATE }],
    });
    const agent = await startAgent(scheduler, { queues: [queue] });
    const [claimed] = await claimUntil(scheduler, agent, 1, 5_000);
    expect(claimed).toMatchObject({ taskId: task.taskId, leaseEpoch: 1 });
    const resentBefore = history.resent?.rateSettle ?? 0;
    const command = lost === 'rateWindow' ? 'UpdateItemCommand' : 'TransactWriteItemsCommand';
    faults.dynamodb.failNext(
      command,
      1,
      'retried',
      (input) => writeKind(command, input, wiring.tables) === lost,
    );
    const lease = { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: 1 };
    const completed = await scheduler.complete(lease, {}, undefined, usageReport(task.taskId, 1, limit));
    expect(completed.task.status).toBe('succeeded');
    expect(faults.dynamodb.injected[command]).toBeGreaterThan(0);
    const mine = {
      tasks: history.tasks.filter((v) => v.taskId === task.taskId),
      rateChanges: (history.rateChanges ?? []).filter((c) => c.taskId === task.taskId),
    };
    const actual = await ledgerOf(DynamoDBDocumentClient.from(stack.dynamodb), wiring.tables.tasks, limit);
    const ledger = checkLedger(mine, new Map([[task.taskId, ESTIMATE]]), actual, {}, limit);
    return {
      ledger,
      usage: usageOf(task.taskId, 1),
      resent: (history.resent?.rateSettle ?? 0) - resentBefore,
    };
  }

  it('a settlement in the finish’s transaction, sent again after its answer was lost, counts once', async () => {
    const { ledger, usage, resent } = await settledOnce('settled', 'ledger.right', 'rateSettle');
    // Answered again under its token: DynamoDB wrote nothing more, and the record holds it once.
    expect(resent).toBe(1);
    expect(ledger).toMatchObject({
      grants: 1,
      settledFinishes: 1,
      settlements: 1,
      expected: usage,
      actual: usage,
      difference: 0,
      tasksOffCount: 0,
    });
  });

  it('settleOutsideFinish: a settlement of its own, sent again after its answer was lost, counts twice, and the ledger shows it', async () => {
    mutate('settleOutsideFinish');
    const { ledger, usage } = await settledOnce('settledTwice', 'ledger.mutant', 'rateWindow');
    // The window moved by usage − estimate twice: the ledger is off by one settlement.
    expect(ledger).toMatchObject({
      grants: 1,
      settledFinishes: 1,
      settlements: 0,
      expected: usage,
      actual: usage + (usage - ESTIMATE),
      difference: usage - ESTIMATE,
      tasksOffCount: 1,
    });
  });
});
