/**
 * A chaos run of a fleet of agent processes, Python and TypeScript, through a fault-injecting proxy: the HTTP chaos
 * run's stack (`http-stack.ts`: the local server on scratch tables and queues, whose DynamoDB client loses answers
 * of committed writes, and the recorders of what it commits), its work (`http-workload.ts`: tasks with hooks,
 * children, retries) and its checks (`http-report.ts`), with the agents out of process. Each agent is
 * `python/scripts/fleet_agent.py` or `fleet-agent.ts`, its endpoint the proxy (`fault-proxy.ts`), and it logs what
 * its handlers ran to a file the checker reads (`fleet-log.ts`).
 *
 * Processes are killed with SIGKILL and replaced (by a process of the same language: half the time with the same
 * agent's token, as a supervisor restarts a crashed agent, half the time as a new agent); operators cancel tasks and
 * now and then revoke an agent, whose process is stopped and replaced by a new agent's. The faults stop once half
 * the work has run (and not before five lease TTLs of them); the run then drains, stops every process with SIGTERM
 * and checks: what the tables committed, what ran in the processes (no two runs of a task at once, none after its
 * success was decided, no result lost between the handler and the server), each kept result against its handler's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seededRandom } from '#local/seeded-random';
import { startFaultProxy } from './fault-proxy';
import { FleetLogs } from './fleet-log';
import { type FleetChaosOptions, type FleetChaosReport, fleetReportOf } from './fleet-report';
import { type Fleet, type FleetSlot, startFleet } from './fleet-run';
import type { CheckedRun } from './http-report';
import { type HttpChaosOptions, setUp } from './http-stack';
import { drain, submitAll, tellWhyOpen } from './run-http-chaos';
import { superviseUnderChaos } from './supervisor-loop';

export type { FleetChaosOptions, FleetChaosReport } from './fleet-report';

const SUPERVISOR_TICK_MS = 250;
const OPERATOR_TICK_MS = 100;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sets the stack, the proxy and the fleet up, runs the work under the faults, and reports. */
export async function runFleetChaos(options: FleetChaosOptions): Promise<FleetChaosReport> {
  const started = performance.now();
  const leaseTtlSeconds = options.leaseTtlSeconds ?? 5;
  const httpOptions: HttpChaosOptions = {
    tasks: options.tasks,
    agents: options.agents,
    seed: options.seed,
    leaseTtlSeconds,
    drainTimeoutMs: options.drainTimeoutMs ?? 600_000,
    storeLostShare: options.storeLostShare ?? 0.02,
    ...(options.endpoints ? { endpoints: options.endpoints } : {}),
  };
  const stack = await setUp(httpOptions);
  const proxy = await startFaultProxy({
    upstream: stack.server.url,
    random: seededRandom(options.seed + 3),
    faults: stack.faults,
    cutOffMs: leaseTtlSeconds * 3_000,
    cutOffEachAgent: true,
    ...(options.shares ? { shares: options.shares } : {}),
  });
  const run: CheckedRun = { ...stack, network: proxy };
  const logDir = mkdtempSync(join(tmpdir(), 'agent-scheduler-fleet-'));
  const logs = new FleetLogs(run);
  let fleet: Fleet | undefined;
  run.loopDelay.enable();
  try {
    const phasesMs: Record<string, number> = {};
    const mark = (phase: string) => {
      phasesMs[phase] = Math.round(performance.now() - started);
    };
    const { acknowledged, withHook } = await submitAll(run, httpOptions);
    for (const taskId of acknowledged) run.history.acknowledged.add(taskId);
    mark('submitted');
    fleet = await startFleet(run, logs, {
      ...options,
      concurrency: options.concurrency ?? 4,
      endpoint: proxy.url,
      logDir,
    });
    mark('fleetReady');
    const fleetStarted = performance.now();
    run.live.fleetStarted = true;
    const supervisor = superviseUnderChaos({
      pass: () => run.scheduler.supervise(),
      tickMs: SUPERVISOR_TICK_MS,
      doublingShare: 0.1,
      faultsOn: () => run.live.faultsOn,
    });
    const tail = setInterval(() => logs.poll(), 250);
    const operated = { cancelled: 0, revoked: 0, killed: 0 };
    const operators = operate(run, acknowledged, fleet.slots, fleet, options, operated);
    const left = await drain(run, httpOptions, acknowledged, withHook, fleetStarted, () => {
      mark('faultsOff');
      proxy.stopFaults();
    });
    mark('drained');
    if (process.env.CHAOS_DEBUG && left.length > 0) await tellWhyOpen(run, left);
    run.live.faultsOn = false;
    proxy.stopFaults();
    run.live.stopping = true;
    await Promise.all([supervisor.stop(), operators]);
    await fleet.stopAll();
    clearInterval(tail);
    logs.poll();
    run.live.fleetStopped = true;
    mark('stopped');
    return await fleetReportOf(run, httpOptions, logs, fleet, {
      started,
      outcome: {
        acknowledged,
        withHook,
        agents: fleet.everyAgent(),
        supervisorPasses: supervisor.passes,
        supervisorDoubled: supervisor.doubled,
        cancelled: operated.cancelled,
        revoked: operated.revoked,
        phasesMs,
      },
      killed: operated.killed,
    });
  } finally {
    run.live.stopping = true;
    run.live.fleetStopped = true;
    await fleet?.killAll();
    run.loopDelay.disable();
    await proxy.close();
    await stack.server.close();
    await stack.scratch.dispose();
    if (!process.env.CHAOS_KEEP_LOGS) rmSync(logDir, { recursive: true, force: true });
    else console.error(`fleet logs kept in ${logDir}`);
  }
}

/**
 * Operators, while the faults last: cancel a task now and then, revoke an agent now and then (its process stops and
 * the fleet replaces it), and kill a process with SIGKILL about every `killEverySeconds` (replaced at once).
 */
async function operate(
  run: CheckedRun,
  acknowledged: readonly string[],
  slots: readonly FleetSlot[],
  fleet: Fleet,
  options: FleetChaosOptions,
  operated: { cancelled: number; revoked: number; killed: number },
): Promise<void> {
  const { live } = run;
  const killShare = OPERATOR_TICK_MS / ((options.killEverySeconds ?? 10) * 1_000);
  while (!live.stopping && live.faultsOn) {
    await sleep(OPERATOR_TICK_MS);
    const target = acknowledged[Math.floor(run.random() * acknowledged.length)];
    if (target && run.random() < 0.1) {
      await run.operator.cancelTask(target).then(
        () => operated.cancelled++,
        () => undefined,
      );
    }
    const slot = slots[Math.floor(run.random() * slots.length)];
    if (!slot || !live.faultsOn) continue;
    if (run.random() < killShare) {
      operated.killed++;
      run.faults.count('agentKilled', slot.current.language);
      await fleet.kill(slot);
    } else if (run.random() < 0.002) {
      operated.revoked++;
      run.faults.count('agentRevoked', slot.current.language);
      await fleet.revoke(slot);
    }
  }
}
