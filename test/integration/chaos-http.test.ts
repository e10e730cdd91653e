/**
 * The chaos run through the HTTP edge and SDK Workers, and its negative controls: a mutant switched on for a
 * short run must be caught by the checker of what ran on the agents.
 */
import { describe, expect, inject, it } from 'vitest';
import { runHttpChaos } from '../../chaos/run-http-chaos';

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
      lostCount: 0,
      neverTerminalCount: 0,
      violations: 0,
    });
    for (const kind of ['unavailableBeforeDelivery', 'answerLost', 'requestHung', 'supervisorDoubled'])
      expect(report.faults[kind]).toBeGreaterThan(0);
  }, 180_000);

  // The first form of this mutant (a heartbeat that does not get through taken as answered) is no longer one: the
  // Worker reckons its leases from send times, so a late acknowledgement extends nothing and the handler is
  // aborted anyway. The form that switches the reckoning off (plantIgnoreLocalExpiry) keeps a run from stopping
  // within the test's time on two cores; it waits for a run whose cut-off agents stop promptly.
  it.todo('catches the mutant ignoreLocalExpiry');

  // TODO(issue 14, after the merge of claim ids): run shortRun({ mutateScheduler: claimWithoutClaimId }) from
  // #test/mutants and expect executionOverlapCount > 0; today a claim has no id for the mutant to drop.
  it.todo('catches the mutant claimWithoutClaimId');
  // TODO(issue 14, after the merge of epoch-fenced checkpoints): a mutant that drops the epoch from the
  // checkpoint's condition, caught as a checkpoint written by a superseded epoch; today checkpoints carry none.
  it.todo('catches the mutant checkpointWithoutEpoch');
});
