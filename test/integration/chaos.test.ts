/**
 * The chaos run in the suite: 1,000 tasks under every fault with no violation, and the negative controls: each
 * mutant, switched on for a short run, is caught by the history checker.
 */
import { describe, expect, inject, it } from 'vitest';
import { Expression } from '#adapters/expression';
import { applyMutant, type Mutant, written } from '#test/mutants';
import type { WiredContext } from '#wiring/context';
import { type ChaosOptions, runChaos } from '../../chaos/run-chaos';

const endpoints = { dynamodb: inject('dynamodbEndpoint'), sqs: inject('sqsEndpoint') };

/** A supervisor that is slow between reading a lease and taking it back, as a paused function would be. */
function slowSweeps(ctx: WiredContext): void {
  const update = ctx.tasks.update.bind(ctx.tasks);
  ctx.tasks.update = async (taskId, build) => {
    // A dry build tells a take-back (its error says the lease expired) from the other writes.
    const dry = new Expression();
    const error = written(dry, build(dry).set, 'error') as { message?: string } | undefined;
    if (error?.message?.startsWith('lease expired'))
      await new Promise((resolve) => setTimeout(resolve, 1_500));
    return update(taskId, build);
  };
}

describe('chaos', () => {
  it('1,000 tasks under faults: no violation, and more than 100 stale writes refused', async () => {
    const report = await runChaos({ tasks: 1_000, agents: 20, seed: 7, endpoints, drainTimeoutMs: 90_000 });
    console.log(`chaos: ${JSON.stringify(report)}`);
    expect(report).toMatchObject({
      overlapCount: 0,
      nonMonotonicEpochCount: 0,
      staleAcceptedCount: 0,
      duplicateTerminalCount: 0,
      phantomOkCount: 0,
      duplicateFireCount: 0,
      lostCount: 0,
      neverTerminalCount: 0,
      violations: 0,
    });
    // Every paused agent's three late writes (complete, fail, release) are among those refused.
    expect(report.staleRejectedCount).toBeGreaterThanOrEqual(
      Math.max(100, 3 * (report.faults.agentPause ?? 0)),
    );
    for (const kind of [
      'agentCrash',
      'agentPause',
      'dynamodbTimeoutAfterCommit',
      'dynamodbThrottledBeforeSend',
      'sqsSendLost',
      'sqsDuplicateDelivery',
      'supervisorDoubled',
      'scheduleFireDuplicated',
    ]) {
      expect(report.faults[kind]).toBeGreaterThan(0);
    }
  }, 180_000);

  /** A short run: 100 tasks, 8 agents, half the supervisor ticks doubled. */
  const shortRun = (options: Partial<ChaosOptions>) =>
    runChaos({
      tasks: 100,
      agents: 8,
      seed: 11,
      endpoints,
      supervisorDoubling: 0.5,
      drainTimeoutMs: 20_000,
      ...options,
    });

  it('a slow supervisor alone breaks nothing (the control for the sweep mutant)', async () => {
    // The control must end everything: it gets the drain time a loaded machine may need.
    const report = await shortRun({ mutate: slowSweeps, drainTimeoutMs: 60_000 });
    console.log(`control: ${JSON.stringify(report)}`);
    expect(report.violations).toBe(0);
  }, 120_000);

  it('a workflow of 150 tasks under the faults: every dependency succeeded before its dependent started, every failure cascaded', async () => {
    const report = await shortRun({ dag: 150, drainTimeoutMs: 60_000 });
    console.log(`dag: ${JSON.stringify(report)}`);
    expect(report).toMatchObject({
      prematureStartCount: 0,
      cascadeViolationCount: 0,
      neverTerminalCount: 0,
      violations: 0,
    });
    expect(report.joins).toBeGreaterThan(20);
    expect(report.dagEnds?.succeeded).toBeGreaterThan(0);
  }, 120_000);

  const mutants: [string, Partial<ChaosOptions>][] = [
    ...(
      ['completeWithoutEpoch', 'heartbeatRevivesExpiredLease', 'terminalThenRequeueInTwoWrites'] as Mutant[]
    ).map((mutant): [string, Partial<ChaosOptions>] => [
      mutant,
      { mutate: (ctx) => applyMutant(ctx, mutant) },
    ]),
    [
      'sweepWithoutEpoch',
      {
        mutate: (ctx) => {
          slowSweeps(ctx);
          applyMutant(ctx, 'sweepWithoutEpoch');
        },
      },
    ],
    [
      // A dependent is released by its first dependency's end, as if that were all it waited for.
      'unblockAtFirstDependency',
      {
        dag: 150,
        mutate: (ctx) => {
          const strike = ctx.tasks.strikeDependency.bind(ctx.tasks);
          ctx.tasks.strikeDependency = async (taskId, dependencyId) => {
            const struck = await strike(taskId, dependencyId);
            if (!struck.ok) return struck;
            for (const other of struck.task.waitingOn ?? []) await strike(taskId, other);
            return { ok: true, task: { ...struck.task, waitingOn: [] } };
          };
        },
      },
    ],
    [
      // Each delivery of an occurrence is told apart by its execution id, as if the ledger were keyed by it.
      'scheduleDedupeByExecutionId',
      {
        mutateFire: (fire) => ({
          ...fire,
          scheduledTime: new Date(
            Date.parse(fire.scheduledTime) + Number(fire.executionId.split('-')[2]) * 1_000,
          ).toISOString(),
        }),
      },
    ],
  ];
  it.each(mutants)(
    'catches the mutant %s',
    async (mutant, options) => {
      // A mutant shows when a fault lands in its window; on a loaded machine one short run may miss it, so up to
      // three seeds are tried. A mutant is caught when any run sees a violation; the correct code sees none in any.
      let violations = 0;
      for (const seed of [11, 12, 13]) {
        const report = await shortRun({ seed, ...options });
        console.log(
          `mutant ${mutant}, seed ${seed}: ${report.violations} violations ${JSON.stringify(report)}`,
        );
        violations = report.violations;
        if (violations > 0) break;
      }
      expect(violations).toBeGreaterThan(0);
    },
    240_000,
  );
});
