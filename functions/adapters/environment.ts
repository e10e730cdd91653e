/**
 * Configuration of a function, read once at start-up from its environment. A missing variable fails the cold
 * start with a message naming it, instead of failing the first request in a confusing way.
 */
import type { TableNames } from './tables';
import { QueueDirectory } from './task-queues';

export function requiredEnv(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const value = env[name];
  if (value === undefined || value === '') throw new Error(`environment variable ${name} is required`);
  return value;
}

function numberEnv(name: string, fallback: number, env: NodeJS.ProcessEnv): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`environment variable ${name} must be a positive number`);
  return value;
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
    leaseTtlSeconds: numberEnv('LEASE_TTL_SECONDS', 30, env),
    heartbeatIntervalSeconds: numberEnv('HEARTBEAT_INTERVAL_SECONDS', 10, env),
    retentionSeconds: numberEnv('TASK_RETENTION_SECONDS', 7 * 24 * 60 * 60, env),
    starvation: {
      promoteAfterSeconds: numberEnv('STARVATION_PROMOTE_AFTER_SECONDS', 300, env),
      announceAfterSeconds: numberEnv('STARVATION_ANNOUNCE_AFTER_SECONDS', 900, env),
      attentionAfterSeconds: numberEnv('STARVATION_ATTENTION_AFTER_SECONDS', 3_600, env),
    },
    idleRetryMaxSeconds: numberEnv('IDLE_RETRY_MAX_SECONDS', 90, env),
    routineEvents: booleanEnv('ROUTINE_EVENTS', false, env),
    maxRolesPerAgent: numberEnv('MAX_ROLES_PER_AGENT', 100, env),
    queueLimits: JSON.parse(env.QUEUE_LIMITS ?? '{}') as FunctionConfig['queueLimits'],
  };
}
