/**
 * A chaos run through the HTTP edge and the SDK: the local server in process on scratch tables and queues, and
 * SDK `Worker`s (several tasks at once, so claims ask for more than one) whose `fetch` loses, hangs and refuses
 * requests from a seed. Operators cancel tasks and revoke agents mid-run (a revoked agent is replaced); a few
 * Workers hold a role. Handlers record every execution and role holding, and the checker looks at what ran on
 * the agents, not only at what the server committed (`checkAgentSide` in `history.ts`).
 *
 * Faults, each drawn from the seed, on every agent request while the faults last:
 * - 503 before the request reaches the server (3 %); the SDK retries;
 * - the request is served and its answer lost (3 %); the SDK retries, so a claim or completion is sent again;
 * - the request hangs until the per-attempt timeout (1 %);
 * - the request is held in the network: the attempt times out, and the server gets it 0.5 to 6 s later (1 %);
 * - an agent is cut off (every request hangs) for longer than the lease's time to live (1 % of claims);
 * - an agent crashes: its Worker stops without releasing anything (0.5 % of claims), and a new one takes its place.
 */
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { Scheduler } from '#core/scheduler';
import { scratchStack } from '#local/scratch-stack';
import { seededRandom } from '#local/seeded-random';
import { startLocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import type { ClaimedTask } from '#sdk/types';
import { Worker, type WorkerOptions } from '#sdk/worker';
import { createContext, type WiredContext } from '#wiring/context';
import { emptyHistory, recordCommittedWrites } from './committed-writes';
import {
  type AgentSideVerdict,
  type CheckpointWrite,
  type ClaimAnswer,
  checkAgentSide,
  checkHistory,
  type Execution,
  overlaps,
  type RoleHolding,
  violationDetails,
} from './history';
import { superviseUnderChaos } from './supervisor-loop';
import { written } from './written';

export interface HttpChaosOptions {
  readonly tasks: number;
  readonly agents: number;
  readonly seed: number;
  readonly endpoints?: { readonly dynamodb: string; readonly sqs: string };
  /** Tasks each Worker runs at once (its claims ask for up to this many). @default 4 */
  readonly concurrency?: number;
  /** Changes the scheduler under test (server-side mutants). Not reachable from any configuration. */
  readonly mutateScheduler?: (scheduler: Scheduler) => void;
  /** Changes the scheduler's context, its tables (server-side mutants). */
  readonly mutateContext?: (ctx: WiredContext) => void;
  /** Changes each Worker's options (SDK mutants). */
  readonly mutateWorker?: (options: WorkerOptions) => WorkerOptions;
  /** Changes each Worker once made, before it starts (SDK mutants). */
  readonly mutateWorkerInstance?: (worker: Worker) => void;
  /** Share of supervisor ticks that run two passes at once. @default 0.1 */
  readonly supervisorDoubling?: number;
  /** Longest wait for every task to end once the faults stop. @default 60 s */
  readonly drainTimeoutMs?: number;
  /** Share of handlers whose agent is cut off while they run 3 s (past the lease's time to live). @default 0.01 */
  readonly cutOffShare?: number;
  /** The lease TTL (heartbeats every quarter of it). @default 2 s */
  readonly leaseTtlSeconds?: number;
  /**
   * How long a queued task waits before the supervisor sends its message again. Short, a deep queue is sent again
   * over and over (10,000 queued tasks every 2 s). @default 2 s
   */
  readonly reconcileAfterSeconds?: number;
  /** Share of agent requests held in the network and delivered late, after the attempt gave up. @default 0.01 */
  readonly lateShare?: number;
  /** The routes (paths) whose requests may be delivered late. @default every agent route */
  readonly lateRoutes?: readonly string[];
  /** How late such a request reaches the server, in ms. @default 500 to 6,000 */
  readonly lateDelayMs?: { readonly min: number; readonly max: number };
  /** Share of handlers that work for 3 s, checkpointing. @default 0.05 */
  readonly longShare?: number;
  /** Share of handlers that fail (the task is retried). @default 0.1 */
  readonly failShare?: number;
}

export interface HttpChaosReport extends AgentSideVerdict {
  readonly mode: 'http';
  readonly tasks: number;
  readonly agents: number;
  readonly seed: number;
  readonly durationMs: number;
  readonly faults: Readonly<Record<string, number>>;
  readonly requests: number;
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
  readonly violations: number;
  /** The first violations, each with what makes it one (absent when there are none). */
  readonly violationDetails?: readonly string[];
}

const SUPERVISOR_TICK_MS = 250;
const ATTEMPT_TIMEOUT_MS = 1_000;
const TERMINAL = new Set(['succeeded', 'dead', 'cancelled', 'expired']);
const ROLE = 'chaos-leader';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A stale owner is refused with LeaseLost or SessionLost, or, once the task is another agent's, answered as if it
 * did not exist (TaskNotFound on an agent route). Counted whether or not the answer reaches its agent.
 */
const refusedAsStale = (status: number, text: string): boolean =>
  (status === 409 && /"code":"(LeaseLost|SessionLost)"/.test(text)) ||
  (status === 404 && /"code":"TaskNotFound"/.test(text));

/** Waits for the abort of an attempt's signal, then fails as fetch does. */
const hangUntilAborted = (signal: AbortSignal | null | undefined, limitMs: number) =>
  new Promise<never>((_, reject) => {
    const fail = () => reject(signal?.reason ?? new DOMException('aborted', 'AbortError'));
    if (signal?.aborted) return fail();
    signal?.addEventListener('abort', fail, { once: true });
    setTimeout(fail, limitMs);
  });

export async function runHttpChaos(options: HttpChaosOptions): Promise<HttpChaosReport> {
  const started = performance.now();
  const random = seededRandom(options.seed);
  const leaseTtlSeconds = options.leaseTtlSeconds ?? 2;
  // How late this process runs its timers: every agent, the server and the supervisor share one event loop here,
  // and a lease reckoned on the agent's side is only as punctual as its timers.
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const scratch = await scratchStack({ name: 'chaoshttp', queues: ['chaos'], endpoints: options.endpoints });
  // What the tables committed, checked as the in-process run's history is; the agents' calls that came back ok
  // (completions and failures the Workers heard of) must each be a committed transition.
  const history = emptyHistory();
  recordCommittedWrites(scratch.dynamodb, scratch.tables, history);
  const serverWarnings: Record<string, number> = {};
  const workerWarnings: Record<string, number> = {};
  // What the server said of the role and what the Workers said of their sessions, with times: the story of a role
  // held twice, told in the report when it happens.
  const roleEvents: { at: number; type: string; agentId?: string; data?: unknown }[] = [];
  const workerNotes: { at: number; agent: string; message: string; fields?: unknown }[] = [];
  const ctx = createContext({
    events: {
      publish: async (events) => {
        for (const e of events)
          if (e.type.startsWith('role.'))
            roleEvents.push({ at: Date.parse(e.time), type: e.type, agentId: e.agentId, data: e.data });
      },
    },
    log: {
      info() {},
      warn(message) {
        serverWarnings[message] = (serverWarnings[message] ?? 0) + 1;
      },
      error(message) {
        serverWarnings[message] = (serverWarnings[message] ?? 0) + 1;
      },
    },
    dynamodb: scratch.dynamodb,
    sqs: scratch.sqs,
    tables: scratch.tables,
    queues: scratch.queues,
    random: seededRandom(options.seed + 1),
    settings: {
      leaseTtlSeconds,
      heartbeatIntervalSeconds: leaseTtlSeconds / 4,
      reconcileAfterSeconds: options.reconcileAfterSeconds ?? 2,
      claimVisibilityTimeoutSeconds: 2,
      reservationGraceSeconds: 2,
      // Idle agents wait up to half a second between claims: fifty agents polling every 100 ms would keep the one
      // process that runs them all too busy to serve the work.
      idleRetryBaseMs: 20,
      idleRetryMaxMs: 500,
    },
  });
  options.mutateContext?.(ctx);
  // Every checkpoint the tasks table takes, with the epoch its handler wrote into it and when it was sent.
  const checkpointWrites: CheckpointWrite[] = [];
  const update = ctx.tasks.update.bind(ctx.tasks);
  ctx.tasks.update = async (taskId, build) => {
    let checkpoint: unknown;
    const sentAt = Date.now();
    const result = await update(taskId, (e) => {
      const clauses = build(e);
      checkpoint = written(e, clauses.set, 'checkpoint');
      return clauses;
    });
    if (result.ok && typeof checkpoint === 'string') {
      const writerEpoch = (JSON.parse(checkpoint) as { leaseEpoch?: unknown }).leaseEpoch;
      if (typeof writerEpoch === 'number')
        checkpointWrites.push({ taskId, writerEpoch, sentAt, landedOnEpoch: result.task.leaseEpoch });
    }
    return result;
  };
  const scheduler = new Scheduler(ctx);
  options.mutateScheduler?.(scheduler);
  if (process.env.CHAOS_DEBUG) {
    const open = ctx.sessions.open.bind(ctx.sessions);
    ctx.sessions.open = async (session, previous) => {
      const outcome = await open(session, previous);
      if (
        outcome === 'opened' &&
        previous &&
        previous.expiresAt > Date.now() &&
        previous.endedAt === undefined
      )
        console.error(
          `live session replaced: ${session.agentId} at ${Date.now()} roles ${JSON.stringify(previous.roles)}`,
        );
      return outcome;
    };
  }
  const operatorToken = `op_${randomBytes(12).toString('base64url')}`;
  const server = await startLocalServer({
    scheduler,
    agents: ctx.agents,
    operatorToken,
    port: 0,
    log: ctx.log,
  });

  const faults: Record<string, number> = {};
  const count = (kind: string) => {
    faults[kind] = (faults[kind] ?? 0) + 1;
  };
  let faultsOn = true;
  let requests = 0;
  let staleRejectedCount = 0;
  let grantsGivenBack = 0;
  const claimAnswers: ClaimAnswer[] = [];
  /** The claim id a request carries, if it is a claim (the transport sends `Request` objects). */
  const claimIdOf = async (input: Parameters<typeof fetch>[0], init: RequestInit | undefined) => {
    const url = input instanceof Request ? input.url : String(input);
    if (!url.endsWith('/v1/agent/claim')) return undefined;
    const body = input instanceof Request ? await input.clone().text() : init?.body;
    return typeof body === 'string' ? (JSON.parse(body) as { claimId?: string }).claimId : undefined;
  };
  /** Notes what the server answered to a claim, before the answer can be lost. */
  const noteClaim = (claimId: string | undefined, text: string) => {
    const answer = JSON.parse(text) as { tasks?: { taskId: string; leaseEpoch: number }[] };
    if (claimId && answer.tasks)
      claimAnswers.push({ claimId, granted: answer.tasks.map((t) => `${t.taskId}#${t.leaseEpoch}`) });
  };
  const executions: Execution[] = [];
  const holdings: RoleHolding[] = [];
  const operator = new AgentSchedulerClient({ endpoint: server.url, token: operatorToken });

  /** An agent's fetch: real requests to the local server, with the faults drawn from the seed. */
  const faultyFetch = (agent: { cutOffUntil: number }): typeof fetch => {
    return async (input, init) => {
      requests++;
      const signal = init?.signal;
      // A cut-off, once begun, lasts its time even after the other faults stop.
      if (Date.now() < agent.cutOffUntil) {
        count('agentCutOffRequest');
        return hangUntilAborted(signal, ATTEMPT_TIMEOUT_MS * 2);
      }
      const draw = faultsOn ? random() : 1;
      if (draw < 0.03) {
        count('unavailableBeforeDelivery');
        return new Response(JSON.stringify({ error: { code: 'ServiceUnavailable', message: 'injected' } }), {
          status: 503,
          headers: { 'content-type': 'application/json' },
        });
      }
      if (draw < 0.04) {
        count('requestHung');
        return hangUntilAborted(signal, ATTEMPT_TIMEOUT_MS * 2);
      }
      const lateShare = options.lateShare ?? 0.01;
      const lateDelay = options.lateDelayMs ?? { min: 500, max: 6_000 };
      const url = input instanceof Request ? input.url : String(input);
      const lateRoute = options.lateRoutes?.some((path) => url.endsWith(path)) ?? true;
      if (lateRoute && draw >= 0.07 && draw < 0.07 + lateShare) {
        // Held in the network: the attempt gives up, the server gets the request later all the same. What it
        // answers then reaches nobody (a late claim may lease what the agent never hears of: its session's held
        // tasks are reconciled).
        count('deliveredLate');
        const { signal: _attempt, ...rest } = init ?? {};
        const claimId = await claimIdOf(input, init);
        setTimeout(
          () =>
            void fetch(input, rest)
              .then(async (answer) => {
                const text = await answer.text();
                if (answer.ok) noteClaim(claimId, text);
                if (refusedAsStale(answer.status, text)) staleRejectedCount++;
              })
              .catch(() => undefined),
          lateDelay.min + random() * (lateDelay.max - lateDelay.min),
        );
        return hangUntilAborted(signal, ATTEMPT_TIMEOUT_MS * 2);
      }
      const claimId = await claimIdOf(input, init);
      const response = await fetch(input, init);
      const text = await response.text();
      if (response.ok) noteClaim(claimId, text);
      if (refusedAsStale(response.status, text)) staleRejectedCount++;
      if (draw < 0.07) {
        count('answerLost');
        throw new TypeError('fetch failed: injected loss of the answer');
      }
      return new Response(text, { status: response.status, headers: response.headers });
    };
  };

  interface Agent {
    readonly name: string;
    readonly agentId: string;
    readonly worker: Worker;
    cutOffUntil: number;
    gone: boolean;
  }
  const agents: Agent[] = [];
  let agentSerial = 0;

  const handler =
    (agent: { name: string; cutOffUntil: number; worker?: Worker }) =>
    async (task: ClaimedTask, context: Parameters<NonNullable<WorkerOptions['handler']>>[1]) => {
      const execution: Execution = {
        taskId: task.taskId,
        leaseEpoch: task.leaseEpoch,
        agent: agent.name,
        start: Date.now(),
      };
      executions.push(execution);
      const ended = () => {
        execution.end ??= Date.now();
      };
      context.signal.addEventListener('abort', ended, { once: true });
      try {
        const draw = random();
        const cutOffShare = options.cutOffShare ?? 0.01;
        const cutOff = faultsOn && draw < cutOffShare;
        if (cutOff) {
          count('agentCutOff');
          agent.cutOffUntil = Date.now() + leaseTtlSeconds * 1_000 * 3;
        } else if (faultsOn && draw < cutOffShare + 0.005) {
          count('agentCrash');
          // Stops claiming and heartbeating at once; nothing is released.
          agent.cutOffUntil = Number.POSITIVE_INFINITY;
        }
        // Most handlers are quick; one in twenty works for 3 s (past the lease's time to live, so only its
        // heartbeats keep it), checkpointing, until done or aborted.
        const steps = cutOff ? 160 : random() < (options.longShare ?? 0.05) ? 60 : 1;
        for (let step = 0; step < steps && !context.signal.aborted; step++) {
          // The epoch says which lease wrote the checkpoint, for the checker.
          context.checkpoint({ step, leaseEpoch: task.leaseEpoch });
          await sleep(steps > 1 ? 50 : 5 + random() * 45);
        }
        if (random() < (options.failShare ?? 0.1)) throw new Error('chaos says no');
        return { n: task.taskId };
      } finally {
        ended();
      }
    };

  const startAgent = async (index: number, roles: boolean): Promise<void> => {
    const name = `chaos-${index}-${agentSerial++}`;
    const created = await operator.createAgent({
      name,
      queues: ['chaos'],
      maxConcurrency: options.concurrency ?? 4,
    });
    const state: { name: string; cutOffUntil: number } = { name, cutOffUntil: 0 };
    const client = new AgentSchedulerClient({
      endpoint: server.url,
      token: created.token,
      fetch: faultyFetch(state),
      timeoutMs: ATTEMPT_TIMEOUT_MS,
      retries: { maxAttempts: 4, baseDelayMs: 20, maxDelayMs: 200 },
    });
    const base: WorkerOptions = {
      client,
      concurrency: options.concurrency ?? 4,
      pollIntervalMs: { min: 20, max: 200 },
      handler: handler(state),
      log: {
        debug: () => undefined,
        info: () => undefined,
        warn: (message, fields) => {
          if (message.startsWith('giving back a task')) grantsGivenBack++;
          const reason = (fields as { reason?: unknown } | undefined)?.reason;
          const key = typeof reason === 'string' ? `${message} (${reason})` : message;
          workerWarnings[key] = (workerWarnings[key] ?? 0) + 1;
          if (roles) workerNotes.push({ at: Date.now(), agent: name, message, fields });
        },
        error: () => undefined,
      },
      ...(roles
        ? {
            roles: {
              [ROLE]: async ({ leaseEpoch, signal }) => {
                const holding: RoleHolding = { role: ROLE, agent: name, leaseEpoch, start: Date.now() };
                holdings.push(holding);
                await new Promise<void>((resolve) => {
                  if (signal.aborted) resolve();
                  signal.addEventListener('abort', () => resolve(), { once: true });
                  // Gives the role up now and then, so it moves between holders.
                  setTimeout(resolve, 500 + random() * 1_500);
                });
                holding.end = Date.now();
              },
            },
          }
        : {}),
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
    const agentId = created.agent.agentId;
    worker.on('completed', (task) => {
      const execution = executions.findLast((e) => e.taskId === task.taskId && e.agent === name);
      if (execution) execution.succeededAt = Date.now();
      history.calls.push({
        op: 'complete',
        agentId,
        taskId: task.taskId,
        leaseEpoch: task.leaseEpoch,
        at: Date.now(),
        outcome: 'ok',
      });
    });
    worker.on('failed', (task) => {
      history.calls.push({
        op: 'fail',
        agentId,
        taskId: task.taskId,
        leaseEpoch: task.leaseEpoch,
        at: Date.now(),
        outcome: 'ok',
      });
    });
    agents.push({
      name,
      agentId: created.agent.agentId,
      worker,
      gone: false,
      get cutOffUntil() {
        return state.cutOffUntil;
      },
      set cutOffUntil(value) {
        state.cutOffUntil = value;
      },
    });
  };

  const replace = async (agent: Agent, index: number) => {
    agent.gone = true;
    // A crashed or revoked agent's Worker is left cut off; its handlers' signals abort when it is stopped.
    void agent.worker.stop({ drain: false, timeoutMs: 1 }).catch(() => undefined);
    await startAgent(index, false).catch(() => count('agentNotReplaced'));
  };

  let cancelled = 0;
  let revoked = 0;
  let stopping = false;
  const acknowledged: string[] = [];
  try {
    // The work is in before the fleet starts, so the faults fall on a full queue rather than on the submissions.
    await (async () => {
      for (let i = 0; i < options.tasks; i += 25) {
        const batch = Array.from({ length: Math.min(25, options.tasks - i) }, (_, k) => ({
          queue: 'chaos',
          payload: { n: i + k },
          maxAttempts: 50,
          timeoutSeconds: 20,
          backoffBaseSeconds: 1,
          backoffMaxSeconds: 1,
          idempotencyKey: `chaos-http-${options.seed}-${i + k}`,
        }));
        for (let attempt = 0; attempt < 5; attempt++) {
          const results = await operator.submitTasks(batch).catch(() => undefined);
          if (!results) continue;
          for (const result of results) if (result.ok) acknowledged.push(result.task.taskId);
          if (results.every((r) => r.ok)) break;
        }
      }
    })();
    await Promise.all(Array.from({ length: options.agents }, (_, i) => startAgent(i, i < 3)));
    const fleetStarted = performance.now();

    const supervisor = superviseUnderChaos({
      pass: () => scheduler.supervise(),
      tickMs: SUPERVISOR_TICK_MS,
      doublingShare: options.supervisorDoubling ?? 0.1,
      faultsOn: () => faultsOn,
    });

    // Operators: cancel a task now and then, revoke an agent now and then; crashed agents are replaced.
    const operators = (async () => {
      while (!stopping && faultsOn) {
        await sleep(100);
        const target = acknowledged[Math.floor(random() * acknowledged.length)];
        if (target && random() < 0.1) {
          await operator.cancelTask(target).then(
            () => cancelled++,
            () => undefined,
          );
        }
        const live = agents.filter((a) => !a.gone);
        if (random() < 0.005) {
          const victim = live[Math.floor(random() * live.length)];
          if (victim) {
            await operator.revokeAgent(victim.agentId).catch(() => undefined);
            revoked++;
            count('agentRevoked');
            await replace(victim, agents.indexOf(victim));
          }
        }
        for (const crashed of live.filter((a) => a.cutOffUntil === Number.POSITIVE_INFINITY))
          await replace(crashed, agents.indexOf(crashed));
      }
    })();

    const phasesMs: Record<string, number> = {};
    const mark = (phase: string) => {
      phasesMs[phase] = Math.round(performance.now() - started);
    };
    mark('submitted');
    // Faults stop once half the work has run; then everything must end.
    const deadline = Date.now() + (options.drainTimeoutMs ?? 60_000);
    let open = [...acknowledged];
    while (open.length > 0 && Date.now() <= deadline) {
      // A window of 500 at a time, moved to the back when none of it ended: reading every open task twice a
      // second would load DynamoDB Local more than the fleet does.
      const window = open.slice(0, 500);
      const states = await ctx.tasks.getMany(window);
      const ended = new Set([...states].filter(([, s]) => TERMINAL.has(s?.status ?? '')).map(([id]) => id));
      open =
        ended.size === 0 ? [...open.slice(window.length), ...window] : open.filter((id) => !ended.has(id));
      // Faults stop once half the work has run, and not before five lease TTLs of them: with the work submitted
      // first, half of a small run is done in a few seconds, too few for every kind of fault to be drawn.
      if (
        faultsOn &&
        open.length <= acknowledged.length / 2 &&
        performance.now() - fleetStarted >= leaseTtlSeconds * 5_000
      ) {
        mark('faultsOff');
        faultsOn = false;
      }
      if (process.env.CHAOS_DEBUG)
        console.error(
          `open ${open.length} of ${acknowledged.length}, executions ${executions.length}, faults ${faultsOn ? 'on' : 'off'}`,
        );
      if (open.length > 0) await sleep(500);
    }
    mark('drained');
    if (process.env.CHAOS_DEBUG && open.length > 0) {
      const left = await ctx.tasks.getMany(open.slice(0, 20));
      for (const task of left.values()) {
        const { payload: _p, ...rest } = task as unknown as Record<string, unknown>;
        console.error(`never ended: ${JSON.stringify(rest)}`);
      }
      const dlq = ctx.queues.directory.deadLetterUrlFor('chaos');
      const attributes = await scratch.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ['ApproximateNumberOfMessages'] }),
      );
      console.error(`dead letters: ${attributes.Attributes?.ApproximateNumberOfMessages}`);
    }
    faultsOn = false;
    stopping = true;
    await Promise.all([supervisor.stop(), operators]);
    if (process.env.CHAOS_DEBUG) console.error('supervisor and operators stopped');
    await Promise.all(
      agents.map((a) => a.worker.stop({ drain: false, timeoutMs: 2_000 }).catch(() => undefined)),
    );
    mark('stopped');
    if (process.env.CHAOS_DEBUG) console.error(`stopped`);
    const until = Date.now();
    const final = await ctx.tasks.getMany(acknowledged);
    for (const taskId of acknowledged) {
      history.acknowledged.add(taskId);
      history.finalStatus.set(taskId, final.get(taskId)?.status);
    }
    // The server's side: leases, epochs, stale writes accepted, terminals, phantom oks, lost and never ended.
    violationDetails.length = 0;
    const {
      staleRejectedCount: _counted,
      reclaimLatencyMs: _latency,
      duplicateFireCount: _none,
      ...server
    } = checkHistory({ ...history, answered: new Set(claimAnswers.flatMap((answer) => answer.granted)) });
    const verdict = checkAgentSide(executions, holdings, until, {
      claims: claimAnswers,
      checkpoints: checkpointWrites,
    });
    const agentIds = new Map(agents.map((a) => [a.name, a.agentId]));
    for (const overlapping of overlaps(holdings, (h) => h.role, until)) {
      const from = Math.min(...overlapping.map((h) => h.start)) - 3_000;
      const to = Math.max(...overlapping.map((h) => h.end ?? until));
      const names = new Set(overlapping.map((h) => h.agent));
      violationDetails.push(
        `role held twice: ${JSON.stringify({
          holdings: overlapping.map((h) => ({ ...h, agentId: agentIds.get(h.agent) })),
          serverRoleEvents: roleEvents.filter((e) => e.at >= from && e.at <= to),
          workerNotes: workerNotes.filter((n) => n.at >= from && n.at <= to && names.has(n.agent)),
        })}`,
      );
    }
    return {
      mode: 'http',
      tasks: options.tasks,
      agents: options.agents,
      seed: options.seed,
      durationMs: Math.round(performance.now() - started),
      faults: { ...faults, supervisorDoubled: supervisor.doubled },
      requests,
      executions: executions.length,
      roleHoldings: holdings.length,
      cancelled,
      revoked,
      supervisorPasses: supervisor.passes,
      phasesMs,
      staleRejectedCount,
      eventLoopDelayMs: {
        p99: Math.round(loopDelay.percentile(99) / 1e6),
        max: Math.round(loopDelay.max / 1e6),
      },
      claimAnswers: claimAnswers.length,
      checkpointWrites: checkpointWrites.length,
      serverWarnings,
      workerWarnings,
      grantsGivenBack,
      ...server,
      ...verdict,
      violations:
        verdict.executionOverlapCount +
        verdict.runAfterSuccessCount +
        verdict.roleOverlapCount +
        verdict.claimGrantedTwiceCount +
        verdict.staleCheckpointCount +
        server.overlapCount +
        server.nonMonotonicEpochCount +
        server.staleAcceptedCount +
        server.duplicateTerminalCount +
        server.phantomOkCount +
        server.lostCount +
        server.neverTerminalCount,
      ...(violationDetails.length > 0 ? { violationDetails: [...violationDetails] } : {}),
    };
  } finally {
    stopping = true;
    await server.close();
    await scratch.dispose();
  }
}
