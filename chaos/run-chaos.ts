import { fireSchedule } from '#core/fire-schedule';
import { Scheduler } from '#core/scheduler';
import { isSchedulerError } from '#domain/errors';
import { scratchStack } from '#local/scratch-stack';
import { seededRandom } from '#local/seeded-random';
import { createContext, type WiredContext } from '#wiring/context';
import {
  emptyHistory,
  RETRYING,
  recordCommittedWrites,
  recordTakeBacks,
  stackOf,
  WRITES,
  writeKind,
} from './committed-writes';
import { buildDag, checkDag, type DagVerdict } from './dag';
import { type ClientCall, checkHistory, type Verdict, violationDetails } from './history';
import { superviseUnderChaos } from './supervisor-loop';

export interface ChaosOptions {
  readonly tasks: number;
  readonly agents: number;
  readonly seed: number;
  readonly endpoints?: { readonly dynamodb: string; readonly sqs: string };
  /** Changes the scheduler under test: how tests switch a mutant on. Not reachable from any configuration. */
  readonly mutate?: (ctx: WiredContext) => void;
  /**
   * Changes each schedule delivery before it is handled: how a test makes occurrences be told apart by something
   * other than their scheduled time (the schedule mutant).
   */
  readonly mutateFire?: (fire: ScheduleFire) => ScheduleFire;
  /** Share of supervisor ticks that run two passes at once. @default 0.1 */
  readonly supervisorDoubling?: number;
  /** Longest wait for every task to end once the faults stop. @default 60 s */
  readonly drainTimeoutMs?: number;
  /**
   * Longest time an agent works on a task before it finishes it (each draws up to this). Longer work holds each
   * lease longer, so a late write of an earlier lease is more likely to land while a later one holds the task.
   * @default 10 ms
   */
  readonly workMs?: number;
  /** Tasks of a random DAG (fan-out, joins, doomed tasks) submitted after the flat ones. @default 0 */
  readonly dag?: number;
}

/** One delivery of a schedule's occurrence, as EventBridge Scheduler sends it. */
export interface ScheduleFire {
  readonly schedule: string;
  readonly scheduledTime: string;
  readonly executionId: string;
  readonly overlap: string;
  readonly task: Record<string, unknown>;
}

export interface ChaosReport extends Verdict, Partial<DagVerdict> {
  readonly tasks: number;
  readonly agents: number;
  readonly seed: number;
  readonly durationMs: number;
  readonly faults: Readonly<Record<string, number>>;
  /** The committed writes whose answer was lost (`dynamodbTimeoutAfterCommit`), by what they wrote. */
  readonly lostAnswers: Readonly<Record<string, number>>;
  /** Tasks that died with an `onFailure` whose hook was never submitted. */
  readonly hookMissingCount: number;
  readonly calls: number;
  readonly violations: number;
  /** The first violations found, each with the versions that make it one. */
  readonly violationDetails?: readonly string[];
}

const LEASE_TTL_SECONDS = 2;
const HEARTBEAT_MS = 500;
/** Every twentieth flat task dies at once, with an onFailure; a tenth of the completions submit a child first. */
const HOOKED_EVERY = 20;
const CHILD_SHARE = 0.1;
/**
 * Agents that volunteer for one role: it changes hands each time its holder steps down (after each of its tasks),
 * crashes, pauses or reopens.
 */
const ROLE_VOLUNTEERS = 3;
/**
 * The share of lost answers of writes a run makes tens of, not thousands (others lose one in fifty), so each
 * kind is hit in a run of 1,000 tasks: about 50 hooks, 80 children, 100 opens, and a few dozen role transfers.
 */
const LOST_SHARE: Readonly<Record<string, number>> = {
  open: 0.2,
  childSubmit: 0.2,
  hookSubmit: 0.2,
  roleTransfer: 0.5,
};
const SUPERVISOR_TICK_MS = 250;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = performance.now();
  const random = seededRandom(options.seed);
  const scratch = await scratchStack({ name: 'chaos', queues: ['chaos'], endpoints: options.endpoints });
  const { dynamodb, sqs, tables, queues } = scratch;

  const history = emptyHistory();
  const faults: Record<string, number> = {};
  const count = (kind: string) => {
    faults[kind] = (faults[kind] ?? 0) + 1;
  };
  const lostAnswers: Record<string, number> = {};
  /**
   * The leases the claims answered with: a grant no answer carried was taken back by its own claim (its session no
   * longer held the slot), and no agent ever held it.
   */
  const answered = new Set<string>();
  let faultsOn = process.env.CHAOS_NO_FAULTS === undefined;

  // Under the SDK's retries: a lost answer or a throttle is retried by the SDK, as in AWS.
  stackOf(dynamodb).add(
    (next, context) => async (args) => {
      if (!faultsOn || !WRITES.has(context.commandName ?? '')) return next(args);
      const draw = random();
      if (draw < 0.02) {
        count('dynamodbThrottledBeforeSend');
        throw Object.assign(new Error('injected throttle'), { name: 'ThrottlingException', $metadata: {} });
      }
      const kind = writeKind(context.commandName ?? '', args.input, tables);
      const result = await next(args);
      if (draw < 0.02 + (LOST_SHARE[kind] ?? 0.02)) {
        count('dynamodbTimeoutAfterCommit');
        lostAnswers[kind] = (lostAnswers[kind] ?? 0) + 1;
        throw Object.assign(new Error('injected timeout after commit'), {
          name: 'TimeoutError',
          $metadata: {},
        });
      }
      return result;
    },
    { step: 'finalizeRequest', name: 'chaosDynamoDbFaults', priority: 'low' },
  );
  const latency = new Map<string, { n: number; ms: number }>();
  if (process.env.CHAOS_DEBUG) {
    for (const client of [dynamodb, sqs])
      stackOf(client).add(
        (next, context) => async (args) => {
          const t = performance.now();
          try {
            return await next(args);
          } finally {
            const key = context.commandName ?? '?';
            const entry = latency.get(key) ?? { n: 0, ms: 0 };
            entry.n++;
            entry.ms += performance.now() - t;
            latency.set(key, entry);
          }
        },
        { step: 'finalizeRequest', name: 'chaosLatency', priority: 'low' },
      );
  }
  // Added after the faults, so it runs inside them: closest to the wire.
  recordCommittedWrites(dynamodb, tables, history);
  stackOf(sqs).add(
    (next, context) => async (args) => {
      const operation = context.commandName ?? '';
      if (!faultsOn || (operation !== 'SendMessageCommand' && operation !== 'SendMessageBatchCommand')) {
        return next(args);
      }
      const draw = random();
      if (draw < 0.05) {
        count('sqsSendLost');
        const entries = (args.input as { Entries?: { Id: string }[] }).Entries ?? [];
        return {
          output: {
            MessageId: 'lost',
            Successful: entries.map((e) => ({ Id: e.Id, MessageId: 'lost', MD5OfMessageBody: '' })),
            Failed: [],
            $metadata: {},
          },
        };
      }
      if (draw < 0.1) {
        count('sqsDuplicateDelivery');
        await next(args);
      }
      return next(args);
    },
    { step: 'initialize', name: 'chaosSqsFaults' },
  );

  const ctx = createContext({
    dynamodb,
    sqs,
    tables,
    queues,
    random: seededRandom(options.seed + 1),
    settings: {
      leaseTtlSeconds: LEASE_TTL_SECONDS,
      heartbeatIntervalSeconds: HEARTBEAT_MS / 1_000,
      reconcileAfterSeconds: 2,
      claimVisibilityTimeoutSeconds: 2,
      reservationGraceSeconds: 2,
      idleClaimRetryBaseMs: 10,
      idleClaimRetryMaxMs: 50,
      // A resolution lost to a fault is made by the recheck: looked at as often as the hints are.
      dependencyRecheckSeconds: 2,
      // Agents submit children to the run's queue; a dead task's onFailure goes there too.
      agentSubmitQueues: ['chaos'],
    },
  });
  options.mutate?.(ctx);
  recordTakeBacks(ctx, history);
  const scheduler = new Scheduler(ctx);

  const record = async <T>(call: Omit<ClientCall, 'at' | 'outcome' | 'code'>, work: () => Promise<T>) => {
    const at = Date.now();
    try {
      const value = await work();
      history.calls.push({ ...call, at, outcome: 'ok' });
      return { ok: true as const, value };
    } catch (error) {
      const definite = isSchedulerError(error) && error.statusCode < 500;
      const code = isSchedulerError(error) ? error.code : error instanceof Error ? error.name : 'Error';
      history.calls.push({ ...call, at, outcome: definite ? 'fail' : 'unknown', code });
      return { ok: false as const, code };
    }
  };

  try {
    // Submissions: acknowledged ones must never be lost.
    // One task in twenty dies at its first attempt, and has an onFailure hook submitted for it.
    const specs = Array.from({ length: options.tasks }, (_, n) => ({
      queue: 'chaos',
      ...(n % HOOKED_EVERY === HOOKED_EVERY - 1
        ? { payload: { n, doom: true }, onFailure: { queue: 'chaos', payload: { hookFor: n } } }
        : { payload: { n } }),
      ...RETRYING,
      idempotencyKey: `chaos-${options.seed}-${n}`,
    }));
    let stopping = false;
    let completed = 0;

    const dag = buildDag(options.dag ?? 0, options.seed, random, { queue: 'chaos', ...RETRYING });
    const dagClaims: {
      taskId: string;
      dependencies?: Readonly<Record<string, { readonly status: string }>>;
    }[] = [];
    const submitter = (async () => {
      const all = [...specs, ...dag.map((t) => t.spec)];
      for (let i = 0; i < all.length; i += 25) {
        const chunk = all.slice(i, i + 25);
        for (let attempt = 0; attempt < 5; attempt++) {
          const submitted = await record({ op: 'submit' }, () => scheduler.submitBatch(chunk));
          if (submitted.ok) {
            for (const outcome of submitted.value)
              if (outcome.ok) history.acknowledged.add(outcome.task.taskId);
            if (submitted.value.every((o) => o.ok)) break;
          }
        }
      }
    })();

    const idlePollMs = Math.max(20, options.agents * 10);
    const agentLoop = async (index: number) => {
      let agentId = '';
      while (!agentId) {
        const registered = await record({ op: 'open' }, () =>
          scheduler.registerAgent({ name: `chaos-${index}`, queues: ['chaos'], maxConcurrency: 2 }),
        );
        if (registered.ok) agentId = registered.value.agent.agentId;
      }
      let sessionId = '';
      const volunteer = index < ROLE_VOLUNTEERS;
      let beating: ReturnType<typeof setInterval> | undefined;
      const open = async () => {
        // Until the run stops: an agent whose opens keep failing must not keep the run from ending and reporting.
        while (!stopping) {
          const opened = await record({ op: 'open', agentId }, () => scheduler.openSession(agentId));
          if (opened.ok) {
            sessionId = opened.value.sessionId;
            // A volunteer again with each session: the role moves to it when free, and on from it when it ends.
            if (volunteer)
              await scheduler.volunteerForRole(agentId, sessionId, 'chaos-leader').catch(() => undefined);
            return;
          }
          await sleep(50);
        }
      };
      const beat = () => record({ op: 'heartbeat', agentId }, () => scheduler.heartbeat(agentId, sessionId));
      // As the SDK's worker beats: one heartbeat at a time, and only while holding a task or volunteering for the
      // role (an idle session needs none; the claim that gives it work extends it). Beats piling up behind a slow store, or sent by idle
      // agents, would be load no fleet makes, and a large one would spend the emulator on them.
      let beatInFlight = false;
      let holding = false;
      const beatOnce = () => {
        if (beatInFlight || !(holding || volunteer)) return;
        beatInFlight = true;
        void beat().finally(() => {
          beatInFlight = false;
        });
      };
      const startBeating = () => {
        clearInterval(beating);
        beating = setInterval(beatOnce, HEARTBEAT_MS);
      };
      await open();
      startBeating();
      while (!stopping) {
        const claim = await record({ op: 'claim', agentId }, () =>
          scheduler.claim({ agentId, sessionId, max: 1 }),
        );
        if (!claim.ok) {
          if (claim.code === 'SessionLost') await open();
          else await sleep(20);
          continue;
        }
        const [task] = claim.value;
        if (task) answered.add(`${task.taskId}#${task.leaseEpoch}`);
        if (task?.dependencies) dagClaims.push({ taskId: task.taskId, dependencies: task.dependencies });
        else if (task && (task.payload as { dag?: number }).dag !== undefined)
          dagClaims.push({ taskId: task.taskId });
        if (!task) {
          // An idle agent looks again soon, but the fleet's empty claims stay near a hundred a second: a large
          // fleet polling every 20 ms spent the emulator on empty claims, and the sweeps starved behind them.
          await sleep(idlePollMs * (0.5 + random()));
          continue;
        }
        holding = true;
        const lease = { agentId, taskId: task.taskId, leaseEpoch: task.leaseEpoch };
        const draw = random();
        if (faultsOn && draw < 0.05) {
          // Crash: the task is dropped, heartbeats stop; the agent comes back later with a new session.
          count('agentCrash');
          history.crashes.push({ taskId: task.taskId, leaseEpoch: task.leaseEpoch, at: Date.now() });
          clearInterval(beating);
          holding = false;
          await sleep(LEASE_TTL_SECONDS * 1_000 + 500 + random() * 1_000);
          await open();
          startBeating();
          continue;
        }
        if (faultsOn && draw < 0.13) {
          // Pause past the lease: the agent wakes up believing it still holds the task, and its three late
          // writes must each be refused.
          count('agentPause');
          clearInterval(beating);
          holding = false;
          await sleep(LEASE_TTL_SECONDS * 1_000 + 1_000 + random() * 2_000);
          await beat();
          await record({ op: 'complete', ...lease }, () => scheduler.complete(lease, { late: true }));
          await record({ op: 'fail', ...lease }, () =>
            scheduler.fail(lease, { message: 'late', retryable: true }),
          );
          await record({ op: 'release', ...lease }, () => scheduler.release(lease));
          await open();
          startBeating();
          continue;
        }
        await sleep(random() * (options.workMs ?? 10));
        // A doomed task dies at its first attempt: a DAG's dependents must be cancelled, a flat one's hook run.
        const payload = task.payload as { doom?: boolean; n?: number };
        const doomed = payload.doom === true;
        if (!doomed && draw >= 0.2 && draw < 0.2 + CHILD_SHARE && typeof payload.n === 'number') {
          // A task of the flat workload submits a child before it completes.
          const child = await record({ op: 'submit' }, () =>
            scheduler.submitChild(
              { agentId, parentTaskId: task.taskId, leaseEpoch: task.leaseEpoch },
              { key: 'child', queue: 'chaos', payload: { childOf: payload.n }, ...RETRYING },
            ),
          );
          if (child.ok) history.acknowledged.add(child.value.task.taskId);
        }
        const finished = doomed
          ? await record({ op: 'fail', ...lease }, () =>
              scheduler.fail(lease, { message: 'doomed', retryable: false }),
            )
          : draw < 0.2
            ? await record({ op: 'fail', ...lease }, () =>
                scheduler.fail(lease, { message: 'chaos says no', retryable: true }),
              )
            : await record({ op: 'complete', ...lease }, () => scheduler.complete(lease, { n: task.taskId }));
        holding = false;
        if (finished.ok && draw >= 0.2) completed++;
        if (volunteer) {
          // A volunteer steps down after each task and stands again: held, the role passes to the next volunteer.
          await scheduler.withdrawFromRole(agentId, sessionId, 'chaos-leader').catch(() => undefined);
          await scheduler.volunteerForRole(agentId, sessionId, 'chaos-leader').catch(() => undefined);
        }
      }
      clearInterval(beating);
    };

    let lastPassMs = 0;
    // A tick in ten (or the share asked for) runs its pass twice at once, as a duplicated invocation does.
    const supervisor = superviseUnderChaos({
      pass: async () => {
        const result = await scheduler.supervise();
        lastPassMs = result.durationMs;
        return result;
      },
      tickMs: SUPERVISOR_TICK_MS,
      doublingShare: options.supervisorDoubling ?? 0.1,
      faultsOn: () => faultsOn,
    });

    // A schedule fires every 200 ms while the faults last; a third of its occurrences are delivered two or
    // three times at once, as EventBridge Scheduler may (each delivery with its own execution id).
    const ticker = (async () => {
      // Occurrences in the past: a delivery ahead of its time would hold its task until then.
      const base = Date.now() - 10 * 24 * 60 * 60 * 1_000;
      for (let tick = 0; faultsOn && !stopping; tick++) {
        const deliveries = tick % 3 === 0 ? 2 + Math.floor(random() * 2) : 1;
        if (deliveries > 1) count('scheduleFireDuplicated');
        await Promise.all(
          Array.from({ length: deliveries }, async (_, d) => {
            const delivery: ScheduleFire = {
              schedule: 'chaos-tick',
              scheduledTime: new Date(base + tick * 60_000).toISOString(),
              executionId: `exec-${tick}-${d}`,
              overlap: 'allowAll',
              task: { queue: 'chaos', payload: { tick }, ...RETRYING },
            };
            const fired = await record({ op: 'submit' }, () =>
              fireSchedule(scheduler.ctx, options.mutateFire ? options.mutateFire(delivery) : delivery),
            );
            if (fired.ok && fired.value.taskId) history.acknowledged.add(fired.value.taskId);
          }),
        );
        await sleep(200);
      }
    })();

    const agents = Array.from({ length: options.agents }, (_, i) => agentLoop(i));
    const progress = process.env.CHAOS_DEBUG
      ? setInterval(
          () =>
            console.error(
              `submitted ${history.acknowledged.size} completed ${completed} calls ${history.calls.length} faultsOn ${faultsOn} last pass ${lastPassMs} ms ${[...latency].map(([k, v]) => `${k} ${v.n}/${Math.round(v.ms / v.n)}ms`).join(' ')}`,
            ),
          2_000,
        )
      : undefined;
    await submitter;
    // Faults stop once half the work is done; then everything must end.
    const deadline = Date.now() + (options.drainTimeoutMs ?? 60_000);
    while (completed < options.tasks / 2 && Date.now() < deadline) await sleep(50);
    faultsOn = false;
    // Wait for every task to end, reading (100 at a time) only those not seen ended yet.
    // A hook submitted by the scheduler for a dead task must end too: it is looked for as it appears.
    const hooks = () => new Set(history.tasks.flatMap((v) => (v.failureOf ? [v.taskId] : [])));
    const ended = new Set<string>();
    let open = [...history.acknowledged, ...hooks()];
    while (open.length > 0 && Date.now() <= deadline) {
      const states = await ctx.tasks.getMany(open);
      for (const id of open)
        if (['succeeded', 'dead', 'cancelled', 'expired'].includes(states.get(id)?.status ?? ''))
          ended.add(id);
      open = [...history.acknowledged, ...hooks()].filter((id) => !ended.has(id));
      if (open.length > 0) await sleep(500);
    }
    stopping = true;
    clearInterval(progress);
    const debug = (what: string) => {
      if (process.env.CHAOS_DEBUG) console.error(`${new Date().toISOString()} ${what}`);
    };
    debug(`draining over, ${open.length} open`);
    await Promise.all([...agents, supervisor.stop(), ticker]);
    debug('stopped');
    faults.supervisorDoubled = supervisor.doubled;
    for (const hook of hooks()) history.acknowledged.add(hook);
    const final = await ctx.tasks.getMany([...history.acknowledged]);
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
    const verdict = checkHistory({ ...history, answered });
    const dagVerdict =
      dag.length > 0 ? checkDag(dag, dagClaims, history.finalStatus, violationDetails) : undefined;
    debug('checked');
    const violations =
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
      faults,
      lostAnswers,
      hookMissingCount,
      calls: history.calls.length,
      ...verdict,
      ...(dagVerdict ?? {}),
      violations,
      ...(violationDetails.length > 0 ? { violationDetails: [...violationDetails] } : {}),
    };
  } finally {
    await scratch.dispose();
  }
}
