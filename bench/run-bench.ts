/**
 * The benchmark: the local stack (the same handlers behind the local HTTP server, DynamoDB Local, the SQS
 * emulator), agents on the SDK's client, and a meter on every AWS request. It reports throughput and latency,
 * what one task costs in requests and capacity, and that in dollars at the list prices of `prices.ts`.
 *
 * What is counted per task, as AWS bills it: DynamoDB capacity (tables and indexes, failed conditional writes
 * included: see `AwsMeter`), SQS requests, API calls (each one Lambda invocation, plus the authorizer once per
 * agent per cache period), Lambda duration as `lambda-duration.ts` models it (the handler's own time here plus an
 * in-Region round trip for each of its waits on AWS; the wall time here is reported beside it), and lifecycle
 * events put on the bus. Heartbeats are per agent per interval, not per task, and are reported as their own
 * figure, as is an idle agent's month.
 */

import { AwsMeter } from '#adapters/aws-meter';
import { DEFAULT_SETTINGS } from '#core/context';
import { walkNewTasks } from '#core/list-walk';
import { type ServedLocalStack, startLocalStack } from '#local/local-stack';
import { percentile } from '#local/percentile';
import { randomTextPayload, seededRandom } from '#local/seeded-random';
import { AgentSchedulerClient } from '#sdk/client';
import type { ClaimedTask, ClaimResult, SubmitTaskInput } from '#sdk/types';
import { meterAndTime } from './aws-calls';
import { AWS_ROUND_TRIP_MS, modelledDuration } from './lambda-duration';
import { type LifecycleSteps, measureLifecycle } from './lifecycle-steps';
import { API_FUNCTION_MEMORY_GB, PRICES } from './prices';

export interface BenchOptions {
  readonly tasks: number;
  readonly agents: number;
  /** Tasks per submit, claim and complete call; 1 uses the single-task routes. */
  readonly batch: number;
  /** Size of each task's payload as JSON. */
  readonly payloadBytes: number;
  /** Tasks run before the measured ones, whose figures are dropped (JIT and cache warm-up). @default 0 */
  readonly warmupTasks?: number;
  /** Emulators to use; started (in memory) and stopped by the run when absent. */
  readonly endpoints?: { readonly dynamodb: string; readonly sqs: string };
  /**
   * Each claim a call of its own, as before completions carried claims; by default an agent's completion carries
   * its next claim (`claimNext`), as the SDK's Worker sends it when full. @default false
   */
  readonly separateClaims?: boolean;
}

export interface Percentiles {
  readonly p50: number;
  readonly p99: number;
}

export interface BenchReport {
  readonly tasks: number;
  /** Tasks run first and not measured. */
  readonly warmupTasks: number;
  readonly agents: number;
  readonly batch: number;
  readonly payloadBytes: number;
  readonly durationMs: number;
  readonly tasksPerSecond: number;
  readonly dispatchLatencyMs: Percentiles;
  readonly completionLatencyMs: Percentiles;
  readonly perTask: {
    readonly dynamodbWriteUnits: number;
    readonly dynamodbReadUnits: number;
    readonly dynamodbIndexWriteUnits: number;
    /** Of the write units, those billed for writes refused by their condition. */
    readonly dynamodbFailedWriteUnits: number;
    readonly sqsRequests: number;
    readonly apiCalls: number;
    readonly lambdaInvocations: number;
    /** Billed duration as modelled for AWS (see `lambda-duration.ts`). */
    readonly lambdaMs: number;
    /** The handlers' wall time on this machine, beside the emulators. */
    readonly localLambdaMs: number;
    readonly events: number;
    readonly requests: Readonly<Record<string, number>>;
  };
  /** Calls and mean handler time per API operation. */
  readonly operations: Readonly<Record<string, { readonly calls: number; readonly meanMs: number }>>;
  readonly usdPerMillionTasks: number;
  readonly usdPerMillionTasksByService: Readonly<Record<string, number>>;
  readonly heartbeat: {
    readonly dynamodbWriteUnits: number;
    readonly requests: number;
    readonly lambdaMs: number;
  };
  readonly heartbeatUsdPerAgentHour: number;
  readonly idleClaim: {
    readonly awsRequests: number;
    readonly dynamodbReadUnits: number;
    readonly lambdaMs: number;
  };
  readonly idleAgentUsdPerMonth: number;
  readonly prices: string;
  /** One lifecycle measured alone, step by step (see `lifecycle-steps.ts`): per task, in the run's batch size. */
  readonly steps: LifecycleSteps;
  /** How Lambda's duration was modelled: the round trip assumed for each AWS request, in ms. */
  readonly awsRoundTripMs: Readonly<Record<string, number>>;
}

const OPERATOR_TOKEN = 'op_bench';
const round = (value: number, digits = 3) => Number(value.toFixed(digits));

function percentiles(values: number[]): Percentiles {
  return { p50: round(percentile(values, 0.5), 1), p99: round(percentile(values, 0.99), 1) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Dollars for one call of an API function: the API request, the invocation and its duration. */
const apiCallUsd = (lambdaMs: number) =>
  PRICES.apiGateway.httpRequest +
  PRICES.lambda.request +
  (Math.ceil(lambdaMs) / 1_000) * API_FUNCTION_MEMORY_GB * PRICES.lambda.gbSecond;

/** What one agent call costs: every DynamoDB unit and SQS request it made, and the API call that carries it. */
const agentCallUsd = (made: PerCall) =>
  made.writeUnits * PRICES.dynamodb.writeUnit +
  made.readUnits * PRICES.dynamodb.readUnit +
  made.sqsRequests * PRICES.sqs.request +
  apiCallUsd(made.lambdaMs);

interface BenchAgent {
  readonly client: AgentSchedulerClient;
  readonly sessionId: string;
}

/** The stack under load, with what is counted on it: AWS requests, API calls and their handler time, events. */
interface Bench {
  readonly stack: ServedLocalStack;
  readonly meter: AwsMeter;
  readonly api: {
    calls: number;
    /** Modelled billed duration (see `lambda-duration.ts`). */
    lambdaMs: number;
    /** Wall time of the handlers here. */
    localMs: number;
    readonly byOperation: Map<string, { calls: number; ms: number }>;
  };
  readonly counted: { events: number };
  readonly operator: AgentSchedulerClient;
  readonly agents: readonly BenchAgent[];
  /** Every task's payload. */
  readonly payload: unknown;
}

/** What one call costs on average over a few: AWS totals and handler time, per call. */
interface PerCall {
  readonly requests: number;
  readonly writeUnits: number;
  readonly readUnits: number;
  readonly sqsRequests: number;
  readonly lambdaMs: number;
}

/** What the measured run and the probes after it counted. */
interface Measured {
  readonly durationMs: number;
  readonly dispatch: number[];
  readonly completion: number[];
  readonly totals: ReturnType<AwsMeter['totals']>;
  readonly sqsRequests: number;
  readonly s3Puts: number;
  readonly s3Gets: number;
  readonly requests: Record<string, number>;
  readonly apiCalls: number;
  readonly apiLambdaMs: number;
  readonly apiLocalMs: number;
  readonly operations: ReadonlyMap<string, { calls: number; ms: number }>;
  readonly events: number;
  readonly heartbeat: PerCall;
  readonly idleClaim: PerCall;
}

/** The stack, metered, with the agents registered and their sessions open. */
async function setUpBench(options: BenchOptions): Promise<Bench> {
  const meter = new AwsMeter();
  const counted = { events: 0 };
  const api = {
    calls: 0,
    lambdaMs: 0,
    localMs: 0,
    byOperation: new Map<string, { calls: number; ms: number }>(),
  };
  const stack = await startLocalStack({
    signRequests: true,
    name: 'bench',
    queues: ['bench'],
    endpoints: options.endpoints,
    payloadBucket: true,
    onClients: ({ dynamodb, sqs, s3 }) => {
      meterAndTime(meter, { dynamodb, sqs, s3 });
    },
    context: {
      events: {
        publish: async (published) => {
          counted.events += published.length;
        },
      },
      // Agents here are idle only while the run starts and ends: short waits keep the figures about the work.
      settings: { idleClaimRetryBaseMs: 10, idleClaimRetryMaxMs: 50 },
    },
    serve: {
      operatorToken: OPERATOR_TOKEN,
      // As API Gateway caches the authorizer's answers in the construct: its reads are not per request.
      authorizerCacheTtlMs: 60_000,
      onRequest: ({ operation, durationMs, awsCalls }) => {
        api.calls++;
        api.lambdaMs += modelledDuration(durationMs, awsCalls).billedMs;
        api.localMs += Math.ceil(durationMs);
        const entry = api.byOperation.get(operation) ?? { calls: 0, ms: 0 };
        entry.calls++;
        entry.ms += durationMs;
        api.byOperation.set(operation, entry);
      },
    },
  });
  try {
    const operator = new AgentSchedulerClient({ endpoint: stack.server.url, token: OPERATOR_TOKEN });
    const agents = await Promise.all(
      Array.from({ length: options.agents }, async (_, i) => {
        const { token } = await operator.createAgent({
          name: `bench-${i}`,
          queues: ['bench'],
          maxConcurrency: options.batch,
        });
        const client = new AgentSchedulerClient({ endpoint: stack.server.url, token });
        const { sessionId } = await client.openSession();
        return { client, sessionId };
      }),
    );
    // Random text: payloads are stored deflated when that is smaller, and a repeated character would make any
    // size look free.
    const payload = randomTextPayload(options.payloadBytes, seededRandom(7));
    return { stack, meter, api, counted, operator, agents, payload };
  } catch (error) {
    await stack.stop();
    throw error;
  }
}

/** Submits `count` tasks and has the agents claim and complete them all; latencies per task, in ms. */
async function runLoad(bench: Bench, options: BenchOptions, count: number, keyPrefix: string) {
  const { batch } = options;
  const { operator, agents, payload } = bench;
  const submittedAt = new Map<string, number>();
  const dispatch: number[] = [];
  const completion: number[] = [];
  let submitted = 0;
  let completed = 0;
  const backlogLimit = Math.max(50, options.agents * batch * 4);
  const started = performance.now();

  const submitter = async (share: number[]) => {
    for (let i = 0; i < share.length; i += batch) {
      while (submitted - completed > backlogLimit) await sleep(2);
      const chunk = share.slice(i, i + batch);
      const specs: SubmitTaskInput[] = chunk.map((n) => ({
        queue: 'bench',
        payload,
        idempotencyKey: `${keyPrefix}-${n}`,
      }));
      if (batch === 1 && specs[0]) {
        const { task } = await operator.submitTask(specs[0]);
        submittedAt.set(task.taskId, performance.now());
      } else {
        for (const result of await operator.submitTasks(specs)) {
          if (!result.ok) throw new Error(`a submission failed: ${result.error.code}`);
          submittedAt.set(result.task.taskId, performance.now());
        }
      }
      submitted += chunk.length;
    }
  };
  const worker = async (agent: BenchAgent) => {
    let idleClaims = 0;
    // The answer of the claim the last completion carried: taken as this loop's next claim, empty or not.
    let carried: ClaimResult | undefined;
    while (completed < count) {
      const claim = carried ?? (await agent.client.claim(claimOf(agent, idleClaims)));
      carried = undefined;
      if (claim.tasks.length === 0) {
        idleClaims++;
        await sleep(claim.retryAfterMs ?? 20);
        continue;
      }
      idleClaims = 0;
      const claimedAt = performance.now();
      for (const task of claim.tasks) dispatch.push(claimedAt - (submittedAt.get(task.taskId) ?? claimedAt));
      carried = await finish(agent, claim.tasks);
      const doneAt = performance.now();
      for (const task of claim.tasks) completion.push(doneAt - (submittedAt.get(task.taskId) ?? doneAt));
      completed += claim.tasks.length;
    }
  };
  const claimOf = (agent: BenchAgent, idleClaims = 0) => ({
    sessionId: agent.sessionId,
    max: batch,
    idleClaims,
  });
  /** Completes the tasks, and answers the claim their completion carried (none with `separateClaims`). */
  const finish = async (
    agent: BenchAgent,
    claimed: readonly ClaimedTask[],
  ): Promise<ClaimResult | undefined> => {
    const { client } = agent;
    const [only] = claimed;
    if (batch === 1 && only) {
      const input = { leaseEpoch: only.leaseEpoch, result: { ok: 1 } };
      if (options.separateClaims) {
        await client.complete(only.taskId, input);
        return undefined;
      }
      return (await client.completeAndClaim(only.taskId, input, claimOf(agent))).next;
    }
    const items = claimed.map((task) => ({
      taskId: task.taskId,
      leaseEpoch: task.leaseEpoch,
      result: { ok: 1 },
    }));
    const answer = options.separateClaims
      ? { results: await client.completeTasks(items), next: undefined }
      : await client.completeTasksAndClaim(items, claimOf(agent));
    if (answer.results.some((r) => !r.ok)) throw new Error('a completion failed');
    return answer.next;
  };

  // Enough to keep the backlog full while agents take their next task with each completion (with 4, agents
  // waited on an empty queue and their empty claims were counted into every task).
  const submitters = 8;
  const shares = Array.from({ length: submitters }, (_, s) =>
    // Whole batches to each submitter, so every submit call but the last is full.
    Array.from({ length: count }, (_, n) => n).filter((n) => Math.floor(n / batch) % submitters === s),
  );
  await Promise.all([...shares.map(submitter), ...agents.map(worker)]);
  return { durationMs: performance.now() - started, dispatch, completion };
}

/** What `calls` calls of one kind cost, per call. */
async function perCall(bench: Bench, calls: number, call: () => Promise<unknown>): Promise<PerCall> {
  const { meter, api } = bench;
  meter.reset();
  api.lambdaMs = 0;
  api.localMs = 0;
  for (let i = 0; i < calls; i++) await call();
  const totals = meter.totals();
  const sqsRequests = meter.totals((r) => r.service === 'sqs').requests;
  return {
    requests: totals.requests / calls,
    writeUnits: totals.writeUnits / calls,
    readUnits: totals.readUnits / calls,
    sqsRequests: sqsRequests / calls,
    lambdaMs: api.lambdaMs / calls,
  };
}

/**
 * The supervisor's list walk as a pass `reconcileAfterSeconds` from now makes it: up to now, and its place saved
 * there. (A walk asked to go up to now keeps its place at its usual horizon, so that a submission still writing its
 * state is walked again later: walked that way, the warm-up's tasks would be read again by the measured walk.)
 */
async function walkAsLater(bench: Bench): Promise<void> {
  const { ctx } = bench.stack;
  const later = ctx.settings.reconcileAfterSeconds * 1_000;
  await walkNewTasks({ ...ctx, now: () => ctx.now() + later });
}

/** The warm-up, the measured run with what it counted, then a heartbeat's and an idle poll's cost. */
async function runMeasured(bench: Bench, options: BenchOptions): Promise<Measured> {
  const { meter, api, counted } = bench;
  // A first run whose figures are dropped: the emulators' JIT and the functions' caches warm up, as a deployed
  // scheduler's are under steady load.
  if (options.warmupTasks) await runLoad(bench, options, options.warmupTasks, 'warmup');
  // The warm-up's tasks walked here, so that the walk counted below reads the measured ones only.
  await walkAsLater(bench);
  meter.reset();
  api.calls = 0;
  api.lambdaMs = 0;
  api.localMs = 0;
  api.byOperation.clear();
  counted.events = 0;

  const { durationMs, dispatch, completion } = await runLoad(bench, options, options.tasks, 'bench');
  // What the supervisor spends on each task later: its list walk reads every task once, `reconcileAfterSeconds`
  // after its creation (after the run here), and gives a due entry to the tasks still open (none, all ended).
  await walkAsLater(bench);
  const run = {
    durationMs,
    dispatch,
    completion,
    totals: meter.totals(),
    sqsRequests: meter.totals((r) => r.service === 'sqs').requests,
    s3Puts: meter.totals((r) => r.service === 's3' && r.operation === 'PutObjectCommand').requests,
    s3Gets: meter.totals((r) => r.service === 's3' && r.operation === 'GetObjectCommand').requests,
    requests: meter.byOperation(),
    apiCalls: api.calls,
    apiLambdaMs: api.lambdaMs,
    apiLocalMs: api.localMs,
    operations: new Map(api.byOperation),
    events: counted.events,
  };

  const [first] = bench.agents;
  if (!first) throw new Error('the benchmark needs at least one agent');
  // A heartbeat: what keeps an agent's leases alive, once per interval whatever it holds.
  const heartbeat = await perCall(bench, 5, () => first.client.heartbeat({ sessionId: first.sessionId }));
  // An idle agent: it holds nothing, so sends no heartbeats, and polls at the longest suggested wait.
  const idleClaim = await perCall(bench, 5, () =>
    first.client.claim({ sessionId: first.sessionId, idleClaims: 100 }),
  );
  return { ...run, heartbeat, idleClaim };
}

/** Per task: requests and capacity, API calls, invocations and their time, events; and dollars by service. */
function perTaskOf(options: BenchOptions, run: Measured) {
  const total = options.tasks;
  const { totals, sqsRequests, s3Puts, s3Gets, apiCalls, apiLambdaMs, apiLocalMs, events } = run;
  // The authorizer's answer is cached per token for 60 s: one invocation per agent per minute of work.
  const authorizerInvocations = options.agents * Math.ceil(run.durationMs / 60_000);
  const perTask = {
    dynamodbWriteUnits: round(totals.writeUnits / total),
    dynamodbReadUnits: round(totals.readUnits / total),
    dynamodbIndexWriteUnits: round(totals.indexWriteUnits / total),
    dynamodbFailedWriteUnits: round(totals.failedWriteUnits / total),
    sqsRequests: round(sqsRequests / total),
    s3Requests: round((s3Puts + s3Gets) / total),
    apiCalls: round(apiCalls / total),
    lambdaInvocations: round((apiCalls + authorizerInvocations) / total),
    lambdaMs: round(apiLambdaMs / total, 2),
    localLambdaMs: round(apiLocalMs / total, 2),
    events: round(events / total),
    requests: Object.fromEntries(
      Object.entries(run.requests)
        .map(([operation, count]) => [operation.replace(/Command$/, ''), round(count / total)] as const)
        .sort(([a], [b]) => a.localeCompare(b)),
    ),
  };
  const byService = {
    dynamodb:
      (totals.writeUnits * PRICES.dynamodb.writeUnit + totals.readUnits * PRICES.dynamodb.readUnit) / total,
    sqs: (sqsRequests * PRICES.sqs.request) / total,
    s3: (s3Puts * PRICES.s3.put + s3Gets * PRICES.s3.get) / total,
    apiGateway: (apiCalls * PRICES.apiGateway.httpRequest) / total,
    lambda:
      ((apiCalls + authorizerInvocations) * PRICES.lambda.request +
        (apiLambdaMs / 1_000) * API_FUNCTION_MEMORY_GB * PRICES.lambda.gbSecond) /
      total,
    eventBridge: (events * PRICES.eventBridge.customEvent) / total,
  };
  return { perTask, byService };
}

/** The report: the run's figures per task, priced, and what an agent's heartbeats and idle polls cost. */
function reportBench(options: BenchOptions, payload: unknown, run: Measured): Omit<BenchReport, 'steps'> {
  const { perTask, byService } = perTaskOf(options, run);
  const usdPerTask = Object.values(byService).reduce((sum, usd) => sum + usd, 0);
  const beat = run.heartbeat;
  const heartbeat = {
    dynamodbWriteUnits: round(beat.writeUnits),
    requests: round(beat.requests),
    lambdaMs: round(beat.lambdaMs, 2),
  };
  const heartbeatUsdPerAgentHour = (agentCallUsd(beat) * 3_600) / DEFAULT_SETTINGS.heartbeatIntervalSeconds;
  const idle = run.idleClaim;
  const idleClaim = {
    awsRequests: round(idle.requests),
    dynamodbReadUnits: round(idle.readUnits),
    lambdaMs: round(idle.lambdaMs, 2),
  };
  const idlePollUsd = agentCallUsd(idle);
  const pollsPerMonth = (30 * 24 * 3_600 * 1_000) / DEFAULT_SETTINGS.idleClaimRetryMaxMs;
  const { durationMs } = run;
  return {
    tasks: options.tasks,
    warmupTasks: options.warmupTasks ?? 0,
    agents: options.agents,
    batch: options.batch,
    payloadBytes: JSON.stringify(payload).length,
    durationMs: Math.round(durationMs),
    tasksPerSecond: round(options.tasks / (durationMs / 1_000), 1),
    dispatchLatencyMs: percentiles(run.dispatch),
    completionLatencyMs: percentiles(run.completion),
    perTask,
    operations: Object.fromEntries(
      [...run.operations].map(([operation, { calls, ms }]) => [
        operation,
        { calls, meanMs: round(ms / calls, 1) },
      ]),
    ),
    usdPerMillionTasks: round(usdPerTask * 1e6, 2),
    usdPerMillionTasksByService: Object.fromEntries(
      Object.entries(byService).map(([service, usd]) => [service, round(usd * 1e6, 2)]),
    ),
    heartbeat,
    heartbeatUsdPerAgentHour: round(heartbeatUsdPerAgentHour, 5),
    idleClaim,
    idleAgentUsdPerMonth: round(idlePollUsd * pollsPerMonth, 4),
    prices: `${PRICES.region} list prices checked ${PRICES.checkedOn} (bench/prices.ts)`,
    awsRoundTripMs: AWS_ROUND_TRIP_MS,
  };
}

export async function runBench(options: BenchOptions): Promise<BenchReport> {
  const bench = await setUpBench(options);
  try {
    const measured = await runMeasured(bench, options);
    const [agent] = bench.agents;
    if (!agent) throw new Error('the benchmark needs at least one agent');
    const steps = await measureLifecycle({ ...bench, agent, queue: 'bench' }, options.batch);
    return { ...reportBench(options, bench.payload, measured), steps };
  } finally {
    await bench.stack.stop();
  }
}
