import { describe, expect, it } from 'vitest';
import type { AwsMeter } from '#adapters/aws-meter';
import type { AgentSchedulerClient } from '#sdk/client';
import { measureLifecycle } from '../../../bench/lifecycle-steps';

/**
 * A stack whose every claim reads the session (half a read unit) and hands out what the answers say, in order:
 * each answer is the number of tasks one claim gets. The claims numbered in `retried` (from 0) are served twice, as
 * a call the SDK sent again after its attempt timed out: twice the calls and the reads. Those in `refreshing`
 * read half a unit more, as a claim does whose process's copy of the queue controls is over 2 s old.
 */
function stackAnswering(answers: number[], retried: number[] = [], refreshing: number[] = []) {
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
  // Between lifecycles the queue is empty: an idle claim finds nothing, and is not numbered.
  let submitted = false;
  const idle = { claims: 0 };
  const operator = {
    submitTasks: async () => {
      submitted = true;
      api.calls++;
      return [];
    },
  } as unknown as AgentSchedulerClient;
  const client = {
    claim: async () => {
      if (!submitted) {
        idle.claims++;
        api.calls++;
        readUnits += 0.5;
        return { tasks: [] };
      }
      const served = retried.includes(claims) ? 2 : 1;
      api.calls += served;
      readUnits += 0.5 * served + (refreshing.includes(claims) ? 0.5 : 0);
      claims++;
      return { tasks: Array.from({ length: answers.shift() ?? 0 }, task) };
    },
    completeTasks: async (tasks: unknown[]) => {
      submitted = false;
      api.calls++;
      return tasks.map(() => ({ ok: true }));
    },
  } as unknown as AgentSchedulerClient;
  const parts = { meter, api, operator, agent: { client, sessionId: 's' }, payload: {}, queue: 'q' };
  return { parts, answers, idle };
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

  it('measures twice, and reports the cheaper: a read per process and interval is not part of a task', async () => {
    for (const refreshing of [[0], [1]]) {
      const { parts, answers, idle } = stackAnswering([10, 10], [], refreshing);
      const steps = await measureLifecycle(parts, 10);
      // Each lifecycle after an idle claim, which drops the session's stale entries and reads the controls.
      expect(idle.claims).toBe(2);
      expect(steps.claim.readUnits).toBe(0.05);
      expect(steps.lifecycle.readUnits).toBe(0.05);
      expect(answers).toEqual([]);
    }
  });

  it('gives up after ten disturbed lifecycles and reports the cheapest of them', async () => {
    const tenSplitClaims = Array.from({ length: 10 }, () => [9, 1]).flat();
    const { parts, answers } = stackAnswering([...tenSplitClaims, 10], [], [1, 3, 7, 11, 15, 19]);
    const steps = await measureLifecycle(parts, 10);
    expect(steps.claim.readUnits).toBe(0.1);
    expect(answers).toEqual([10]);
  });
});
