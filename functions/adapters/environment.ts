/**
 * Configuration of a function, read once at start-up from its environment. A missing variable fails the cold
 * start with a message naming it, instead of failing the first request in a confusing way.
 */
import { storedQueueLimitsSchema } from '#domain/queue-limits';
import { declaredRateLimitSchema, type RateLimitDefinition } from '#domain/rate-limits';
import {
  type NumberSetting,
  outOfBounds,
  RESOURCE_ENV,
  type SchedulerSettingName,
  SETTINGS,
  type SettingName,
  settingsReadBy,
  TEXT_SETTINGS,
  TRACING_ENV,
  TRACING_EXPORT_TIMEOUT,
} from '#domain/settings';
import type { TableNames } from './tables';
import { QueueDirectory } from './task-queues';

export function requiredEnv(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const value = env[name];
  if (value === undefined || value === '') throw new Error(`environment variable ${name} is required`);
  return value;
}

/** The number settings `names` (`#domain/settings`) from their environment variables; each its default when unset. */
export function settingsFromEnv<Name extends SettingName>(
  names: readonly Name[],
  env: NodeJS.ProcessEnv = process.env,
): Record<Name, number> {
  return Object.fromEntries(names.map((name) => [name, numberEnv(name, env)])) as Record<Name, number>;
}

/** A setting of the contract (`#domain/settings`) from its environment variable; its default when unset. */
function numberEnv(name: SettingName, env: NodeJS.ProcessEnv): number {
  const setting: NumberSetting = SETTINGS[name];
  const raw = env[setting.env];
  if (raw === undefined || raw === '') return setting.default;
  const value = Number(raw);
  const problem = outOfBounds(setting, value);
  if (problem)
    throw new Error(`environment variable ${setting.env} must be ${problem} (got "${raw.slice(0, 40)}")`);
  return value;
}

/** The JSON an environment variable holds, or undefined when it is unset or empty. */
function jsonEnv(env: NodeJS.ProcessEnv, name: string): unknown {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    throw new Error(`environment variable ${name} must be JSON`);
  }
}

function queueLimitsEnv(env: NodeJS.ProcessEnv): FunctionConfig['queueLimits'] {
  const name = TEXT_SETTINGS.queueLimits.env;
  const parsed = jsonEnv(env, name);
  if (parsed === undefined) return {};
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error(`environment variable ${name} must be an object of limits by queue`);
  const limits: FunctionConfig['queueLimits'] = {};
  for (const [queue, value] of Object.entries(parsed)) {
    // As stored: a stack deployed before the bound may carry a limit above it, enforced at the bound.
    const checked = storedQueueLimitsSchema.safeParse(value);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new Error(
        `environment variable ${name}: limits of "${queue}" are invalid: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''} (got ${JSON.stringify(value).slice(0, 100)})`,
      );
    }
    limits[queue] = checked.data;
  }
  return limits;
}

/** The named rate limits the construct declares (`RATE_LIMITS`, a JSON array), each checked. */
function rateLimitsEnv(env: NodeJS.ProcessEnv): RateLimitDefinition[] {
  const name = TEXT_SETTINGS.rateLimits.env;
  const parsed = jsonEnv(env, name);
  if (parsed === undefined) return [];
  if (!Array.isArray(parsed)) throw new Error(`environment variable ${name} must be an array of rate limits`);
  return parsed.map((value: unknown) => {
    const checked = declaredRateLimitSchema.safeParse(value);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new Error(
        `environment variable ${name}: a rate limit is invalid: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''} (got ${JSON.stringify(value).slice(0, 100)})`,
      );
    }
    return checked.data;
  });
}

function booleanEnv(name: string, fallback: boolean, env: NodeJS.ProcessEnv): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw !== 'true' && raw !== 'false')
    throw new Error(`environment variable ${name} must be true or false`);
  return raw === 'true';
}

/**
 * The push channel as a function reaches it: the WebSocket URL clients open (`PUSH_URL`) and the management
 * endpoint frames are posted to (`PUSH_CALLBACK_URL`). Absent unless both are set with the connections table.
 */
export function pushConfigFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): { readonly url: string; readonly callbackUrl: string; readonly timerQueueUrl?: string } | undefined {
  const url = env[RESOURCE_ENV.pushUrl];
  const callbackUrl = env[RESOURCE_ENV.pushCallbackUrl];
  if (!url || !callbackUrl || !env[RESOURCE_ENV.connectionsTable]) return undefined;
  // Functions deployed before the timer have no queue: they wake at the supervisor's pass, as before.
  const timerQueueUrl = env[RESOURCE_ENV.wakeTimerQueue];
  return { url, callbackUrl, ...(timerQueueUrl ? { timerQueueUrl } : {}) };
}

export interface FunctionConfig {
  readonly tables: TableNames;
  readonly queues: QueueDirectory;
  /** The number settings every function that builds a scheduler reads, by their names in `#domain/settings`. */
  readonly settings: Record<SchedulerSettingName, number>;
  /** Whether `task.submitted`, `task.claimed` and `task.completed` are published. */
  readonly routineEvents: boolean;
  /** Per-queue limits declared in the construct: `{ "<queue>": { maxConcurrency?, ratePerSecond?, burst? } }`. */
  readonly queueLimits: Record<string, { maxConcurrency?: number; ratePerSecond?: number; burst?: number }>;
  /** The queues agents may submit follow-up tasks to: a JSON array of queue names. */
  readonly agentSubmitQueues: string[];
  /** The named rate limits the construct declares. */
  readonly rateLimits: RateLimitDefinition[];
}

export function schedulerConfigFromEnv(env: NodeJS.ProcessEnv = process.env): FunctionConfig {
  return {
    tables: {
      tasks: requiredEnv(RESOURCE_ENV.tasksTable, env),
      agents: requiredEnv(RESOURCE_ENV.agentsTable, env),
      leases: requiredEnv(RESOURCE_ENV.leasesTable, env),
      ...(env[RESOURCE_ENV.connectionsTable] ? { connections: env[RESOURCE_ENV.connectionsTable] } : {}),
    },
    queues: QueueDirectory.fromJson(requiredEnv(TEXT_SETTINGS.queues.env, env)),
    settings: settingsFromEnv(settingsReadBy('all but the authorizer'), env),
    routineEvents: booleanEnv(TEXT_SETTINGS.routineEvents.env, false, env),
    queueLimits: queueLimitsEnv(env),
    agentSubmitQueues: agentSubmitQueuesEnv(env),
    rateLimits: rateLimitsEnv(env),
  };
}

function agentSubmitQueuesEnv(env: NodeJS.ProcessEnv): string[] {
  const name = TEXT_SETTINGS.agentSubmitQueues.env;
  const parsed = jsonEnv(env, name);
  if (parsed === undefined) return [];
  if (!Array.isArray(parsed) || !parsed.every((q) => typeof q === 'string')) {
    throw new Error(`environment variable ${name} must be an array of queue names`);
  }
  return parsed;
}

/** The per-agent request rate the agent API enforces at its edge. */
export function agentRateLimitFromEnv(env: NodeJS.ProcessEnv = process.env): {
  ratePerSecond: number;
  burst: number;
} {
  const { agentRatePerSecond, agentBurst } = settingsFromEnv(['agentRatePerSecond', 'agentBurst'], env);
  return { ratePerSecond: agentRatePerSecond, burst: agentBurst };
}

/** Where the functions' spans go, and how long an export may take; undefined when tracing is off. */
export interface TracingConfig {
  readonly endpoint: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

/** Tracing as the construct set it (`TRACING_ENV`): off, undefined, when no endpoint is set. */
export function tracingConfigFromEnv(env: NodeJS.ProcessEnv = process.env): TracingConfig | undefined {
  const endpoint = env[TRACING_ENV.otlpEndpoint];
  if (endpoint === undefined || endpoint === '') return undefined;
  if (!/^https?:\/\/\S+$/.test(endpoint))
    throw new Error(`environment variable ${TRACING_ENV.otlpEndpoint} must be an http(s) URL`);
  const headers = jsonEnv(env, TRACING_ENV.otlpHeaders) ?? {};
  if (
    typeof headers !== 'object' ||
    headers === null ||
    Array.isArray(headers) ||
    !Object.values(headers).every((value) => typeof value === 'string')
  )
    throw new Error(`environment variable ${TRACING_ENV.otlpHeaders} must be a JSON object of strings`);
  const raw = env[TRACING_ENV.exportTimeoutMs];
  const timeoutMs = raw === undefined || raw === '' ? TRACING_EXPORT_TIMEOUT.default : Number(raw);
  const problem = outOfBounds(TRACING_EXPORT_TIMEOUT, timeoutMs);
  if (problem) throw new Error(`environment variable ${TRACING_ENV.exportTimeoutMs} must be ${problem}`);
  return { endpoint, headers: headers as Record<string, string>, timeoutMs };
}
