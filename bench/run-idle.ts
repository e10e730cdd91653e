/**
 * The idle scenario (`npm run bench -- --scenario idle`): what the push channel does for a fleet with nothing to
 * do, on the local stack (the same handlers behind the local HTTP server and its WebSocket push channel, DynamoDB
 * Local, the SQS emulator) with real SDK Workers over HTTP and `ws` sockets.
 *
 * 1. Pickup: N Workers on one queue, push on, all idle (each has made its listening empty claim and been told to
 *    wait the server's default safety poll, 20 minutes, so a task is picked up by a wake or not at all). Tasks are
 *    submitted one at a time, spaced at random; each is timed from just before its submit is sent to the start of
 *    its handler. Polling Workers (`push: false`) under the AWS idle setting are not run (their idle wait is 90 s):
 *    their pickup is computed.
 * 2. Wakes and claims per task, from the frames the server sent (by type) and the claim requests it answered, and
 *    the agents woken twice within the wake cooldown.
 * 3. An idle agent's month in AWS, priced at `prices.ts`: the requests and capacity of each step (a listening empty
 *    claim, an empty claim of a polling agent, a connect ticket, `$connect`, `$disconnect` of a replaced socket, the
 *    HTTP authorizer) are measured on the local stack with the AWS meter, each request attributed to the function
 *    that made it; the steps' counts per month follow from the client's timers.
 */
import { loadavg } from 'node:os';
import { WebSocket } from 'ws';
import { AwsMeter, type MeteredRequest } from '#adapters/aws-meter';
import { DEFAULT_SETTINGS } from '#core/context';
import { Scheduler } from '#core/scheduler';
import type { PushFrame } from '#domain/push';
import { currentFunction, runApart } from '#local/function-scope';
import { percentile } from '#local/percentile';
import { LocalPushSender } from '#local/push-server';
import { scratchStack } from '#local/scratch-stack';
import { seededRandom } from '#local/seeded-random';
import { startLocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { KEEP_ALIVE_MS, RECONNECT_AFTER_MS, type WebSocketConstructor } from '#sdk/push-channel';
import { Worker } from '#sdk/worker';
import { createContext } from '#wiring/context';
import { FUNCTION_MEMORY_GB, PRICES } from './prices';

export interface IdleBenchOptions {
  /** Idle Workers, one agent each, all on one queue. */
  readonly agents: number;
  /** Tasks submitted one at a time. */
  readonly tasks: number;
  /** Seed of the spacing between submits. @default 1 */
  readonly seed?: number;
  /** Spacing between submits, drawn uniformly. @default { min: 200, max: 2000 } */
  readonly spacingMs?: { readonly min: number; readonly max: number };
  /** Empty claims measured per kind for the cost model, each after the claim caches expire. @default 3 */
  readonly probeClaims?: number;
  /** Emulators to use; started (in memory) and stopped by the run when absent. */
  readonly endpoints?: { readonly dynamodb: string; readonly sqs: string };
}

export interface LatencyFigures {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** What one step costs in AWS, as measured: requests by operation, capacity, SQS requests, handler time. */
export interface StepUsage {
  /** DynamoDB and SQS requests by `service:operation`. */
  readonly requests: Readonly<Record<string, number>>;
  readonly dynamodbReadUnits: number;
  /** Write units, with a write refused by its condition billed as 1 (DynamoDB bills a failed conditional write). */
  readonly dynamodbWriteUnits: number;
  readonly sqsRequests: number;
  /** Mean handler time of the function doing the step, on this machine. */
  readonly lambdaMs: number;
}

/** Dollars, by service. */
export type UsdByService = Readonly<
  Record<'apiGateway' | 'webSocket' | 'lambda' | 'dynamodb' | 'sqs', number>
>;

export interface CostItem {
  readonly item: string;
  /** How many a month. */
  readonly perMonth: number;
  /** Dollars for one. */
  readonly usdEach: number;
  /** Dollars a month. */
  readonly usd: number;
  readonly byService: UsdByService;
}

export interface AgentMonth {
  readonly usd: number;
  readonly byService: UsdByService;
  readonly items: readonly CostItem[];
}

export interface IdleReport {
  readonly scenario: 'idle';
  readonly agents: number;
  readonly tasks: number;
  readonly seed: number;
  readonly spacingMs: { readonly min: number; readonly max: number };
  readonly settings: {
    readonly pushSafetyPollMs: number;
    readonly wakesPerTask: number;
    readonly wakeCooldownMs: number;
    readonly idleRetryMaxMs: number;
  };
  /** The machine's 1-minute load average at the start and the end of the run (other work shares it). */
  readonly loadAverage: { readonly start: number; readonly end: number };
  readonly durationMs: number;
  readonly idle: {
    /** From the first Worker started to the last one idle (its listening empty claim answered). */
    readonly readyMs: number;
    /** Claims the idle fleet made in a quiet window before the first submit: 0 when it waits for wakes. */
    readonly claimsInQuietWindow: number;
    readonly quietWindowMs: number;
  };
  /** Submit sent → handler started, push on: measured. */
  readonly pickupMs: LatencyFigures & { readonly mean: number; readonly missed: number };
  /** The same with `push: false` at the AWS idle setting (90 s): computed, not run. */
  readonly pollingPickupMs: {
    /** One agent, or a fleet polling in step (Workers started together stay in step: the wait has no jitter). */
    readonly inStep: LatencyFigures;
    /** N agents polling at independent random phases: the first of N polls. */
    readonly independentPhases: LatencyFigures;
  };
  readonly perTask: {
    readonly wakes: number;
    readonly claims: number;
    /** Frames sent by type. */
    readonly frames: Readonly<Record<string, number>>;
  };
  /** Agents that got a wake while idle with a previous one less than the cooldown before (should be 0). */
  readonly wokenTwiceWithinCooldown: number;
  /** Distinct agents woken, and the most wakes one agent got. */
  readonly agentsWoken: number;
  readonly mostWakesOneAgent: number;
  /** Each step an idle agent's month is made of, measured on the local stack. */
  readonly measured: {
    readonly listeningEmptyClaim: StepUsage & { readonly retryAfterMs: number };
    /** The first listening claim of a socket: it marks the agent idle, and looks twice. */
    readonly listeningFirstClaim: StepUsage;
    readonly pollingEmptyClaim: StepUsage & { readonly retryAfterMs: number };
    /** The HTTP API's authorizer on a token not in its 60 s cache. */
    readonly httpAuthorizer: StepUsage;
    /** `POST /v1/agent/push-ticket`, the authorizer's answer cached. */
    readonly ticket: StepUsage;
    readonly connectAuthorizer: StepUsage;
    readonly connect: StepUsage;
    /** `$disconnect` of a socket replaced by a newer one of the same agent. */
    readonly disconnectReplaced: StepUsage;
    /** AWS requests a keep-alive `ping` frame made: 0 (in AWS it goes to a mock route and reaches no function). */
    readonly keepAliveRequests: number;
    /** What came back to the ping: the pong frame (`none` if nothing within 2 s). */
    readonly keepAliveAnswer: string;
  };
  /** An idle agent's 30-day month in AWS, itemized. */
  readonly idleAgentMonth: {
    readonly push: AgentMonth;
    readonly polling: AgentMonth;
    /** The polling agent priced as `bench.ts`'s throughput report does (no authorizer): the README's figure. */
    readonly pollingWithoutAuthorizerUsd: number;
  };
  readonly prices: string;
}

const OPERATOR_TOKEN = 'op_bench_idle';
const QUEUE = 'idle';
/** The probe agent's queue: its listening claims must not take the fleet's wakes. */
const PROBE_QUEUE = 'probe';
const MONTH_MS = 30 * 24 * 3_600 * 1_000;
/** Longer than the claim's caches (the queue control, 2 s; an empty tier, `emptyTierRecheckMs`): a cold claim. */
const PROBE_SPACING_MS = 2_100;

const round = (value: number, digits = 3) => Number(value.toFixed(digits));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mean = (values: readonly number[]) =>
  values.length === 0 ? 0 : values.reduce((sum, v) => sum + v, 0) / values.length;

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

/** The local push sender, counting frames by type and remembering when each connection was woken. */
class CountingPushSender extends LocalPushSender {
  readonly byType = new Map<string, number>();
  readonly wakes: { readonly connectionId: string; readonly at: number }[] = [];

  override async send(connectionId: string, frame: PushFrame): Promise<'sent' | 'gone'> {
    const at = Date.now();
    const outcome = await super.send(connectionId, frame);
    if (outcome === 'sent') {
      this.byType.set(frame.type, (this.byType.get(frame.type) ?? 0) + 1);
      if (frame.type === 'wake') this.wakes.push({ connectionId, at });
    }
    return outcome;
  }

  resetCounts(): void {
    this.byType.clear();
    this.wakes.length = 0;
  }
}

const ZERO: UsdByService = { apiGateway: 0, webSocket: 0, lambda: 0, dynamodb: 0, sqs: 0 };
const add = (...parts: UsdByService[]): UsdByService => {
  const sum = { ...ZERO };
  for (const part of parts)
    for (const key of Object.keys(sum) as (keyof UsdByService)[]) sum[key] += part[key];
  return sum;
};
const total = (usd: UsdByService) => Object.values(usd).reduce((sum, v) => sum + v, 0);

/** One invocation of `fn` for `ms`: billed per request and per millisecond (rounded up) at its memory size. */
const lambdaUsd = (fn: keyof typeof FUNCTION_MEMORY_GB, ms: number): UsdByService => ({
  ...ZERO,
  lambda:
    PRICES.lambda.request +
    (Math.max(1, Math.ceil(ms)) / 1_000) * FUNCTION_MEMORY_GB[fn] * PRICES.lambda.gbSecond,
});

/** The AWS requests of a step: DynamoDB capacity and SQS requests. */
const storageUsd = (usage: StepUsage): UsdByService => ({
  ...ZERO,
  dynamodb:
    usage.dynamodbReadUnits * PRICES.dynamodb.readUnit + usage.dynamodbWriteUnits * PRICES.dynamodb.writeUnit,
  sqs: usage.sqsRequests * PRICES.sqs.request,
});

/** A function invocation doing a step: the invocation, its duration and its AWS requests. */
const stepUsd = (fn: keyof typeof FUNCTION_MEMORY_GB, usage: StepUsage): UsdByService =>
  add(lambdaUsd(fn, usage.lambdaMs), storageUsd(usage));

const httpRequestUsd: UsdByService = { ...ZERO, apiGateway: PRICES.apiGateway.httpRequest };

const item = (name: string, perMonth: number, each: UsdByService): CostItem => {
  const byService = Object.fromEntries(
    Object.entries(each).map(([service, usd]) => [service, usd * perMonth]),
  ) as unknown as UsdByService;
  return { item: name, perMonth: round(perMonth, 1), usdEach: total(each), usd: total(byService), byService };
};

const month = (items: CostItem[]): AgentMonth => {
  const byService = add(...items.map((i) => i.byService));
  return {
    usd: round(total(byService), 5),
    byService: Object.fromEntries(
      Object.entries(byService).map(([service, usd]) => [service, round(usd, 5)]),
    ) as unknown as UsdByService,
    items: items.map((i) => ({ ...i, usdEach: Number(i.usdEach.toPrecision(4)), usd: round(i.usd, 5) })),
  };
};

/** Waits between idle polls of `periodMs` seen from a random moment: one poller, or the first of `n` at random phases. */
function pollingPickup(periodMs: number, n: number) {
  const firstOf = (q: number) => periodMs * (1 - (1 - q) ** (1 / n));
  return {
    inStep: { p50: periodMs * 0.5, p99: periodMs * 0.99, max: periodMs },
    independentPhases: { p50: round(firstOf(0.5), 0), p99: round(firstOf(0.99), 0), max: periodMs },
  };
}

export async function runIdle(options: IdleBenchOptions): Promise<IdleReport> {
  const agentCount = options.agents;
  const taskCount = options.tasks;
  const seed = options.seed ?? 1;
  const spacing = options.spacingMs ?? { min: 200, max: 2_000 };
  const probeClaims = options.probeClaims ?? 3;
  const loadAtStart = loadavg()[0] ?? 0;
  const runStarted = performance.now();

  const scratch = await scratchStack({
    name: 'idle',
    queues: [QUEUE, PROBE_QUEUE],
    endpoints: options.endpoints,
  });
  const { dynamodb, sqs, tables, queues } = scratch;

  // Every AWS request, with the function it stands for (the local server and the wrappers below say which).
  const meter = new AwsMeter();
  meter.attach(dynamodb, 'dynamodb');
  meter.attach(sqs, 'sqs');
  meter.attach(scratch.s3, 's3');
  const functionOf = new WeakMap<MeteredRequest, string>();
  const record = meter.requests.push.bind(meter.requests);
  meter.requests.push = (...requests: MeteredRequest[]) => {
    for (const request of requests) functionOf.set(request, currentFunction() ?? 'none');
    return record(...requests);
  };

  const sender = new CountingPushSender();
  let serverUrl = '';
  // The server's defaults: a 20-minute safety poll, one wake per task, a 1 s cooldown, a 90 s idle poll.
  const scheduler = new Scheduler(
    createContext({
      dynamodb,
      sqs,
      tables,
      queues,
      payloadBucket: { s3: scratch.s3, bucketName: scratch.payloadBucket },
      push: { sender, url: () => `${serverUrl.replace(/^http/, 'ws')}/v1/push` },
    }),
  );
  const settings = scheduler.ctx.settings;

  // The push channel's work, as the functions that do it in AWS: the `$connect` authorizer redeems the ticket, the
  // push-api function records and forgets connections and answers frames. Timed, as Lambda would bill them.
  const handlerMs: Record<string, number[]> = { pushAuthorizer: [], pushApi: [], authorizer: [] };
  const closing: Promise<unknown>[] = [];
  const timed =
    <A extends unknown[], R>(fn: 'pushAuthorizer' | 'pushApi', work: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> =>
      runApart(fn, async () => {
        const started = performance.now();
        try {
          return await work(...args);
        } finally {
          handlerMs[fn]?.push(performance.now() - started);
        }
      });
  scheduler.redeemPushTicket = timed('pushAuthorizer', scheduler.redeemPushTicket.bind(scheduler));
  scheduler.openPushConnection = timed('pushApi', scheduler.openPushConnection.bind(scheduler));
  const close = timed('pushApi', scheduler.closePushConnection.bind(scheduler));
  scheduler.closePushConnection = (connectionId) => {
    const closed = close(connectionId);
    closing.push(closed.catch(() => undefined));
    return closed;
  };
  scheduler.answerPushFrame = timed('pushApi', scheduler.answerPushFrame.bind(scheduler));
  // The HTTP authorizer's read of the agent, timed: its duration when the answer is not cached.
  const agents = {
    get: async (agentId: string) => {
      const started = performance.now();
      try {
        return await scheduler.ctx.agents.get(agentId);
      } finally {
        handlerMs.authorizer?.push(performance.now() - started);
      }
    },
  };

  const requestMs = new Map<string, number[]>();
  const server = await startLocalServer({
    scheduler,
    agents,
    operatorToken: OPERATOR_TOKEN,
    port: 0,
    log: { info() {}, warn() {}, error() {} },
    // As API Gateway caches the authorizer's answers in the construct.
    authorizerCacheTtlMs: 60_000,
    push: sender,
    onRequest: ({ operation, durationMs }) => {
      const list = requestMs.get(operation) ?? [];
      list.push(durationMs);
      requestMs.set(operation, list);
    },
  });
  serverUrl = server.url;
  const claimsSoFar = () => requestMs.get('claimTasks')?.length ?? 0;

  const workers: Worker[] = [];
  const sockets: WebSocket[] = [];
  try {
    const operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR_TOKEN });

    // 1. The idle fleet.
    const idleAt = new Map<number, number>();
    /** A fetch that notes when agent `i`'s listening claim came back empty with the safety poll as its wait. */
    const noting =
      (i: number): typeof fetch =>
      async (input, init) => {
        const request = input instanceof Request ? input : new Request(input, init);
        const listening =
          new URL(request.url).pathname === '/v1/agent/claim' &&
          ((await request.clone().json()) as { listening?: boolean }).listening === true;
        const response = await fetch(request);
        if (listening && response.ok) {
          const answer = (await response.clone().json()) as { tasks: unknown[]; retryAfterMs?: number };
          if (answer.tasks.length === 0 && answer.retryAfterMs === settings.pushSafetyPollMs)
            idleAt.set(i, Date.now());
        }
        return response;
      };
    const startedAt = new Map<string, number>();
    const fleet = await Promise.all(
      Array.from({ length: agentCount }, async (_, i) => {
        const { token } = await operator.createAgent({
          name: `idle-${i}`,
          queues: [QUEUE],
          maxConcurrency: 1,
        });
        return new AgentSchedulerClient({ endpoint: server.url, token, fetch: noting(i) });
      }),
    );
    const fleetStarted = performance.now();
    for (const client of fleet) {
      const worker = new Worker({
        client,
        // `ws`'s class fits the SDK's structural type; on Node.js 20 the SDK would find it itself.
        push: { WebSocket: WebSocket as unknown as WebSocketConstructor },
        handler: async (task) => {
          if (!startedAt.has(task.taskId)) startedAt.set(task.taskId, Date.now());
          return 'ok';
        },
      });
      workers.push(worker);
    }
    await Promise.all(workers.map((worker) => worker.start()));
    await until(() => idleAt.size === agentCount, 60_000, 'every worker to be idle');
    const readyMs = performance.now() - fleetStarted;
    // Idle means quiet: no claims while nothing happens.
    const quietWindowMs = 2_000;
    const claimsBeforeQuiet = claimsSoFar();
    await sleep(quietWindowMs);
    const claimsInQuietWindow = claimsSoFar() - claimsBeforeQuiet;

    // Tasks, one at a time, at random intervals.
    sender.resetCounts();
    const claimsBefore = claimsSoFar();
    const random = seededRandom(seed);
    const submitted: { taskId: string; sentAt: number }[] = [];
    for (let n = 0; n < taskCount; n++) {
      if (n > 0) await sleep(spacing.min + random() * (spacing.max - spacing.min));
      const sentAt = Date.now();
      const { task } = await operator.submitTask({ queue: QUEUE, payload: { n } });
      submitted.push({ taskId: task.taskId, sentAt });
    }
    // A task no wake reached would wait for the 20-minute safety poll: give up on it after 30 s.
    await until(() => submitted.every((s) => startedAt.has(s.taskId)), 30_000, 'every task to start').catch(
      () => undefined,
    );
    // The claims that follow (each Worker claims once more after its task, finds nothing and listens again).
    let seen = -1;
    for (let waited = 0; seen !== claimsSoFar() && waited < 10_000; waited += 1_500) {
      seen = claimsSoFar();
      await sleep(1_500);
    }
    const claims = claimsSoFar() - claimsBefore;
    const pickups = submitted.flatMap((s) => {
      const started = startedAt.get(s.taskId);
      return started === undefined ? [] : [started - s.sentAt];
    });
    const wakesByConnection = new Map<string, number[]>();
    for (const { connectionId, at } of sender.wakes)
      wakesByConnection.set(connectionId, [...(wakesByConnection.get(connectionId) ?? []), at]);
    const wokenTwiceWithinCooldown = [...wakesByConnection.values()].filter((times) =>
      times.some((at, i) => i > 0 && at - (times[i - 1] ?? 0) < settings.wakeCooldownMs),
    ).length;
    const frames = Object.fromEntries([...sender.byType].map(([type, n]) => [type, round(n / taskCount)]));

    await Promise.all(workers.map((worker) => worker.stop({ drain: false })));
    await until(() => sender.sockets.size === 0, 10_000, 'the workers’ sockets to close');
    await Promise.all(closing);

    // 3. The steps of an idle agent's month, one at a time, on a probe agent of its own queue.
    const usageOf = (fn: string, ms: readonly number[]): StepUsage => {
      const requests = meter.requests.filter((r) => functionOf.get(r) === fn);
      const byOperation: Record<string, number> = {};
      for (const r of requests) {
        const key = `${r.service}:${r.operation.replace(/Command$/, '')}`;
        byOperation[key] = (byOperation[key] ?? 0) + 1;
      }
      const failedWrites = requests.filter(
        (r) => r.service === 'dynamodb' && !r.ok && /^(Put|Update|Delete)Item/.test(r.operation),
      ).length;
      return {
        requests: byOperation,
        dynamodbReadUnits: requests.reduce((sum, r) => sum + r.readUnits, 0),
        dynamodbWriteUnits: requests.reduce((sum, r) => sum + r.writeUnits, 0) + failedWrites,
        sqsRequests: requests.filter((r) => r.service === 'sqs').length,
        lambdaMs: mean(ms),
      };
    };
    /** Usage per call of `calls` calls of one kind. */
    const perCall = (usage: StepUsage, calls: number): StepUsage => ({
      requests: Object.fromEntries(Object.entries(usage.requests).map(([op, n]) => [op, round(n / calls)])),
      dynamodbReadUnits: round(usage.dynamodbReadUnits / calls),
      dynamodbWriteUnits: round(usage.dynamodbWriteUnits / calls),
      sqsRequests: round(usage.sqsRequests / calls),
      lambdaMs: round(usage.lambdaMs, 2),
    });
    const phase = () => {
      meter.reset();
      requestMs.clear();
      for (const list of Object.values(handlerMs)) list.length = 0;
    };
    const { token: probeToken } = await operator.createAgent({
      name: 'idle-probe',
      queues: [PROBE_QUEUE],
      maxConcurrency: 1,
    });
    const probe = new AgentSchedulerClient({ endpoint: server.url, token: probeToken });

    // The HTTP authorizer, its answer not cached: the probe's first request.
    phase();
    const { sessionId } = await probe.openSession();
    const httpAuthorizer = perCall(usageOf('authorizer', handlerMs.authorizer ?? []), 1);

    // Today's idle agent: an empty claim at the longest wait (no socket).
    phase();
    let pollingRetryAfterMs = 0;
    for (let i = 0; i < probeClaims; i++) {
      await sleep(PROBE_SPACING_MS);
      pollingRetryAfterMs = (await probe.claim({ sessionId, idleClaims: 100 })).retryAfterMs ?? 0;
    }
    const pollingEmptyClaim = {
      ...perCall(usageOf('agentApi', requestMs.get('claimTasks') ?? []), probeClaims),
      retryAfterMs: pollingRetryAfterMs,
    };

    /** A socket of the probe, open (the `$connect` work is done when the upgrade answers). */
    const connect = (url: string) =>
      new Promise<WebSocket>((resolve, reject) => {
        const socket = new WebSocket(url);
        sockets.push(socket);
        socket.once('open', () => resolve(socket));
        socket.once('error', reject);
      });
    const first = await connect((await probe.pushTicket('agent')).url);

    // The claim a Worker makes when a socket opens: it marks the agent idle and looks a second time.
    phase();
    await sleep(PROBE_SPACING_MS);
    await probe.claim({ sessionId, idleClaims: 0, listening: true });
    const listeningFirstClaim = perCall(usageOf('agentApi', requestMs.get('claimTasks') ?? []), 1);
    // A safety poll: a listening empty claim of an agent idle already, which looks once.
    phase();
    let listeningRetryAfterMs = 0;
    for (let i = 0; i < probeClaims; i++) {
      await sleep(PROBE_SPACING_MS);
      listeningRetryAfterMs =
        (await probe.claim({ sessionId, idleClaims: 0, listening: true })).retryAfterMs ?? 0;
    }
    const listeningEmptyClaim = {
      ...perCall(usageOf('agentApi', requestMs.get('claimTasks') ?? []), probeClaims),
      retryAfterMs: listeningRetryAfterMs,
    };

    // A keep-alive: a pong back, and no request.
    phase();
    const pong = new Promise<string>((resolve) => first.once('message', (data) => resolve(String(data))));
    first.send(JSON.stringify({ type: 'ping' }));
    const keepAliveAnswer = await Promise.race([pong, sleep(2_000).then(() => 'none')]);
    const keepAliveRequests = meter.requests.length;

    // A replacement, as the client makes one every 110 minutes: a ticket, a new socket, then the old one closed.
    phase();
    const { url } = await probe.pushTicket('agent');
    const ticket = perCall(usageOf('agentApi', requestMs.get('createAgentPushTicket') ?? []), 1);
    phase();
    const second = await connect(url);
    const connectAuthorizer = perCall(usageOf('pushAuthorizer', handlerMs.pushAuthorizer ?? []), 1);
    const connected = perCall(usageOf('pushApi', handlerMs.pushApi ?? []), 1);
    phase();
    const closesBefore = closing.length;
    first.close(1000, 'replaced');
    await until(() => closing.length > closesBefore, 5_000, 'the replaced socket’s $disconnect');
    await Promise.all(closing);
    const disconnectReplaced = perCall(usageOf('pushApi', handlerMs.pushApi ?? []), 1);
    second.close();

    // The month. The client pings on connect and every 9 minutes, each ping answered with a pong (two messages), and
    // replaces its socket every 110; a Worker claims when a socket
    // opens, then waits the safety poll (20 minutes) between listening claims until the next socket: 5 safety polls
    // and 1 claim on connect per 110 minutes. Requests more than 60 s apart miss the authorizer's cache.
    const connectionMinutes = MONTH_MS / 60_000;
    const keepAlives = MONTH_MS / KEEP_ALIVE_MS;
    const reconnects = MONTH_MS / RECONNECT_AFTER_MS;
    const safetyPollsPerSocket = Math.ceil(RECONNECT_AFTER_MS / settings.pushSafetyPollMs) - 1;
    const coldAuthorizer = add(lambdaUsd('authorizer', httpAuthorizer.lambdaMs), storageUsd(httpAuthorizer));
    const push = month([
      item('connection minutes', connectionMinutes, {
        ...ZERO,
        webSocket: PRICES.apiGateway.webSocketConnectionMinute,
      }),
      item('keep-alive pings and their pongs (mock route, no function)', keepAlives + reconnects, {
        ...ZERO,
        webSocket: 2 * PRICES.apiGateway.webSocketMessage,
      }),
      item(
        'reconnect: ticket (HTTP, agent fn, authorizer, PutItem)',
        reconnects,
        add(httpRequestUsd, stepUsd('agentApi', ticket), coldAuthorizer),
      ),
      item(
        'reconnect: $connect (ticket authorizer + push-api fn)',
        reconnects,
        add(stepUsd('pushAuthorizer', connectAuthorizer), stepUsd('pushApi', connected)),
      ),
      item(
        'reconnect: $disconnect of the old socket (push-api fn)',
        reconnects,
        stepUsd('pushApi', disconnectReplaced),
      ),
      item(
        'reconnect: listening claim on connect (authorizer cached)',
        reconnects,
        add(httpRequestUsd, stepUsd('agentApi', listeningFirstClaim)),
      ),
      item(
        `safety polls (${safetyPollsPerSocket} per socket, listening claim + authorizer)`,
        reconnects * safetyPollsPerSocket,
        add(httpRequestUsd, stepUsd('agentApi', listeningEmptyClaim), coldAuthorizer),
      ),
    ]);
    const polls = MONTH_MS / settings.idleRetryMaxMs;
    const polling = month([
      item(
        `empty claims every ${settings.idleRetryMaxMs / 1_000} s (HTTP, agent fn, DynamoDB, SQS)`,
        polls,
        add(httpRequestUsd, stepUsd('agentApi', pollingEmptyClaim)),
      ),
      item('authorizer (its 60 s cache long expired at each poll)', polls, coldAuthorizer),
    ]);

    return {
      scenario: 'idle',
      agents: agentCount,
      tasks: taskCount,
      seed,
      spacingMs: spacing,
      settings: {
        pushSafetyPollMs: settings.pushSafetyPollMs,
        wakesPerTask: settings.wakesPerTask,
        wakeCooldownMs: settings.wakeCooldownMs,
        idleRetryMaxMs: settings.idleRetryMaxMs,
      },
      loadAverage: { start: round(loadAtStart, 2), end: round(loadavg()[0] ?? 0, 2) },
      durationMs: Math.round(performance.now() - runStarted),
      idle: { readyMs: Math.round(readyMs), claimsInQuietWindow, quietWindowMs },
      pickupMs: {
        p50: round(percentile(pickups, 0.5), 0),
        p99: round(percentile(pickups, 0.99), 0),
        max: round(Math.max(0, ...pickups), 0),
        mean: round(mean(pickups), 0),
        missed: taskCount - pickups.length,
      },
      pollingPickupMs: pollingPickup(DEFAULT_SETTINGS.idleRetryMaxMs, agentCount),
      perTask: { wakes: round(sender.wakes.length / taskCount), claims: round(claims / taskCount), frames },
      wokenTwiceWithinCooldown,
      agentsWoken: wakesByConnection.size,
      mostWakesOneAgent: Math.max(0, ...[...wakesByConnection.values()].map((times) => times.length)),
      measured: {
        listeningEmptyClaim,
        listeningFirstClaim,
        pollingEmptyClaim,
        httpAuthorizer,
        ticket,
        connectAuthorizer,
        connect: connected,
        disconnectReplaced,
        keepAliveRequests,
        keepAliveAnswer,
      },
      idleAgentMonth: {
        push,
        polling,
        pollingWithoutAuthorizerUsd: round(
          polls * total(add(httpRequestUsd, stepUsd('agentApi', pollingEmptyClaim))),
          5,
        ),
      },
      prices: `${PRICES.region} list prices checked ${PRICES.checkedOn} (bench/prices.ts)`,
    };
  } finally {
    for (const socket of sockets) socket.terminate();
    await Promise.allSettled(workers.map((worker) => worker.stop({ drain: false })));
    sender.dropAll();
    await server.close();
    await scratch.dispose();
  }
}
