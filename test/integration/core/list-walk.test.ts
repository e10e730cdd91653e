/**
 * The list walk on DynamoDB Local: a task of layout 2 whose hint goes at submit has no entry in the due index; the
 * supervisor's walk gives one, `reconcileAfterSeconds` after its creation, to the tasks still open then (and only
 * to them), reads each list entry once, and the queue figures count open tasks the walk has not reached yet.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { walkNewTasks } from '#core/list-walk';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('the list walk', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['walk', 'quick', 'stats', 'layout1', 'inflight'] });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** Writes to the `due` index so far, as DynamoDB reports them. */
  const indexWrites = () => stack.meter.totals((r) => r.service === 'dynamodb').indexWriteUnits;
  const reconcileAfterMs = () => stack.ctx.settings.reconcileAfterSeconds * 1_000;

  it('gives a look only to the tasks still open when it passes, once, and never reads an entry twice', async () => {
    // Prepare: three tasks, one ended, one running past the window, one queued whose hint is kept by nobody.
    const { scheduler, clock, ctx } = stack;
    const agent = await startAgent(scheduler, { queues: ['walk'], maxConcurrency: 2 });
    const ended = (await scheduler.submit({ queue: 'walk', payload: { n: 1 } })).task;
    const running = (await scheduler.submit({ queue: 'walk', payload: { n: 2 }, timeoutSeconds: 3_600 }))
      .task;
    const claimed = await claimUntil(scheduler, agent, 2);
    const lease = (taskId: string) => ({
      agentId: agent.agentId,
      taskId,
      leaseEpoch: claimed.find((c) => c.taskId === taskId)?.leaseEpoch ?? 0,
    });
    await scheduler.complete(lease(ended.taskId), { ok: true });
    const waiting = (await scheduler.submit({ queue: 'walk', payload: { n: 3 } })).task;
    stack.meter.reset();

    // Act: a walk before the window has passed, then one after it, then another.
    const early = await walkNewTasks(ctx);
    // The agent stays alive, heartbeating, past the window.
    for (let waited = 0; waited <= reconcileAfterMs(); waited += 10_000) {
      clock.advance(10_000);
      await scheduler.heartbeat(agent.agentId, agent.sessionId);
    }
    stack.meter.reset();
    const first = await walkNewTasks(ctx);
    const firstIndexWrites = indexWrites();
    const second = await walkNewTasks(ctx);

    // Assess: nothing is walked early; then the three entries once, and the two open tasks get a look (one index
    // write each); the ended one costs no write. The next walk starts past them.
    expect(early).toEqual({ walked: 0, armed: [], errors: 0, complete: true, failures: [] });
    expect(first.walked).toBe(3);
    expect(first.armed.sort()).toEqual([running.taskId, waiting.taskId].sort());
    expect(firstIndexWrites).toBe(2);
    expect(second).toEqual({ walked: 0, armed: [], errors: 0, complete: true, failures: [] });
    expect(await ctx.tasks.get(ended.taskId)).not.toHaveProperty('inDueIndex');
    expect(await ctx.tasks.get(running.taskId)).toMatchObject({ status: 'leased', inDueIndex: true });
    expect(await ctx.tasks.get(waiting.taskId)).toMatchObject({ status: 'queued', inDueIndex: true });
    // The running task's look is at its deadline, so the sweep leaves it until then.
    expect((await scheduler.reclaim()).requeued).not.toContain(running.taskId);
    await scheduler.complete(lease(running.taskId), { ok: true });
    expect(await ctx.tasks.get(running.taskId)).not.toHaveProperty('inDueIndex');
  });

  it('a task that ends before the walk passes costs no index write in its whole life', async () => {
    const { scheduler, clock, ctx } = stack;
    const agent = await startAgent(scheduler, { queues: ['quick'] });
    stack.meter.reset();
    const { task } = await scheduler.submit({ queue: 'quick', payload: { quick: true } });
    const [held] = await claimUntil(scheduler, agent, 1);
    await scheduler.complete({
      agentId: agent.agentId,
      taskId: task.taskId,
      leaseEpoch: held?.leaseEpoch ?? 0,
    });
    const lifecycle = indexWrites();
    clock.advance(reconcileAfterMs() + 1_000);
    const walked = await walkNewTasks(ctx);

    expect(lifecycle).toBe(0);
    expect(walked.walked).toBeGreaterThanOrEqual(1);
    expect(walked.armed).not.toContain(task.taskId);
    expect(await ctx.tasks.get(task.taskId)).toMatchObject({ status: 'succeeded' });
    expect(await ctx.tasks.get(task.taskId)).not.toHaveProperty('inDueIndex');
  });

  it('the queue figures count open tasks the walk has not reached, and not twice once it has', async () => {
    const { scheduler, clock } = stack;
    for (let n = 0; n < 3; n++) await scheduler.submit({ queue: 'stats', payload: { n } });
    const depthOf = async () =>
      (await scheduler.queueStats()).find((q) => q.name === 'stats')?.depth.normal ?? Number.NaN;

    const before = await depthOf();
    clock.advance(reconcileAfterMs() + 1_000);
    await scheduler.supervise();
    const after = await depthOf();

    expect(before).toBe(3);
    expect(after).toBe(3);
  });

  it('a walk up to now passes a submission still writing its state, and a later walk still gives it its look', async () => {
    // Prepare: a submission between its payload item and its state item, as one in flight is.
    const { ctx, clock } = stack;
    const { prepareSubmission, commitSubmission } = await import('#core/submit');
    const prepared = prepareSubmission(ctx, { queue: 'inflight', payload: { late: true } });
    const written = await ctx.payloads.putPayloads([prepared.payload]);

    // Act: a reconcile of everything walks up to now; the state lands after it; the next walks come later.
    const everything = await walkNewTasks(ctx, { upTo: ctx.now() });
    await commitSubmission(ctx, prepared, written);
    clock.advance(reconcileAfterMs() + 1_000);
    const later = await walkNewTasks(ctx);

    // Assess: the first walk found no task for the entry, and the later one gives the task (queued) its look.
    expect(everything.armed).not.toContain(prepared.task.taskId);
    expect(later.armed).toContain(prepared.task.taskId);
    expect(await ctx.tasks.get(prepared.task.taskId)).toMatchObject({ status: 'queued', inDueIndex: true });
  });

  it('a delayed task, or one with a deadline to start, keeps its look from submit', async () => {
    const { scheduler, ctx } = stack;
    const delayed = (await scheduler.submit({ queue: 'layout1', payload: {}, delaySeconds: 30 })).task;
    const expiring = (await scheduler.submit({ queue: 'layout1', payload: {}, ttlSeconds: 600 })).task;

    expect(await ctx.tasks.get(delayed.taskId)).toMatchObject({ inDueIndex: true });
    expect(await ctx.tasks.get(expiring.taskId)).toMatchObject({ inDueIndex: true });
  });

  it('tasks written by layout 1 keep their entry from submit, and the walk never sees them', async () => {
    const { ctx, clock } = stack;
    const { Scheduler } = await import('#core/scheduler');
    const layoutOne = new Scheduler({ ...ctx, settings: { ...ctx.settings, taskLayout: 1 } });
    const { task } = await layoutOne.submit({ queue: 'layout1', payload: {} });
    clock.advance(reconcileAfterMs() + 1_000);

    const walked = await walkNewTasks(ctx);

    expect(await ctx.tasks.get(task.taskId)).toMatchObject({ inDueIndex: true });
    expect(walked.armed).not.toContain(task.taskId);
  });
});
