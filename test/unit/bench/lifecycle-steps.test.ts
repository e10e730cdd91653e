import { describe, expect, it } from 'vitest';
import type { AwsMeter } from '#adapters/aws-meter';
import type { AgentSchedulerClient } from '#sdk/client';
import { measureLifecycle } from '../../../bench/lifecycle-steps';

/**
 * A stack whose every claim reads the session (half a read unit) and hands out what the answers say, in order:
 * each answer is the number of tasks one claim gets. The claims numbered in `retried` (from 0) are served twice, as
 * a call the SDK sent again after its attempt timed out: twice the calls and the reads.
 */
function stackAnswering(answers: number[], retried: number[] = []) {
  let readUnits = 0;
  let serial = 0;
  let claims = 0;
  const api = { calls: 0 };
  const meter = {
    reset: () => {
      readUnits = 0;
    },
    totals: () => ({ writeUnits: 0, readUnits, indexWriteUnits: 0, requests: 0 }),
  } as unknown as AwsMeter;
  const task = () => ({ taskId: `t${serial++}`, leaseEpoch: 1 });
  const operator = {
    submitTasks: async () => {
      api.calls++;
      return [];
    },
  } as unknown as AgentSchedulerClient;
  const client = {
    claim: async () => {
      const served = retried.includes(claims++) ? 2 : 1;
      api.calls += served;
      readUnits += 0.5 * served;
      return { tasks: Array.from({ length: answers.shift() ?? 0 }, task) };
    },
    completeTasks: async (tasks: unknown[]) => {
      api.calls++;
      return tasks.map(() => ({ ok: true }));
    },
  } as unknown as AgentSchedulerClient;
  const parts = { meter, api, operator, agent: { client, sessionId: 's' }, payload: {}, queue: 'q' };
  return { parts, answers };
}

describe('measureLifecycle', () => {
  it('measures the claim of a batch as one claim: a batch that came in two claims is measured again', async () => {
    const { parts, answers } = stackAnswering([9, 1, 10]);
    const steps = await measureLifecycle(parts, 10);
    expect(steps.claim.readUnits).toBe(0.05);
    expect(answers).toEqual([]);
  });

  it('measures again a lifecycle whose claim the server served twice (a retry after a timed-out attempt)', async () => {
    const { parts, answers } = stackAnswering([10, 10], [0]);
    const steps = await measureLifecycle(parts, 10);
    expect(steps.claim.readUnits).toBe(0.05);
    expect(answers).toEqual([]);
  });

  it('gives up after three lifecycles and reports the last as it came', async () => {
    const { parts } = stackAnswering([9, 1, 9, 1, 9, 1, 10]);
    const steps = await measureLifecycle(parts, 10);
    expect(steps.claim.readUnits).toBe(0.1);
  });
});
