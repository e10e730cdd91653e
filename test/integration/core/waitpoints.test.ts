/**
 * Waitpoints: a held task suspended until a person or a callback answers, holding no lease; exactly one outcome
 * ends the wait, however many callers race; a timeout resumes or fails it; the resumed claim carries the outcome.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveWaitpoint } from '#core/waitpoints';
import { LeaseLostError, WaitpointNotFoundError, WaitpointResolvedError } from '#domain/errors';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('waitpoints', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({
      queues: [
        'approve',
        'race',
        'same',
        'late',
        'doomed',
        'cancelled',
        'replayed',
        'layout',
        'costs',
        'budget',
        'budget-deps',
      ],
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  const claimed = async (queue: string, spec: Record<string, unknown> = {}) => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { name: queue, queues: [queue], maxConcurrency: 1 });
    const { task } = await scheduler.submit({ queue, payload: { queue }, ...spec });
    const [lease] = await claimUntil(scheduler, agent, 1, 3_000);
    if (lease?.taskId !== task.taskId) throw new Error('the task was not claimed');
    return { agent, lease: { agentId: agent.agentId, taskId: task.taskId, leaseEpoch: lease.leaseEpoch } };
  };

  it('suspends a held task without a lease or an attempt, and resumes it once with the approval’s data', async () => {
    const { scheduler } = stack;
    const { agent, lease } = await claimed('approve', { maxAttempts: 1 });

    const suspended = await scheduler.wait(lease, {
      timeoutSeconds: 3_600,
      checkpoint: { step: 'plan ready' },
    });
    const dueSuspended = await stack.ctx.tasks.queryDue(
      'due#suspended',
      suspended.waitpoint.timeoutAt,
      1_000,
    );
    const session = await scheduler.readSession(agent.agentId);
    const none = await claimUntil(scheduler, agent, 1, 500);
    const approved = await scheduler.answerWaitpoint(suspended.waitpoint.waitpointId, {
      outcome: 'completed',
      data: { approved: true, by: 'alice' },
    });
    const [resumed] = await claimUntil(scheduler, agent, 1, 3_000);

    // Its timeout's look is in the partition of suspended tasks, which a supervisor pass takes first.
    expect(dueSuspended).toContain(lease.taskId);
    expect(stack.ctx.tasks.dueShards[0]).toBe('due#suspended');
    expect(suspended.task).toMatchObject({ status: 'suspended', attempt: 0 });
    expect(suspended.token).toMatch(/^w_[a-z2-7]{26}\.[A-Za-z0-9_-]{43}$/);
    expect(session.tasks).toEqual([]);
    expect(none).toEqual([]);
    expect(approved.waitpoint.status).toBe('completed');
    expect(resumed).toMatchObject({
      taskId: lease.taskId,
      attempt: 1,
      checkpoint: { step: 'plan ready' },
      waitpoint: {
        id: suspended.waitpoint.waitpointId,
        outcome: 'completed',
        data: { approved: true, by: 'alice' },
      },
    });
    // The suspended lease is over: its holder's late writes are refused.
    await expect(scheduler.complete(lease, {})).rejects.toThrow(LeaseLostError);
  });

  it('is refused, changing nothing, by functions deployed with taskLayout 2 (an upgrade’s first deploy)', async () => {
    const { lease } = await claimed('layout');
    const layout2 = stack.sibling({ settings: { taskLayout: 2 } });
    await expect(layout2.wait(lease, { timeoutSeconds: 60 })).rejects.toThrow(/taskLayout 3/);
    expect((await stack.scheduler.getTask(lease.taskId)).status).toBe('leased');
    await stack.scheduler.release(lease);
  });

  it('costs, as AWS bills them: a suspension and an answer a transaction of three items each', async () => {
    const { scheduler, meter } = stack;
    const { lease } = await claimed('costs');
    const dynamodb = (r: { service: string }) => r.service === 'dynamodb';

    meter.reset();
    const { waitpoint } = await scheduler.wait(lease, { timeoutSeconds: 600 });
    const suspension = meter.totals(dynamodb);
    meter.reset();
    await scheduler.answerWaitpoint(waitpoint.waitpointId, { outcome: 'completed', data: { ok: true } });
    const answer = meter.totals(dynamodb);

    console.log(
      `[waitpoints] a suspension: ${suspension.requests} requests, ${suspension.writeUnits} W, ${suspension.readUnits} R; an answer: ${answer.requests} requests, ${answer.writeUnits} W, ${answer.readUnits} R`,
    );
    // Three items in a transaction, each billed twice (the task's state item is 1 to 2 KB); a suspension also frees
    // the session's slot and keeps the payload for the wait.
    expect(suspension.writeUnits).toBeGreaterThanOrEqual(6);
    expect(suspension.writeUnits).toBeLessThanOrEqual(9);
    expect(answer.writeUnits).toBeGreaterThanOrEqual(6);
    expect(answer.writeUnits).toBeLessThanOrEqual(9);
  });

  it('counts waitpoint data in a claim’s budget of carried bytes: the dependency results of the same claim get the rest', async () => {
    const { scheduler } = stack;
    const { lease } = await claimed('budget');
    const { waitpoint } = await scheduler.wait(lease, { timeoutSeconds: 600 });
    const data = 'd'.repeat(60 * 1024);
    await scheduler.answerWaitpoint(waitpoint.waitpointId, { outcome: 'completed', data });
    // Eight results of 255 KB: 2,088,976 bytes of the 2 MB (2,097,152) a claim carries; with the 61,442 of the
    // waitpoint's data only seven fit.
    const result = 'r'.repeat(255 * 1024);
    const dependencies = await Promise.all(
      Array.from(
        { length: 8 },
        async (_, i) => (await scheduler.submit({ queue: 'budget-deps', payload: { i } })).task,
      ),
    );
    const { task: dependent } = await scheduler.submit({
      queue: 'budget',
      payload: { join: true },
      dependsOn: dependencies.map((d) => d.taskId),
    });
    const worker = await startAgent(scheduler, { queues: ['budget-deps'], maxConcurrency: 8 });
    for (const done of await claimUntil(scheduler, worker, 8, 5_000, 8)) {
      await scheduler.complete(
        { agentId: worker.agentId, taskId: done.taskId, leaseEpoch: done.leaseEpoch },
        result,
      );
    }
    const joiner = await startAgent(scheduler, { queues: ['budget'], maxConcurrency: 2 });

    // Both in one claim: one that gets only one gives it back and claims again.
    let both: Awaited<ReturnType<typeof scheduler.claim>> = [];
    for (let tries = 0; tries < 20 && both.length < 2; tries++) {
      const got = await scheduler.claim({ ...joiner, max: 2 });
      if (got.length === 2) both = got;
      for (const one of got.length === 2 ? [] : got) {
        await scheduler.release({ agentId: joiner.agentId, taskId: one.taskId, leaseEpoch: one.leaseEpoch });
      }
      if (got.length < 2) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const resumed = both.find((t) => t.taskId === lease.taskId);
    const joined = both.find((t) => t.taskId === dependent.taskId);
    const outcomes = Object.values(joined?.dependencies ?? {});

    expect(both).toHaveLength(2);
    expect(resumed?.waitpoint).toMatchObject({ outcome: 'completed', data });
    expect(outcomes).toHaveLength(8);
    expect(outcomes.filter((o) => o.resultOmitted === true)).toHaveLength(1);
    expect(outcomes.filter((o) => o.result === result)).toHaveLength(7);
  });

  it('takes exactly one of many racing answers; the same answer again is answered as it was, another refused', async () => {
    const { scheduler } = stack;
    const { lease } = await claimed('race');
    const { waitpoint, token } = await scheduler.wait(lease, { timeoutSeconds: 600 });

    const answers = await Promise.allSettled([
      ...Array.from({ length: 5 }, (_, i) =>
        scheduler.answerWaitpoint(waitpoint.waitpointId, { outcome: 'completed', data: { by: i } }),
      ),
      ...Array.from({ length: 5 }, () => scheduler.answerCallback(token, { by: 'webhook' })),
      scheduler.answerWaitpoint(waitpoint.waitpointId, { outcome: 'rejected', reason: 'no' }),
    ]);
    const accepted = answers.flatMap((a) => (a.status === 'fulfilled' && !a.value.replayed ? [a.value] : []));
    const ended = await scheduler.getWaitpoint(waitpoint.waitpointId);

    expect(accepted).toHaveLength(1);
    for (const answer of answers) {
      if (answer.status === 'rejected') expect(answer.reason).toBeInstanceOf(WaitpointResolvedError);
    }
    expect((await scheduler.getTask(lease.taskId)).status).toBe('queued');
    expect(ended?.status).toBe(accepted[0]?.waitpoint.status);
  });

  it('answers a caller that read the waitpoint open as it was when the same answer lands first, and refuses another', async () => {
    const { scheduler, ctx } = stack;
    const { lease } = await claimed('same');
    const { waitpoint, token } = await scheduler.wait(lease, { timeoutSeconds: 600 });
    // Two callers read the waitpoint open; the webhook's first send lands before the second caller goes on.
    const read = await ctx.waitpoints.get(waitpoint.waitpointId);
    await scheduler.answerCallback(token, { by: 'webhook' });

    const same = await resolveWaitpoint(
      ctx,
      waitpoint.waitpointId,
      { outcome: 'completed', data: { by: 'webhook' } },
      read,
    );
    const other = resolveWaitpoint(ctx, waitpoint.waitpointId, { outcome: 'rejected', reason: 'no' }, read);

    expect(same).toMatchObject({ replayed: true, waitpoint: { status: 'completed' } });
    await expect(other).rejects.toThrow(WaitpointResolvedError);
  });

  it('refuses a callback whose secret is wrong as one that does not exist', async () => {
    const { scheduler } = stack;
    const { lease } = await claimed('late');
    const { token } = await scheduler.wait(lease, { timeoutSeconds: 600 });
    // The same token but for its secret's first character.
    const [id = '', secret = ''] = token.split('.');
    const forged = `${id}.${secret.startsWith('A') ? 'B' : 'A'}${secret.slice(1)}`;

    await expect(scheduler.answerCallback(forged, { forged: true })).rejects.toThrow(WaitpointNotFoundError);
    await expect(scheduler.answerCallback('w_nothing', {})).rejects.toThrow(WaitpointNotFoundError);
    expect((await scheduler.getTask(lease.taskId)).status).toBe('suspended');
  });

  it('times out at its time: resumed as timedOut, or dead with WaitpointTimeout', async () => {
    const { scheduler, clock } = stack;
    const resumes = await claimed('doomed');
    const fails = await claimed('cancelled');
    await scheduler.wait(resumes.lease, { timeoutSeconds: 5, onTimeout: 'resume' });
    await scheduler.wait(fails.lease, { timeoutSeconds: 5, onTimeout: 'fail' });

    clock.advance(6_000);
    await scheduler.supervise();
    const [resumed] = await claimUntil(scheduler, resumes.agent, 1, 3_000);

    expect(resumed?.waitpoint?.outcome).toBe('timedOut');
    expect(await scheduler.getTask(fails.lease.taskId)).toMatchObject({
      status: 'dead',
      error: { message: expect.stringMatching(/^WaitpointTimeout/), retryable: false },
    });
  });

  it('a suspension retried after its answer was lost gets a new callback for the same waitpoint; the first no longer works', async () => {
    const { scheduler } = stack;
    const { lease } = await claimed('replayed');
    const first = await scheduler.wait(lease, { timeoutSeconds: 600 });
    const again = await scheduler.wait(lease, { timeoutSeconds: 600 });

    expect(again.replayed).toBe(true);
    expect(again.waitpoint.waitpointId).toBe(first.waitpoint.waitpointId);
    expect(again.token).not.toBe(first.token);
    await expect(scheduler.answerCallback(first.token, {})).rejects.toThrow(WaitpointNotFoundError);
    expect((await scheduler.answerCallback(again.token, { ok: 1 })).waitpoint.status).toBe('completed');
  });

  it('a cancel of a suspended task closes its waitpoint: an answer then changes nothing', async () => {
    const { scheduler } = stack;
    const { lease } = await claimed('approve');
    const { waitpoint } = await scheduler.wait(lease, { timeoutSeconds: 600 });
    const listed = await scheduler.listOpenWaitpoints(100);

    await scheduler.cancel(lease.taskId);

    expect(listed.waitpoints.map((w) => w.waitpointId)).toContain(waitpoint.waitpointId);
    expect((await scheduler.listOpenWaitpoints(100)).waitpoints.map((w) => w.waitpointId)).not.toContain(
      waitpoint.waitpointId,
    );
    await expect(
      scheduler.answerWaitpoint(waitpoint.waitpointId, { outcome: 'completed', data: {} }),
    ).rejects.toThrow(WaitpointResolvedError);
    expect((await scheduler.getTask(lease.taskId)).status).toBe('cancelled');
  });
});
