/**
 * A scheduler on the emulators with tables and queues of its own (unique names), a clock the test can move,
 * and a meter of every AWS request it makes.
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { AwsMeter } from '#adapters/aws-meter';
import { noEvents } from '#adapters/event-publishers';
import type { SchedulerCounters, SchedulerSettings } from '#core/context';
import { fireSchedule } from '#core/fire-schedule';
import type { EventPublisher } from '#core/ports/event-publisher';
import type { PushSender } from '#core/ports/push-channel';
import { Scheduler } from '#core/scheduler';
import type { SchedulerEvent } from '#domain/events';
import type { PushFrame } from '#domain/push';
import type { ScheduleBackend } from '#domain/schedule';
import { localDynamoDbClient, localS3Client, localSqsClient } from '#local/emulators/clients';
import { type FunctionName, runAs } from '#local/function-scope';
import {
  provisionPayloadBucket,
  provisionQueues,
  provisionTables,
  provisionWakeTimerQueue,
  tableNamesFor,
} from '#local/provision';
import { type LocalServerOptions, startLocalServer } from '#local/server';
import { pollWakeTimer } from '#local/wake-timer-poller';
import { AgentSchedulerClient } from '#sdk/client';
import { createContext, type WiredContext } from '#wiring/context';
import { type FaultPlan, injectFaults } from './faults';
import { recordAwsUsage, recordingPublisher, recordingScheduleBackend, startRecording } from './iam-usage';

/**
 * The function each scheduler operation runs in once deployed: a test calling the scheduler directly does what
 * that function would, and what it does in AWS is recorded as that function's (see `iam-usage.ts`).
 */
const FUNCTION_OF: Readonly<Record<string, FunctionName>> = {
  openSession: 'agentApi',
  readSession: 'agentApi',
  heartbeat: 'agentApi',
  claim: 'agentApi',
  claimOrListen: 'agentApi',
  redeemPushTicket: 'pushAuthorizer',
  openPushConnection: 'pushApi',
  closePushConnection: 'pushApi',
  answerPushFrame: 'pushApi',
  complete: 'agentApi',
  completeBatch: 'agentApi',
  fail: 'agentApi',
  release: 'agentApi',
  wait: 'agentApi',
  reportProgress: 'agentApi',
  reportProgressBatch: 'agentApi',
  registerRole: 'agentApi',
  volunteerForRole: 'agentApi',
  releaseRole: 'agentApi',
  withdrawFromRole: 'agentApi',
  submitChild: 'agentApi',
  submitChildren: 'agentApi',
  submit: 'operatorApi',
  submitBatch: 'operatorApi',
  getTask: 'operatorApi',
  taskPayload: 'operatorApi',
  registerAgent: 'operatorApi',
  listAgents: 'operatorApi',
  revokeAgent: 'operatorApi',
  listRoles: 'operatorApi',
  cancel: 'operatorApi',
  cancelTree: 'operatorApi',
  cascadeOf: 'operatorApi',
  redrive: 'operatorApi',
  clearAttention: 'operatorApi',
  answerWaitpoint: 'operatorApi',
  answerCallback: 'operatorApi',
  getWaitpoint: 'operatorApi',
  progressOf: 'operatorApi',
  listOpenWaitpoints: 'operatorApi',
  listTasks: 'operatorApi',
  queueStats: 'operatorApi',
  pauseQueue: 'operatorApi',
  resumeQueue: 'operatorApi',
  setQueueLimits: 'operatorApi',
  pauseScheduler: 'operatorApi',
  resumeScheduler: 'operatorApi',
  getSchedulerControl: 'operatorApi',
  rebuild: 'operatorApi',
  getSchedulerStats: 'operatorApi',
  listRateLimits: 'operatorApi',
  getRateLimit: 'operatorApi',
  setRateLimit: 'operatorApi',
  listSchedules: 'operatorApi',
  listSchedulePage: 'operatorApi',
  getSchedule: 'operatorApi',
  listOccurrences: 'operatorApi',
  createSchedule: 'operatorApi',
  deleteSchedule: 'operatorApi',
  supervise: 'supervisor',
  reclaim: 'supervisor',
  reconcile: 'supervisor',
};

/** The scheduler, each of whose operations runs as the function that serves it in AWS. */
function asFunctions(scheduler: Scheduler): Scheduler {
  return new Proxy(scheduler, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      // A connect ticket is issued by the API its caller reaches: agents', or operators'.
      const fnOf = (args: unknown[]): FunctionName | undefined =>
        property === 'pushTicket'
          ? (args[0] as { kind?: string } | undefined)?.kind === 'agent'
            ? 'agentApi'
            : 'operatorApi'
          : typeof property === 'string'
            ? FUNCTION_OF[property]
            : undefined;
      if (typeof value !== 'function' || (property !== 'pushTicket' && !fnOf([]))) return value;
      return (...args: unknown[]) =>
        runAs(fnOf(args) ?? 'operatorApi', () => (value as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
}

/** A schedule fire, as the schedule-fire function handles it. */
export const fireAsFunction = (...args: Parameters<typeof fireSchedule>) =>
  runAs('scheduleFire', () => fireSchedule(...args));

/** Wall-clock time plus an offset the test controls; SQS delays still run in real time. */
export class TestClock {
  offsetMs = 0;
  private stoppedAt: number | undefined;
  readonly now = () => (this.stoppedAt ?? Date.now()) + this.offsetMs;
  advance(ms: number): void {
    this.offsetMs += ms;
  }
  /** Holds the clock still (`advance` still moves it), e.g. while a slow setup must not use up the test's time. */
  stop(): void {
    this.stoppedAt ??= Date.now();
  }
  /** Runs on from where `stop()` held it: the wall-clock time that passed meanwhile is not counted. */
  resume(): void {
    if (this.stoppedAt === undefined) return;
    this.offsetMs -= Date.now() - this.stoppedAt;
    this.stoppedAt = undefined;
  }
}

export interface TestStackOptions {
  readonly queues?: readonly string[];
  readonly settings?: Partial<SchedulerSettings>;
  /** Defaults to 0.5, so backoff draws are half their cap and claims look at `critical` first. */
  readonly random?: () => number;
  readonly scheduleBackend?: ScheduleBackend;
  readonly declaredSchedules?: readonly unknown[];
  readonly events?: EventPublisher;
  /** Told what the operations count for metrics (claims by queue). @default none: nothing counted */
  readonly counters?: SchedulerCounters;
  /** Large payloads go to an S3 bucket of the stack's own (on the SQS emulator's S3). */
  readonly payloadBucket?: boolean;
  /**
   * A push channel whose frames go to this sender (a `RecordingPushSender`, or the local server's), at this URL.
   * @default none: the stack offers no push channel
   */
  readonly push?: {
    readonly sender: PushSender;
    readonly url: string | (() => string);
    /** A wake timer: its queue on the emulator, read by the local poller as the timer function. @default false */
    readonly timer?: boolean;
  };
}

/** A push sender that keeps every frame, by connection; connections in `gone` are answered as gone. */
export class RecordingPushSender implements PushSender {
  readonly frames: { connectionId: string; frame: PushFrame; at: number }[] = [];
  readonly gone = new Set<string>();

  async send(connectionId: string, frame: PushFrame): Promise<'sent' | 'gone'> {
    if (this.gone.has(connectionId)) return 'gone';
    this.frames.push({ connectionId, frame, at: Date.now() });
    return 'sent';
  }

  to(connectionId: string): PushFrame[] {
    return this.frames.filter((f) => f.connectionId === connectionId).map((f) => f.frame);
  }
}

export interface TestStack {
  readonly scheduler: Scheduler;
  readonly ctx: WiredContext;
  readonly clock: TestClock;
  readonly meter: AwsMeter;
  /** Faults to inject into this stack's own clients (not its siblings'). */
  readonly faults: { readonly dynamodb: FaultPlan; readonly sqs: FaultPlan };
  readonly dynamodb: ReturnType<typeof localDynamoDbClient>;
  readonly sqs: ReturnType<typeof localSqsClient>;
  /** What the stack's context was built from, for code that builds its own on the same tables and queues. */
  readonly wiring: {
    readonly tables: ReturnType<typeof tableNamesFor>;
    readonly queues: Awaited<ReturnType<typeof provisionQueues>>;
    readonly settings: Partial<SchedulerSettings>;
    /** The wake timer's queue, when the stack has one. */
    readonly wakeTimerQueue: string | undefined;
  };
  /**
   * A scheduler on the same tables and queues with different clients, as a second function instance is; `now`
   * gives it a clock of its own (e.g. one that decided a write before a time the stack's clock has passed).
   */
  sibling(options?: {
    random?: () => number;
    now?: () => number;
    /** Settings of its own: a function of another configuration, as during a deploy that changes one. */
    settings?: Partial<SchedulerSettings>;
  }): Scheduler;
  /**
   * Runs `before` once, just before the next request of this stack's clients that `matches`: a write of
   * someone else's landing between a read and a write of this stack's.
   */
  interleave(
    matches: (operation: string, input: Record<string, unknown>) => boolean,
    before: () => Promise<unknown>,
  ): void;
  destroy(): Promise<void>;
}

let counter = 0;

export async function createTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const prefix = `t${process.pid}x${Date.now().toString(36)}x${counter++}`;
  const dynamodb = localDynamoDbClient(inject('dynamodbEndpoint'));
  const sqs = localSqsClient(inject('sqsEndpoint'));
  const meter = new AwsMeter();
  meter.attach(dynamodb, 'dynamodb');
  meter.attach(sqs, 'sqs');
  const faults = { dynamodb: injectFaults(dynamodb), sqs: injectFaults(sqs) };
  const tables = tableNamesFor(prefix);
  await provisionTables(dynamodb, tables);
  const directory = await provisionQueues(sqs, prefix, options.queues ?? ['work']);
  const s3 = localS3Client(inject('sqsEndpoint'));
  meter.attach(s3, 's3');
  const payloadBucket = options.payloadBucket
    ? { s3, bucketName: await provisionPayloadBucket(s3, prefix) }
    : undefined;
  const wakeTimerQueue = options.push?.timer ? await provisionWakeTimerQueue(sqs, prefix) : undefined;
  const usageDir = inject('iamUsageDir');
  if (usageDir) startRecording(usageDir);
  const resources = { tables, queues: directory, bucketName: payloadBucket?.bucketName, wakeTimerQueue };
  recordAwsUsage({ dynamodb, sqs, s3 }, resources);
  const push = options.push && {
    sender: options.push.sender,
    url: options.push.url,
    ...(wakeTimerQueue ? { timerQueueUrl: wakeTimerQueue } : {}),
  };
  const clock = new TestClock();
  // Idle claims are told to wait briefly, so tests with workers pick work up quickly.
  // Agents may submit follow-up tasks to every queue of a test stack unless a test says otherwise.
  const settings = {
    idleClaimRetryBaseMs: 20,
    idleClaimRetryMaxMs: 200,
    agentSubmitQueues: options.queues ?? ['work'],
    ...options.settings,
  };
  const build = (random: () => number) =>
    createContext({
      dynamodb,
      sqs,
      tables,
      queues: directory,
      now: clock.now,
      random,
      settings,
      ...(options.scheduleBackend
        ? { scheduleBackend: recordingScheduleBackend(options.scheduleBackend) }
        : {}),
      ...(options.declaredSchedules ? { declaredSchedules: options.declaredSchedules } : {}),
      events: recordingPublisher(options.events ?? noEvents),
      ...(payloadBucket ? { payloadBucket } : {}),
      ...(push ? { push } : {}),
      ...(options.counters ? { counters: options.counters } : {}),
    });
  const ctx = build(options.random ?? (() => 0.5));
  const timer = wakeTimerQueue ? pollWakeTimer(sqs, wakeTimerQueue, ctx, { waitSeconds: 1 }) : undefined;
  meter.reset();
  return {
    scheduler: asFunctions(new Scheduler(ctx)),
    ctx,
    clock,
    meter,
    faults,
    dynamodb,
    sqs,
    wiring: { tables, queues: directory, settings, wakeTimerQueue },
    sibling: (sibling = {}) => {
      const clients = {
        dynamodb: localDynamoDbClient(inject('dynamodbEndpoint')),
        sqs: localSqsClient(inject('sqsEndpoint')),
        s3: localS3Client(inject('sqsEndpoint')),
      };
      recordAwsUsage(clients, resources);
      const other = createContext({
        dynamodb: clients.dynamodb,
        sqs: clients.sqs,
        tables,
        queues: directory,
        now: sibling.now ?? clock.now,
        random: sibling.random ?? Math.random,
        settings: { ...settings, ...sibling.settings },
        events: recordingPublisher(noEvents),
        ...(push ? { push } : {}),
      });
      return asFunctions(new Scheduler(other));
    },
    interleave: (matches, before) => {
      const name = `interleave${counter++}`;
      dynamodb.middlewareStack.add(
        (next, context) => async (args) => {
          if (matches(context.commandName ?? '', args.input as Record<string, unknown>)) {
            // Once: later requests resolve a stack without it.
            dynamodb.middlewareStack.remove(name);
            await before();
          }
          return next(args);
        },
        { step: 'initialize', name },
      );
    },
    destroy: async () => {
      await timer?.stop();
      await Promise.all(
        Object.values(tables).map((TableName) =>
          dynamodb.send(new DeleteTableCommand({ TableName })).catch(() => undefined),
        ),
      );
    },
  };
}

/** Registers an agent and opens its session. */
export async function startAgent(
  scheduler: Scheduler,
  spec: {
    name?: string;
    queues?: string[];
    maxConcurrency?: number;
    labels?: Record<string, string | string[]>;
    sessionLabels?: Record<string, string | string[]>;
  } = {},
) {
  const { agent } = await scheduler.registerAgent({
    name: spec.name ?? 'agent',
    queues: spec.queues ?? ['work'],
    maxConcurrency: spec.maxConcurrency ?? 1,
    ...(spec.labels ? { labels: spec.labels } : {}),
  });
  const session = await scheduler.openSession(
    agent.agentId,
    spec.sessionLabels ? { labels: spec.sessionLabels } : undefined,
  );
  return { agentId: agent.agentId, sessionId: session.sessionId };
}

/** Claims until `count` tasks came back or `timeoutMs` passed (SQS delivery is asynchronous). */
export async function claimUntil(
  scheduler: Scheduler,
  agent: { agentId: string; sessionId: string },
  count: number,
  timeoutMs = 5_000,
  max = 1,
) {
  const deadline = Date.now() + timeoutMs;
  const claimed: Awaited<ReturnType<Scheduler['claim']>> = [];
  while (claimed.length < count && Date.now() < deadline) {
    const batch = await scheduler.claim({ ...agent, max: Math.min(max, count - claimed.length) });
    claimed.push(...batch);
    if (batch.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return claimed;
}

/**
 * Ids of the tasks whose own records say they are leased, to an agent or in a queue: the ground truth, not the
 * bookkeeping of sessions or queues.
 */
export async function leasedTaskIds(
  stack: TestStack,
  by: { owner: string } | { queue: string },
): Promise<string[]> {
  const [attribute, value] = 'owner' in by ? ['owner', by.owner] : ['queue', by.queue];
  const output = await DynamoDBDocumentClient.from(stack.dynamodb).send(
    new ScanCommand({
      TableName: stack.ctx.tasks.tableName,
      FilterExpression: '#s = :leased AND #a = :value',
      ExpressionAttributeNames: { '#s': 'status', '#a': attribute },
      ExpressionAttributeValues: { ':leased': 'leased', ':value': value },
      ConsistentRead: true,
    }),
  );
  return (output.Items ?? []).map((item) => String(item.taskId));
}

/** The local HTTP server over a test stack, on a free port, with a fixed operator token and no log output. */
export function serveStack(
  stack: TestStack,
  operatorToken: string,
  options: Partial<Pick<LocalServerOptions, 'operatorSigV4' | 'events' | 'push' | 'console' | 'spans'>> = {},
) {
  return startLocalServer({
    scheduler: stack.scheduler,
    agents: stack.ctx.agents,
    operatorToken,
    port: 0,
    log: { info() {}, warn() {}, error() {} },
    ...options,
  });
}

/** Resolves once `check` holds, polling every 50 ms; rejects after `timeoutMs`. */
export async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** An event publisher that keeps what it is given, for tests to read. */
export function collectedEvents(): { readonly publisher: EventPublisher; readonly events: SchedulerEvent[] } {
  const events: SchedulerEvent[] = [];
  return {
    events,
    publisher: {
      publish: async (published) => {
        events.push(...published);
      },
    },
  };
}

/** An agent's SDK client with short retries, through a fetch the test can cut (`cut.value = true`) when given. */
export function cuttableAgentClient(
  url: string,
  token: string,
  cut?: { value: boolean },
): AgentSchedulerClient {
  return new AgentSchedulerClient({
    endpoint: url,
    token,
    retries: { maxAttempts: 2, baseDelayMs: 20, maxDelayMs: 50 },
    ...(cut
      ? {
          fetch: (...[input, init]: Parameters<typeof fetch>) =>
            cut.value ? Promise.reject(new TypeError('network cut')) : fetch(input, init),
        }
      : {}),
  });
}

/**
 * Runs `pass` every `ms`, skipping a tick while the last pass still runs: on a loaded machine a pass can take longer
 * than its period, and passes piling up on each other would load it more.
 */
export function everyUnlessRunning(pass: () => Promise<unknown>, ms: number): NodeJS.Timeout {
  let running = false;
  return setInterval(() => {
    if (running) return;
    running = true;
    void pass()
      .catch(() => undefined)
      .finally(() => {
        running = false;
      });
  }, ms);
}
