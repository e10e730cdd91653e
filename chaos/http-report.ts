/**
 * What an HTTP chaos run reports: the final statuses read back, the server's history and the agents' side
 * checked, each kept result against its handler's; and its figures on one line.
 */
import type { ChaosRunFigures } from './chaos-run';
import { type AgentSideVerdict, checkAgentSide, checkHistory, overlaps, violationDetails } from './history';
import type { Agent } from './http-fleet';
import type { HttpChaosOptions, Run } from './http-stack';
import { digestOf, type Sizes } from './http-workload';
import type { NetworkRecord } from './wire-record';

/**
 * What the report reads of a run: the stack under test and its recorders (`http-stack.ts`), what ran on the agents,
 * and what the agents' network saw: the in-process agents' faulty fetch, or the proxy in front of agent processes.
 */
export type CheckedRun = Omit<Run, 'network'> & { readonly network: NetworkRecord };

export interface HttpChaosReport extends ChaosRunFigures, AgentSideVerdict {
  readonly mode: 'http';
  readonly sizes: Sizes;
  /** Tasks made during the run: children agents submitted, hooks the scheduler submitted for dead tasks. */
  readonly children: number;
  readonly hooks: number;
  /** Each fault by where it fell: the agent route's operation, or the kind of store write (`grant`, `open`, …). */
  readonly faultsWhere: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly requests: number;
  /** Requests by route while the faults lasted. */
  readonly requestsWhere: Readonly<Record<string, number>>;
  /**
   * How long the server took to answer, by route (ms), and the requests an agent gave up on while the server worked
   * on them: when the one process running the server and every agent is starved, its answers outlast the agents'
   * budgets, and the run measures the machine rather than the scheduler.
   */
  readonly answerMs: Readonly<Record<string, { readonly p50: number; readonly p99: number }>>;
  readonly abandonedWhere: Readonly<Record<string, number>>;
  readonly executions: number;
  readonly roleHoldings: number;
  readonly cancelled: number;
  readonly revoked: number;
  readonly supervisorPasses: number;
  /** When the submissions were in, the faults stopped, every task had ended: ms from the start. */
  readonly phasesMs: Readonly<Record<string, number>>;
  /** Owner writes the server refused as stale (see `refusedAsStale`), late-delivered ones included. */
  readonly staleRejectedCount: number;
  /** How late this process ran its timers (ms): the agents' leases are reckoned with them. */
  readonly eventLoopDelayMs: { readonly p99: number; readonly max: number };
  /** Claims answered (first attempts and retries) and checkpoints the tasks table took. */
  readonly claimAnswers: number;
  readonly checkpointWrites: number;
  /** Leases the Workers found their sessions holding without having heard of them, and gave back. */
  readonly grantsGivenBack: number;
  /** The server's warnings, by message: the repairs it made (a grant taken back, a hand-over left to the sweep). */
  readonly serverWarnings: Readonly<Record<string, number>>;
  /** The Workers' warnings, by message and reason: sessions lost or over by their own reckoning, tasks lost. */
  readonly workerWarnings: Readonly<Record<string, number>>;
  /** What the tables committed, checked as in the in-process run: no two valid leases of a task overlap, … */
  readonly overlapCount: number;
  readonly nonMonotonicEpochCount: number;
  readonly staleAcceptedCount: number;
  readonly duplicateTerminalCount: number;
  /** Completions and failures a Worker heard were recorded that no committed write shows. */
  readonly phantomOkCount: number;
  readonly lostCount: number;
  readonly neverTerminalCount: number;
  /** Tasks that left a terminal status other than by a redrive. */
  readonly terminalLeftCount: number;
  /** Succeeded tasks whose kept result is not, byte for byte, what the handler of their last lease returned. */
  readonly resultMismatchCount: number;
  /** Tasks with an `onFailure` that died and have no hook task, while their record owes none: the hook was lost. */
  readonly hookMissingCount: number;
  /**
   * Tasks with an `onFailure` that died and whose record still owes the hook (`followUpPending`): the run ended
   * before the supervisor made it. Late rather than lost, and a violation all the same: everything ends in a run.
   */
  readonly hookOwedCount: number;
  /** Child submissions sent again under the same keys that were answered with other tasks. */
  readonly childMismatchCount: number;
  readonly violations: number;
  /** The first violations, each with what makes it one (absent when there are none). */
  readonly violationDetails?: readonly string[];
}

/** The counts that are each a violation. */
export const VIOLATION_COUNTS = [
  'executionOverlapCount',
  'runAfterSuccessCount',
  'roleOverlapCount',
  'claimGrantedTwiceCount',
  'staleCheckpointCount',
  'overlapCount',
  'nonMonotonicEpochCount',
  'staleAcceptedCount',
  'duplicateTerminalCount',
  'phantomOkCount',
  'lostCount',
  'neverTerminalCount',
  'terminalLeftCount',
  'resultMismatchCount',
  'hookMissingCount',
  'hookOwedCount',
  'childMismatchCount',
] as const satisfies readonly (keyof HttpChaosReport)[];

const listed = (counts: Readonly<Record<string, number>>) =>
  Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, n]) => `${name} ${n}`)
    .join(', ');

/** A run's figures: one line, then where its lost answers and late deliveries fell. */
export function summaryLines(report: HttpChaosReport): string[] {
  const nonZero = Object.fromEntries(
    VIOLATION_COUNTS.map((name) => [name, report[name]]).filter(([, n]) => n),
  );
  return [
    `seed ${report.seed} ${report.sizes}: ${report.tasks} tasks (+${report.children} children, +${report.hooks} hooks), ` +
      `${report.agents} agents, ${(report.durationMs / 1_000).toFixed(1)} s, ${report.executions} executions, ` +
      `${report.requests} requests; faults ${listed(report.faults)}; stale refused ${report.staleRejectedCount}; ` +
      (report.violations === 0 ? 'no violations' : `${report.violations} VIOLATIONS (${listed(nonZero)})`),
    ...Object.entries(report.faultsWhere)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([kind, where]) => `  ${kind}: ${listed(where)}`),
    `  server answers p50/p99 ms: ${Object.entries(report.answerMs)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([operation, { p50, p99 }]) => `${operation} ${p50}/${p99}`)
      .join(', ')}`,
    `  given up while the server worked: ${listed(report.abandonedWhere)}`,
    ...(report.violationDetails ?? []).map((detail) => `  violation: ${detail}`),
  ];
}

/** What the run phase leaves for the report: the work acknowledged, the fleet, what the operators and the supervisor did. */
export interface RunOutcome {
  readonly acknowledged: readonly string[];
  /** The tasks with an `onFailure`: each that dies must have its hook. */
  readonly withHook: ReadonlySet<string>;
  readonly agents: readonly Pick<Agent, 'name' | 'agentId'>[];
  readonly supervisorPasses: number;
  readonly supervisorDoubled: number;
  readonly cancelled: number;
  readonly revoked: number;
  readonly phasesMs: Readonly<Record<string, number>>;
}

/** The report of a run: its figures, and the verdicts of `verify`. */
export async function reportOf(
  run: CheckedRun,
  options: HttpChaosOptions,
  outcome: RunOutcome,
  started: number,
): Promise<HttpChaosReport> {
  const verdict = await verify(run, outcome);
  return {
    mode: 'http',
    sizes: options.sizes ?? 'small',
    tasks: options.tasks,
    children: run.made.childIds.size,
    hooks: run.made.hooks.size,
    agents: options.agents,
    seed: options.seed,
    durationMs: Math.round(performance.now() - started),
    faults: { ...run.faults.byKind, supervisorDoubled: outcome.supervisorDoubled },
    faultsWhere: run.faults.byWhere,
    requests: run.network.requests,
    requestsWhere: run.network.requestsWhere,
    answerMs: run.network.answerMs(),
    abandonedWhere: run.network.abandonedWhere,
    executions: run.executions.length,
    roleHoldings: run.holdings.length,
    cancelled: outcome.cancelled,
    revoked: outcome.revoked,
    supervisorPasses: outcome.supervisorPasses,
    phasesMs: outcome.phasesMs,
    staleRejectedCount: run.network.staleRejectedCount,
    eventLoopDelayMs: {
      p99: Math.round(run.loopDelay.percentile(99) / 1e6),
      max: Math.round(run.loopDelay.max / 1e6),
    },
    claimAnswers: run.network.claimAnswers.length,
    checkpointWrites: run.checkpointWrites.length,
    serverWarnings: run.serverWarnings,
    workerWarnings: run.workerWarnings,
    grantsGivenBack: run.grantsGivenBack.count,
    ...verdict,
  };
}

/**
 * The verdicts: the server's side (leases, epochs, stale writes accepted, terminals, phantom oks, lost, never
 * ended), the agents' side, each kept result against its handler's, each dead task's hook, each child retry.
 */
async function verify(run: CheckedRun, { acknowledged, withHook, agents }: RunOutcome) {
  const until = Date.now();
  const everyTask = [...new Set([...acknowledged, ...run.history.acknowledged])];
  let resultMismatchCount = 0;
  let hookMissingCount = 0;
  let hookOwedCount = 0;
  violationDetails.length = 0;
  // Read 25 at a time: a result may be 250 KB, and one read answers at most 16 MB.
  for (let i = 0; i < everyTask.length; i += 25) {
    const final = await run.ctx.tasks.getMany(everyTask.slice(i, i + 25));
    for (const taskId of everyTask.slice(i, i + 25)) {
      const task = final.get(taskId);
      run.history.finalStatus.set(taskId, task?.status);
      if (task?.status === 'succeeded') {
        const returned = run.workload.results.get(`${taskId}#${task.leaseEpoch}`);
        if (returned !== digestOf(task.result)) {
          resultMismatchCount++;
          if (violationDetails.length < 10)
            violationDetails.push(
              `result not the one returned: ${taskId}#${task.leaseEpoch} ${returned ?? 'none returned'}`,
            );
        }
      }
      if (task?.status === 'dead' && withHook.has(taskId) && !run.made.hooks.has(taskId)) {
        const owed = task.followUpPending === true;
        if (owed) hookOwedCount++;
        else hookMissingCount++;
        if (violationDetails.length < 10)
          violationDetails.push(`dead without its hook${owed ? ' (still owed)' : ''}: ${taskId}`);
      }
    }
  }
  const {
    staleRejectedCount: _counted,
    reclaimLatencyMs: _latency,
    duplicateFireCount: _none,
    ...server
  } = checkHistory({
    ...run.history,
    answered: run.network.heard,
  });
  const agentSide = checkAgentSide(run.executions, run.holdings, until, {
    claims: run.network.claimAnswers,
    checkpoints: run.checkpointWrites,
  });
  const agentIds = new Map(agents.map((a) => [a.name, a.agentId]));
  for (const overlapping of overlaps(run.holdings, (h) => h.role, until)) {
    const from = Math.min(...overlapping.map((h) => h.start)) - 3_000;
    const to = Math.max(...overlapping.map((h) => h.end ?? until));
    const names = new Set(overlapping.map((h) => h.agent));
    violationDetails.push(
      `role held twice: ${JSON.stringify({
        holdings: overlapping.map((h) => ({ ...h, agentId: agentIds.get(h.agent) })),
        serverRoleEvents: run.roleEvents.filter((e) => e.at >= from && e.at <= to),
        workerNotes: run.workerNotes.filter((n) => n.at >= from && n.at <= to && names.has(n.agent)),
      })}`,
    );
  }
  for (const detail of run.made.childMismatches.slice(0, 5))
    violationDetails.push(`child retry answered anew: ${detail}`);
  const counts = {
    ...server,
    ...agentSide,
    resultMismatchCount,
    hookMissingCount,
    hookOwedCount,
    childMismatchCount: run.made.childMismatches.length,
  };
  return {
    ...counts,
    violations: VIOLATION_COUNTS.reduce((sum, name) => sum + counts[name], 0),
    ...(violationDetails.length > 0 ? { violationDetails: [...violationDetails] } : {}),
  };
}
