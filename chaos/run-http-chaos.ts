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
import { AgentSchedulerClient } from '#sdk/client';
import { Worker, type WorkerOptions } from '#sdk/worker';
import { checkAgentSide, checkHistory, overlaps, type RoleHolding, violationDetails } from './history';
import { type HttpChaosReport, VIOLATION_COUNTS } from './http-report';
import { ATTEMPT_TIMEOUT_MS, type HttpChaosOptions, type Run, setUp } from './http-stack';
import { digestOf, handlerFor, taskSpecs } from './http-workload';
import { superviseUnderChaos } from './supervisor-loop';

export type { HttpChaosReport } from './http-report';
export type { HttpChaosOptions } from './http-stack';

const SUPERVISOR_TICK_MS = 250;
const TERMINAL = new Set(['succeeded', 'dead', 'cancelled', 'expired']);
const ROLE = 'chaos-leader';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Agent {
  readonly name: string;
  readonly agentId: string;
  readonly worker: Worker;
  readonly state: { cutOffUntil: number };
  gone: boolean;
}

/** The fleet: agents started (a few of them volunteering for the role), and replaced when crashed or revoked. */
function fleet(run: Run, options: HttpChaosOptions) {
  const agents: Agent[] = [];
  let serial = 0;
  const concurrency = run.workload.shape.concurrency;
  const startAgent = async (index: number, roles: boolean): Promise<void> => {
    const name = `chaos-${index}-${serial++}`;
    const created = await run.operator.createAgent({ name, queues: ['chaos'], maxConcurrency: concurrency });
    const state: { name: string; cutOffUntil: number; worker?: Worker } = { name, cutOffUntil: 0 };
    const client = new AgentSchedulerClient({
      endpoint: run.server.url,
      token: created.token,
      fetch: run.network.fetchFor(state),
      timeoutMs: ATTEMPT_TIMEOUT_MS,
      retries: { maxAttempts: 4, baseDelayMs: 20, maxDelayMs: 200 },
    });
    const base: WorkerOptions = {
      client,
      concurrency,
      pollIntervalMs: { min: 20, max: 200 },
      handler: handlerFor(run.workload, state),
      log: {
        debug: () => undefined,
        info: () => undefined,
        warn: (message, fields) => {
          if (message.startsWith('giving back a task')) run.grantsGivenBack.count++;
          const reason = (fields as { reason?: unknown } | undefined)?.reason;
          const key = typeof reason === 'string' ? `${message} (${reason})` : message;
          run.workerWarnings[key] = (run.workerWarnings[key] ?? 0) + 1;
          if (roles) run.workerNotes.push({ at: Date.now(), agent: name, message, fields });
        },
        error: () => undefined,
      },
      ...(roles ? { roles: { [ROLE]: roleHandler(run, name) } } : {}),
    };
    // A session that cannot open under the faults is tried again with a new Worker (one starts only once).
    let worker: Worker | undefined;
    for (let attempt = 0; !worker; attempt++) {
      const candidate = new Worker(options.mutateWorker ? options.mutateWorker(base) : base);
      candidate.on('error', () => undefined);
      options.mutateWorkerInstance?.(candidate);
      try {
        await candidate.start();
        worker = candidate;
      } catch (error) {
        if (attempt >= 20) throw error;
      }
    }
    state.worker = worker;
    const agentId = created.agent.agentId;
    const heard = (op: 'complete' | 'fail') => (task: { taskId: string; leaseEpoch: number }) => {
      if (op === 'complete') {
        const execution = run.executions.findLast((e) => e.taskId === task.taskId && e.agent === name);
        if (execution) execution.succeededAt = Date.now();
      }
      run.history.calls.push({
        op,
        agentId,
        taskId: task.taskId,
        leaseEpoch: task.leaseEpoch,
        at: Date.now(),
        outcome: 'ok',
      });
    };
    worker.on('completed', heard('complete'));
    worker.on('failed', heard('fail'));
    agents.push({ name, agentId, worker, state, gone: false });
  };
  const replace = async (agent: Agent, index: number) => {
    agent.gone = true;
    // A crashed or revoked agent's Worker is left cut off; its handlers' signals abort when it is stopped.
    void agent.worker.stop({ drain: false, timeoutMs: 1 }).catch(() => undefined);
    await startAgent(index, false).catch(() => run.faults.count('agentNotReplaced'));
  };
  return { agents, startAgent, replace };
}

/** The role's handler: holds the role until aborted, or gives it up after a while so it moves between holders. */
const roleHandler =
  (run: Run, name: string) =>
  async ({ leaseEpoch, signal }: { leaseEpoch: number; signal: AbortSignal }) => {
    const holding: RoleHolding = { role: ROLE, agent: name, leaseEpoch, start: Date.now() };
    run.holdings.push(holding);
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      signal.addEventListener('abort', () => resolve(), { once: true });
      setTimeout(resolve, 500 + run.random() * 1_500);
    });
    holding.end = Date.now();
  };

/** The work is in before the fleet starts, so the faults fall on a full queue rather than on the submissions. */
async function submitAll(run: Run, options: HttpChaosOptions) {
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

export async function runHttpChaos(options: HttpChaosOptions): Promise<HttpChaosReport> {
  const started = performance.now();
  const run = await setUp(options);
  // How late this process runs its timers: every agent, the server and the supervisor share one event loop here,
  // and a lease reckoned on the agent's side is only as punctual as its timers.
  run.loopDelay.enable();
  const { live } = run;
  const phasesMs: Record<string, number> = {};
  const mark = (phase: string) => {
    phasesMs[phase] = Math.round(performance.now() - started);
  };
  try {
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
    let cancelled = 0;
    let revoked = 0;
    // Operators: cancel a task now and then, revoke an agent now and then; crashed agents are replaced.
    const operators = (async () => {
      while (!live.stopping && live.faultsOn) {
        await sleep(100);
        const target = acknowledged[Math.floor(run.random() * acknowledged.length)];
        if (target && run.random() < 0.1) {
          await run.operator.cancelTask(target).then(
            () => cancelled++,
            () => undefined,
          );
        }
        const standing = agents.filter((a) => !a.gone);
        if (run.random() < 0.005) {
          const victim = standing[Math.floor(run.random() * standing.length)];
          if (victim) {
            await run.operator.revokeAgent(victim.agentId).catch(() => undefined);
            revoked++;
            run.faults.count('agentRevoked');
            await replace(victim, agents.indexOf(victim));
          }
        }
        for (const crashed of standing.filter((a) => a.state.cutOffUntil === Number.POSITIVE_INFINITY))
          await replace(crashed, agents.indexOf(crashed));
      }
    })();
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
    mark('stopped');
    const verdict = await verify(run, acknowledged, withHook, agents);
    return {
      mode: 'http',
      sizes: options.sizes ?? 'small',
      tasks: options.tasks,
      children: run.made.childIds.size,
      hooks: run.made.hooks.size,
      agents: options.agents,
      seed: options.seed,
      durationMs: Math.round(performance.now() - started),
      faults: { ...run.faults.byKind, supervisorDoubled: supervisor.doubled },
      faultsWhere: run.faults.byWhere,
      requests: run.network.requests,
      requestsWhere: run.network.requestsWhere,
      answerMs: run.network.answerMs(),
      abandonedWhere: run.network.abandonedWhere,
      executions: run.executions.length,
      roleHoldings: run.holdings.length,
      cancelled,
      revoked,
      supervisorPasses: supervisor.passes,
      phasesMs,
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
  } finally {
    live.stopping = true;
    run.loopDelay.disable();
    await run.server.close();
    await run.scratch.dispose();
  }
}

/**
 * Waits until every task has ended (children and hooks made meanwhile included; a dead task with an `onFailure`
 * only once its hook exists), stopping the faults once half the work has run. Returns the tasks still open.
 */
async function drain(
  run: Run,
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
    if (open.length > 0) await sleep(500);
  }
  return open;
}

/** Prints what the tasks still open hold, and the dead letters: why a run did not end. */
async function tellWhyOpen(run: Run, open: readonly string[]): Promise<void> {
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

/**
 * The verdicts: the server's side (leases, epochs, stale writes accepted, terminals, phantom oks, lost, never
 * ended), the agents' side, each kept result against its handler's, each dead task's hook, each child retry.
 */
async function verify(
  run: Run,
  acknowledged: readonly string[],
  withHook: ReadonlySet<string>,
  agents: readonly Agent[],
) {
  const until = Date.now();
  const everyTask = [...new Set([...acknowledged, ...run.history.acknowledged])];
  let resultMismatchCount = 0;
  let hookMissingCount = 0;
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
        hookMissingCount++;
        if (violationDetails.length < 10) violationDetails.push(`dead without its hook: ${taskId}`);
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
    childMismatchCount: run.made.childMismatches.length,
  };
  return {
    ...counts,
    violations: VIOLATION_COUNTS.reduce((sum, name) => sum + counts[name], 0),
    ...(violationDetails.length > 0 ? { violationDetails: [...violationDetails] } : {}),
  };
}
