/**
 * Every construct prop that reaches a function, declared once: the prop that sets it, the environment variable
 * that carries it, which functions read it and, for a number, its unit, default and bounds. The construct refuses
 * a number out of bounds at synth and builds each function's environment from this; a function reads its settings
 * by these names and refuses an out-of-bounds value at its cold start; the local runner and the bench start from
 * the same defaults; the settings tables of `docs/deploying.md` are written from it (`npm run docs`) and checked
 * against it (`test/infra/settings.test.ts`). The names of the resources the construct hands to the functions
 * (`RESOURCE_ENV`) are declared here too, so that each environment variable is written once, for the construct that
 * sets it and the function that reads it. So are the bounds of the few number props the construct alone checks (the
 * API Gateway throttles, the alarm age), so that the docs' table of every prop has one source for every bound.
 *
 * The environment variables are the wire between a deployed construct and its functions: during a deploy old and
 * new functions run side by side with the new environment, so none is renamed.
 */

/**
 * Which functions read a prop: every function that builds a scheduler (`schedulerFromEnvironment`: all but the
 * HTTP API's authorizer, the push functions included); of those, the ones that also publish events and keep
 * payloads (not the push functions); the agent API, besides what the others read; the functions that know the
 * declared schedules; every function (Powertools).
 */
export type ReadBy =
  | 'all but the authorizer'
  | 'APIs, supervisor, schedule fire'
  | 'agent API'
  | 'supervisor, operator API'
  | 'every function';

export interface NumberSetting {
  /** The `AgentScheduler` prop, dotted when nested (a `Duration` for seconds, a number otherwise). */
  readonly prop: string;
  /** The environment variable of the functions. */
  readonly env: string;
  readonly unit: 'seconds' | 'count' | 'per second';
  readonly default: number;
  readonly min: number;
  readonly max: number;
  readonly integer: boolean;
  readonly readBy: ReadBy;
  /** What it does, in a line. */
  readonly meaning: string;
}

const DAY = 86_400;

export const SETTINGS = {
  leaseTtl: {
    prop: 'leaseTtl',
    env: 'LEASE_TTL_SECONDS',
    unit: 'seconds',
    default: 30,
    min: 1,
    max: DAY,
    integer: true,
    readBy: 'all but the authorizer',
    meaning: 'a session, and every lease it holds, lives this long after its last heartbeat',
  },
  heartbeatInterval: {
    prop: 'heartbeatInterval',
    env: 'HEARTBEAT_INTERVAL_SECONDS',
    unit: 'seconds',
    default: 10,
    min: 1,
    max: DAY,
    integer: true,
    readBy: 'all but the authorizer',
    meaning: 'the interval agents are told to beat at; the construct defaults it to a third of `leaseTtl`',
  },
  taskRetention: {
    prop: 'taskRetention',
    env: 'TASK_RETENTION_SECONDS',
    unit: 'seconds',
    default: 7 * DAY,
    min: 60,
    max: 365 * DAY,
    integer: true,
    readBy: 'all but the authorizer',
    meaning: 'finished tasks are kept this long, then DynamoDB removes them',
  },
  starvationPromoteAfter: {
    prop: 'starvation.promoteAfter',
    env: 'STARVATION_PROMOTE_AFTER_SECONDS',
    unit: 'seconds',
    default: 300,
    min: 1,
    max: 30 * DAY,
    integer: true,
    readBy: 'all but the authorizer',
    meaning: 'a claimable task waiting this long is promoted one priority',
  },
  starvationAnnounceAfter: {
    prop: 'starvation.announceAfter',
    env: 'STARVATION_ANNOUNCE_AFTER_SECONDS',
    unit: 'seconds',
    default: 900,
    min: 1,
    max: 30 * DAY,
    integer: true,
    readBy: 'all but the authorizer',
    meaning: 'then announced (`task.starved`)',
  },
  starvationAttentionAfter: {
    prop: 'starvation.attentionAfter',
    env: 'STARVATION_ATTENTION_AFTER_SECONDS',
    unit: 'seconds',
    default: 3_600,
    min: 1,
    max: 30 * DAY,
    integer: true,
    readBy: 'all but the authorizer',
    meaning: 'then marked as needing attention (an alarm)',
  },
  idleClaimRetryMax: {
    prop: 'idleClaimRetryMax',
    env: 'IDLE_RETRY_MAX_SECONDS',
    unit: 'seconds',
    default: 90,
    min: 1,
    max: 900,
    integer: true,
    readBy: 'all but the authorizer',
    meaning: 'the longest wait an empty claim suggests to an idle agent',
  },
  maxRolesPerAgent: {
    prop: 'maxRolesPerAgent',
    env: 'MAX_ROLES_PER_AGENT',
    unit: 'count',
    default: 100,
    min: 1,
    max: 10_000,
    integer: true,
    readBy: 'all but the authorizer',
    meaning: 'most roles one agent may register',
  },
  taskLayout: {
    prop: 'taskLayout',
    env: 'TASK_LAYOUT',
    unit: 'count',
    default: 5,
    min: 1,
    max: 5,
    integer: true,
    readBy: 'all but the authorizer',
    meaning:
      'how tasks are written: 5 may require labels; 4 may name rate limits; 3 may suspend them on waitpoints; 2 lists a task by its payload item (a write unit less); 1 as before',
  },
  queueSlotLayout: {
    prop: 'queueSlotLayout',
    env: 'QUEUE_SLOT_LAYOUT',
    unit: 'count',
    default: 2,
    min: 1,
    max: 2,
    integer: true,
    readBy: 'all but the authorizer',
    meaning:
      'how concurrency slots are kept: 2 spreads a limit above 20 over items of 20 (one write unit a claim); 1 in one item',
  },
  listenerShards: {
    prop: 'listenerShards',
    env: 'LISTENER_SHARDS',
    unit: 'count',
    default: 4,
    min: 1,
    max: 32,
    integer: true,
    readBy: 'all but the authorizer',
    meaning:
      'partitions the push listeners of each queue are spread over: 333 wakes a second each, read in turn',
  },
  agentRatePerSecond: {
    prop: 'agentRateLimit.ratePerSecond',
    env: 'AGENT_RATE_PER_SECOND',
    unit: 'per second',
    default: 50,
    min: 0.1,
    max: 10_000,
    integer: false,
    readBy: 'agent API',
    meaning: 'requests one agent may make, per agent API instance',
  },
  agentBurst: {
    prop: 'agentRateLimit.burst',
    env: 'AGENT_BURST',
    unit: 'count',
    default: 100,
    min: 1,
    max: 10_000,
    integer: true,
    readBy: 'agent API',
    meaning: 'requests one agent may make at once above that rate',
  },
} as const satisfies Record<string, NumberSetting>;

export type SettingName = keyof typeof SETTINGS;

/** The number settings `R` reads. */
export type SettingReadBy<R extends ReadBy> = {
  [Name in SettingName]: (typeof SETTINGS)[Name]['readBy'] extends R ? Name : never;
}[SettingName];

/** The number settings every function that builds a scheduler reads. */
export type SchedulerSettingName = SettingReadBy<'all but the authorizer'>;

/** The number settings `readBy` reads, in the order of their declaration. */
export function settingsReadBy<R extends ReadBy>(readBy: R): SettingReadBy<R>[] {
  return (Object.keys(SETTINGS) as SettingName[]).filter(
    (name): name is SettingReadBy<R> => SETTINGS[name].readBy === readBy,
  );
}

/** A prop that reaches the functions as text: a flag, a list or a document. */
export interface TextSetting {
  /** The `AgentScheduler` prop. */
  readonly prop: string;
  /** The environment variable of the functions. */
  readonly env: string;
  readonly readBy: ReadBy;
  /** How the environment variable writes it, and what it is when unset. */
  readonly carriedAs: string;
  /** What the functions do with it, in a line. */
  readonly meaning: string;
}

export const TEXT_SETTINGS = {
  queues: {
    prop: 'queues',
    env: 'QUEUE_DIRECTORY',
    readBy: 'all but the authorizer',
    carriedAs: "JSON: a shared URL base and each task queue's SQS queue names; required",
    meaning: "where each task queue's priority queues and dead-letter queue are",
  },
  routineEvents: {
    prop: 'routineEvents',
    env: 'ROUTINE_EVENTS',
    readBy: 'APIs, supervisor, schedule fire',
    carriedAs: '`true` or `false`; unset: `false`',
    meaning: 'whether `task.submitted`, `task.claimed` and `task.completed` are published',
  },
  queueLimits: {
    prop: 'queueLimits',
    env: 'QUEUE_LIMITS',
    readBy: 'APIs, supervisor, schedule fire',
    carriedAs: 'JSON: limits by queue; unset when none',
    meaning: 'the limits of a queue whose control record sets none',
  },
  rateLimits: {
    prop: 'rateLimits',
    env: 'RATE_LIMITS',
    readBy: 'APIs, supervisor, schedule fire',
    carriedAs: 'JSON: the named rate limits as declared; unset when none',
    meaning: 'the named rate limits in force under names no operator has set',
  },
  agentSubmitQueues: {
    prop: 'agentSubmitQueues',
    env: 'AGENT_SUBMIT_QUEUES',
    readBy: 'APIs, supervisor, schedule fire',
    carriedAs: 'JSON: queue names; unset when none',
    meaning: 'the queues agents may submit follow-up tasks to',
  },
  schedules: {
    prop: 'schedules',
    env: 'DECLARED_SCHEDULES',
    readBy: 'supervisor, operator API',
    carriedAs: 'JSON: the schedules as declared',
    meaning: 'the declared schedules, for missed runs and for listing',
  },
  metricsNamespace: {
    prop: 'metricsNamespace',
    env: 'POWERTOOLS_METRICS_NAMESPACE',
    readBy: 'every function',
    carriedAs: 'text; read by Powertools',
    meaning: "the CloudWatch namespace of the scheduler's own metrics",
  },
} as const satisfies Record<string, TextSetting>;

/**
 * The resources the construct creates and hands to the functions by name. The push channel is on in a function
 * when the connections table and both URLs are set; run-time schedules need the four `schedule*` names.
 */
export const RESOURCE_ENV = {
  tasksTable: 'TASKS_TABLE_NAME',
  agentsTable: 'AGENTS_TABLE_NAME',
  leasesTable: 'LEASES_TABLE_NAME',
  connectionsTable: 'CONNECTIONS_TABLE_NAME',
  eventBus: 'EVENT_BUS_NAME',
  payloadBucket: 'PAYLOAD_BUCKET_NAME',
  pushUrl: 'PUSH_URL',
  pushCallbackUrl: 'PUSH_CALLBACK_URL',
  wakeTimerQueue: 'WAKE_TIMER_QUEUE_URL',
  scheduleGroup: 'SCHEDULE_GROUP_NAME',
  scheduleTarget: 'SCHEDULE_TARGET_ARN',
  scheduleRole: 'SCHEDULE_ROLE_ARN',
  scheduleDeadLetters: 'SCHEDULE_DEAD_LETTER_ARN',
} as const;

/** The bounds a number must be within. */
export type Bounds = Pick<NumberSetting, 'min' | 'max' | 'integer'>;

/** The construct props that set an API Gateway throttle, each `{ rateLimit, burstLimit }`. */
export const THROTTLE_PROPS = [
  'apiThrottle',
  'agentRouteThrottle',
  'operatorRouteThrottle',
  'callbackRouteThrottle',
  'pushThrottle',
] as const;

/**
 * The bounds of a throttle, which reaches no function and is checked by the construct at synth: API Gateway's
 * account limit is 10,000 requests a second, bursts of 5,000.
 */
export const THROTTLE_BOUNDS = {
  rateLimit: { min: 1, max: 10_000, integer: false },
  burstLimit: { min: 1, max: 5_000, integer: true },
} as const satisfies Record<string, Bounds>;

/** The bounds of `oldestMessageAlarmAge`, in seconds: SQS reports ages up to its longest retention, 14 days. */
export const OLDEST_MESSAGE_ALARM_AGE = {
  prop: 'oldestMessageAlarmAge',
  min: 1,
  max: 14 * DAY,
  integer: true,
} as const satisfies Bounds & { prop: string };

/**
 * Tracing (`AgentScheduler`'s `tracing` prop), read by the two APIs, the supervisor and the schedule fire: the OTLP
 * endpoint turns it on, unset it is off. Declared apart from `SETTINGS` and `TEXT_SETTINGS`, whose tables
 * (`docs/deploying.md`) are generated and checked: the prop is a document of its own (`SchedulerTracing`).
 */
export const TRACING_ENV = {
  /** The collector's base URL; spans go to `<endpoint>/v1/traces`. Unset: no spans. */
  otlpEndpoint: 'TRACING_OTLP_ENDPOINT',
  /** JSON: the headers sent with each export; unset when none. */
  otlpHeaders: 'TRACING_OTLP_HEADERS',
  /** Whole milliseconds an export may take before the request goes on without it. */
  exportTimeoutMs: 'TRACING_EXPORT_TIMEOUT_MS',
} as const;

/**
 * How long a request waits for its spans' export, in milliseconds (`tracing.exportTimeout`): the collector of the
 * ADOT layer answers on localhost in a millisecond or two; a remote back end's first export opens a TLS connection
 * (100 to 300 ms), later ones reuse it.
 */
export const TRACING_EXPORT_TIMEOUT = { default: 500, min: 10, max: 5_000, integer: true } as const;

/** Why `value` is out of `setting`'s bounds ("a whole number from 1 to 900"), or undefined when it is in. */
export function outOfBounds(
  setting: Pick<NumberSetting, 'min' | 'max' | 'integer'>,
  value: number,
): string | undefined {
  const inBounds =
    Number.isFinite(value) &&
    value >= setting.min &&
    value <= setting.max &&
    (!setting.integer || Number.isInteger(value));
  return inBounds
    ? undefined
    : `${setting.integer ? 'a whole number' : 'a number'} from ${setting.min} to ${setting.max}`;
}
