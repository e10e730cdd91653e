/**
 * When a payload is kept longer: only once its purge comes within the retention plus the guard of the time its
 * task is next claimable, and then as a submission at that time would be. Tasks written before the purge time was
 * recorded count it from their creation.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS, type SchedulerContext } from '#core/context';
import { keepPayloadFor, payloadKeptUntil } from '#core/lifetimes';
import type { Task } from '#domain/task';
import { FakePayloadStore } from '#test/fake-payload-store';
import { FakeTaskStore } from '#test/fake-task-store';

const CREATED = Date.UTC(2026, 10, 1);
const DAY_MS = 86_400_000;
const DAY = 86_400;

function setup(overrides: Partial<Task> = {}) {
  const tasks = new FakeTaskStore();
  const ctx = {
    tasks,
    payloads: new FakePayloadStore(tasks),
    settings: DEFAULT_SETTINGS,
  } as unknown as SchedulerContext;
  const task: Task = {
    taskId: 't_lifetimelifetimelifetimeli',
    queue: 'work',
    priority: 'normal',
    status: 'queued',
    attempt: 1,
    retryPolicy: { maxAttempts: 100, backoffBaseSeconds: 7 * DAY, backoffMaxSeconds: 7 * DAY },
    timeoutSeconds: 60,
    leaseEpoch: 1,
    dispatchCount: 1,
    specHash: 'h',
    payloadBytes: 2,
    createdAt: CREATED,
    updatedAt: CREATED,
    payloadPurgeAt: CREATED / 1_000 + 21 * DAY,
    ...overrides,
  };
  const keeps = () => tasks.writes.filter((w) => w.kind === 'keepPayload').length;
  return { ctx, tasks, task, keeps };
}

describe('keeping a payload longer', () => {
  it('writes nothing while the purge is more than the retention and 3.5 days past the next claimable time', async () => {
    const { ctx, tasks, task, keeps } = setup();
    await tasks.create(task, CREATED);
    expect(await keepPayloadFor(ctx, task, CREATED + 10.5 * DAY_MS)).toBe(task);
    expect(keeps()).toBe(0);
    const kept = await keepPayloadFor(ctx, task, CREATED + 10.6 * DAY_MS);
    expect(keeps()).toBe(1);
    const purgeAt = Math.ceil((CREATED + 10.6 * DAY_MS) / 1_000) + 21 * DAY;
    expect(kept.payloadPurgeAt).toBe(purgeAt);
    expect((await tasks.get(task.taskId))?.payloadPurgeAt).toBe(purgeAt);
    // The next keep is 10.5 days later again.
    await keepPayloadFor(ctx, kept, CREATED + 21 * DAY_MS);
    expect(keeps()).toBe(1);
  });

  it('a task written before the time was recorded counts its creation plus the queue age', async () => {
    const { ctx, tasks, task, keeps } = setup({ payloadPurgeAt: undefined });
    await tasks.create(task, CREATED);
    expect(payloadKeptUntil(DEFAULT_SETTINGS, task)).toBe(CREATED / 1_000 + 14 * DAY);
    await keepPayloadFor(ctx, task, CREATED + 3.5 * DAY_MS);
    expect(keeps()).toBe(0);
    await keepPayloadFor(ctx, task, CREATED + 3.6 * DAY_MS);
    expect(keeps()).toBe(1);
  });
});
