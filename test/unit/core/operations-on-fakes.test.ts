/**
 * Operations of the core against the task store's port, in memory: the fake enforces the same transition table
 * and fences as the DynamoDB adapter (the contract suite holds both to it), so these run in milliseconds.
 */
import { describe, expect, it } from 'vitest';
import { sessionFromItem } from '#adapters/session-table';
import { cancelTask } from '#core/cancel';
import { DEFAULT_SETTINGS, type SchedulerContext } from '#core/context';
import { completeTask } from '#core/finish';
import { redriveTask } from '#core/redrive';
import { InvalidTransitionError } from '#domain/errors';
import type { SchedulerEvent } from '#domain/events';
import type { DispatchHint } from '#domain/hint';
import type { AgentSession, Task } from '#domain/task';
import { FakePayloadStore } from '#test/fake-payload-store';
import { FakeTaskStore } from '#test/fake-task-store';
import { sessionItem } from '#test/mock-context';

const NOW = Date.UTC(2026, 10, 25, 12);

function fakeContext() {
  const tasks = new FakeTaskStore();
  const notices: string[] = [];
  const hints: DispatchHint[] = [];
  const events: SchedulerEvent[] = [];
  const ctx = {
    tasks,
    payloads: new FakePayloadStore(tasks),
    sessions: {
      notify: async (
        agentId: string,
        _session: string,
        { kind, taskId }: { kind: string; taskId: string },
      ) => {
        notices.push(`${agentId} ${kind} ${taskId}`);
        return { ok: true };
      },
    },
    queues: { send: async (_q: string, _p: string, hint: DispatchHint) => void hints.push(hint) },
    events: { publish: async (published: readonly SchedulerEvent[]) => void events.push(...published) },
    settings: DEFAULT_SETTINGS,
    now: () => NOW,
    random: () => 0.5,
    log: { info() {}, warn() {}, error() {} },
  } as unknown as SchedulerContext;
  return { ctx, tasks, notices, hints, events };
}

function queuedTask(overrides: Partial<Task> = {}): Task {
  return {
    taskId: 't_fakefakefakefakefakefakefa',
    queue: 'work',
    priority: 'normal',
    status: 'queued',
    attempt: 0,
    retryPolicy: { maxAttempts: 3, backoffBaseSeconds: 2, backoffMaxSeconds: 60 },
    timeoutSeconds: 60,
    leaseEpoch: 0,
    dispatchCount: 1,
    specHash: 'h',
    payloadBytes: 2,
    createdAt: NOW,
    updatedAt: NOW,
    ...overrides,
  };
}

describe('core operations on the fake task store', () => {
  it('cancels a leased task, tells its session, and answers a second cancel with the same task', async () => {
    const { ctx, tasks, notices, events } = fakeContext();
    await tasks.create(queuedTask(), NOW);
    await tasks.grant(
      't_fakefakefakefakefakefakefa',
      { queue: 'work', agentId: 'a_x', sessionId: 's_x' },
      NOW,
    );

    const cancelled = await cancelTask(ctx, 't_fakefakefakefakefakefakefa');
    const again = await cancelTask(ctx, 't_fakefakefakefakefakefakefa');

    expect(cancelled).toMatchObject({ status: 'cancelled', leaseEpoch: 1, finishedAt: NOW });
    expect(again).toEqual(cancelled);
    expect(notices).toEqual(['a_x cancelled t_fakefakefakefakefakefakefa']);
    expect(events.map((e) => e.type)).toEqual(['task.cancelled']);
    expect(tasks.writes.filter((w) => w.kind === 'cancel')).toEqual([
      { kind: 'cancel', taskId: 't_fakefakefakefakefakefakefa', ok: true },
    ]);
  });

  it('a cancel that loses a race to a grant reads again and cancels the leased task', async () => {
    const { ctx, tasks, notices } = fakeContext();
    await tasks.create(queuedTask(), NOW);
    // The grant lands between the cancel's read and its write.
    const read = tasks.get.bind(tasks);
    let first = true;
    tasks.get = async (taskId) => {
      const seen = await read(taskId);
      if (first) {
        first = false;
        await tasks.grant(taskId, { queue: 'work', agentId: 'a_y', sessionId: 's_y' }, NOW);
      }
      return seen;
    };

    const cancelled = await cancelTask(ctx, 't_fakefakefakefakefakefakefa');

    expect(cancelled.status).toBe('cancelled');
    expect(tasks.writes.filter((w) => w.kind === 'cancel').map((w) => w.ok)).toEqual([false, true]);
    expect(notices).toEqual(['a_y cancelled t_fakefakefakefakefakefakefa']);
  });

  it('redrives a dead task once, sends its hint, and refuses a task that is not dead', async () => {
    const { ctx, tasks, hints } = fakeContext();
    await tasks.create(queuedTask(), NOW);
    const leased = await tasks.grant(
      't_fakefakefakefakefakefakefa',
      { queue: 'work', agentId: 'a_z', sessionId: 's_z' },
      NOW,
    );
    if (!leased.ok) throw new Error('not granted');
    await tasks.takeBack(
      leased.task,
      { event: 'fail', to: { status: 'dead', purgeAt: 1 }, error: { message: 'no', retryable: false } },
      NOW,
    );

    const back = await redriveTask(ctx, 't_fakefakefakefakefakefakefa');

    expect(back).toMatchObject({ status: 'queued', attempt: 0, leaseEpoch: 1 });
    expect(hints).toEqual([{ taskId: 't_fakefakefakefakefakefakefa', leaseEpoch: 1 }]);
    await expect(redriveTask(ctx, 't_fakefakefakefakefakefakefa')).rejects.toBeInstanceOf(
      InvalidTransitionError,
    );
  });
});

/** A live session of agent `a_x`, holding the fake task, as its item would give it. */
const sessionOf = (sessionId: string, overrides: Partial<AgentSession> = {}): AgentSession => ({
  ...sessionFromItem(
    sessionItem({
      agentId: 'a_x',
      sessionId,
      maxConcurrency: 1,
      startedAt: NOW - 1_000,
      heartbeatAt: NOW - 1_000,
      expiresAt: NOW + 30_000,
      held: { t_fakefakefakefakefakefakefa: NOW },
    }),
  ),
  ...overrides,
});

describe('the owner’s session, read eventually consistent first', () => {
  const withSessions = (eventual: AgentSession | undefined, consistent: AgentSession | undefined) => {
    const { ctx, tasks } = fakeContext();
    const reads: string[] = [];
    (ctx as { sessions: object }).sessions = {
      ...ctx.sessions,
      get: async (_agentId: string, options: { consistent?: boolean } = {}) => {
        const isConsistent = options.consistent ?? true;
        reads.push(isConsistent ? 'consistent' : 'eventual');
        return isConsistent ? consistent : eventual;
      },
    };
    return { ctx, tasks, reads };
  };
  const leasedTo = async (tasks: FakeTaskStore, sessionId: string) => {
    await tasks.create(queuedTask(), NOW);
    const granted = await tasks.grant(
      't_fakefakefakefakefakefakefa',
      { queue: 'work', agentId: 'a_x', sessionId },
      NOW,
    );
    if (!granted.ok) throw new Error('the grant did not land');
    return granted.task;
  };
  const lease = { agentId: 'a_x', taskId: 't_fakefakefakefakefakefakefa', leaseEpoch: 1 };

  it('completes on the eventually consistent read alone when it shows the session live', async () => {
    const { ctx, tasks, reads } = withSessions(sessionOf('s_new'), sessionOf('s_new'));
    await leasedTo(tasks, 's_new');
    const { task } = await completeTask(ctx, lease, { ok: 1 });
    expect(task.status).toBe('succeeded');
    expect(reads).toEqual(['eventual']);
  });

  it('does not refuse on an old copy that shows the session expired: the consistent read decides', async () => {
    const { ctx, tasks, reads } = withSessions(
      sessionOf('s_new', { expiresAt: NOW - 1 }),
      sessionOf('s_new'),
    );
    await leasedTo(tasks, 's_new');
    const { task } = await completeTask(ctx, lease, { ok: 1 });
    expect(task.status).toBe('succeeded');
    expect(reads).toEqual(['eventual', 'consistent']);
  });

  it('an old copy naming the agent’s previous session: the write refused on it is decided again on a consistent read', async () => {
    const { ctx, tasks, reads } = withSessions(sessionOf('s_old'), sessionOf('s_new'));
    await leasedTo(tasks, 's_new');
    const { task } = await completeTask(ctx, lease, { ok: 1 });
    expect(task.status).toBe('succeeded');
    expect(reads).toEqual(['eventual', 'consistent']);
  });

  it('a lease truly lost costs no second read', async () => {
    const { ctx, tasks, reads } = withSessions(sessionOf('s_new'), sessionOf('s_new'));
    await leasedTo(tasks, 's_new');
    await expect(completeTask(ctx, { ...lease, leaseEpoch: 2 }, { ok: 1 })).rejects.toMatchObject({
      code: 'LeaseLost',
    });
    expect(reads).toEqual(['eventual']);
  });
});
