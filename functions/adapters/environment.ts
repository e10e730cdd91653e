/**
 * Configuration of a function, read once at start-up from its environment. A missing variable fails the cold
 * start with a message naming it, instead of failing the first request in a confusing way.
 */
import { queueLimitsSchema } from '#domain/queue-limits';
import type { TableNames } from './tables';
import { QueueDirectory } from './task-queues';

export function requiredEnv(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const value = env[name];
  if (value === undefined || value === '') throw new Error(`environment variable ${name} is required`);
  return value;
}

/**
 * The numeric settings the construct passes to the functions, each declared once with its bounds: the construct
 * refuses a prop out of these bounds at synth, and a function refuses such a value at its cold start.
 */
export const NUMERIC_SETTINGS = {
  LEASE_TTL_SECONDS: { fallback: 30, min: 1, max: 86_400, integer: true },
  HEARTBEAT_INTERVAL_SECONDS: { fallback: 10, min: 1, max: 86_400, integer: true },
  TASK_RETENTION_SECONDS: { fallback: 7 * 86_400, min: 60, max: 365 * 86_400, integer: true },
  STARVATION_PROMOTE_AFTER_SECONDS: { fallback: 300, min: 1, max: 30 * 86_400, integer: true },
  STARVATION_ANNOUNCE_AFTER_SECONDS: { fallback: 900, min: 1, max: 30 * 86_400, integer: true },
  STARVATION_ATTENTION_AFTER_SECONDS: { fallback: 3_600, min: 1, max: 30 * 86_400, integer: true },
  IDLE_RETRY_MAX_SECONDS: { fallback: 90, min: 1, max: 900, integer: true },
  MAX_ROLES_PER_AGENT: { fallback: 100, min: 1, max: 10_000, integer: true },
  // Per agent, per agent API instance (see `AgentRateLimiter`).
  AGENT_RATE_PER_SECOND: { fallback: 50, min: 0.1, max: 10_000, integer: false },
  AGENT_BURST: { fallback: 100, min: 1, max: 10_000, integer: true },
} as const satisfies Record<string, NumericSetting>;

export interface NumericSetting {
  readonly fallback: number;
  readonly min: number;
  readonly max: number;
  readonly integer: boolean;
}

/** Why `value` is out of `setting`'s bounds ("a whole number from 1 to 900"), or undefined when it is in. */
export function outOfBounds(setting: NumericSetting, value: number): string | undefined {
  const inBounds =
    Number.isFinite(value) &&
    value >= setting.min &&
    value <= setting.max &&
    (!setting.integer || Number.isInteger(value));
  return inBounds
    ? undefined
    : `${setting.integer ? 'a whole number' : 'a number'} from ${setting.min} to ${setting.max}`;
}

function numberEnv(name: keyof typeof NUMERIC_SETTINGS, env: NodeJS.ProcessEnv): number {
  const setting: NumericSetting = NUMERIC_SETTINGS[name];
  const raw = env[name];
  if (raw === undefined || raw === '') return setting.fallback;
  const value = Number(raw);
  const problem = outOfBounds(setting, value);
  if (problem) throw new Error(`environment variable ${name} must be ${problem} (got "${raw.slice(0, 40)}")`);
  return value;
}

function queueLimitsEnv(env: NodeJS.ProcessEnv): FunctionConfig['queueLimits'] {
  const raw = env.QUEUE_LIMITS;
  if (raw === undefined || raw === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error('environment variable QUEUE_LIMITS must be JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error('environment variable QUEUE_LIMITS must be an object of limits by queue');
  const limits: FunctionConfig['queueLimits'] = {};
  for (const [queue, value] of Object.entries(parsed)) {
    const checked = queueLimitsSchema.safeParse(value);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new Error(
        `environment variable QUEUE_LIMITS: limits of "${queue}" are invalid: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''} (got ${JSON.stringify(value).slice(0, 100)})`,
      );
    }
    limits[queue] = checked.data;
  }
  return limits;
}

function booleanEnv(name: string, fallback: boolean, env: NodeJS.ProcessEnv): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw !== 'true' && raw !== 'false')
    throw new Error(`environment variable ${name} must be true or false`);
  return raw === 'true';
}

export interface FunctionConfig {
  readonly tables: TableNames;
  readonly queues: QueueDirectory;
  readonly leaseTtlSeconds: number;
  readonly heartbeatIntervalSeconds: number;
  readonly retentionSeconds: number;
  readonly starvation: {
    readonly promoteAfterSeconds: number;
    readonly announceAfterSeconds: number;
    readonly attentionAfterSeconds: number;
  };
  /** The longest wait an empty claim suggests to an idle agent. */
  readonly idleRetryMaxSeconds: number;
  /** Whether `task.submitted`, `task.claimed` and `task.completed` are published. */
  readonly routineEvents: boolean;
  /** Most roles one agent may register. */
  readonly maxRolesPerAgent: number;
  /** Per-queue limits declared in the construct: `{ "<queue>": { maxConcurrency?, ratePerSecond?, burst? } }`. */
  readonly queueLimits: Record<string, { maxConcurrency?: number; ratePerSecond?: number; burst?: number }>;
}

export function schedulerConfigFromEnv(env: NodeJS.ProcessEnv = process.env): FunctionConfig {
  return {
    tables: {
      tasks: requiredEnv('TASKS_TABLE_NAME', env),
      agents: requiredEnv('AGENTS_TABLE_NAME', env),
      leases: requiredEnv('LEASES_TABLE_NAME', env),
    },
    queues: QueueDirectory.fromJson(requiredEnv('QUEUE_DIRECTORY', env)),
    leaseTtlSeconds: numberEnv('LEASE_TTL_SECONDS', env),
    heartbeatIntervalSeconds: numberEnv('HEARTBEAT_INTERVAL_SECONDS', env),
    retentionSeconds: numberEnv('TASK_RETENTION_SECONDS', env),
    starvation: {
      promoteAfterSeconds: numberEnv('STARVATION_PROMOTE_AFTER_SECONDS', env),
      announceAfterSeconds: numberEnv('STARVATION_ANNOUNCE_AFTER_SECONDS', env),
      attentionAfterSeconds: numberEnv('STARVATION_ATTENTION_AFTER_SECONDS', env),
    },
    idleRetryMaxSeconds: numberEnv('IDLE_RETRY_MAX_SECONDS', env),
    routineEvents: booleanEnv('ROUTINE_EVENTS', false, env),
    maxRolesPerAgent: numberEnv('MAX_ROLES_PER_AGENT', env),
    queueLimits: queueLimitsEnv(env),
  };
}

/** The per-agent request rate the agent API enforces at its edge. */
export function agentRateLimitFromEnv(env: NodeJS.ProcessEnv = process.env): {
  ratePerSecond: number;
  burst: number;
} {
  return { ratePerSecond: numberEnv('AGENT_RATE_PER_SECOND', env), burst: numberEnv('AGENT_BURST', env) };
}
