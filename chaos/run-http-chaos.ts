/**
 * A chaos run through the HTTP edge and the SDK: the local server in process on scratch tables and queues, and
 * SDK `Worker`s (several tasks at once, so claims ask for more than one) whose `fetch` loses, hangs, delays and
 * refuses requests from a seed (`http-faults.ts`), beside a server whose own DynamoDB client loses the answers of
 * committed writes (`store-faults.ts`). Operators cancel tasks and revoke agents mid-run (a revoked agent is
 * replaced); a few Workers hold a role; handlers submit children, give tasks back, fail some tasks for good so
 * their hooks are submitted, and at agent sizes return results of 50 to 250 KB (`http-workload.ts`). Handlers
 * record every execution and role holding, and the checker looks at what ran on the agents, not only at what the
 * server committed (`checkAgentSide` in `history.ts`); each result kept must be the one its handler returned.
 *
 * Agents are cut off (every request hangs) for longer than the lease's time to live (1 % of claims), or crash:
 * their Worker stops without releasing anything (0.5 % of claims), and a new one takes its place.
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { checkAgentSide } from './history';
import { type Agent, fleet } from './http-fleet';
import { type CheckedRun, type HttpChaosReport, type RunOutcome, reportOf } from './http-report';
import { type HttpChaosOptions, type Run, setUp } from './http-stack';
import { taskSpecs } from './http-workload';
import { superviseUnderChaos } from './supervisor-loop';

export type { HttpChaosReport } from './http-report';
export type { HttpChaosOptions } from './http-stack';

const SUPERVISOR_TICK_MS = 250;
const TERMINAL = new Set(['succeeded', 'dead', 'cancelled', 'expired']);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sets the stack up (`http-stack.ts`), runs the fleet under the faults, and reports (`http-report.ts`). */
export async function runHttpChaos(options: HttpChaosOptions): Promise<HttpChaosReport> {
  const started = performance.now();
  const run = await setUp(options);
  // How late this process runs its timers: every agent, the server and the supervisor share one event loop here,
  // and a lease reckoned on the agent's side is only as punctual as its timers.
  run.loopDelay.enable();
  try {
    const outcome = await runUnderFaults(run, options, started);
    return await reportOf(run, options, outcome, started);
  } finally {
    run.live.stopping = true;
    run.live.fleetStopped = true;
    run.loopDelay.disable();
    await run.server.close();
    await run.scratch.dispose();
  }
}

/**
 * Submits the work, starts the fleet, the supervisor and the operators, stops the faults once half the work has
 * run, and waits for every task to end; then stops everything.
 */
async function runUnderFaults(run: Run, options: HttpChaosOptions, started: number): Promise<RunOutcome> {
  const { live } = run;
  const phasesMs: Record<string, number> = {};
  const mark = (phase: string) => {
    phasesMs[phase] = Math.round(performance.now() - started);
  };
  const { acknowledged, withHook } = await submitAll(run, options);
  for (const taskId of acknowledged) run.history.acknowledged.add(taskId);
  const { agents, startAgent, replace } = fleet(run, options);
  await Promise.all(Array.from({ length: options.agents }, (_, i) => startAgent(i, i < 3)));
  const fleetStarted = performance.now();
  live.fleetStarted = true;
  const supervisor = superviseUnderChaos({
    pass: () => run.scheduler.supervise(),
    tickMs: SUPERVISOR_TICK_MS,
    doublingShare: options.supervisorDoubling ?? 0.1,
    faultsOn: () => live.faultsOn,
  });
  const operated = { cancelled: 0, revoked: 0 };
  const operators = operate(run, acknowledged, agents, replace, operated);
  mark('submitted');
  const left = await drain(run, options, acknowledged, withHook, fleetStarted, () => mark('faultsOff'));
  mark('drained');
  if (process.env.CHAOS_DEBUG && left.length > 0) await tellWhyOpen(run, left);
  live.faultsOn = false;
  live.stopping = true;
  await Promise.all([supervisor.stop(), operators]);
  await Promise.all(
    agents.map((a) => a.worker.stop({ drain: false, timeoutMs: 2_000 }).catch(() => undefined)),
  );
  live.fleetStopped = true;
  mark('stopped');
  return {
    acknowledged,
    withHook,
    agents,
    supervisorPasses: supervisor.passes,
    supervisorDoubled: supervisor.doubled,
    ...operated,
    phasesMs,
  };
}

/** Operators: cancel a task now and then, revoke an agent now and then; crashed agents are replaced. */
async function operate(
  run: Run,
  acknowledged: readonly string[],
  agents: Agent[],
  replace: (agent: Agent, index: number) => Promise<void>,
  operated: { cancelled: number; revoked: number },
): Promise<void> {
  const { live } = run;
  while (!live.stopping && live.faultsOn) {
    await sleep(100);
    const target = acknowledged[Math.floor(run.random() * acknowledged.length)];
    if (target && run.random() < 0.1) {
      await run.operator.cancelTask(target).then(
        () => operated.cancelled++,
        () => undefined,
      );
    }
    const standing = agents.filter((a) => !a.gone);
    if (run.random() < 0.005) {
      const victim = standing[Math.floor(run.random() * standing.length)];
      if (victim) {
        await run.operator.revokeAgent(victim.agentId).catch(() => undefined);
        operated.revoked++;
        run.faults.count('agentRevoked');
        await replace(victim, agents.indexOf(victim));
      }
    }
    for (const crashed of standing.filter((a) => a.state.cutOffUntil === Number.POSITIVE_INFINITY))
      await replace(crashed, agents.indexOf(crashed));
  }
}

/** The work is in before the fleet starts, so the faults fall on a full queue rather than on the submissions. */
export async function submitAll(run: CheckedRun, options: HttpChaosOptions) {
  const acknowledged: string[] = [];
  const seen = new Set<string>();
  /** The tasks with an `onFailure`: each that dies must have its hook. */
  const withHook = new Set<string>();
  const specs = taskSpecs(options.seed, options.tasks, run.random);
  for (let i = 0; i < specs.length; i += 25) {
    const batch = specs.slice(i, i + 25);
    for (let attempt = 0; attempt < 5; attempt++) {
      const results = await run.operator.submitTasks(batch).catch(() => undefined);
      if (!results) continue;
      results.forEach((result, k) => {
        if (!result.ok || seen.has(result.task.taskId)) return;
        seen.add(result.task.taskId);
        acknowledged.push(result.task.taskId);
        if (batch[k]?.onFailure) withHook.add(result.task.taskId);
      });
      if (results.every((r) => r.ok)) break;
    }
  }
  return { acknowledged, withHook };
}

/**
 * Waits until every task has ended (children and hooks made meanwhile included; a dead task with an `onFailure`
 * only once its hook exists), stopping the faults once half the work has run. Returns the tasks still open.
 */
export async function drain(
  run: CheckedRun,
  options: HttpChaosOptions,
  acknowledged: readonly string[],
  withHook: ReadonlySet<string>,
  fleetStarted: number,
  faultsOff: () => void,
): Promise<string[]> {
  const deadline = Date.now() + (options.drainTimeoutMs ?? 60_000);
  let open = [...acknowledged];
  let all = acknowledged.length;
  while (Date.now() <= deadline) {
    const known = new Set(open);
    const fresh = [...run.made.children.splice(0), ...run.made.fresh.splice(0)].filter(
      (id) => !known.has(id),
    );
    for (const taskId of fresh) run.history.acknowledged.add(taskId);
    open.push(...fresh);
    all += fresh.length;
    if (open.length === 0) break;
    // A window of 500 at a time, moved to the back when none of it ended: reading every open task twice a
    // second would load DynamoDB Local more than the fleet does.
    const window = open.slice(0, 500);
    const states = await run.ctx.tasks.getMany(window);
    const ended = new Set(
      [...states]
        .filter(
          ([id, s]) =>
            TERMINAL.has(s?.status ?? '') &&
            !(s?.status === 'dead' && withHook.has(id) && !run.made.hooks.has(id)),
        )
        .map(([id]) => id),
    );
    open = ended.size === 0 ? [...open.slice(window.length), ...window] : open.filter((id) => !ended.has(id));
    // Faults stop once half the work has run, and not before five lease TTLs of them: with the work submitted
    // first, half of a small run is done in a few seconds, too few for every kind of fault to be drawn.
    if (
      run.live.faultsOn &&
      open.length <= all / 2 &&
      performance.now() - fleetStarted >= run.leaseTtlSeconds * 5_000
    ) {
      faultsOff();
      run.live.faultsOn = false;
    }
    if (process.env.CHAOS_DEBUG)
      console.error(
        `open ${open.length} of ${all}, executions ${run.executions.length}, faults ${run.live.faultsOn ? 'on' : 'off'}`,
      );
    if (broken(run, options)) break;
    if (open.length > 0) await sleep(500);
  }
  return open;
}

/** The invariant a mutant's run looks for is broken already (a break only stays one as the run goes on). */
function broken(run: CheckedRun, options: HttpChaosOptions): boolean {
  if (options.stopOnceBroken === undefined) return false;
  const verdict = checkAgentSide(run.executions, run.holdings, Date.now(), {
    claims: run.network.claimAnswers,
    checkpoints: run.checkpointWrites,
  });
  return verdict[options.stopOnceBroken] > 0;
}

/** Prints what the tasks still open hold, and the dead letters: why a run did not end. */
export async function tellWhyOpen(run: CheckedRun, open: readonly string[]): Promise<void> {
  const left = await run.ctx.tasks.getMany(open.slice(0, 20));
  for (const task of left.values()) {
    const { payload: _p, result: _r, ...rest } = task as unknown as Record<string, unknown>;
    console.error(`never ended: ${JSON.stringify(rest)}`);
  }
  const dlq = run.ctx.queues.directory.deadLetterUrlFor('chaos');
  const attributes = await run.scratch.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  console.error(`dead letters: ${attributes.Attributes?.ApproximateNumberOfMessages}`);
}
