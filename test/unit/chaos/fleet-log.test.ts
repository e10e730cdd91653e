/**
 * The fleet's execution logs read into the chaos run's history (`chaos/fleet-log.ts`), on hand-written logs: a
 * killed process's handlers end at the kill, a finished handler whose outcome was never told is a lost result
 * unless its process was killed, a run after the task's success was decided is counted, and a line is read only
 * once it is whole.
 */
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { emptyHistory } from '../../../chaos/committed-writes';
import { type FleetLogLine, FleetLogs, runsAfterCommit } from '../../../chaos/fleet-log';
import { checkAgentSide, type Execution, type RoleHolding } from '../../../chaos/history';
import type { CheckedRun } from '../../../chaos/http-report';
import { digestOf } from '../../../chaos/http-workload';

/** What `FleetLogs` folds the lines into: the parts of a run it writes. */
function recordingRun() {
  const children: string[] = [];
  const run = {
    executions: [] as Execution[],
    holdings: [] as RoleHolding[],
    history: emptyHistory(),
    workload: {
      results: new Map<string, string>(),
      onChildren: (ids: readonly string[]) => children.push(...ids),
      onChildMismatch: () => undefined,
    },
  };
  return { run, children, checked: run as unknown as CheckedRun };
}

describe('the fleet logs', () => {
  let dir: string;
  const write = (name: string, ...lines: FleetLogLine[]) =>
    appendFileSync(join(dir, `${name}.jsonl`), lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
  const lease = { taskId: 't_1', leaseEpoch: 1 };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'fleet-log-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Logs of agents a (Python) and b (TypeScript), read by a `FleetLogs`. */
  function logsOf() {
    const recorded = recordingRun();
    const logs = new FleetLogs(recorded.checked);
    logs.add({ name: 'a', agentId: 'a_a', language: 'python', logPath: join(dir, 'a.jsonl') });
    logs.add({ name: 'b', agentId: 'b_b', language: 'typescript', logPath: join(dir, 'b.jsonl') });
    return { ...recorded, logs };
  }

  it('reads executions, results, outcomes and children into the history', () => {
    // Prepare
    const { run, children, logs } = logsOf();
    write(
      'a',
      { type: 'ready', at: 1, language: 'python', pid: 1 },
      { type: 'start', at: 10, ...lease, attempt: 1 },
      { type: 'children', at: 12, taskId: 't_1', ids: ['t_c'] },
      { type: 'end', at: 20, ...lease, how: 'returned', result: { n: 't_1' } },
      { type: 'completed', at: 25, ...lease },
      { type: 'stopped', at: 30 },
    );
    // Act
    logs.poll();
    // Assess
    expect(run.executions).toMatchObject([{ ...lease, agent: 'a', start: 10, end: 20, succeededAt: 25 }]);
    expect(run.workload.results.get('t_1#1')).toBe(digestOf({ n: 't_1' }));
    expect(run.history.calls).toEqual([{ op: 'complete', agentId: 'a_a', ...lease, at: 25, outcome: 'ok' }]);
    expect(children).toEqual(['t_c']);
    expect([logs.ready('a'), logs.stopped('a'), logs.ready('b')]).toEqual([true, true, false]);
    expect(logs.executionsBy()).toEqual({ python: 1 });
    expect(logs.lostResults()).toEqual([]);
  });

  it('reads a line only once it is whole', () => {
    const { run, logs } = logsOf();
    const line = JSON.stringify({ type: 'start', at: 10, ...lease, attempt: 1 });
    appendFileSync(join(dir, 'a.jsonl'), line.slice(0, 20));
    logs.poll();
    expect(run.executions).toEqual([]);
    appendFileSync(join(dir, 'a.jsonl'), `${line.slice(20)}\n`);
    logs.poll();
    expect(run.executions).toHaveLength(1);
    expect(logs.unreadable).toBe(0);
  });

  it('ends a killed process’s handlers at the kill: no overlap with the next holder of the task', () => {
    const { run, logs } = logsOf();
    write('a', { type: 'start', at: 10, ...lease, attempt: 1 });
    write('b', { type: 'start', at: 5_000, taskId: 't_1', leaseEpoch: 2, attempt: 2 });
    logs.poll();
    // Never ended: the run's end is its end, and it overlaps b's.
    expect(checkAgentSide(run.executions, [], 10_000).executionOverlapCount).toBe(1);
    logs.killed('a', 100);
    expect(run.executions[0]?.end).toBe(100);
    expect(checkAgentSide(run.executions, [], 10_000).executionOverlapCount).toBe(0);
  });

  it('finds a finished handler whose outcome was never told, unless its process was killed', () => {
    const { logs } = logsOf();
    write(
      'a',
      { type: 'start', at: 10, ...lease, attempt: 1 },
      { type: 'end', at: 20, ...lease, how: 'returned', result: null },
      { type: 'start', at: 30, taskId: 't_2', leaseEpoch: 1, attempt: 1 },
      { type: 'end', at: 40, taskId: 't_2', leaseEpoch: 1, how: 'threw' },
      { type: 'lost', at: 45, taskId: 't_2', leaseEpoch: 1, reason: 'expired' },
      { type: 'start', at: 50, taskId: 't_3', leaseEpoch: 1, attempt: 1 },
      { type: 'end', at: 60, taskId: 't_3', leaseEpoch: 1, how: 'aborted' },
      { type: 'stopped', at: 70 },
    );
    write(
      'b',
      { type: 'start', at: 10, taskId: 't_4', leaseEpoch: 1, attempt: 1 },
      { type: 'end', at: 20, taskId: 't_4', leaseEpoch: 1, how: 'returned', result: null },
    );
    logs.poll();
    logs.killed('b', 25);
    expect(logs.lostResults()).toEqual([{ agent: 'a', ...lease, how: 'returned', endedAt: 20 }]);
    expect(logs.untoldAtKill()).toBe(1);
  });

  it('counts a handler started after its task’s success was decided', () => {
    const history = emptyHistory();
    history.tasks.push(
      { at: 100, taskId: 't_1', status: 'leased', leaseEpoch: 1 },
      { at: 200, taskId: 't_1', status: 'succeeded', leaseEpoch: 1 },
    );
    const details: string[] = [];
    const run = (start: number): Execution => ({ ...lease, agent: 'a', start });
    expect(runsAfterCommit([run(150), run(200)], history.tasks, details)).toBe(0);
    expect(runsAfterCommit([run(150), run(201)], history.tasks, details)).toBe(1);
    expect(details).toHaveLength(1);
  });
});
