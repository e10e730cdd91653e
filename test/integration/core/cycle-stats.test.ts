/**
 * The supervisor's figures on the emulators: each counted where its work happens (a paused queue's task unclaimable,
 * a hint in line recently notified, a lost hint sent again, a silent agent's lease recovered, starving work no live
 * session serves), and the cumulative figures, one item of the leases table, added to by every pass in one write:
 * two passes in turn and two at once lose nothing. A pass's errors are kept by name and short message.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemSize, writeUnitsFor } from '#adapters/item-size';
import { CYCLE_FIGURES, CYCLE_IDS_KEPT, type CycleFigures, cycleIds } from '#core/cycle-figures';
import { PASS_ERRORS_KEPT } from '#core/pass-errors';
import { type CycleResult, figuresOf } from '#core/supervisor';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('the supervisor’s figures', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['held', 'orphan', 'live', 'lonely'],
      settings: {
        reconcileAfterSeconds: 5,
        leaseTtlSeconds: 15,
        starvation: { promoteAfterSeconds: 10, announceAfterSeconds: 20, attentionAfterSeconds: 300 },
      },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** Each figure of the passes added up. */
  const sums = (passes: readonly CycleResult[]) =>
    Object.fromEntries(
      CYCLE_FIGURES.map((name) => [name, passes.reduce((sum, pass) => sum + figuresOf(pass)[name], 0)]),
    );

  it('counts each figure where its work happens, and adds every pass to the cumulative figures', async () => {
    const { scheduler, clock } = stack;
    // Before any pass: zeros, no last pass, no errors.
    expect(await scheduler.getSchedulerStats()).toEqual({
      cumulative: { passes: 0, ...Object.fromEntries(CYCLE_FIGURES.map((name) => [name, 0])) },
      lastErrors: [],
    });

    // Prepare: a task of a paused queue; one whose hint never reached SQS (its send failed: it is sent at the next
    // pass, whatever SQS's approximate count of the queue says); one whose hint waits in line; a task leased to an
    // agent that then falls silent.
    const { task: paused } = await scheduler.submit({ queue: 'held', payload: {} });
    await scheduler.pauseQueue('held');
    stack.faults.sqs.failNext('SendMessageCommand', 1, 'before');
    const { task: orphan } = await scheduler.submit({ queue: 'orphan', payload: {} });
    const agent = await startAgent(scheduler, { queues: ['live'] });
    const { task: leased } = await scheduler.submit({ queue: 'live', payload: { n: 1 } });
    await claimUntil(scheduler, agent, 1);
    const { task: inLine } = await scheduler.submit({ queue: 'live', payload: { n: 2 } });

    // Act: a first pass past the reconcile time, while the agent's session is live.
    clock.advance(6_000);
    const first = await scheduler.supervise();

    console.log(`[cycle-stats] first pass: ${JSON.stringify(figuresOf(first))}`);
    // Assess: three queued tasks looked at, the leased one read through its live session.
    expect(first).toMatchObject({
      pendingRuns: 3,
      activeRuns: 1,
      sessionsScanned: 1,
      unclaimable: 1,
      wakeAttempts: 1,
      wakesSucceeded: 1,
      wakesFailed: 0,
      leasesRecovered: 0,
      errors: 0,
      failures: [],
    });
    expect(first.ids.unclaimable).toEqual([paused.taskId]);
    // The lost hint was sent again; the one in line (and the paused queue's, in line too) was left alone.
    expect(first.reconciled).toBe(1);
    expect(first.ids.recentlyNotified).toContain(inLine.taskId);
    expect(first.ids.recentlyNotified).not.toContain(orphan.taskId);

    // Act: past the session's end and the announce threshold.
    clock.advance(20_000);
    const second = await scheduler.supervise();

    // Assess: the lease taken back from the session found over; the starving tasks no live session serves.
    expect(second.leasesRecovered).toBe(1);
    expect(second.ids.leasesRecovered).toEqual([leased.taskId]);
    expect(second.sessionsScanned).toBeGreaterThanOrEqual(1);
    expect(second.activeRuns).toBeGreaterThanOrEqual(1);
    expect(second.ids.starved).toEqual(expect.arrayContaining([orphan.taskId, inLine.taskId]));
    expect(second.ids.noMatchingSession).toEqual(expect.arrayContaining([orphan.taskId, inLine.taskId]));
    expect(second.noMatchingSession).toBe(second.ids.noMatchingSession.length);
    expect([...second.spawnRequested].sort()).toEqual(['live', 'orphan']);
    expect(second.ids.spawnRequested).toHaveLength(2);
    expect(second.errors).toBe(0);

    // The cumulative figures: both passes added up, the second as the last pass.
    const stats = await scheduler.getSchedulerStats();
    expect(stats.cumulative).toEqual({ passes: 2, ...sums([first, second]) });
    expect(stats.lastPass).toEqual({
      at: second.at,
      durationMs: second.durationMs,
      figures: figuresOf(second),
      ids: second.ids,
    });
    expect(stats.lastErrors).toEqual([]);

    console.log(`[cycle-stats] second pass: ${JSON.stringify(figuresOf(second))}`);
    // Two passes at once: both counted, neither lost (each adds to the item as it is then).
    const racing = await Promise.all([scheduler.supervise(), stack.sibling().supervise()]);
    const after = await scheduler.getSchedulerStats();
    expect(after.cumulative).toEqual({ passes: 4, ...sums([first, second, ...racing]) });
  });

  it('keeps the errors a pass met by name and short message, and counts the wake that failed', async () => {
    const { scheduler, clock, faults, ctx } = stack;
    // Its hint's send fails at submit, and again when the pass sends it (with the pass's others, in a batch).
    const lonely = (input: Record<string, unknown>) => String(input.QueueUrl).includes('lonely');
    faults.sqs.failNext('SendMessageCommand', 1, 'before', lonely);
    faults.sqs.failNext('SendMessageBatchCommand', 1, 'before', lonely);
    const { task } = await scheduler.submit({ queue: 'lonely', payload: {} });
    clock.advance(6_000);
    const pass = await scheduler.supervise();

    const seen = await scheduler.getTask(task.taskId);
    expect(
      pass.wakesFailed,
      JSON.stringify({
        figures: figuresOf(pass),
        injected: faults.sqs.injected,
        task: seen,
        failures: pass.failures,
      }),
    ).toBe(1);
    expect(pass.ids.wakesFailed).toEqual([task.taskId]);
    expect(pass.errors).toBeGreaterThanOrEqual(1);
    expect(pass.failures[0]).toMatchObject({ step: 'reconcile', name: expect.any(String) });
    const stats = await scheduler.getSchedulerStats();
    expect(stats.lastErrors[0]).toEqual({ at: pass.at, ...pass.failures[0] });
    // As stored: no ARN, no account id, no stack.
    const { Item } = await ctx.sessions.doc.send(
      new GetCommand({
        TableName: ctx.sessions.tableName,
        Key: { leaseId: 'stats#supervisor' },
        ConsistentRead: true,
      }),
    );
    expect(JSON.stringify(Item?.lastErrors)).not.toMatch(/arn:aws|\d{12}|\n\s+at /);
    // A pass without errors leaves the last errors standing.
    await scheduler.supervise();
    expect((await scheduler.getSchedulerStats()).lastErrors).toEqual(stats.lastErrors);
  });

  it('costs a write unit a pass when quiet, and at most 7 with every list of ids full and five errors kept', async () => {
    const { ctx } = stack;
    const bytes = async () =>
      itemSize(
        (
          await stack.dynamodb.send(
            new GetItemCommand({
              TableName: ctx.sessions.tableName,
              Key: { leaseId: { S: 'stats#supervisor' } },
              ConsistentRead: true,
            }),
          )
        ).Item,
      );
    const quiet = await bytes();
    const big = 1_000_000;
    const figures = Object.fromEntries(CYCLE_FIGURES.map((name) => [name, big])) as CycleFigures;
    await ctx.cycleStats.add({
      at: Date.now(),
      durationMs: 59_999,
      figures,
      ids: cycleIds(() =>
        Array.from({ length: CYCLE_IDS_KEPT }, (_, i) => `t_${String(i).padStart(26, 'q')}`),
      ),
      errors: Array.from({ length: PASS_ERRORS_KEPT }, () => ({
        step: 'spawnRequest',
        name: 'x'.repeat(64),
        message: 'y'.repeat(160),
      })),
    });
    const full = await bytes();
    console.log(`[cycle-stats] the item: ${quiet} bytes after quiet passes, ${full} bytes at its largest`);
    expect(writeUnitsFor(quiet)).toBe(1);
    expect(writeUnitsFor(full)).toBeLessThanOrEqual(7);
  });
});
