/**
 * The chaos run through the HTTP edge and SDK Workers, and its negative controls: a mutant switched on for a
 * short run must be caught by the checker of what ran on the agents.
 */
import { describe, expect, inject, it } from 'vitest';
import { checkpointWithoutFence, claimWithoutClaimId, ignoreLocalExpiry } from '#test/mutants';
import { type HttpChaosOptions, type HttpChaosReport, runHttpChaos } from '../../chaos/run-http-chaos';

const endpoints = { dynamodb: inject('dynamodbEndpoint'), sqs: inject('sqsEndpoint') };

describe('chaos through HTTP and the SDK', () => {
  it('300 tasks, 10 agents under faults: no violation on either side', async () => {
    const report = await runHttpChaos({
      tasks: 300,
      agents: 10,
      seed: 7,
      endpoints,
      drainTimeoutMs: 90_000,
    });
    console.log(`chaos http: ${JSON.stringify(report)}`);
    expect(report).toMatchObject({
      executionOverlapCount: 0,
      runAfterSuccessCount: 0,
      roleOverlapCount: 0,
      claimGrantedTwiceCount: 0,
      staleCheckpointCount: 0,
      overlapCount: 0,
      nonMonotonicEpochCount: 0,
      staleAcceptedCount: 0,
      duplicateTerminalCount: 0,
      phantomOkCount: 0,
      lostCount: 0,
      neverTerminalCount: 0,
      violations: 0,
    });
    for (const kind of [
      'unavailableBeforeDelivery',
      'answerLost',
      'requestHung',
      'deliveredLate',
      'supervisorDoubled',
    ])
      expect(report.faults[kind]).toBeGreaterThan(0);
  }, 180_000);

  /**
   * Short runs with a mutant planted, until one breaks the invariant the mutant is about: a mutant shows when a
   * fault lands in its window, which a loaded machine can shift, so up to five seeds are tried (a run that misses
   * takes 30 to 60 s). The run with the correct code above sees no violation at all.
   */
  const caught = async (
    mutant: string,
    invariant: keyof HttpChaosReport,
    options: Partial<HttpChaosOptions>,
  ): Promise<number> => {
    let seen = 0;
    for (const seed of [11, 12, 13, 14, 15]) {
      const report = await runHttpChaos({
        tasks: 100,
        agents: 4,
        seed,
        endpoints,
        drainTimeoutMs: 60_000,
        ...options,
      });
      console.log(`mutant ${mutant}, seed ${seed}: ${JSON.stringify(report)}`);
      seen = Number(report[invariant]);
      if (seen > 0) break;
    }
    return seen;
  };

  it('catches the mutant ignoreLocalExpiry: a cut-off agent runs on past its lease, beside the next holder', async () => {
    const overlaps = await caught('ignoreLocalExpiry', 'executionOverlapCount', {
      mutateWorkerInstance: ignoreLocalExpiry,
      cutOffShare: 0.05,
    });
    expect(overlaps).toBeGreaterThan(0);
  }, 400_000);

  it('catches the mutant claimWithoutClaimId: a claim retried after a lost answer is granted anew', async () => {
    const twice = await caught('claimWithoutClaimId', 'claimGrantedTwiceCount', {
      mutateScheduler: claimWithoutClaimId,
    });
    expect(twice).toBeGreaterThan(0);
  }, 400_000);

  it('catches the mutant checkpointWithoutFence: a late heartbeat overwrites the next holder’s progress', async () => {
    const stale = await caught('checkpointWithoutFence', 'staleCheckpointCount', {
      mutateContext: checkpointWithoutFence,
      tasks: 60,
      // Late heartbeats are what carry a checkpoint past the end of its lease.
      lateRoutes: ['/v1/agent/heartbeat'],
      lateShare: 0.5,
      lateDelayMs: { min: 2_000, max: 6_000 },
      longShare: 0.8,
      failShare: 0.5,
    });
    expect(stale).toBeGreaterThan(0);
  }, 400_000);
});
