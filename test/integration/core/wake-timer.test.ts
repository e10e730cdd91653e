/**
 * The wake timer on the SQS emulator, as its function and the functions that arm it use it: a held-back task's
 * wake comes after its hint is visible (never before its time), from whichever function held it back (a submit, a
 * sweep's resend); a wake longer than an SQS delay is armed again, not fired.
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fireTimedWakes } from '#core/push';
import { runApart } from '#local/function-scope';
import {
  claimUntil,
  createTestStack,
  RecordingPushSender,
  startAgent,
  type TestStack,
  waitFor,
} from '#test/stack';

describe('wake timer', () => {
  let stack: TestStack;
  const sender = new RecordingPushSender();

  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['timed', 'far'],
      push: { sender, url: 'ws://push.test/v1/push', timer: true },
      settings: { pushSafetyPollMs: 600_000 },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** An idle agent listening to `queue`. */
  const idleAgent = async (queue: string) => {
    const agent = await startAgent(stack.scheduler, { queues: [queue] });
    const { ticket } = await stack.scheduler.pushTicket({ kind: 'agent', agentId: agent.agentId });
    const principal = await stack.scheduler.redeemPushTicket(ticket);
    if (!principal) throw new Error('ticket refused');
    const connectionId = `c-${agent.agentId}`;
    await stack.scheduler.openPushConnection(connectionId, principal);
    expect((await stack.scheduler.claimOrListen(agent)).tasks).toEqual([]);
    return { ...agent, connectionId };
  };
  const wakesOf = (connectionId: string) =>
    sender.frames.filter((f) => f.connectionId === connectionId && f.frame.type === 'wake');

  it('a delayed submit wakes the idle agent after its time, and the woken claim finds the task', async () => {
    const agent = await idleAgent('timed');
    const { task } = await stack.scheduler.submit({ queue: 'timed', payload: {}, delaySeconds: 2 });
    const notBefore = task.notBefore ?? 0;
    await waitFor(() => wakesOf(agent.connectionId).length > 0, 6_000);
    const woken = wakesOf(agent.connectionId)[0];
    expect(woken?.frame).toMatchObject({ type: 'wake', queue: 'timed', reason: 'due' });
    // SQS delays are whole seconds from the send: never before the task's time, and within a second after it.
    expect(woken?.at).toBeGreaterThanOrEqual(notBefore);
    expect((woken?.at ?? 0) - notBefore).toBeLessThan(1_500);
    // The hint went first with the same delay: the claim the wake causes takes the task.
    const claimed = await stack.scheduler.claimOrListen(agent);
    expect(claimed.tasks.map((t) => t.taskId)).toEqual([task.taskId]);
  });

  it('a retry’s backoff, set by the agent’s failure, wakes an idle agent when it is over', async () => {
    const worker = await startAgent(stack.scheduler, { queues: ['timed'] });
    const { task } = await stack.scheduler.submit({
      queue: 'timed',
      payload: {},
      backoffBaseSeconds: 1,
      backoffMaxSeconds: 1,
    });
    const [claimed] = await claimUntil(stack.scheduler, worker, 1);
    const listening = await idleAgent('timed');
    const failed = await stack.scheduler.fail(
      { agentId: worker.agentId, taskId: task.taskId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
      { message: 'provider answered 429' },
    );
    const retryAt = failed.task.notBefore ?? 0;
    expect(retryAt).toBeGreaterThan(Date.now());
    await waitFor(() => wakesOf(listening.connectionId).length > 0, 6_000);
    expect(wakesOf(listening.connectionId)[0]?.at ?? 0).toBeGreaterThanOrEqual(retryAt);
    expect((await stack.scheduler.claimOrListen(listening)).tasks.map((t) => t.taskId)).toEqual([
      task.taskId,
    ]);
  });

  it('a debounced task joined after its hint went wakes the idle agent again at its new time', async () => {
    const agent = await idleAgent('timed');
    const debounce = { key: 'wake', windowSeconds: 1 };
    const { task } = await stack.scheduler.submit({ queue: 'timed', payload: { n: 1 }, debounce });
    await new Promise((resolve) => setTimeout(resolve, 600));
    const joined = await stack.scheduler.submit({ queue: 'timed', payload: { n: 2 }, debounce });
    expect(joined.task.taskId).toBe(task.taskId);
    const notBefore = joined.task.notBefore ?? 0;
    // Woken at the first time, the claim finds the hint early: it hides it, and arms a wake for the new time.
    await waitFor(() => wakesOf(agent.connectionId).length > 0, 6_000);
    if (Date.now() < notBefore) expect((await stack.scheduler.claimOrListen(agent)).tasks).toEqual([]);
    await waitFor(() => wakesOf(agent.connectionId).some((w) => w.at >= notBefore), 6_000);
    const claimed = await claimUntil(stack.scheduler, agent, 1, 3_000);
    expect(claimed.map((t) => t.payload)).toEqual([{ n: 2 }]);
  });

  it('a sweep that sends a held-back task’s hint again arms its wake again', async () => {
    const agent = await idleAgent('far');
    const { task } = await stack.scheduler.submit({ queue: 'far', payload: {}, delaySeconds: 3 });
    // The sweep that restores every hint (a restart of the local stack, a lost hint) sends it with its delay.
    const restored = await stack.scheduler.reconcile({ everything: true });
    expect(restored.redispatched).toContain(task.taskId);
    await waitFor(() => wakesOf(agent.connectionId).length >= 1, 8_000);
    expect(wakesOf(agent.connectionId)[0]?.at ?? 0).toBeGreaterThanOrEqual(task.notBefore ?? 0);
  });

  it('a wake past SQS’s longest delay is armed again for the rest, not fired', async () => {
    // A stack of its own: the earlier tests' wakes may still wait out their delays on this one's timer queue.
    const own = await createTestStack({
      queues: ['timed'],
      push: { sender, url: 'ws://push.test/v1/push', timer: true },
    });
    try {
      const before = sender.frames.length;
      const at = Date.now() + 20 * 60_000;
      const outcome = await runApart('wakeTimer', () =>
        fireTimedWakes(own.ctx, [{ queue: 'timed', at, count: 1, reason: 'due' }]),
      );
      expect(outcome).toEqual({ woken: 0, rearmed: 1 });
      expect(sender.frames.length).toBe(before);
      // Armed again: a message waits out its delay on the timer's queue (the poller cannot see it yet).
      const attributes = await own.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: own.wiring.wakeTimerQueue ?? '',
          AttributeNames: ['ApproximateNumberOfMessagesDelayed'],
        }),
      );
      expect(Number(attributes.Attributes?.ApproximateNumberOfMessagesDelayed)).toBe(1);
    } finally {
      await own.destroy();
    }
  });
});
