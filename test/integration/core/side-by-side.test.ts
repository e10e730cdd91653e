/**
 * The released functions beside the current ones, on the same tables: during a deploy the functions are replaced
 * one by one, and after a rollback the released ones read what the current ones wrote. A record the released code
 * cannot read right must make it fail (the call is retried and served by a current function), never answer wrong.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadReleasedFunctions } from '#test/released-sdk';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

/** What these tests use of the released scheduler. */
interface ReleasedScheduler {
  claim(input: {
    agentId: string;
    sessionId: string;
    max?: number;
    claimId?: string;
  }): Promise<{ taskId: string; leaseEpoch: number; dependencies?: Record<string, unknown> }[]>;
  complete(
    lease: { agentId: string; taskId: string; leaseEpoch: number },
    result?: unknown,
  ): Promise<unknown>;
  submit(input: unknown): Promise<{ task: { taskId: string } }>;
}

describe('the released functions beside the current ones', () => {
  let stack: TestStack;
  let dir: string;
  let released: ReleasedScheduler;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'released-functions-'));
    // The first deploy of an upgrade from a release before layout 2: the current functions write layout 1, which
    // the released ones read (`taskLayout`, `docs/deploying.md`, "Upgrades").
    // So too for `queueSlotLayout`: with 1, a limit's slots stay in the one item the released functions read.
    stack = await createTestStack({
      queues: ['side', 'limited'],
      settings: { taskLayout: 1, queueSlotLayout: 1 },
    });
    const { createContext, Scheduler } = await loadReleasedFunctions<unknown, ReleasedScheduler>(dir);
    released = new Scheduler(
      createContext({ dynamodb: stack.dynamodb, sqs: stack.sqs, ...stack.wiring, now: stack.clock.now }),
    );
  }, 60_000);
  afterAll(async () => {
    await stack.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A dependency and its dependent; the dependency is claimed, then completed by `complete`. */
  async function dependencySucceeded(
    complete: (lease: { agentId: string; taskId: string; leaseEpoch: number }) => Promise<unknown>,
  ) {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['side'], maxConcurrency: 5 });
    const { task: dependency } = await scheduler.submit({ queue: 'side', payload: { step: 1 } });
    const { task: dependent } = await scheduler.submit({
      queue: 'side',
      payload: { step: 2 },
      dependsOn: [dependency.taskId],
    });
    const [first] = await claimUntil(scheduler, agent, 1, 3_000);
    await complete({ agentId: agent.agentId, taskId: dependency.taskId, leaseEpoch: first?.leaseEpoch ?? 0 });
    return { agent, dependency, dependent };
  }

  it('with taskLayout 1, a task either side submits is claimed by the other with its payload, and listed', async () => {
    const { scheduler } = stack;
    const agent = await startAgent(scheduler, { queues: ['side'], maxConcurrency: 5 });
    const { task: current } = await scheduler.submit({ queue: 'side', payload: { by: 'current' } });
    const { task: old } = await released.submit({ queue: 'side', payload: { by: 'released' } });

    const byReleased = [];
    for (let i = 0; i < 50 && byReleased.length === 0; i++) byReleased.push(...(await released.claim(agent)));
    const byCurrent = await claimUntil(scheduler, agent, 1, 3_000);

    expect(
      [...byReleased, ...byCurrent].map((t) => [t.taskId, (t as { payload?: unknown }).payload]).sort(),
    ).toEqual(
      [
        [current.taskId, { by: 'current' }],
        [old.taskId, { by: 'released' }],
      ].sort(),
    );
    const listed = (await scheduler.listTasks({ queue: 'side', limit: 100 })).tasks.map((t) => t.taskId);
    expect(listed).toEqual(expect.arrayContaining([current.taskId, old.taskId]));
  });

  it('with queueSlotLayout 1, released and current claims together hold at most a limit of 30', async () => {
    // Prepare: 40 tasks under a limit of 30; an agent of each side.
    const { scheduler } = stack;
    await scheduler.setQueueLimits('limited', { maxConcurrency: 30 });
    for (let i = 0; i < 40; i++) await scheduler.submit({ queue: 'limited', payload: { i } });
    const agents = await Promise.all(
      ['old', 'new'].map((name) => startAgent(scheduler, { name, queues: ['limited'], maxConcurrency: 40 })),
    );

    // Act: both claim in turns until neither gets more.
    const leases: { taskId: string; leaseEpoch: number }[] = [];
    for (let round = 0, got = 1; round < 40 && (got > 0 || round < 10); round++) {
      const [byOld, byNew] = await Promise.all([
        released.claim({ ...(agents[0] ?? { agentId: '', sessionId: '' }), max: 5 }),
        scheduler.claim({ ...(agents[1] ?? { agentId: '', sessionId: '' }), max: 5 }),
      ]);
      got = byOld.length + byNew.length;
      leases.push(...byOld, ...byNew);
    }

    // Assess
    expect(leases).toHaveLength(30);
    expect(new Set(leases.map((l) => l.taskId)).size).toBe(30);
  });

  it('a released claim never hands a dependent its dependency’s outcome without the result kept once for it', async () => {
    // Prepare: a dependency that succeeds with a result; its dependent's input names the result kept once.
    const result = { summary: 'x'.repeat(2_000) };
    const { agent, dependency, dependent } = await dependencySucceeded((lease) =>
      stack.scheduler.complete(lease, result),
    );
    const { scheduler } = stack;

    // Act: the released claim function serves the dependent's claim first; the call is then retried (same claim
    // id), as the SDK retries a claim that failed, and a current function serves it.
    const claimId = 'claim-side-by-side-1';
    let releasedAnswer: Awaited<ReturnType<ReleasedScheduler['claim']>> | undefined;
    let releasedError: unknown;
    for (let i = 0; i < 50 && releasedAnswer === undefined && releasedError === undefined; i++) {
      await released.claim({ ...agent, claimId }).then(
        (answer) => {
          if (answer.length > 0) releasedAnswer = answer;
        },
        (error: unknown) => {
          releasedError = error;
        },
      );
    }
    const retried = await scheduler.claim({ ...agent, claimId });

    // Assess: the released function failed rather than answer without the result; the retry carries it.
    expect(releasedAnswer).toBeUndefined();
    expect(releasedError).toBeInstanceOf(Error);
    expect(retried).toEqual([
      expect.objectContaining({
        taskId: dependent.taskId,
        dependencies: { [dependency.taskId]: { status: 'succeeded', result } },
      }),
    ]);
  });

  it('a dependency completed by a released function hands its result to the dependent claimed by a current one', async () => {
    // Prepare: the released complete function copies the result into the dependent's input.
    const result = { summary: 'y'.repeat(2_000) };
    const { agent, dependency, dependent } = await dependencySucceeded((lease) =>
      released.complete(lease, result),
    );
    const { scheduler } = stack;

    // Act
    const claimed = await claimUntil(scheduler, agent, 1, 3_000);

    // Assess
    expect(claimed).toEqual([
      expect.objectContaining({
        taskId: dependent.taskId,
        dependencies: { [dependency.taskId]: { status: 'succeeded', result } },
      }),
    ]);
  });
});
