/**
 * The settings a deployment chooses, each declared once: the construct prop that sets it, the environment
 * variable that carries it to the functions, its unit, default and bounds. The construct refuses a prop out of
 * bounds at synth and builds the functions' environment from this; a function refuses an out-of-bounds value at
 * its cold start; the local runner and the bench start from the same defaults; the README's settings table is
 * checked against it (`test/infra/settings.test.ts`).
 */

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
    meaning: 'most roles one agent may register',
  },
  agentRatePerSecond: {
    prop: 'agentRateLimit.ratePerSecond',
    env: 'AGENT_RATE_PER_SECOND',
    unit: 'per second',
    default: 50,
    min: 0.1,
    max: 10_000,
    integer: false,
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
    meaning: 'requests one agent may make at once above that rate',
  },
} as const satisfies Record<string, NumberSetting>;

export type SettingName = keyof typeof SETTINGS;

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
