/**
 * Chaos runs whose verdict is only that nothing breaks: the control for the sweep mutant of chaos.test.ts and a
 * workflow under the faults. A busy machine makes them slower, not wrong: what they count is writes the store
 * accepted against its rules, which no slowness makes it accept, and tasks left unfinished, for which each run has
 * a drain of 90 s, ended as soon as every task is (the whole runs took 31 s and 15 s in a full suite on two cores,
 * 54 s and 69 s beside a package build on a machine loaded twenty times over). So they run two files at a time
 * with the rest of the suite, not in the `timed` project beside the runs whose catches depend on where faults land
 * in time.
 */
import { describe, expect, inject, it } from 'vitest';
import { Expression } from '#adapters/expression';
import { written } from '#test/mutants';
import type { WiredContext } from '#wiring/context';
import type { ChaosOptions } from '../../chaos/run-chaos';
import { shortChaosRun } from '../helpers/short-chaos-run';

const endpoints = { dynamodb: inject('dynamodbEndpoint'), sqs: inject('sqsEndpoint') };

/**
 * A supervisor that is slow between reading a lease and taking it back, as a paused function would be: every
 * other take-back waits 1.5 s, so of two passes that read one lease, one takes it back at once and the other
 * lands after the task may have been granted again.
 */
function slowSweeps(ctx: WiredContext): void {
  const update = ctx.tasks.update.bind(ctx.tasks);
  let takeBacks = 0;
  ctx.tasks.update = async (taskId, build) => {
    // A dry build tells a take-back (its error says the lease expired) from the other writes.
    const dry = new Expression();
    const error = written(dry, build(dry).set, 'error') as { message?: string } | undefined;
    if (error?.message?.startsWith('lease expired') && takeBacks++ % 2 === 1)
      await new Promise((resolve) => setTimeout(resolve, 1_500));
    return update(taskId, build);
  };
}

describe('chaos without a mutant', () => {
  /**
   * Agents that work up to 1.5 s on a task (heartbeating), as long as a slow sweep waits between its read and its
   * write: a write decided under an earlier lease then lands while a later one holds the task.
   */
  const HOLDING = { workMs: 1_500 } as const;
  /** Waited for every task to end, once the faults are off; a run that needs more has left one unfinished. */
  const DRAIN_MS = 90_000;
  /** The drain, with the submissions and faults before it and the teardown after it: twice the drain. */
  const TIMEOUT_MS = 180_000;

  /** A short run: 100 tasks, 8 agents, half the supervisor ticks doubled. */
  const shortRun = (options: Partial<ChaosOptions>) => shortChaosRun(endpoints, options);

  it(
    'a slow supervisor alone breaks nothing (the control for the sweep mutant)',
    async () => {
      // The control must end everything: it gets the drain time a loaded machine may need.
      const report = await shortRun({ mutate: slowSweeps, ...HOLDING, drainTimeoutMs: DRAIN_MS });
      console.log(`control: ${JSON.stringify(report)}`);
      expect(report.violations).toBe(0);
    },
    TIMEOUT_MS,
  );

  it(
    'a workflow of 150 tasks under the faults: every dependency succeeded before its dependent started, every failure cascaded',
    async () => {
      const report = await shortRun({ dag: 150, drainTimeoutMs: DRAIN_MS });
      console.log(`dag: ${JSON.stringify(report)}`);
      expect(report).toMatchObject({
        prematureStartCount: 0,
        cascadeViolationCount: 0,
        neverTerminalCount: 0,
        violations: 0,
      });
      expect(report.joins).toBeGreaterThan(20);
      expect(report.dagEnds?.succeeded).toBeGreaterThan(0);
    },
    TIMEOUT_MS,
  );
});
