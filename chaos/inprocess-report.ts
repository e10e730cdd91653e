/** What an in-process chaos run reports: the final statuses read back, the history checked, its figures on lines. */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Task } from '#domain/task';
import type { ChaosRunFigures } from './chaos-run';
import { checkDag, type DagTask, type DagVerdict } from './dag';
import { checkHistory, type Verdict, violationDetails } from './history';
import { type InProcessInvariant, type InProcessRun, SUPERVISOR_TICK_MS } from './inprocess-stack';
import { checkLabelledGrants, type LabelVerdict, labelViolations } from './labels';
import { BUDGET, checkLedger, type LedgerVerdict, ledgerOf, ledgerViolations } from './rate-ledger';
import {
  checkWaitpoints,
  supervisorTimes,
  UNTIMED,
  type WaitpointVerdict,
  waitpointViolations,
} from './waitpoint-history';

/** How late a timeout may land after the end of the first supervisor pass that started after its time. */
const TIMEOUT_SLACK_MS = 5_000;

/** The waitpoints' figures: the verdict, and the supervisor's passes that bound a timeout's lateness. */
export interface WaitpointFigures extends WaitpointVerdict {
  /** Waiting tasks submitted. */
  readonly tasks: number;
  readonly supervisorTickMs: number;
  /** The time from the start of one supervisor pass to the start of the next: its tick and the pass's own time. */
  readonly supervisorPeriodMs: { readonly p50: number; readonly max: number };
  /** How long each pass took. */
  readonly supervisorPassMs: { readonly p50: number; readonly max: number };
  readonly timeoutSlackMs: number;
}

export interface ChaosReport extends ChaosRunFigures, Verdict, Partial<DagVerdict> {
  /** Present when the run had waiting tasks. */
  readonly waitpoints?: WaitpointFigures;
  /** Present when the run had rate-limited tasks: their budget's ledger. */
  readonly rateLimited?: LedgerVerdict & { readonly submitted: number };
  /** Present when the run had labelled tasks: their leases against their sessions' labels. */
  readonly labelled?: LabelVerdict & { readonly submitted: number };
  /** The committed writes whose answer was lost (`dynamodbTimeoutAfterCommit`), by what they wrote. */
  readonly lostAnswers: Readonly<Record<string, number>>;
  /** Tasks that died with an `onFailure` whose hook was never submitted. */
  readonly hookMissingCount: number;
  readonly calls: number;
  readonly violations: number;
  /** The first violations found, each with the versions that make it one. */
  readonly violationDetails?: readonly string[];
}

const debug = (what: string) => {
  if (process.env.CHAOS_DEBUG) console.error(`${new Date().toISOString()} ${what}`);
};

/** The hooks the scheduler submitted for dead tasks, as the recorder of committed writes saw them made. */
export const hooksOf = (run: InProcessRun): Set<string> =>
  new Set(run.history.tasks.flatMap((v) => (v.failureOf ? [v.taskId] : [])));

/** The invariant is broken already, by what the run recorded so far (the final report reads everything back). */
export function brokenSoFar(
  run: InProcessRun,
  dag: readonly DagTask[],
  invariant: InProcessInvariant,
): boolean {
  if (invariant === 'prematureStartCount')
    return checkDag(dag, run.dagClaims, new Map(), []).prematureStartCount > 0;
  if (invariant === 'resolvedTwiceCount') return checkWaitpoints(run.history, UNTIMED).resolvedTwiceCount > 0;
  // Read from the table once everything has stopped: in flight, a settlement is not yet in either count.
  if (invariant === 'ledgerDifference') return false;
  if (invariant === 'mismatchedGrantCount') return checkLabelledGrants(run.history).mismatchedGrantCount > 0;
  return checkHistory({ ...run.history, answered: run.answered })[invariant] > 0;
}

/** How many breaks of the invariant a run's report counts. */
export const breaksOf = (report: ChaosReport, invariant: InProcessInvariant): number =>
  invariant === 'resolvedTwiceCount'
    ? (report.waitpoints?.resolvedTwiceCount ?? 0)
    : invariant === 'ledgerDifference'
      ? Math.abs(report.rateLimited?.difference ?? 0)
      : invariant === 'mismatchedGrantCount'
        ? (report.labelled?.mismatchedGrantCount ?? 0)
        : (report[invariant] ?? 0);

/**
 * Reads back every acknowledged task (hooks included) and checks the history: the server's properties, the
 * workflow's, and that every task that died with an onFailure has its hook.
 */
export async function reportOf(
  run: InProcessRun,
  dag: readonly DagTask[],
  started: number,
): Promise<ChaosReport> {
  const { options, history } = run;
  for (const hook of hooksOf(run)) history.acknowledged.add(hook);
  const final = await run.ctx.tasks.getMany([...history.acknowledged]);
  for (const taskId of history.acknowledged) history.finalStatus.set(taskId, final.get(taskId)?.status);
  // Every task that died with an onFailure has its hook.
  const hooked = new Set(history.tasks.flatMap((v) => (v.failureOf ? [v.failureOf] : [])));
  const hookMissingCount = [...final.values()].filter(
    (task) => task.status === 'dead' && task.hasOnFailure && !hooked.has(task.taskId),
  ).length;
  debug(
    `read back; ${history.tasks.length} task versions, ${history.sessions.length} session versions, ${history.calls.length} calls`,
  );
  violationDetails.length = 0;
  const verdict = checkHistory({ ...history, answered: run.answered });
  const dagVerdict =
    dag.length > 0 ? checkDag(dag, run.dagClaims, history.finalStatus, violationDetails) : undefined;
  const waitpoints = checkWaitpoints(history, { passes: run.passes, slackMs: TIMEOUT_SLACK_MS });
  const ledger = options.rateLimited ? await ledgerCheck(run, final) : undefined;
  const labels = options.labelled ? checkLabelledGrants(history) : undefined;
  debug('checked');
  const violations =
    waitpointViolations(waitpoints) +
    (labels ? labelViolations(labels) : 0) +
    (ledger ? ledgerViolations(ledger) : 0) +
    (dagVerdict ? dagVerdict.prematureStartCount + dagVerdict.cascadeViolationCount : 0) +
    verdict.overlapCount +
    verdict.nonMonotonicEpochCount +
    verdict.staleAcceptedCount +
    verdict.duplicateTerminalCount +
    verdict.terminalLeftCount +
    verdict.phantomOkCount +
    verdict.duplicateFireCount +
    verdict.lostCount +
    verdict.neverTerminalCount +
    hookMissingCount;
  return {
    tasks: options.tasks,
    agents: options.agents,
    seed: options.seed,
    durationMs: Math.round(performance.now() - started),
    faults: run.faults,
    lostAnswers: run.lostAnswers,
    hookMissingCount,
    calls: history.calls.length,
    ...verdict,
    ...(dagVerdict ?? {}),
    ...(options.waitpoints
      ? {
          waitpoints: {
            tasks: options.waitpoints,
            ...waitpoints,
            supervisorTickMs: SUPERVISOR_TICK_MS,
            ...supervisorTimes(run.passes),
            timeoutSlackMs: TIMEOUT_SLACK_MS,
          },
        }
      : {}),
    ...(ledger ? { rateLimited: { submitted: options.rateLimited ?? 0, ...ledger } } : {}),
    ...(labels ? { labelled: { submitted: options.labelled ?? 0, ...labels } } : {}),
    violations,
    ...(violationDetails.length > 0 ? { violationDetails: [...violationDetails] } : {}),
  };
}

/**
 * The budget's ledger: what the history owes it, from the rate-limited tasks read back (each one's estimate), against
 * the sum of its windows' counts.
 */
async function ledgerCheck(run: InProcessRun, final: ReadonlyMap<string, Task>): Promise<LedgerVerdict> {
  const estimates = new Map<string, number>();
  for (const task of final.values()) {
    const named = task.rateLimits?.find((limit) => limit.name === BUDGET);
    if (named) estimates.set(task.taskId, named.units);
  }
  const doc = DynamoDBDocumentClient.from(run.scratch.dynamodb);
  const actual = await ledgerOf(doc, run.scratch.tables.tasks, BUDGET);
  const ledger = checkLedger(run.history, estimates, actual, run.lostAnswers);
  if (ledger.difference !== 0)
    violationDetails.push(
      `ledger of ${BUDGET}: expected ${ledger.expected}, actual ${ledger.actual} (${ledger.difference > 0 ? 'counted twice' : 'lost'}: ${Math.abs(ledger.difference)})`,
    );
  for (const off of ledger.tasksOff)
    violationDetails.push(`window changes of a task's own transactions: ${off}`);
  return ledger;
}

/** The rate-limited tasks' figures, on lines. */
function ledgerLines(l: LedgerVerdict & { readonly submitted: number }): string[] {
  return [
    `rate limits     ${l.submitted} tasks naming ${l.limit}: ${l.grants} grants, ${l.settledFinishes} finishes reporting usage, ${l.settlements} settled in their transaction; answers lost after commit: ${l.grantAnswersLost} grants (${l.grantsResent} sent again under their token), ${l.settlementAnswersLost} settlements (${l.settlementsResent} sent again under their token)`,
    `  ledger        expected ${l.expected}, actual ${l.actual}, difference ${l.difference}; tasks whose transactions are off ${l.tasksOffCount}`,
  ];
}

/** The labelled tasks' figures, on lines. */
function labelLines(l: LabelVerdict & { readonly submitted: number }): string[] {
  return [
    `labels          ${l.submitted} tasks requiring labels, ${l.sessions} sessions claiming under labels: ${l.grants} leases checked against their session's labels (${Object.entries(
      l.grantsBySet,
    )
      .map(([set, n]) => `${set} ${n}`)
      .join(', ')})`,
    `  grants        mismatched ${l.mismatchedGrantCount}, sessions unknown ${l.unknownSessionCount}`,
  ];
}

/** The waitpoints' figures, on lines. */
function waitpointLines(w: WaitpointFigures): string[] {
  return [
    `waitpoints      ${w.tasks} waiting tasks: ${w.suspended} suspended, ${w.endedOnce} ended once (${w.resumed} resumed), answered by operator ${w.answeredBy.operator}, callback ${w.answeredBy.callback}, timeout ${w.answeredBy.timeout}`,
    `  answers       ${Object.entries(w.answers)
      .map(([result, n]) => `${result} ${n}`)
      .join(
        ', ',
      )}; duplicate callbacks told 200 ${w.duplicateCallbacksOk}, other bodies told 409 ${w.otherBodyRefused}, replaced tokens told 404 ${w.staleTokensRefused}`,
    `  timeouts      late p50 ${w.timeoutLatenessMs.p50} ms, max ${w.timeoutLatenessMs.max} ms: waiting for the next supervisor pass p50 ${w.timeoutPassWaitMs.p50} ms, max ${w.timeoutPassWaitMs.max} ms, then in it p50 ${w.timeoutInPassMs.p50} ms, max ${w.timeoutInPassMs.max} ms; later than the longest period and ${w.timeoutSlackMs / 1_000} s: ${w.timeoutsPastPeriodCount}`,
    `  supervisor    tick ${w.supervisorTickMs} ms; period p50 ${w.supervisorPeriodMs.p50} ms, max ${w.supervisorPeriodMs.max} ms; a pass p50 ${w.supervisorPassMs.p50} ms, max ${w.supervisorPassMs.max} ms`,
    `  violations    ended twice ${w.resolvedTwiceCount}, never ended ${w.notResumedCount}, accepted twice ${w.acceptedTwiceCount}, 200 not the outcome ${w.answerDisagreementCount}, own outcome told 409 ${w.sameAnswerRefusedCount}, replaced token accepted ${w.staleTokenAcceptedCount}, claims with another outcome ${w.resumedDataMismatchCount}, owners while suspended ${w.ownerWhileSuspendedCount}, grants while suspended ${w.grantedWhileSuspendedCount}, timeouts early ${w.timeoutEarlyCount}, after their pass and ${w.timeoutSlackMs / 1_000} s ${w.timeoutLateCount}, misdirected ${w.timeoutEndMismatchCount}`,
  ];
}

/** A run's figures, a line each. */
export function summaryLines(report: ChaosReport): string[] {
  const listed = (counts: Readonly<Record<string, number>>) =>
    Object.entries(counts)
      .map(([kind, n]) => `${kind} ${n}`)
      .join(', ');
  return [
    `${report.tasks} tasks, ${report.agents} agents, seed ${report.seed}: ${report.durationMs} ms, ${report.calls} calls`,
    `faults          ${listed(report.faults)}`,
    `overlapping leases ${report.overlapCount}, non-monotonic epochs ${report.nonMonotonicEpochCount}`,
    `stale writes accepted ${report.staleAcceptedCount}, rejected ${report.staleRejectedCount}`,
    `duplicate terminals ${report.duplicateTerminalCount}, phantom oks ${report.phantomOkCount}, duplicate fires ${report.duplicateFireCount}`,
    `lost ${report.lostCount}, never terminal ${report.neverTerminalCount}`,
    ...(report.dagTasks
      ? [
          `dag             ${report.dagTasks} tasks, ${report.joins} joins; ended ${listed(report.dagEnds ?? {})}; premature starts ${report.prematureStartCount}, cascade violations ${report.cascadeViolationCount}`,
        ]
      : []),
    ...(report.waitpoints ? waitpointLines(report.waitpoints) : []),
    ...(report.rateLimited ? ledgerLines(report.rateLimited) : []),
    ...(report.labelled ? labelLines(report.labelled) : []),
    `reclaim after a crash p50 ${report.reclaimLatencyMs.p50} ms, p99 ${report.reclaimLatencyMs.p99} ms`,
    report.violations === 0 ? 'no violations' : `${report.violations} VIOLATIONS`,
  ];
}
