/**
 * What a fleet chaos run reports: the HTTP chaos run's report (`http-report.ts`: the tables' history, the agents'
 * side, each kept result against its handler's, hooks, children), read from the processes' logs, and what only a
 * fleet of processes adds: the fleet by language, the processes killed and dead, double runs (two runs of a task at
 * once, or one after its success), and lost results (a handler finished, and its outcome was neither recorded nor
 * reported lost by its SDK).
 */
import type { ProxyShares } from './fault-proxy';
import { type FleetLogs, type LostResult, runsAfterCommit } from './fleet-log';
import type { Language } from './fleet-processes';
import type { DiedAgent, Fleet } from './fleet-run';
import {
  type CheckedRun,
  type HttpChaosReport,
  summaryLines as httpSummaryLines,
  type RunOutcome,
  reportOf,
  VIOLATION_COUNTS,
} from './http-report';
import type { HttpChaosOptions } from './http-stack';

export interface FleetChaosOptions {
  readonly tasks: number;
  /** Agent processes at once. */
  readonly agents: number;
  /** Share of the processes that are Python (rounded up); the rest are TypeScript. */
  readonly pythonShare: number;
  readonly seed: number;
  /** Tasks each process runs at once. @default 4 */
  readonly concurrency?: number;
  /** @default 5 s: the processes share two cores with the server, the emulators and each other */
  readonly leaseTtlSeconds?: number;
  /** About how often a process is killed with SIGKILL while the faults last. @default 10 s */
  readonly killEverySeconds?: number;
  /** Longest wait for every task to end. @default 600 s */
  readonly drainTimeoutMs?: number;
  /** Share of the server's DynamoDB writes whose answer is lost after they commit. @default 0.02 */
  readonly storeLostShare?: number;
  /** The proxy's shares of each fault. @default `DEFAULT_SHARES` of `fault-proxy.ts` */
  readonly shares?: Partial<ProxyShares>;
  readonly endpoints?: { readonly dynamodb: string; readonly sqs: string };
}

export interface FleetChaosReport extends Omit<HttpChaosReport, 'mode'> {
  readonly mode: 'fleet';
  /** Slots of the fleet by language, and the processes each started over the run (replacements included). */
  readonly fleet: Readonly<Record<Language, number>>;
  readonly processesStarted: Readonly<Record<Language, number>>;
  readonly killed: number;
  readonly executionsBy: Readonly<Record<string, number>>;
  /** Executions that started after their task's success was decided on the server. */
  readonly runAfterCommitCount: number;
  /** Executions overlapping another of their task, or started after its success (heard or decided). */
  readonly doubleRuns: number;
  /** Handlers that finished in a process not killed, whose outcome the SDK never told. */
  readonly lostResultCount: number;
  readonly lostResults?: readonly LostResult[];
  /** Handlers that finished in a process killed before their outcome was told: the kill's, not a violation. */
  readonly untoldAtKill: number;
  /** Processes that exited on their own, not revoked: each a violation. */
  readonly agentsDied: number;
  readonly diedAgents?: readonly DiedAgent[];
  /** Processes that did not stop within 20 s of SIGTERM at the end, and log lines that were not JSON. */
  readonly stopOverran: number;
  readonly unreadableLogLines: number;
}

/** The report: the HTTP run's, its processes' figures beside it, its violations with theirs. */
export async function fleetReportOf(
  run: CheckedRun,
  httpOptions: HttpChaosOptions,
  logs: FleetLogs,
  fleet: Fleet,
  {
    started,
    outcome,
    killed,
  }: {
    started: number;
    outcome: RunOutcome;
    killed: number;
  },
): Promise<FleetChaosReport> {
  const { mode: _http, ...report } = await reportOf(run, httpOptions, outcome, started);
  const details = [...(report.violationDetails ?? [])];
  const runAfterCommitCount = runsAfterCommit(run.executions, run.history.tasks, details);
  const lostResults = logs.lostResults();
  for (const lost of lostResults.slice(0, 5)) details.push(`result lost: ${JSON.stringify(lost)}`);
  for (const died of fleet.died.slice(0, 3)) details.push(`agent died: ${JSON.stringify(died)}`);
  const fleetViolations =
    runAfterCommitCount + lostResults.length + fleet.died.length + fleet.stopOverran + logs.unreadable;
  return {
    ...report,
    mode: 'fleet',
    fleet: {
      python: fleet.slots.filter((s) => s.language === 'python').length,
      typescript: fleet.slots.filter((s) => s.language === 'typescript').length,
    },
    processesStarted: { ...fleet.started },
    killed,
    executionsBy: logs.executionsBy(),
    runAfterCommitCount,
    doubleRuns: report.executionOverlapCount + report.runAfterSuccessCount + runAfterCommitCount,
    lostResultCount: lostResults.length,
    ...(lostResults.length > 0 ? { lostResults: lostResults.slice(0, 20) } : {}),
    untoldAtKill: logs.untoldAtKill(),
    agentsDied: fleet.died.length,
    ...(fleet.died.length > 0 ? { diedAgents: fleet.died } : {}),
    stopOverran: fleet.stopOverran,
    unreadableLogLines: logs.unreadable,
    violations: report.violations + fleetViolations,
    ...(details.length > 0 ? { violationDetails: details } : {}),
  };
}

/** A run's figures: a line of the fleet's, then the HTTP run's lines (faults by where they fell, answer times). */
export function summaryLines(report: FleetChaosReport): string[] {
  // The HTTP run's line counts its own violations; the fleet's line counts every one.
  const httpViolations = VIOLATION_COUNTS.reduce((sum, name) => sum + report[name], 0);
  const [first, ...rest] = httpSummaryLines({ ...report, mode: 'http', violations: httpViolations });
  const by = (counts: Readonly<Record<string, number>>) =>
    `${counts.python ?? 0} Python / ${counts.typescript ?? 0} TypeScript`;
  const fleetOwn = {
    runAfterCommitCount: report.runAfterCommitCount,
    lostResultCount: report.lostResultCount,
    agentsDied: report.agentsDied,
    stopOverran: report.stopOverran,
    unreadableLogLines: report.unreadableLogLines,
  };
  const broken = Object.entries(fleetOwn)
    .filter(([, n]) => n > 0)
    .map(([name, n]) => `${name} ${n}`);
  return [
    `fleet: ${by(report.fleet)} agents (processes started ${by(report.processesStarted)}, ${report.killed} killed, ` +
      `${report.revoked} revoked, ${report.agentsDied} died); executions ${by(report.executionsBy)}; ` +
      `double runs ${report.doubleRuns}, lost results ${report.lostResultCount} (untold at a kill ${report.untoldAtKill}); ` +
      (report.violations === 0
        ? 'no violations'
        : `${report.violations} VIOLATIONS${broken.length > 0 ? ` (of the fleet's own: ${broken.join(', ')})` : ''}`),
    ...(first ? [first] : []),
    ...rest,
  ];
}
