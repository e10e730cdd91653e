/**
 * The in-process chaos run, on the scheduler's handlers: set up the stack under its faults (`inprocess-stack.ts`),
 * run the agents (`inprocess-agent.ts`), the submissions and a schedule (`inprocess-workload.ts`), the callers that
 * race to answer the waitpoints the agents suspend tasks on (`waitpoint-callers.ts`) and a supervisor whose ticks
 * are sometimes doubled until half the work is done, then stop the faults and wait for every task to end; report
 * what the history checker finds, and the rate-limited tasks' budget ledger (`inprocess-report.ts`,
 * `rate-ledger.ts`).
 */
import { RETRYING } from './committed-writes';
import { buildDag, type DagTask } from './dag';
import { agentLoop } from './inprocess-agent';
import { brokenSoFar, type ChaosReport, hooksOf, reportOf } from './inprocess-report';
import {
  type ChaosOptions,
  type InProcessRun,
  SUPERVISOR_TICK_MS,
  type SupervisorPass,
  setUp,
} from './inprocess-stack';
import { submitAll, tickSchedule } from './inprocess-workload';
import { superviseUnderChaos } from './supervisor-loop';
import { answerWaitpoints } from './waitpoint-callers';

export { breaksOf, type ChaosReport } from './inprocess-report';
export type { ChaosOptions, InProcessInvariant, ScheduleFire } from './inprocess-stack';

const TERMINAL = ['succeeded', 'dead', 'cancelled', 'expired'];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = performance.now();
  const run = await setUp(options);
  try {
    const dag = buildDag(options.dag ?? 0, options.seed, run.random, { queue: 'chaos', ...RETRYING });
    await runUnderFaults(run, dag);
    return await reportOf(run, dag, started);
  } finally {
    await run.scratch.dispose();
  }
}

const debug = (what: string) => {
  if (process.env.CHAOS_DEBUG) console.error(`${new Date().toISOString()} ${what}`);
};

/**
 * Submits the work and runs the fleet, the supervisor and the schedule; the faults stop once half the work is
 * done, then every task must end. Returns once everything has stopped.
 */
async function runUnderFaults(run: InProcessRun, dag: readonly DagTask[]): Promise<void> {
  const { options, history, live } = run;
  const submitter = submitAll(run, dag);
  // A tick in ten (or the share asked for) runs its pass twice at once, as a duplicated invocation does.
  const supervisor = superviseUnderChaos({
    pass: async () => {
      const timed: SupervisorPass = { start: Date.now() };
      run.passes.push(timed);
      try {
        const result = await run.scheduler.supervise();
        live.lastPassMs = result.durationMs;
        return result;
      } finally {
        timed.end = Date.now();
      }
    },
    tickMs: SUPERVISOR_TICK_MS,
    doublingShare: options.supervisorDoubling ?? 0.1,
    faultsOn: () => live.faultsOn,
  });
  const ticker = tickSchedule(run);
  const agents = Array.from({ length: options.agents }, (_, i) => agentLoop(run, i));
  const callers = answerWaitpoints(run);
  const progress = process.env.CHAOS_DEBUG
    ? setInterval(
        () =>
          console.error(
            `submitted ${history.acknowledged.size} completed ${live.completed} calls ${history.calls.length} faultsOn ${live.faultsOn} last pass ${live.lastPassMs} ms ${[...run.latency].map(([k, v]) => `${k} ${v.n}/${Math.round(v.ms / v.n)}ms`).join(' ')}`,
          ),
        2_000,
      )
    : undefined;
  await submitter;
  // Faults stop once half the work is done; then everything must end.
  const deadline = Date.now() + (options.drainTimeoutMs ?? 60_000);
  const broken = brokenYet(run, dag);
  // Half the flat, rate-limited and labelled tasks completed.
  const half = (options.tasks + (options.rateLimited ?? 0) + (options.labelled ?? 0)) / 2;
  while (live.completed < half && Date.now() < deadline && !broken()) await sleep(50);
  live.faultsOn = false;
  const open = await awaitEveryEnd(run, deadline, broken);
  live.stopping = true;
  clearInterval(progress);
  debug(`draining over, ${open} open`);
  await Promise.all([...agents, callers, supervisor.stop(), ticker]);
  debug('stopped');
  run.faults.supervisorDoubled = supervisor.doubled;
}

/** Whether the invariant the run stops on (`stopOnceBroken`) is broken yet, looked at no more than twice a second. */
function brokenYet(run: InProcessRun, dag: readonly DagTask[]): () => boolean {
  const invariant = run.options.stopOnceBroken;
  if (invariant === undefined) return () => false;
  let lookedAt = 0;
  let broken = false;
  return () => {
    if (!broken && Date.now() - lookedAt >= 500) {
      lookedAt = Date.now();
      broken = brokenSoFar(run, dag, invariant);
    }
    return broken;
  };
}

/**
 * Waits for every task to end, reading (100 at a time) only those not seen ended yet; a hook submitted by the
 * scheduler for a dead task must end too: it is looked for as it appears. Returns how many are still open.
 */
async function awaitEveryEnd(run: InProcessRun, deadline: number, broken: () => boolean): Promise<number> {
  const { history } = run;
  const ended = new Set<string>();
  let open = [...history.acknowledged, ...hooksOf(run)];
  while (open.length > 0 && Date.now() <= deadline && !broken()) {
    const states = await run.ctx.tasks.getMany(open);
    for (const id of open) if (TERMINAL.includes(states.get(id)?.status ?? '')) ended.add(id);
    open = [...history.acknowledged, ...hooksOf(run)].filter((id) => !ended.has(id));
    if (open.length > 0) await sleep(500);
  }
  return open.length;
}
