/**
 * What a Worker records for a task whose handler snoozed or suspended it, when the server refuses the snooze and the
 * answer to the failure sent instead is lost: the failure is sent again (the server answers a repeated failure with
 * the one it recorded), never the snooze, which the task's lease, ended by the failure, would refuse as lost. A
 * suspension goes with the handler's latest checkpoint, is sent again when its answer is lost, and becomes a failure
 * when refused.
 */
import { describe, expect, it, vi } from 'vitest';
import type { AgentSchedulerClient } from '#sdk/client';
import { AgentSchedulerError, LeaseLostError, NetworkError } from '#sdk/errors';
import { RunningTask } from '#sdk/running-task';
import { suspension } from '#sdk/suspension';
import { TaskOutcomes } from '#sdk/task-outcomes';
import type { ClaimedTask, WaitResult } from '#sdk/types';
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

/** Outcomes recorded through `client`, the events they emit and the errors they report collected. */
function outcomesWith(client: Partial<AgentSchedulerClient>) {
  const events: string[] = [];
  const reported: unknown[] = [];
  const outcomes = new TaskOutcomes({
    client: client as AgentSchedulerClient,
    attemptTimeoutMs: () => 1_000,
    sessionGone: () => undefined,
    carryClaim: () => undefined,
    emit: (event: string, ..._args: unknown[]) => {
      events.push(event);
    },
    report: (error) => reported.push(error),
  });
  const entry = new RunningTask(task, 's_1', { claimSentAt: Date.now(), marginMs: 0 }, () => undefined);
  return { outcomes, entry, events, reported };
}

const waitResult = { callbackUrl: 'https://api.example/v1/callbacks/w_x.secret' } as WaitResult;

describe('a suspension', () => {
  it('goes with the latest unsent checkpoint, is sent again when its answer is lost, and hands the URL on once', async () => {
    // Prepare: the first wait commits but its answer is lost.
    const wait = vi
      .fn()
      .mockRejectedValueOnce(new NetworkError({ status: 0, code: 'NetworkError', message: 'answer lost' }))
      .mockResolvedValueOnce(waitResult);
    const fail = vi.fn();
    const { outcomes, entry, events } = outcomesWith({ wait, fail });
    entry.setCheckpoint({ step: 3 });
    const handedOn: string[] = [];

    // Act
    await outcomes.record(entry, {
      ok: true,
      value: suspension({
        timeoutSeconds: 3_599.5,
        onTimeout: 'fail',
        onSuspended: ({ callbackUrl }) => {
          handedOn.push(callbackUrl);
        },
      }),
    });
    entry.dispose();

    // Assess
    expect(wait).toHaveBeenCalledTimes(2);
    expect(wait).toHaveBeenLastCalledWith(
      task.taskId,
      { leaseEpoch: 1, timeoutSeconds: 3_600, onTimeout: 'fail', checkpoint: { step: 3 } },
      expect.anything(),
    );
    expect(fail).not.toHaveBeenCalled();
    expect(events).toEqual(['suspended']);
    expect(handedOn).toEqual([waitResult.callbackUrl]);
  });

  it('refused by the server fails the attempt, and a lost answer to that failure sends the failure again', async () => {
    const wait = vi.fn(async () => {
      throw new AgentSchedulerError({
        status: 400,
        code: 'ValidationError',
        message: 'waitpoints need taskLayout 3',
      });
    });
    const fail = vi
      .fn()
      .mockRejectedValueOnce(new NetworkError({ status: 0, code: 'NetworkError', message: 'answer lost' }))
      .mockResolvedValueOnce({ taskId: task.taskId });
    const { outcomes, entry, events } = outcomesWith({ wait, fail });

    await outcomes.record(entry, { ok: true, value: suspension({ timeoutSeconds: 60 }) });
    entry.dispose();

    expect(wait).toHaveBeenCalledTimes(1);
    expect(fail).toHaveBeenCalledTimes(2);
    expect(fail).toHaveBeenLastCalledWith(
      task.taskId,
      expect.objectContaining({
        error: expect.objectContaining({ message: expect.stringContaining('taskLayout 3') }),
      }),
      expect.anything(),
    );
    expect(events).toEqual(['failed']);
  });

  it('whose onSuspended throws is reported, the task suspended all the same', async () => {
    const { outcomes, entry, events, reported } = outcomesWith({ wait: vi.fn(async () => waitResult) });

    await outcomes.record(entry, {
      ok: false,
      error: suspension({
        timeoutSeconds: 60,
        onSuspended: () => {
          throw new Error('the chat is down');
        },
      }),
    });
    entry.dispose();

    expect(events).toEqual(['suspended']);
    expect(String(reported[0])).toContain('onSuspended');
  });

  it('is refused in the handler for options the server would refuse', () => {
    expect(() => suspension({ timeoutSeconds: 0 })).toThrow(RangeError);
    expect(() => suspension({ timeoutSeconds: 30 * 86_400 + 1 })).toThrow(RangeError);
    expect(() => suspension({ timeoutSeconds: Number.NaN })).toThrow(RangeError);
    expect(() => suspension({ timeoutSeconds: 60, onTimeout: 'retry' as 'fail' })).toThrow(TypeError);
    expect(() => suspension({ timeoutSeconds: 60, checkpoint: 'x'.repeat(16 * 1024) })).toThrow(RangeError);
    expect(() => suspension({ timeoutSeconds: 60, checkpoint: 1n })).toThrow(TypeError);
    expect(suspension({ timeoutSeconds: 30 * 86_400 }).options.timeoutSeconds).toBe(30 * 86_400);
  });
});

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
