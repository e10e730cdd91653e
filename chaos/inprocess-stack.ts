/**
 * The stack under test of the in-process chaos run: the scheduler's handlers on scratch tables and queues, the
 * faults of its DynamoDB and SQS clients, the recorders of what it commits, and the state the run shares.
 *
 * Faults, while they last: 2 % of DynamoDB writes throttled before they are sent; 2 % committed and their answer
 * lost to a timeout (a fifth to a half of the writes a run makes only tens of, a tenth of the rate-limited tasks'
 * grants and settlements, `LOST_SHARE`), both retried by the AWS SDK as in AWS; 5 % of SQS sends lost and 5 %
 * delivered twice. A kind of write that has lost no answer by its
 * `LOSS_OWED_AFTER`th loses that one's, so every run loses an answer of each kind it makes that often, whatever
 * the draws.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Scheduler } from '#core/scheduler';
import { isSchedulerError } from '#domain/errors';
import { startLocalStack } from '#local/local-stack';
import type { ScratchStack } from '#local/scratch-stack';
import { seededRandom } from '#local/seeded-random';
import type { WiredContext } from '#wiring/context';
import type { ChaosRunOptions } from './chaos-run';
import {
  emptyHistory,
  recordCommittedWrites,
  recordTakeBacks,
  stackOf,
  WRITES,
  writeKind,
} from './committed-writes';
import type { ClientCall, History } from './history';
import { unservedSets } from './labels';
import { BUDGET, BUDGET_TERMS } from './rate-ledger';

export interface ChaosOptions extends ChaosRunOptions {
  /** Changes the scheduler under test: how tests switch a mutant on. Not reachable from any configuration. */
  readonly mutate?: (ctx: WiredContext) => void;
  /**
   * Changes each schedule delivery before it is handled: how a test makes occurrences be told apart by something
   * other than their scheduled time (the schedule mutant).
   */
  readonly mutateFire?: (fire: ScheduleFire) => ScheduleFire;
  /**
   * Longest time an agent works on a task before it finishes it (each draws up to this). Longer work holds each
   * lease longer, so a late write of an earlier lease is more likely to land while a later one holds the task.
   * @default 10 ms
   */
  readonly workMs?: number;
  /** Tasks of a random DAG (fan-out, joins, doomed tasks) submitted after the flat ones. @default 0 */
  readonly dag?: number;
  /**
   * Tasks, submitted among the flat ones, whose first run suspends on a waitpoint: answered by racing callers
   * (`waitpoint-callers.ts`), or, 8 % of them, left to time out. @default 0
   */
  readonly waitpoints?: number;
  /**
   * Tasks, submitted among the flat ones, that name the run's budget (`rate-ledger.ts`) with an estimate of the units
   * they take; their agents report usage on every finish they send, and the budget's ledger is checked at the end.
   * @default 0
   */
  readonly rateLimited?: number;
  /**
   * Tasks, submitted among the flat ones, that require labels (`labels.ts`), each requirement set's in turn; the
   * agents are then registered with labels (some sessions narrowing them), and every lease of such a task is checked
   * against its session's labels. Needs three agents or more, so every set has an agent that meets it. @default 0
   */
  readonly labelled?: number;
  /**
   * Ends the run as soon as this invariant is broken (looked at twice a second), or at the drain's end: how a
   * mutant's run waits for the break it is about, not for a time a loaded machine may need more of.
   * @default the run goes to its end
   */
  readonly stopOnceBroken?: InProcessInvariant;
}

/**
 * An invariant whose break the run can see while it goes on: a break, once seen, stays one. `resolvedTwiceCount`
 * is the waitpoints' (a waitpoint ended by more than one write). `ledgerDifference`, the rate-limited tasks' (the
 * budget's count is not what their grants and settlements make it), is read from the table at the end: a run that
 * stops on it goes to its end. `mismatchedGrantCount` is the labelled tasks' (a lease to a session whose labels do
 * not meet its task's requirements).
 */
export type InProcessInvariant =
  | 'prematureStartCount'
  | 'staleAcceptedCount'
  | 'terminalLeftCount'
  | 'duplicateFireCount'
  | 'overlapCount'
  | 'resolvedTwiceCount'
  | 'ledgerDifference'
  | 'mismatchedGrantCount';

/** One delivery of a schedule's occurrence, as EventBridge Scheduler sends it. */
export interface ScheduleFire {
  readonly schedule: string;
  readonly scheduledTime: string;
  readonly executionId: string;
  readonly overlap: string;
  readonly task: Record<string, unknown>;
}

export const LEASE_TTL_SECONDS = 2;
export const HEARTBEAT_MS = 500;
/** The wait between the end of a supervisor pass and the start of the next. */
export const SUPERVISOR_TICK_MS = 250;

/** The write of a kind, counted while faults last, whose answer is lost if none of that kind's was yet. */
const LOSS_OWED_AFTER = 3;

/**
 * The share of lost answers of writes a run makes tens of, not thousands (others lose one in fifty), so each
 * kind is hit in a run of 1,000 tasks: about 50 hooks, 80 children, 100 opens, and a few dozen role transfers.
 */
const LOST_SHARE: Readonly<Record<string, number>> = {
  open: 0.2,
  childSubmit: 0.2,
  hookSubmit: 0.2,
  roleTransfer: 0.5,
  // The rate-limited tasks' transactions, and a window written alone: a tenth, so a run of a thousand loses tens of
  // answers of settlements, each sent again by the SDK under its token.
  rateGrant: 0.1,
  rateSettle: 0.1,
  rateWindow: 0.1,
};

/** A claim of a workflow task: what its claim said of how each dependency ended. */
export interface DagClaim {
  readonly taskId: string;
  readonly dependencies?: Readonly<Record<string, { readonly status: string }>>;
}

/** A suspension as its agent was told of it: the racing callers answer it with its callback token. */
export interface AgentSuspension {
  readonly taskId: string;
  readonly waitpointId: string;
  /** The token of the suspension's last answer: an earlier one is replaced. */
  readonly token: string;
  /** Answered by the callers; or left to time out. */
  readonly answered: boolean;
  /** The token of an earlier answer to the same suspension, lost on its way back: replaced since. */
  readonly staleToken?: string;
}

/** One supervisor pass: when it started, and when it ended. */
export interface SupervisorPass {
  readonly start: number;
  end?: number;
}

/** What the faults, the recorders and the run share while it goes. */
export interface ChaosState {
  readonly random: () => number;
  readonly history: History;
  /** Faults injected, by kind. */
  readonly faults: Record<string, number>;
  /** The committed writes whose answer was lost, by what they wrote. */
  readonly lostAnswers: Record<string, number>;
  /**
   * The leases the claims answered with: a grant no answer carried was taken back by its own claim (its session no
   * longer held the slot), and no agent ever held it.
   */
  readonly answered: Set<string>;
  readonly dagClaims: DagClaim[];
  /** The suspensions the agents were told of, in the order they were: the callers' work. */
  readonly suspensions: AgentSuspension[];
  /** When each supervisor pass started and ended (a doubled tick's two passes start together). */
  readonly passes: SupervisorPass[];
  /** Calls and time spent by command, kept with `CHAOS_DEBUG` set. */
  readonly latency: Map<string, { n: number; ms: number }>;
  readonly live: { faultsOn: boolean; stopping: boolean; completed: number; lastPassMs: number };
  count(kind: string): void;
}

/** The outcome of one client call, as `record` keeps it in the history. */
export type Recorded<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly code: string };

/** The stack under test and what the run shares. */
export interface InProcessRun extends ChaosState {
  readonly options: ChaosOptions;
  readonly scratch: ScratchStack;
  readonly ctx: WiredContext;
  readonly scheduler: Scheduler;
  /** Runs a client call and records it, with its outcome as the caller saw it: ok, fail (definite) or unknown. */
  record<T>(call: Omit<ClientCall, 'at' | 'outcome' | 'code'>, work: () => Promise<T>): Promise<Recorded<T>>;
}

function chaosState(seed: number): ChaosState {
  const faults: Record<string, number> = {};
  return {
    random: seededRandom(seed),
    history: emptyHistory(),
    faults,
    lostAnswers: {},
    answered: new Set(),
    dagClaims: [],
    suspensions: [],
    passes: [],
    latency: new Map(),
    live: {
      faultsOn: process.env.CHAOS_NO_FAULTS === undefined,
      stopping: false,
      completed: 0,
      lastPassMs: 0,
    },
    count: (kind) => {
      faults[kind] = (faults[kind] ?? 0) + 1;
    },
  };
}

/** The stack under test: the scratch tables and queues, their clients' faults and recorders, and the scheduler. */
export async function setUp(options: ChaosOptions): Promise<InProcessRun> {
  const unserved = options.labelled ? unservedSets(options.agents) : [];
  if (unserved.length > 0)
    throw new Error(
      `labelled tasks need an agent for each requirement set; none of ${options.agents} meets ${unserved.join(', ')}`,
    );
  const state = chaosState(options.seed);
  const { scratch, ctx, scheduler } = await startLocalStack({
    name: 'chaos',
    queues: ['chaos'],
    endpoints: options.endpoints,
    onClients: ({ dynamodb, sqs, tables }) => {
      injectWriteFaults(dynamodb, tables, state);
      if (process.env.CHAOS_DEBUG) measureLatency([dynamodb, sqs], state.latency);
      // Added after the faults, so it runs inside them: closest to the wire.
      recordCommittedWrites(dynamodb, tables, state.history);
      injectSqsFaults(sqs, state);
    },
    context: {
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
        // The default, said here: the run's waitpoints need 3, its rate-limited tasks 4, its labelled tasks 5.
        taskLayout: 5,
        rateLimits: [{ name: BUDGET, ...BUDGET_TERMS }],
      },
    },
    onContext: (ctx) => {
      options.mutate?.(ctx);
      recordTakeBacks(ctx, state.history);
    },
  });
  return { ...state, options, scratch, ctx, scheduler, record: recorderOf(state.history) };
}

/** Under the SDK's retries: a lost answer or a throttle is retried by the SDK, as in AWS. */
function injectWriteFaults(
  dynamodb: DynamoDBClient,
  tables: { readonly tasks: string; readonly leases: string },
  state: ChaosState,
): void {
  // The writes sent while faults last, by what they wrote.
  const sent = new Map<string, number>();
  stackOf(dynamodb).add(
    (next, context) => async (args) => {
      if (!state.live.faultsOn || !WRITES.has(context.commandName ?? '')) return next(args);
      const draw = state.random();
      if (draw < 0.02) {
        state.count('dynamodbThrottledBeforeSend');
        throw Object.assign(new Error('injected throttle'), { name: 'ThrottlingException', $metadata: {} });
      }
      const kind = writeKind(context.commandName ?? '', args.input, tables);
      sent.set(kind, (sent.get(kind) ?? 0) + 1);
      const owed = (sent.get(kind) ?? 0) >= LOSS_OWED_AFTER && state.lostAnswers[kind] === undefined;
      const result = await next(args);
      if (owed || draw < 0.02 + (LOST_SHARE[kind] ?? 0.02)) {
        state.count('dynamodbTimeoutAfterCommit');
        state.lostAnswers[kind] = (state.lostAnswers[kind] ?? 0) + 1;
        throw Object.assign(new Error('injected timeout after commit'), {
          name: 'TimeoutError',
          $metadata: {},
        });
      }
      return result;
    },
    { step: 'finalizeRequest', name: 'chaosDynamoDbFaults', priority: 'low' },
  );
}

/** Counts each command's calls and time, for the progress lines of a `CHAOS_DEBUG` run. */
function measureLatency(
  clients: readonly (DynamoDBClient | SQSClient)[],
  latency: Map<string, { n: number; ms: number }>,
): void {
  for (const client of clients)
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

/** Sends lost (answered as sent) and sends delivered twice. */
function injectSqsFaults(sqs: SQSClient, state: ChaosState): void {
  stackOf(sqs).add(
    (next, context) => async (args) => {
      const operation = context.commandName ?? '';
      if (
        !state.live.faultsOn ||
        (operation !== 'SendMessageCommand' && operation !== 'SendMessageBatchCommand')
      ) {
        return next(args);
      }
      const draw = state.random();
      if (draw < 0.05) {
        state.count('sqsSendLost');
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
        state.count('sqsDuplicateDelivery');
        await next(args);
      }
      return next(args);
    },
    { step: 'initialize', name: 'chaosSqsFaults' },
  );
}

/** A client call recorded into `history`: a refusal below 500 is definite, anything else may have happened. */
function recorderOf(history: History): InProcessRun['record'] {
  return async (call, work) => {
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
}
