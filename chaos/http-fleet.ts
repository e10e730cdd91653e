/**
 * The fleet of the HTTP chaos run: SDK Workers on the agents' faulty network, each handler recording what it ran,
 * a few of them volunteering for a role whose holdings are recorded too; a crashed or revoked agent is replaced.
 */
import { AgentSchedulerClient } from '#sdk/client';
import { Worker, type WorkerOptions } from '#sdk/worker';
import type { RoleHolding } from './history';
import { ATTEMPT_TIMEOUT_MS, type HttpChaosOptions, type Run } from './http-stack';
import { handlerFor } from './http-workload';

const ROLE = 'chaos-leader';

export interface Agent {
  readonly name: string;
  readonly agentId: string;
  readonly worker: Worker;
  readonly state: { cutOffUntil: number };
  /** It volunteers for the role; so does the agent that replaces it. */
  readonly roles: boolean;
  gone: boolean;
}

/**
 * The fleet: agents started (a few of them volunteering for the role), and replaced when crashed or revoked, a
 * volunteer by a volunteer, so the role keeps moving between holders to the run's end.
 */
export function fleet(run: Run, options: HttpChaosOptions) {
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
    agents.push({ name, agentId, worker, state, roles, gone: false });
  };
  const replace = async (agent: Agent, index: number) => {
    agent.gone = true;
    // A crashed or revoked agent's Worker is left cut off; its handlers' signals abort when it is stopped.
    void agent.worker.stop({ drain: false, timeoutMs: 1 }).catch(() => undefined);
    await startAgent(index, agent.roles).catch(() => run.faults.count('agentNotReplaced'));
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
