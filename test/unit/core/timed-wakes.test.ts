/**
 * Timed wakes: a hint held back arms a wake for the end of the same whole seconds (one per queue and second for a
 * batch), a due wake wakes its queue's idle agents, one not yet due is armed again; a timer that fails costs a log
 * line, never the operation; a paused scheduler wakes nobody.
 */
import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SchedulerContext } from '#core/context';
import { dispatch, dispatchMany } from '#core/dispatch';
import type { ConnectionStore, Listener } from '#core/ports/connection-store';
import type { TimedWake, WakeTimer } from '#core/ports/push-channel';
import { fireTimedWakes } from '#core/push';
import type { PushFrame } from '#domain/push';
import { mockContext, NOW, recordingLog } from '#test/mock-context';

const sqs = mockClient(SQSClient);
// The scheduler's control, which a wake that finds idle agents reads first.
const ddb = mockClient(DynamoDBDocumentClient);
// The client's prototype is shared with the files that run after this one in its worker.
afterAll(() => {
  sqs.restore();
  ddb.restore();
});

/** Idle listeners of each queue, taken once each; what was pushed to whom. */
function pushChannel(idle: Record<string, string[]>, timer: WakeTimer) {
  const pushed: { connectionId: string; frame: PushFrame }[] = [];
  const taken = new Set<string>();
  const connections = {
    findIdle: async (queue: string) =>
      (idle[queue] ?? [])
        .filter((agentId) => !taken.has(agentId))
        .map(
          (agentId): Listener => ({ agentId, connectionId: `c-${agentId}`, queues: [queue], capacity: 1 }),
        ),
    takeForWake: async (_queue: string, listener: Listener) => {
      if (taken.has(listener.agentId)) return false;
      taken.add(listener.agentId);
      return true;
    },
    markBusy: async () => undefined,
  } as unknown as ConnectionStore;
  const sender = {
    send: async (connectionId: string, frame: PushFrame) => {
      pushed.push({ connectionId, frame });
      return 'sent' as const;
    },
  };
  return { push: { connections, sender, url: 'wss://push', timer }, pushed };
}

class RecordingTimer implements WakeTimer {
  readonly armed: TimedWake[] = [];
  failing = false;
  async arm(wakes: readonly TimedWake[]): Promise<void> {
    if (this.failing) throw new Error('SQS is down');
    this.armed.push(...wakes);
  }
}

describe('timed wakes', () => {
  let timer: RecordingTimer;
  let ctx: SchedulerContext;
  let pushed: { connectionId: string; frame: PushFrame }[];
  let entries: ReturnType<typeof recordingLog>['entries'];

  beforeEach(() => {
    sqs.on(SendMessageCommand).resolves({});
    sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
    // No control set: the scheduler runs.
    ddb.on(GetCommand).resolves({});
    timer = new RecordingTimer();
    const log = recordingLog();
    entries = log.entries;
    const channel = pushChannel({ work: ['a_1', 'a_2', 'a_3'], other: ['a_9'] }, timer);
    pushed = channel.pushed;
    ctx = { ...mockContext(log.log), push: channel.push };
  });
  afterEach(() => {
    sqs.reset();
    ddb.reset();
  });

  const task = (queue = 'work') => ({
    taskId: 't_aaaaaaaaaaaaaaaaaaaaaaaaaa',
    queue,
    priority: 'normal' as const,
    leaseEpoch: 0,
  });

  it('a hint held back arms one wake for the end of its whole seconds; a hint for now wakes at once', async () => {
    await dispatch(ctx, task(), 2.3, 'retry');
    expect(timer.armed).toEqual([{ queue: 'work', at: NOW + 3_000, count: 1, reason: 'due' }]);
    // The hint went first, with the same whole seconds: it is visible when the wake comes.
    expect(sqs.commandCalls(SendMessageCommand)[0]?.args[0].input.DelaySeconds).toBe(3);
    expect(pushed).toEqual([]);

    await dispatch(ctx, task(), 0, 'submitted');
    expect(timer.armed).toHaveLength(1);
    expect(pushed).toHaveLength(1);
  });

  it('a batch arms one wake per second, for as many agents as tasks', async () => {
    await dispatchMany(
      ctx,
      [
        { task: task(), delaySeconds: 5 },
        { task: task(), delaySeconds: 4.2 },
        { task: task(), delaySeconds: 10 },
        { task: task(), delaySeconds: 0 },
      ],
      'submitted',
    );
    expect([...timer.armed].sort((a, b) => a.at - b.at || a.queue.localeCompare(b.queue))).toEqual([
      { queue: 'work', at: NOW + 5_000, count: 2, reason: 'due' },
      { queue: 'work', at: NOW + 10_000, count: 1, reason: 'due' },
    ]);
    // The one for now woke an agent at once.
    expect(pushed).toHaveLength(1);
  });

  it('a timer that fails is logged; the dispatch still succeeds', async () => {
    timer.failing = true;
    expect(await dispatch(ctx, task(), 3, 'submitted')).toBe(true);
    expect(entries).toContainEqual(
      expect.objectContaining({ level: 'warn', message: expect.stringMatching(/arming a wake failed/) }),
    );
  });

  it('due wakes wake their queues’ idle agents, several of one queue at once; one not yet due is armed again', async () => {
    const outcome = await fireTimedWakes(ctx, [
      { queue: 'work', at: NOW - 20, count: 1, reason: 'due' },
      { queue: 'work', at: NOW + 400, count: 1, reason: 'due' },
      { queue: 'other', at: NOW, count: 5, reason: 'due' },
      { queue: 'work', at: NOW + 1_200_000, count: 2, reason: 'due' },
    ]);
    // Two agents of `work` and the only one of `other`; the wake twenty minutes on is armed again, as it was.
    expect(outcome).toEqual({ woken: 3, rearmed: 1 });
    const woken = pushed.map((p) => p.connectionId);
    expect(woken.filter((c) => c !== 'c-a_9')).toHaveLength(2);
    expect(woken).toContain('c-a_9');
    expect(pushed.every((p) => p.frame.type === 'wake')).toBe(true);
    expect(timer.armed).toEqual([{ queue: 'work', at: NOW + 1_200_000, count: 2, reason: 'due' }]);
  });

  it('a paused scheduler wakes nobody: due wakes leave the idle agents idle, for the resume to wake', async () => {
    ddb.on(GetCommand).resolves({ Item: { leaseId: 'scheduler', kind: 'scheduler', paused: true } });
    const outcome = await fireTimedWakes(ctx, [
      { queue: 'work', at: NOW, count: 3, reason: 'due' },
      { queue: 'other', at: NOW, count: 1, reason: 'due' },
    ]);
    expect(outcome).toEqual({ woken: 0, rearmed: 0 });
    expect(pushed).toEqual([]);
    // One consistent read, shared by the two wakes at once; a paused copy is not kept, so the next wake reads again
    // (and a resume is seen at once).
    const reads = () => ddb.commandCalls(GetCommand).map((call) => call.args[0].input);
    expect(reads()).toEqual([
      expect.objectContaining({ Key: { leaseId: 'scheduler' }, ConsistentRead: true }),
    ]);
    expect(await fireTimedWakes(ctx, [{ queue: 'work', at: NOW, count: 1, reason: 'due' }])).toEqual({
      woken: 0,
      rearmed: 0,
    });
    expect(reads()).toHaveLength(2);
    // Resumed: the same agents are still idle, and the next wake takes them.
    ddb.on(GetCommand).resolves({ Item: { leaseId: 'scheduler', kind: 'scheduler', paused: false } });
    expect(await fireTimedWakes(ctx, [{ queue: 'work', at: NOW, count: 3, reason: 'due' }])).toEqual({
      woken: 3,
      rearmed: 0,
    });
  });
});
