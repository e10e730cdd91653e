/**
 * An idle agent's 30-day month in AWS, itemized and priced at `prices.ts`, from the steps the idle scenario
 * (`run-idle.ts`) measured on the local stack: with the push channel, and polling as today. The steps' counts per
 * month follow from the client's timers and the server's settings.
 */
import { KEEP_ALIVE_MS, RECONNECT_AFTER_MS } from '#sdk/push-channel';
import { FUNCTION_MEMORY_GB, PRICES } from './prices';

/** What one step costs in AWS, as measured: requests by operation, capacity, SQS requests, handler time. */
export interface StepUsage {
  /** DynamoDB and SQS requests by `service:operation`. */
  readonly requests: Readonly<Record<string, number>>;
  readonly dynamodbReadUnits: number;
  /** Write units, a write refused by its condition included (DynamoDB bills it: see `AwsMeter`). */
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

/** Each step an idle agent's month is made of, measured on the local stack. */
export interface MeasuredSteps {
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
}

/** An idle agent's month, itemized: on the push channel, and polling. */
export interface IdleAgentMonths {
  readonly push: AgentMonth;
  readonly polling: AgentMonth;
  /** The polling agent priced as `bench.ts`'s throughput report does (no authorizer): the figure of `docs/guarantees.md`. */
  readonly pollingWithoutAuthorizerUsd: number;
}

const MONTH_MS = 30 * 24 * 3_600 * 1_000;

const round = (value: number, digits = 3) => Number(value.toFixed(digits));

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

/** The months of an idle agent on the push channel and polling, from the measured steps and the server's waits. */
export function idleAgentMonths(
  m: MeasuredSteps,
  settings: { readonly pushSafetyPollMs: number; readonly idleClaimRetryMaxMs: number },
): IdleAgentMonths {
  const { httpAuthorizer, ticket, connectAuthorizer, listeningFirstClaim, disconnectReplaced } = m;
  const { listeningEmptyClaim, pollingEmptyClaim, connect: connected } = m;
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
  const polls = MONTH_MS / settings.idleClaimRetryMaxMs;
  const polling = month([
    item(
      `empty claims every ${settings.idleClaimRetryMaxMs / 1_000} s (HTTP, agent fn, DynamoDB, SQS)`,
      polls,
      add(httpRequestUsd, stepUsd('agentApi', pollingEmptyClaim)),
    ),
    item('authorizer (its 60 s cache long expired at each poll)', polls, coldAuthorizer),
  ]);
  return {
    push,
    polling,
    pollingWithoutAuthorizerUsd: round(
      polls * total(add(httpRequestUsd, stepUsd('agentApi', pollingEmptyClaim))),
      5,
    ),
  };
}
