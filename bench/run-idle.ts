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
 *    that made it; the steps' counts per month follow from the client's timers. Each function's duration is
 *    modelled for AWS as the throughput bench models it (`lambda-duration.ts`).
 */
import { loadavg } from 'node:os';
import { WebSocket } from 'ws';
import { AwsMeter, type MeteredRequest } from '#adapters/aws-meter';
import { DEFAULT_SETTINGS, type SchedulerSettings } from '#core/context';
import type { Scheduler } from '#core/scheduler';
import type { PushFrame } from '#domain/push';
import { currentFunction, runApart } from '#local/function-scope';
import { type ServedLocalStack, startLocalStack } from '#local/local-stack';
import { percentile } from '#local/percentile';
import { LocalPushSender } from '#local/push-server';
import { seededRandom } from '#local/seeded-random';
import { AgentSchedulerClient } from '#sdk/client';
import type { WebSocketConstructor } from '#sdk/push-channel';
import { Worker } from '#sdk/worker';
import { meterAndTime } from './aws-calls';
import { type IdleAgentMonths, idleAgentMonths, type MeasuredSteps, type StepUsage } from './idle-month';
import { billed, modelledDuration } from './lambda-duration';
import { PRICES } from './prices';

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
    readonly idleClaimRetryMaxMs: number;
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
  readonly measured: MeasuredSteps;
  /** An idle agent's 30-day month in AWS, itemized. */
  readonly idleAgentMonth: IdleAgentMonths;
  readonly prices: string;
}

const OPERATOR_TOKEN = 'op_bench_idle';
const QUEUE = 'idle';
/** The probe agent's queue: its listening claims must not take the fleet's wakes. */
const PROBE_QUEUE = 'probe';
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

/** Waits between idle polls of `periodMs` seen from a random moment: one poller, or the first of `n` at random phases. */
function pollingPickup(periodMs: number, n: number) {
  const firstOf = (q: number) => periodMs * (1 - (1 - q) ** (1 / n));
  return {
    inStep: { p50: periodMs * 0.5, p99: periodMs * 0.99, max: periodMs },
    independentPhases: { p50: round(firstOf(0.5), 0), p99: round(firstOf(0.99), 0), max: periodMs },
  };
}

/** The stack under test, and what is counted on it. */
interface IdleRig {
  readonly stack: ServedLocalStack;
  /** Every AWS request, with the function it stands for (the local server and the wrappers below say which). */
  readonly meter: AwsMeter;
  readonly functionOf: WeakMap<MeteredRequest, string>;
  readonly sender: CountingPushSender;
  /** Handler times of the push channel's functions and of the HTTP authorizer's reads. */
  readonly handlerMs: Record<string, number[]>;
  /** The `$disconnect`s under way. */
  readonly closing: Promise<unknown>[];
  /** Handler times of the HTTP requests, by operation. */
  readonly requestMs: Map<string, number[]>;
  readonly operator: AgentSchedulerClient;
  readonly workers: Worker[];
  readonly sockets: WebSocket[];
}

const claimsSoFar = (rig: IdleRig) => rig.requestMs.get('claimTasks')?.length ?? 0;

/**
 * The push channel's work, as the functions that do it in AWS: the `$connect` authorizer redeems the ticket, the
 * push-api function records and forgets connections and answers frames. Timed, as Lambda would bill them.
 */
function timePushWork(
  scheduler: Scheduler,
  handlerMs: IdleRig['handlerMs'],
  closing: IdleRig['closing'],
): void {
  const timed =
    <A extends unknown[], R>(fn: 'pushAuthorizer' | 'pushApi', work: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> =>
      runApart(fn, () => billed(handlerMs[fn], () => work(...args)));
  scheduler.redeemPushTicket = timed('pushAuthorizer', scheduler.redeemPushTicket.bind(scheduler));
  scheduler.openPushConnection = timed('pushApi', scheduler.openPushConnection.bind(scheduler));
  const close = timed('pushApi', scheduler.closePushConnection.bind(scheduler));
  scheduler.closePushConnection = (connectionId) => {
    const closed = close(connectionId);
    closing.push(closed.catch(() => undefined));
    return closed;
  };
  scheduler.answerPushFrame = timed('pushApi', scheduler.answerPushFrame.bind(scheduler));
}

/** The local stack with the server's defaults (a 20-minute safety poll, one wake per task, a 1 s cooldown). */
async function setUpIdle(options: IdleBenchOptions): Promise<IdleRig> {
  const meter = new AwsMeter();
  const functionOf = new WeakMap<MeteredRequest, string>();
  const sender = new CountingPushSender();
  const handlerMs: Record<string, number[]> = { pushAuthorizer: [], pushApi: [], authorizer: [] };
  const closing: Promise<unknown>[] = [];
  const requestMs = new Map<string, number[]>();
  const stack = await startLocalStack({
    signRequests: true,
    name: 'idle',
    queues: [QUEUE, PROBE_QUEUE],
    endpoints: options.endpoints,
    payloadBucket: true,
    push: sender,
    onClients: ({ dynamodb, sqs, s3 }) => {
      meterAndTime(meter, { dynamodb, sqs, s3 });
      const record = meter.requests.push.bind(meter.requests);
      meter.requests.push = (...requests: MeteredRequest[]) => {
        for (const request of requests) functionOf.set(request, currentFunction() ?? 'none');
        return record(...requests);
      };
    },
    onScheduler: (scheduler) => timePushWork(scheduler, handlerMs, closing),
    serve: (ctx) => ({
      // The HTTP authorizer's read of the agent, timed: its duration when the answer is not cached.
      agents: {
        get: (agentId: string) => billed(handlerMs.authorizer, () => ctx.agents.get(agentId)),
      },
      operatorToken: OPERATOR_TOKEN,
      // As API Gateway caches the authorizer's answers in the construct.
      authorizerCacheTtlMs: 60_000,
      onRequest: ({ operation, durationMs, awsCalls }) => {
        const list = requestMs.get(operation) ?? [];
        list.push(modelledDuration(durationMs, awsCalls).billedMs);
        requestMs.set(operation, list);
      },
    }),
  });
  const operator = new AgentSchedulerClient({ endpoint: stack.server.url, token: OPERATOR_TOKEN });
  return {
    stack,
    meter,
    functionOf,
    sender,
    handlerMs,
    closing,
    requestMs,
    operator,
    workers: [],
    sockets: [],
  };
}

/** 1. The idle fleet: a Worker per agent, each idle once its listening claim comes back with the safety poll. */
async function startIdleFleet(rig: IdleRig, agentCount: number) {
  const { settings } = rig.stack.ctx;
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
      const { token } = await rig.operator.createAgent({
        name: `idle-${i}`,
        queues: [QUEUE],
        maxConcurrency: 1,
      });
      return new AgentSchedulerClient({ endpoint: rig.stack.server.url, token, fetch: noting(i) });
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
    rig.workers.push(worker);
  }
  await Promise.all(rig.workers.map((worker) => worker.start()));
  await until(() => idleAt.size === agentCount, 60_000, 'every worker to be idle');
  const readyMs = performance.now() - fleetStarted;
  // Idle means quiet: no claims while nothing happens.
  const quietWindowMs = 2_000;
  const claimsBeforeQuiet = claimsSoFar(rig);
  await sleep(quietWindowMs);
  const claimsInQuietWindow = claimsSoFar(rig) - claimsBeforeQuiet;
  return { startedAt, idle: { readyMs: Math.round(readyMs), claimsInQuietWindow, quietWindowMs } };
}

/** 2. Tasks one at a time, at random intervals: when each started, and the claims and wakes they took. */
async function runPickups(rig: IdleRig, options: IdleBenchOptions, startedAt: ReadonlyMap<string, number>) {
  const spacing = options.spacingMs ?? { min: 200, max: 2_000 };
  rig.sender.resetCounts();
  const claimsBefore = claimsSoFar(rig);
  const random = seededRandom(options.seed ?? 1);
  const submitted: { taskId: string; sentAt: number }[] = [];
  for (let n = 0; n < options.tasks; n++) {
    if (n > 0) await sleep(spacing.min + random() * (spacing.max - spacing.min));
    const sentAt = Date.now();
    const { task } = await rig.operator.submitTask({ queue: QUEUE, payload: { n } });
    submitted.push({ taskId: task.taskId, sentAt });
  }
  // A task no wake reached would wait for the 20-minute safety poll: give up on it after 30 s.
  await until(() => submitted.every((s) => startedAt.has(s.taskId)), 30_000, 'every task to start').catch(
    () => undefined,
  );
  // The claims that follow (each Worker claims once more after its task, finds nothing and listens again).
  let seen = -1;
  for (let waited = 0; seen !== claimsSoFar(rig) && waited < 10_000; waited += 1_500) {
    seen = claimsSoFar(rig);
    await sleep(1_500);
  }
  const claims = claimsSoFar(rig) - claimsBefore;
  const pickups = submitted.flatMap((s) => {
    const started = startedAt.get(s.taskId);
    return started === undefined ? [] : [started - s.sentAt];
  });
  const wakesByConnection = new Map<string, number[]>();
  for (const { connectionId, at } of rig.sender.wakes)
    wakesByConnection.set(connectionId, [...(wakesByConnection.get(connectionId) ?? []), at]);
  const frames = new Map(rig.sender.byType);
  const wakes = rig.sender.wakes.length;

  await Promise.all(rig.workers.map((worker) => worker.stop({ drain: false })));
  await until(() => rig.sender.sockets.size === 0, 10_000, 'the workers’ sockets to close');
  await Promise.all(rig.closing);
  return { spacing, pickups, claims, wakes, frames, wakesByConnection };
}

/** What the requests made in function `fn` since the last phase cost, and the function's mean time. */
function usageOf(rig: IdleRig, fn: string, ms: readonly number[]): StepUsage {
  const requests = rig.meter.requests.filter((r) => rig.functionOf.get(r) === fn);
  const byOperation: Record<string, number> = {};
  for (const r of requests) {
    const key = `${r.service}:${r.operation.replace(/Command$/, '')}`;
    byOperation[key] = (byOperation[key] ?? 0) + 1;
  }
  return {
    requests: byOperation,
    dynamodbReadUnits: requests.reduce((sum, r) => sum + r.readUnits, 0),
    // The meter bills a write refused by its condition as DynamoDB does.
    dynamodbWriteUnits: requests.reduce((sum, r) => sum + r.writeUnits, 0),
    sqsRequests: requests.filter((r) => r.service === 'sqs').length,
    lambdaMs: mean(ms),
  };
}

/** Usage per call of `calls` calls of one kind. */
const perCall = (usage: StepUsage, calls: number): StepUsage => ({
  requests: Object.fromEntries(Object.entries(usage.requests).map(([op, n]) => [op, round(n / calls)])),
  dynamodbReadUnits: round(usage.dynamodbReadUnits / calls),
  dynamodbWriteUnits: round(usage.dynamodbWriteUnits / calls),
  sqsRequests: round(usage.sqsRequests / calls),
  lambdaMs: round(usage.lambdaMs, 2),
});

/** A new phase: nothing counted yet. */
function phase(rig: IdleRig): void {
  rig.meter.reset();
  rig.requestMs.clear();
  for (const list of Object.values(rig.handlerMs)) list.length = 0;
}

/** `count` empty claims of the probe, each after the claim caches expired: their usage per call, the last wait. */
async function probeClaims(
  rig: IdleRig,
  count: number,
  claim: () => Promise<{ retryAfterMs?: number }>,
): Promise<StepUsage & { readonly retryAfterMs: number }> {
  phase(rig);
  let retryAfterMs = 0;
  for (let i = 0; i < count; i++) {
    await sleep(PROBE_SPACING_MS);
    retryAfterMs = (await claim()).retryAfterMs ?? 0;
  }
  return { ...perCall(usageOf(rig, 'agentApi', rig.requestMs.get('claimTasks') ?? []), count), retryAfterMs };
}

/** 3. The steps of an idle agent's month, one at a time, on a probe agent of its own queue. */
async function measureSteps(rig: IdleRig, claims: number): Promise<MeasuredSteps> {
  const { handlerMs, requestMs } = rig;
  const { token } = await rig.operator.createAgent({
    name: 'idle-probe',
    queues: [PROBE_QUEUE],
    maxConcurrency: 1,
  });
  const probe = new AgentSchedulerClient({ endpoint: rig.stack.server.url, token });

  // The HTTP authorizer, its answer not cached: the probe's first request.
  phase(rig);
  const { sessionId } = await probe.openSession();
  const httpAuthorizer = perCall(usageOf(rig, 'authorizer', handlerMs.authorizer ?? []), 1);
  // Today's idle agent: an empty claim at the longest wait (no socket).
  const pollingEmptyClaim = await probeClaims(rig, claims, () => probe.claim({ sessionId, idleClaims: 100 }));

  /** A socket of the probe, open (the `$connect` work is done when the upgrade answers). */
  const connect = (url: string) =>
    new Promise<WebSocket>((resolve, reject) => {
      const socket = new WebSocket(url);
      rig.sockets.push(socket);
      socket.once('open', () => resolve(socket));
      socket.once('error', reject);
    });
  const first = await connect((await probe.pushTicket('agent')).url);

  // The claim a Worker makes when a socket opens: it marks the agent idle and looks a second time.
  const { retryAfterMs: _, ...listeningFirstClaim } = await probeClaims(rig, 1, () =>
    probe.claim({ sessionId, idleClaims: 0, listening: true }),
  );
  // A safety poll: a listening empty claim of an agent idle already, which looks once.
  const listeningEmptyClaim = await probeClaims(rig, claims, () =>
    probe.claim({ sessionId, idleClaims: 0, listening: true }),
  );

  // A keep-alive: a pong back, and no request.
  phase(rig);
  const pong = new Promise<string>((resolve) => first.once('message', (data) => resolve(String(data))));
  first.send(JSON.stringify({ type: 'ping' }));
  const keepAliveAnswer = await Promise.race([pong, sleep(2_000).then(() => 'none')]);
  const keepAliveRequests = rig.meter.requests.length;

  // A replacement, as the client makes one every 110 minutes: a ticket, a new socket, then the old one closed.
  phase(rig);
  const { url } = await probe.pushTicket('agent');
  const ticket = perCall(usageOf(rig, 'agentApi', requestMs.get('createAgentPushTicket') ?? []), 1);
  phase(rig);
  const second = await connect(url);
  const connectAuthorizer = perCall(usageOf(rig, 'pushAuthorizer', handlerMs.pushAuthorizer ?? []), 1);
  const connected = perCall(usageOf(rig, 'pushApi', handlerMs.pushApi ?? []), 1);
  phase(rig);
  const closesBefore = rig.closing.length;
  first.close(1000, 'replaced');
  await until(() => rig.closing.length > closesBefore, 5_000, 'the replaced socket’s $disconnect');
  await Promise.all(rig.closing);
  const disconnectReplaced = perCall(usageOf(rig, 'pushApi', handlerMs.pushApi ?? []), 1);
  second.close();
  return {
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
  };
}

/** The report: the pickups, the wakes and claims per task, the measured steps and the months priced from them. */
function reportIdle(
  options: IdleBenchOptions,
  settings: SchedulerSettings,
  run: {
    readonly loadAtStart: number;
    readonly runStarted: number;
    readonly idle: IdleReport['idle'];
    readonly pickups: Awaited<ReturnType<typeof runPickups>>;
    readonly measured: MeasuredSteps;
  },
): IdleReport {
  const { pickups, claims, wakes, frames, wakesByConnection, spacing } = run.pickups;
  const taskCount = options.tasks;
  const wokenTwiceWithinCooldown = [...wakesByConnection.values()].filter((times) =>
    times.some((at, i) => i > 0 && at - (times[i - 1] ?? 0) < settings.wakeCooldownMs),
  ).length;
  return {
    scenario: 'idle',
    agents: options.agents,
    tasks: taskCount,
    seed: options.seed ?? 1,
    spacingMs: spacing,
    settings: {
      pushSafetyPollMs: settings.pushSafetyPollMs,
      wakesPerTask: settings.wakesPerTask,
      wakeCooldownMs: settings.wakeCooldownMs,
      idleClaimRetryMaxMs: settings.idleClaimRetryMaxMs,
    },
    loadAverage: { start: round(run.loadAtStart, 2), end: round(loadavg()[0] ?? 0, 2) },
    durationMs: Math.round(performance.now() - run.runStarted),
    idle: run.idle,
    pickupMs: {
      p50: round(percentile(pickups, 0.5), 0),
      p99: round(percentile(pickups, 0.99), 0),
      max: round(Math.max(0, ...pickups), 0),
      mean: round(mean(pickups), 0),
      missed: taskCount - pickups.length,
    },
    pollingPickupMs: pollingPickup(DEFAULT_SETTINGS.idleClaimRetryMaxMs, options.agents),
    perTask: {
      wakes: round(wakes / taskCount),
      claims: round(claims / taskCount),
      frames: Object.fromEntries([...frames].map(([type, n]) => [type, round(n / taskCount)])),
    },
    wokenTwiceWithinCooldown,
    agentsWoken: wakesByConnection.size,
    mostWakesOneAgent: Math.max(0, ...[...wakesByConnection.values()].map((times) => times.length)),
    measured: run.measured,
    idleAgentMonth: idleAgentMonths(run.measured, settings),
    prices: `${PRICES.region} list prices checked ${PRICES.checkedOn} (bench/prices.ts)`,
  };
}

export async function runIdle(options: IdleBenchOptions): Promise<IdleReport> {
  const loadAtStart = loadavg()[0] ?? 0;
  const runStarted = performance.now();
  const rig = await setUpIdle(options);
  try {
    const { startedAt, idle } = await startIdleFleet(rig, options.agents);
    const pickups = await runPickups(rig, options, startedAt);
    const measured = await measureSteps(rig, options.probeClaims ?? 3);
    return reportIdle(options, rig.stack.ctx.settings, { loadAtStart, runStarted, idle, pickups, measured });
  } finally {
    for (const socket of rig.sockets) socket.terminate();
    await Promise.allSettled(rig.workers.map((worker) => worker.stop({ drain: false })));
    rig.sender.dropAll();
    await rig.stack.stop();
  }
}
