/**
 * What a Worker records for a task whose handler snoozed it, when the server refuses the snooze and the answer to
 * the failure sent instead is lost: the failure is sent again (the server answers a repeated failure with the one it
 * recorded), never the snooze, which the task's lease, ended by the failure, would refuse as lost.
 */
import { describe, expect, it, vi } from 'vitest';
import type { AgentSchedulerClient } from '#sdk/client';
import { AgentSchedulerError, LeaseLostError, NetworkError } from '#sdk/errors';
import { RunningTask } from '#sdk/running-task';
import { TaskOutcomes } from '#sdk/task-outcomes';
import type { ClaimedTask } from '#sdk/types';
import { Snooze } from '#sdk/worker-events';

const task: ClaimedTask = {
  taskId: `t_${'a'.repeat(26)}`,
  queue: 'q',
  priority: 'normal',
  payload: {},
  attempt: 1,
  leaseEpoch: 1,
  leaseDeadline: new Date(Date.now() + 60_000).toISOString(),
  timeoutSeconds: 60,
};

describe('a snooze refused, its failure’s answer lost', () => {
  it('sends the failure again, not the snooze, and reports the task failed', async () => {
    // Prepare: the first release is refused for the task's snoozes; the failure sent instead commits but its answer
    // is lost; from then on the task is no longer leased, so a release is refused as lost and a failure replayed.
    let released = 0;
    let failed = 0;
    const client = {
      release: vi.fn(async () => {
        released++;
        if (released === 1) {
          throw new AgentSchedulerError({ status: 409, code: 'SnoozeLimitReached', message: 'no more' });
        }
        throw new LeaseLostError({ status: 409, code: 'LeaseLost', message: 'the task is queued' });
      }),
      fail: vi.fn(async () => {
        failed++;
        if (failed === 1) throw new NetworkError({ status: 0, code: 'NetworkError', message: 'answer lost' });
        return { taskId: task.taskId };
      }),
    } as unknown as AgentSchedulerClient;
    const events: string[] = [];
    const outcomes = new TaskOutcomes({
      client,
      attemptTimeoutMs: () => 1_000,
      sessionGone: () => undefined,
      carryClaim: () => undefined,
      emit: (event: string, ..._args: unknown[]) => {
        events.push(event);
      },
      report: () => undefined,
    });
    const entry = new RunningTask(task, 's_1', { claimSentAt: Date.now(), marginMs: 0 }, () => undefined);

    // Act
    await outcomes.record(entry, { ok: true, value: new Snooze(30) });
    entry.dispose();

    // Assess
    expect(events).toEqual(['failed']);
    expect(released).toBe(1);
    expect(failed).toBe(2);
    expect(client.fail).toHaveBeenLastCalledWith(
      task.taskId,
      expect.objectContaining({ retryAfterSeconds: 30 }),
      expect.anything(),
    );
  });
});
