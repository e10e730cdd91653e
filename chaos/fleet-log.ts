/**
 * The execution logs of the fleet's agent processes, and their reading into the HTTP chaos run's history.
 *
 * Each agent process, Python (`python/scripts/fleet_agent.py`) or TypeScript (`fleet-agent.ts`), appends one JSON
 * object a line to a file of its own, each written through to the file before the process goes on, so a SIGKILL
 * loses none: what its handlers ran (`start`, `end`: the task, the lease's epoch and attempt, how it ended and what
 * it returned), what its Worker told of each outcome (`completed`, `failed`, `lost`), the children its handlers
 * submitted, its role holdings, and `stopped` when it stopped of its own accord. The times are the machine's clock
 * in ms, the same for every process.
 *
 * `FleetLogs` reads the files as they grow and folds the lines into what the in-process run records itself
 * (`http-stack.ts`): executions, the digest of each result a handler returned, the completions and failures the
 * agents heard of, children, role holdings. The checks of `http-report.ts` then read them as they read an in-process
 * run's. What only processes need is checked here: an execution whose process was killed ended at the kill; a
 * handler that finished in a process that stopped of its own accord must have had its outcome told (completed,
 * failed, or lost); no handler may start after its task's success was decided on the server.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import type { Execution, RoleHolding, TaskVersion } from './history';
import type { CheckedRun } from './http-report';
import { digestOf } from './http-workload';

/** One line of an agent's log. */
export type FleetLogLine =
  | { readonly type: 'loaded'; readonly at: number }
  | { readonly type: 'ready'; readonly at: number; readonly language: string; readonly pid: number }
  | {
      readonly type: 'start';
      readonly at: number;
      readonly taskId: string;
      readonly leaseEpoch: number;
      readonly attempt: number;
    }
  | {
      readonly type: 'end';
      readonly at: number;
      readonly taskId: string;
      readonly leaseEpoch: number;
      /** Returned a result, threw, or was aborted (cancelled) by its Worker. */
      readonly how: 'returned' | 'threw' | 'aborted';
      readonly result?: unknown;
    }
  | {
      readonly type: 'completed' | 'failed' | 'lost';
      readonly at: number;
      readonly taskId: string;
      readonly leaseEpoch: number;
      readonly reason?: string;
    }
  | {
      readonly type: 'children';
      readonly at: number;
      readonly taskId: string;
      readonly ids: readonly string[];
    }
  | { readonly type: 'childMismatch'; readonly at: number; readonly detail: string }
  | {
      readonly type: 'roleStart' | 'roleEnd';
      readonly at: number;
      readonly role: string;
      readonly leaseEpoch: number;
    }
  | { readonly type: 'stopped'; readonly at: number };

/** A process of the fleet, as its log names it. */
export interface LoggedAgent {
  /** The process's name (one per process, a restart has a new one). */
  readonly name: string;
  readonly agentId: string;
  readonly language: 'python' | 'typescript';
  readonly logPath: string;
}

/** An execution as the log tells it: how it ended, and whether its Worker told its outcome. */
interface LoggedExecution extends Execution {
  how?: 'returned' | 'threw' | 'aborted';
  told?: 'completed' | 'failed' | 'lost';
}

/**
 * The lines a log gained since the last look: read from where the last look stopped, a line not yet ended kept for
 * the next; a line that is not JSON is counted (`unreadable`) and skipped.
 */
export class LogTail {
  private offset = 0;
  private partial = '';
  unreadable = 0;

  constructor(readonly path: string) {}

  lines(): FleetLogLine[] {
    let fd: number;
    try {
      fd = openSync(this.path, 'r');
    } catch {
      return [];
    }
    const chunks: Buffer[] = [];
    try {
      const buffer = Buffer.alloc(1 << 16);
      for (;;) {
        const n = readSync(fd, buffer, 0, buffer.length, this.offset);
        if (n === 0) break;
        chunks.push(Buffer.from(buffer.subarray(0, n)));
        this.offset += n;
      }
    } finally {
      closeSync(fd);
    }
    const texts = (this.partial + Buffer.concat(chunks).toString('utf8')).split('\n');
    this.partial = texts.pop() ?? '';
    return texts.flatMap((text) => {
      if (!text.trim()) return [];
      try {
        return [JSON.parse(text) as FleetLogLine];
      } catch {
        this.unreadable++;
        return [];
      }
    });
  }
}

/** What is left of an agent's log to read, and how its process ended. */
interface Reading {
  readonly agent: LoggedAgent;
  readonly tail: LogTail;
  ready: boolean;
  stopped: boolean;
  killedAt?: number;
}

/** A handler that finished and whose outcome its Worker never told, in a process that was not killed. */
export interface LostResult {
  readonly agent: string;
  readonly taskId: string;
  readonly leaseEpoch: number;
  readonly how: string;
  readonly endedAt: number;
}

export class FleetLogs {
  private readonly readings = new Map<string, Reading>();
  private readonly byLease = new Map<string, LoggedExecution>();
  private readonly roles = new Map<string, RoleHolding>();

  constructor(private readonly run: CheckedRun) {}

  add(agent: LoggedAgent): void {
    this.readings.set(agent.name, { agent, tail: new LogTail(agent.logPath), ready: false, stopped: false });
  }

  /** Lines that could not be read as JSON (a process killed mid-line writes none: each line is one write). */
  get unreadable(): number {
    return [...this.readings.values()].reduce((sum, r) => sum + r.tail.unreadable, 0);
  }

  ready(name: string): boolean {
    return this.readings.get(name)?.ready ?? false;
  }

  stopped(name: string): boolean {
    return this.readings.get(name)?.stopped ?? false;
  }

  /** Reads what every log gained since the last read. */
  poll(): void {
    for (const reading of this.readings.values()) this.read(reading);
  }

  /**
   * The process was killed at `at` (its log read to its end first): its running handlers and its role holding
   * ended then, and what it had not told is excused.
   */
  killed(name: string, at: number): void {
    const reading = this.readings.get(name);
    if (!reading) return;
    this.read(reading);
    reading.killedAt = at;
    for (const execution of this.run.executions)
      if (execution.agent === name && execution.end === undefined) execution.end = at;
    for (const holding of this.run.holdings)
      if (holding.agent === name && holding.end === undefined) holding.end = at;
  }

  /** Handlers that finished in a process not killed, and whose outcome was never told. */
  lostResults(): LostResult[] {
    const lost: LostResult[] = [];
    for (const execution of this.byLease.values()) {
      const reading = this.readings.get(execution.agent);
      if (!reading || reading.killedAt !== undefined) continue;
      if ((execution.how === 'returned' || execution.how === 'threw') && execution.told === undefined)
        lost.push({
          agent: execution.agent,
          taskId: execution.taskId,
          leaseEpoch: execution.leaseEpoch,
          how: execution.how,
          endedAt: execution.end ?? 0,
        });
    }
    return lost;
  }

  /** Handlers that finished in a process killed before it told their outcome: the kill's, not the SDK's. */
  untoldAtKill(): number {
    return [...this.byLease.values()].filter(
      (e) =>
        this.readings.get(e.agent)?.killedAt !== undefined &&
        (e.how === 'returned' || e.how === 'threw') &&
        e.told === undefined,
    ).length;
  }

  /** Executions by the language of their process. */
  executionsBy(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const execution of this.run.executions) {
      const language = this.readings.get(execution.agent)?.agent.language ?? 'unknown';
      counts[language] = (counts[language] ?? 0) + 1;
    }
    return counts;
  }

  private read(reading: Reading): void {
    for (const line of reading.tail.lines()) this.fold(reading, line);
  }

  private fold(reading: Reading, line: FleetLogLine): void {
    const { name, agentId } = reading.agent;
    const { run } = this;
    switch (line.type) {
      case 'ready':
        reading.ready = true;
        return;
      case 'stopped':
        reading.stopped = true;
        return;
      case 'start': {
        const execution: LoggedExecution = {
          taskId: line.taskId,
          leaseEpoch: line.leaseEpoch,
          agent: name,
          start: line.at,
        };
        run.executions.push(execution);
        this.byLease.set(`${name}|${line.taskId}#${line.leaseEpoch}`, execution);
        return;
      }
      case 'end': {
        const execution = this.byLease.get(`${name}|${line.taskId}#${line.leaseEpoch}`);
        if (!execution) return;
        execution.end ??= line.at;
        execution.how ??= line.how;
        if (line.how === 'returned')
          run.workload.results.set(`${line.taskId}#${line.leaseEpoch}`, digestOf(line.result));
        return;
      }
      case 'completed':
      case 'failed':
      case 'lost': {
        const execution = this.byLease.get(`${name}|${line.taskId}#${line.leaseEpoch}`);
        if (execution) execution.told ??= line.type;
        if (line.type === 'lost') return;
        if (line.type === 'completed' && execution) execution.succeededAt = line.at;
        run.history.calls.push({
          op: line.type === 'completed' ? 'complete' : 'fail',
          agentId,
          taskId: line.taskId,
          leaseEpoch: line.leaseEpoch,
          at: line.at,
          outcome: 'ok',
        });
        return;
      }
      case 'children':
        run.workload.onChildren(line.ids);
        return;
      case 'childMismatch':
        run.workload.onChildMismatch(line.detail);
        return;
      case 'roleStart': {
        const holding: RoleHolding = {
          role: line.role,
          agent: name,
          leaseEpoch: line.leaseEpoch,
          start: line.at,
        };
        run.holdings.push(holding);
        this.roles.set(`${name}|${line.role}#${line.leaseEpoch}`, holding);
        return;
      }
      case 'roleEnd': {
        const holding = this.roles.get(`${name}|${line.role}#${line.leaseEpoch}`);
        if (holding) holding.end ??= line.at;
        return;
      }
      default:
    }
  }
}

/**
 * Executions that started after their task's success was decided on the server (a success is decided before its
 * write, so this is no later than its commit): a task run again once its result was recorded, whether or not any
 * agent heard of it. Each is explained in `details`.
 */
export function runsAfterCommit(
  executions: readonly Execution[],
  versions: readonly TaskVersion[],
  details: string[],
): number {
  const succeededAt = new Map<string, number>();
  for (const version of versions)
    if (version.status === 'succeeded')
      succeededAt.set(version.taskId, Math.min(succeededAt.get(version.taskId) ?? version.at, version.at));
  let count = 0;
  for (const execution of executions) {
    const at = succeededAt.get(execution.taskId);
    if (at === undefined || execution.start <= at) continue;
    count++;
    if (details.length < 10)
      details.push(`run after its success was decided (${at}): ${JSON.stringify(execution)}`);
  }
  return count;
}
