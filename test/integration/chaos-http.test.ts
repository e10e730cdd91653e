/**
 * The chaos run through the HTTP edge and SDK Workers, and its negative controls: a mutant switched on for a
 * short run must be caught by the checker of what ran on the agents.
 */
import { describe, expect, inject, it } from 'vitest';
import { AgentSchedulerError } from '#sdk/errors';
import type { WorkerOptions } from '#sdk/worker';
import { type HttpChaosOptions, runHttpChaos } from '../../chaos/run-http-chaos';

const endpoints = { dynamodb: inject('dynamodbEndpoint'), sqs: inject('sqsEndpoint') };

/**
 * An SDK that ignores its local expiry: a heartbeat that does not get through is taken as answered, so the
 * Worker keeps believing in its leases after the server has ended them.
 */
function ignoreLocalExpiry(options: WorkerOptions): WorkerOptions {
  const client = Object.create(options.client) as WorkerOptions['client'];
  client.heartbeat = (input) =>
    options.client.heartbeat(input).catch((error: unknown) => {
      if (error instanceof AgentSchedulerError && error.status >= 400 && error.status < 500) throw error;
      return { cancelled: [], lost: [], roles: { picked: [], lost: [] } };
    });
  return { ...options, client };
}

describe('chaos through HTTP and the SDK', () => {
  it('300 tasks, 10 agents under faults: no violation on either side', async () => {
    // TODO(issue 14, item 8): no agent is cut off while its handler outlives the lease, since today's SDK keeps
    // the handler running past its local expiry (the ignoreLocalExpiry mutant below is today's behaviour);
    // drop `cutOffShare: 0` once the SDK aborts handlers at local expiry.
    const report = await runHttpChaos({
      tasks: 300,
      agents: 10,
      seed: 7,
      endpoints,
      drainTimeoutMs: 90_000,
      cutOffShare: 0,
    });
    console.log(`chaos http: ${JSON.stringify(report)}`);
    expect(report).toMatchObject({
      executionOverlapCount: 0,
      runAfterSuccessCount: 0,
      roleOverlapCount: 0,
      lostCount: 0,
      neverTerminalCount: 0,
      violations: 0,
    });
    expect(report.staleRejectedCount).toBeGreaterThan(0);
    for (const kind of ['unavailableBeforeDelivery', 'answerLost', 'requestHung', 'supervisorDoubled'])
      expect(report.faults[kind]).toBeGreaterThan(0);
  }, 180_000);

  const shortRun = (options: Partial<HttpChaosOptions>) =>
    runHttpChaos({ tasks: 100, agents: 8, seed: 11, endpoints, drainTimeoutMs: 60_000, ...options });

  it('catches the mutant ignoreLocalExpiry', async () => {
    const report = await shortRun({ mutateWorker: ignoreLocalExpiry, cutOffShare: 0.2 });
    console.log(`mutant ignoreLocalExpiry: ${JSON.stringify(report)}`);
    expect(report.executionOverlapCount).toBeGreaterThan(0);
  }, 180_000);

  // TODO(issue 14, after the merge of claim ids): run shortRun({ mutateScheduler: claimWithoutClaimId }) from
  // #test/mutants and expect executionOverlapCount > 0; today a claim has no id for the mutant to drop.
  it.todo('catches the mutant claimWithoutClaimId');
  // TODO(issue 14, after the merge of epoch-fenced checkpoints): a mutant that drops the epoch from the
  // checkpoint's condition, caught as a checkpoint written by a superseded epoch; today checkpoints carry none.
  it.todo('catches the mutant checkpointWithoutEpoch');
});
