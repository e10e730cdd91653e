/**
 * The stack under test of the HTTP chaos run: the scheduler on scratch tables and queues behind the local server,
 * its store's faults and the recorders of what it commits, the agents' faulty network, and the workload's state.
 */
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Scheduler } from '#core/scheduler';
import type { Task } from '#domain/task';
import { startLocalStack } from '#local/local-stack';
import { seededRandom } from '#local/seeded-random';
import { AgentSchedulerClient } from '#sdk/client';
import type { Worker, WorkerOptions } from '#sdk/worker';
import type { WiredContext } from '#wiring/context';
import type { ChaosRunOptions } from './chaos-run';
import { emptyHistory, recordCommittedWrites, recordTakeBacks } from './committed-writes';
import type { CheckpointWrite, Execution, RoleHolding } from './history';
import { FaultCounts, FaultyNetwork } from './http-faults';
import { SHAPES, type Sizes, type WorkloadState } from './http-workload';
import { injectStoreFaults, labelWrites } from './store-faults';
import { written } from './written';

export interface HttpChaosOptions extends ChaosRunOptions {
  /** The sizes of results and checkpoints, and the Workers' concurrency (`SHAPES`). @default 'small' */
  readonly sizes?: Sizes;
  /** Tasks each Worker runs at once (its claims ask for up to this many). @default 4, or 25 at agent sizes */
  readonly concurrency?: number;
  /** Changes the scheduler under test (server-side mutants). Not reachable from any configuration. */
  readonly mutateScheduler?: (scheduler: Scheduler) => void;
  /** Changes the scheduler's context, its tables (server-side mutants). */
  readonly mutateContext?: (ctx: WiredContext) => void;
  /** Changes each Worker's options (SDK mutants). */
  readonly mutateWorker?: (options: WorkerOptions) => WorkerOptions;
  /** Changes each Worker once made, before it starts (SDK mutants). */
  readonly mutateWorkerInstance?: (worker: Worker) => void;
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
  /**
   * How many times the shares of faults are on what happens a few times a run: the agent routes of the session
   * open, roles, releases and children, and the store's writes of opens, hand-overs, children and hooks. @default 5
   */
  readonly rareBoost?: number;
  /** Share of the server's DynamoDB writes whose answer is lost after they commit. @default 0.02 */
  readonly storeLostShare?: number;
  /** Share of handlers that work for 3 s, checkpointing. @default 0.05 */
  readonly longShare?: number;
  /** Share of handlers that fail (the task is retried). @default 0.1 */
  readonly failShare?: number;
  /**
   * A run with a mutant planted ends as soon as what ran on the agents breaks this invariant (looked at with the
   * drain's every look): the rest of the run cannot take the break back. @default the run goes to its end
   */
  readonly stopOnceBroken?: AgentSideInvariant;
}

/** An invariant of what ran on the agents (`checkAgentSide`), by the count of its breaks. */
export type AgentSideInvariant = 'executionOverlapCount' | 'claimGrantedTwiceCount' | 'staleCheckpointCount';

/** Per-attempt timeout of the agents' clients. */
export const ATTEMPT_TIMEOUT_MS = 1_000;

/** What a run keeps while it goes: the stack under test, the faults, and what the agents and the server saw. */
export type Run = Awaited<ReturnType<typeof setUp>>;

/** The stack under test, with the recorders of what it commits and the faults of its store and network. */
export async function setUp(options: HttpChaosOptions) {
  const random = seededRandom(options.seed);
  const leaseTtlSeconds = options.leaseTtlSeconds ?? 2;
  const faults = new FaultCounts();
  const live = { faultsOn: true, stopping: false, fleetStarted: false, fleetStopped: false };
  const faultsOn = () => live.faultsOn;
  // What the tables committed, checked as the in-process run's history is; the agents' calls that came back ok
  // (completions and failures the Workers heard of) must each be a committed transition.
  const history = emptyHistory();
  const serverWarnings: Record<string, number> = {};
  // What the server said of the role and what the Workers said of their sessions, with times: the story of a role
  // held twice, told in the report when it happens.
  const roleEvents: { at: number; type: string; agentId?: string; data?: unknown }[] = [];
  const note = (message: string) => {
    serverWarnings[message] = (serverWarnings[message] ?? 0) + 1;
  };
  const operatorToken = `op_${randomBytes(12).toString('base64url')}`;
  const recorders: {
    made?: ReturnType<typeof recordMadeTasks>;
    checkpointWrites?: ReturnType<typeof recordCheckpoints>;
  } = {};
  const { scratch, ctx, scheduler, server } = await startLocalStack({
    name: 'chaoshttp',
    queues: ['chaos'],
    endpoints: options.endpoints,
    onClients: ({ dynamodb, tables }) => {
      // Added before the recorder, so the recorder runs inside the faults and sees a write whose answer is then lost.
      injectStoreFaults(dynamodb, {
        random: seededRandom(options.seed + 2),
        // From the fleet's start: lost answers of submissions are the in-process run's; here they only slow the start.
        faultsOn: () => live.faultsOn && live.fleetStarted,
        runningOn: () => live.fleetStarted && !live.stopping,
        faults,
        lostShare: options.storeLostShare ?? 0.02,
        rareBoost: options.rareBoost ?? 5,
      });
      recordCommittedWrites(dynamodb, tables, history);
    },
    context: {
      events: {
        publish: async (events) => {
          for (const e of events)
            if (e.type.startsWith('role.'))
              roleEvents.push({ at: Date.parse(e.time), type: e.type, agentId: e.agentId, data: e.data });
        },
      },
      log: { info() {}, warn: note, error: note },
      random: seededRandom(options.seed + 1),
      settings: {
        leaseTtlSeconds,
        heartbeatIntervalSeconds: leaseTtlSeconds / 4,
        reconcileAfterSeconds: options.reconcileAfterSeconds ?? 2,
        claimVisibilityTimeoutSeconds: 2,
        reservationGraceSeconds: 2,
        // Idle agents wait up to half a second between claims: fifty agents polling every 100 ms would keep the one
        // process that runs them all too busy to serve the work.
        idleClaimRetryBaseMs: 20,
        idleClaimRetryMaxMs: 500,
        agentSubmitQueues: ['chaos'],
      },
    },
    onContext: (ctx) => {
      labelWrites(ctx);
      options.mutateContext?.(ctx);
      recorders.made = recordMadeTasks(ctx, history);
      recorders.checkpointWrites = recordCheckpoints(ctx);
      recordTakeBacks(ctx, history);
    },
    onScheduler: (scheduler) => options.mutateScheduler?.(scheduler),
    serve: { operatorToken },
  });
  const { made, checkpointWrites } = recorders;
  if (!made || !checkpointWrites) throw new Error('the context was built without its recorders');
  const network = new FaultyNetwork({
    random,
    faultsOn,
    // Through the fleet's stop: a role first released as its holder stops still owes its faults then.
    runningOn: () => !live.fleetStopped,
    faults,
    attemptTimeoutMs: ATTEMPT_TIMEOUT_MS,
    rareRouteBoost: options.rareBoost ?? 5,
    ...(options.lateShare === undefined ? {} : { lateShare: options.lateShare }),
    ...(options.lateRoutes ? { lateRoutes: options.lateRoutes } : {}),
    ...(options.lateDelayMs ? { lateDelayMs: options.lateDelayMs } : {}),
  });
  const workload = workloadOf(options, { random, faultsOn, faults, made, leaseTtlSeconds });
  const { executions } = workload;
  return {
    random,
    leaseTtlSeconds,
    faults,
    live,
    scratch,
    history,
    serverWarnings,
    roleEvents,
    ctx,
    made,
    checkpointWrites,
    scheduler,
    server,
    network,
    executions,
    workload,
    operator: new AgentSchedulerClient({ endpoint: server.url, token: operatorToken }),
    loopDelay: monitorEventLoopDelay({ resolution: 10 }),
    holdings: [] as RoleHolding[],
    workerWarnings: {} as Record<string, number>,
    workerNotes: [] as { at: number; agent: string; message: string; fields?: unknown }[],
    grantsGivenBack: { count: 0 },
  };
}

/** What the handlers share: the draws, the executions and results they record, the tasks they make. */
function workloadOf(
  options: HttpChaosOptions,
  run: {
    readonly random: () => number;
    readonly faultsOn: () => boolean;
    readonly faults: FaultCounts;
    readonly made: ReturnType<typeof recordMadeTasks>;
    readonly leaseTtlSeconds: number;
  },
): WorkloadState {
  const { made } = run;
  return {
    random: run.random,
    faultsOn: run.faultsOn,
    count: (kind) => run.faults.count(kind),
    executions: [] as Execution[],
    results: new Map(),
    onChildren: (taskIds) => {
      for (const taskId of taskIds) {
        if (made.childIds.has(taskId)) continue;
        made.childIds.add(taskId);
        made.children.push(taskId);
      }
    },
    childrenMade: () => made.childIds.size,
    onChildMismatch: (detail) => made.childMismatches.push(detail),
    shape: {
      ...SHAPES[options.sizes ?? 'small'],
      ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    },
    leaseTtlSeconds: run.leaseTtlSeconds,
    cutOffShare: options.cutOffShare ?? 0.01,
    longShare: options.longShare ?? 0.05,
    failShare: options.failShare ?? 0.1,
  };
}

/** Tasks made during the run (children acknowledged by the server, hooks it submitted), for the drain to wait for. */
function recordMadeTasks(ctx: WiredContext, history: ReturnType<typeof emptyHistory>) {
  const made = {
    children: [] as string[],
    childIds: new Set<string>(),
    childMismatches: [] as string[],
    /** The hook of each dead task, by the dead task's id. */
    hooks: new Map<string, string>(),
    /** Made and not yet handed to the drain. */
    fresh: [] as string[],
  };
  const create = ctx.tasks.create.bind(ctx.tasks);
  ctx.tasks.create = async (task: Task, dueAt: number) => {
    const outcome = await create(task, dueAt);
    const of = task.failureOf?.taskId;
    if (of !== undefined && !made.hooks.has(of)) {
      const taskId = outcome.created ? task.taskId : outcome.existing.taskId;
      made.hooks.set(of, taskId);
      made.fresh.push(taskId);
      history.acknowledged.add(taskId);
    }
    return outcome;
  };
  return made;
}

/** Every checkpoint the tasks table takes, with the epoch its handler wrote into it and when it was sent. */
function recordCheckpoints(ctx: WiredContext): CheckpointWrite[] {
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
  return checkpointWrites;
}
