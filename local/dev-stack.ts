/**
 * The whole system on this machine, as `npm start` (in this repository) and `agent-scheduler dev` (in a user's
 * project) run it: DynamoDB Local and the SQS emulator, the tables and queues created from the construct's own
 * definitions, the same HTTP handlers, the supervisor every few seconds and the declared schedules.
 *
 * Data is kept under `dataDir` (the project's `.agent-scheduler/`), with the endpoint and operator credentials in
 * `local.json` there, where the CLI finds them by walking up from the current folder.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { LocalEventFeed } from '#adapters/event-publishers';
import { type ConsoleAssets, loadConsoleAssets } from '#console/assets';
import { iamSigner } from '#console/aws-signer';
import { consoleGateway, loginCodeLine } from '#console/gateway';
import { bearerUpstream, signedUpstream } from '#console/upstream';
import { fireSchedule } from '#core/fire-schedule';
import type { EventPublisher } from '#core/ports/event-publisher';
import type { Scheduler } from '#core/scheduler';
import { type NumberSetting, outOfBounds, SETTINGS, TRACING_ENV } from '#domain/settings';
import { queueNameSchema } from '#domain/task-spec';
import { spanExporterFromEnvironment } from '#wiring/tracing';
import type { TaskScheduleProps } from '../infra/task-schedule';
import { isPortFree } from './emulators/dynamodb-local';
import { runAs } from './function-scope';
import { LocalScheduleBackend } from './local-schedules';
import { type ServedLocalStack, type ServeOptions, startLocalStack } from './local-stack';
import { LocalPushSender } from './push-server';

/** How late in its minute a schedule's fire may come, as EventBridge Scheduler's may. */
export const SCHEDULER_SPREAD_MS = 60_000;

/** What the command line gives, as text: each is checked here, in the bounds the construct accepts. */
export interface DevStackArguments {
  readonly port?: string;
  readonly dataDir?: string;
  readonly inMemory?: boolean;
  readonly supervisorSeconds?: string;
  readonly leaseTtlSeconds?: string;
  readonly heartbeatSeconds?: string;
  /** Operator routes take AWS Signature V4 (keys from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY), as in AWS. */
  readonly iam?: boolean;
  /**
   * Seconds added to the scheduler's clock (negative: taken off), up to a year either way: runs that must see a
   * window roll (a daily budget, a schedule's next day) restart the stack on its data with a later clock.
   */
  readonly clockOffsetSeconds?: string;
  /**
   * Where the API's spans go, by OTLP/HTTP (a collector's base URL, as the construct's `tracing.otlpEndpoint`).
   * @default TRACING_OTLP_ENDPOINT, or no spans
   */
  readonly otlpEndpoint?: string;
}

export interface DevStackDefinition {
  /** How the user started it, for hints: `npm start`, `agent-scheduler dev`. */
  readonly command: string;
  readonly queues: readonly string[];
  readonly schedules?: readonly TaskScheduleProps[];
  readonly env?: NodeJS.ProcessEnv;
}

export interface DevStack {
  readonly url: string;
  /** What runs where, and what to do next: printed once it is up. */
  readonly banner: string;
  /** Stops the server, the supervisor, the schedules and the emulators. Idempotent. */
  stop(): Promise<void>;
}

/** The largest `--clock-offset-seconds`, either way: a year. */
const CLOCK_OFFSET_MAX_SECONDS = 366 * 86_400;

/** A command line the stack cannot start with; the message names the flag and is meant for the user as it is. */
export class DevStackUsageError extends Error {}

interface Settings {
  readonly port: number;
  readonly dataDir: string;
  readonly inMemory: boolean;
  readonly supervisorMs: number;
  readonly leaseTtlSeconds: number;
  readonly heartbeatIntervalSeconds: number;
  readonly clockOffsetMs: number;
  readonly iam?: { region: string; credentials: { accessKeyId: string; secretAccessKey: string } };
  readonly otlpEndpoint?: string;
}

/** A setting given on the command line, in the bounds the construct and the functions accept. */
function boundedFlag(flag: string, setting: NumberSetting, raw: string | undefined): number {
  if (raw === undefined) return setting.default;
  const problem = outOfBounds(setting, Number(raw));
  if (problem) throw new DevStackUsageError(`--${flag} must be ${problem} (got "${raw.slice(0, 40)}")`);
  return Number(raw);
}

function settingsOf(args: DevStackArguments, definition: DevStackDefinition): Settings {
  const env = definition.env ?? process.env;
  const rawPort = args.port ?? env.PORT;
  const port = Number(rawPort ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new DevStackUsageError(
      `the port must be a number from 0 to 65535 (got "${String(rawPort).slice(0, 20)}")`,
    );
  }
  const supervisorSeconds = Number(args.supervisorSeconds ?? 5);
  if (!(supervisorSeconds >= 1 && supervisorSeconds <= 3_600)) {
    throw new DevStackUsageError(
      `--supervisor-seconds must be from 1 to 3600 (got "${String(args.supervisorSeconds).slice(0, 20)}")`,
    );
  }
  const clockOffsetSeconds = Number(args.clockOffsetSeconds ?? 0);
  if (!Number.isInteger(clockOffsetSeconds) || Math.abs(clockOffsetSeconds) > CLOCK_OFFSET_MAX_SECONDS) {
    throw new DevStackUsageError(
      `--clock-offset-seconds must be a whole number from -${CLOCK_OFFSET_MAX_SECONDS} to ${CLOCK_OFFSET_MAX_SECONDS} (got "${String(args.clockOffsetSeconds).slice(0, 20)}")`,
    );
  }
  if (definition.queues.length === 0) throw new DevStackUsageError('give at least one queue');
  for (const queue of definition.queues) {
    const parsed = queueNameSchema.safeParse(queue);
    if (!parsed.success) {
      throw new DevStackUsageError(`queue "${queue.slice(0, 40)}": ${parsed.error.issues[0]?.message}`);
    }
  }
  let iam: Settings['iam'];
  if (args.iam) {
    const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey } = env;
    if (!accessKeyId || !secretAccessKey) {
      throw new DevStackUsageError(
        '--iam checks signatures made with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: set both',
      );
    }
    const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
    iam = { region, credentials: { accessKeyId, secretAccessKey } };
  }
  const otlpEndpoint = args.otlpEndpoint ?? env[TRACING_ENV.otlpEndpoint];
  if (otlpEndpoint !== undefined && !/^https?:\/\/\S+$/.test(otlpEndpoint)) {
    throw new DevStackUsageError(
      `--otlp-endpoint must be an http(s) URL (got "${otlpEndpoint.slice(0, 60)}")`,
    );
  }
  return {
    ...(otlpEndpoint ? { otlpEndpoint } : {}),
    port,
    dataDir: args.dataDir ?? '.agent-scheduler',
    inMemory: args.inMemory === true,
    supervisorMs: supervisorSeconds * 1_000,
    clockOffsetMs: clockOffsetSeconds * 1_000,
    leaseTtlSeconds: boundedFlag('lease-ttl-seconds', SETTINGS.leaseTtl, args.leaseTtlSeconds),
    heartbeatIntervalSeconds: boundedFlag(
      'heartbeat-seconds',
      SETTINGS.heartbeatInterval,
      args.heartbeatSeconds,
    ),
    ...(iam ? { iam } : {}),
  };
}

/** Before any emulator starts: a port in use is one line, at once, not a stack trace after them. */
async function refuseBusyPort(port: number, command: string): Promise<void> {
  if (port === 0 || (await isPortFree(port))) return;
  const other = port === 65_535 ? 3000 : port + 1;
  throw new DevStackUsageError(
    `port ${port} is in use: stop what listens there, or pick another, e.g. PORT=${other} ${command}`,
  );
}

/** Keep the operator token across restarts of a persistent store, so scripts and the CLI keep working. */
function operatorTokenOf(localFile: string, inMemory: boolean): string {
  const previous =
    !inMemory && existsSync(localFile)
      ? (JSON.parse(readFileSync(localFile, 'utf8')) as { operatorToken?: string })
      : {};
  return previous.operatorToken ?? `op_${randomBytes(24).toString('base64url')}`;
}

/** Every event also makes a log line: one per task transition, as it happens. */
function loggedEvents(log: Logger, feed: LocalEventFeed): EventPublisher {
  return {
    publish: async (published) => {
      for (const { type, time: _time, version: _version, ...fields } of published) log.info(type, fields);
      await feed.publish(published);
    },
  };
}

/**
 * The supervisor's pass every `periodMs`, logged when it did something. A pass still running when the next is due
 * is let finish, not joined by another: on a machine loaded past its cores, passes that pile up on each other load
 * it more and answer the agents later.
 */
function superviseEvery(scheduler: Scheduler, log: Logger, periodMs: number): NodeJS.Timeout {
  let running = false;
  return setInterval(() => {
    if (running) return;
    running = true;
    runAs('supervisor', () => scheduler.supervise())
      .then((cycle) => {
        const acted =
          cycle.recoveredLeases +
          cycle.reconciled +
          cycle.promoted +
          cycle.starved +
          cycle.escalated +
          cycle.errors;
        if (acted > 0) log.info('supervisor pass', { cycle });
      })
      .catch((error: unknown) => log.error('supervisor pass failed', { error: String(error) }))
      .finally(() => {
        running = false;
      });
  }, periodMs);
}

/** Fires the stored schedules on time, as EventBridge Scheduler does in AWS. */
async function fireSchedules(
  backend: LocalScheduleBackend,
  scheduler: Scheduler,
  log: Logger,
): Promise<void> {
  backend.start(
    async (record, scheduledTime) => {
      const fired = await runAs('scheduleFire', () =>
        fireSchedule(scheduler.ctx, {
          schedule: record.name,
          scheduledTime: new Date(scheduledTime).toISOString(),
          overlap: record.overlap,
          missedRuns: record.missedRuns,
          task: record.task,
          // As the construct's schedules carry them: each fire arms the next occurrence's early fire.
          expression: record.expression,
          timeZone: record.timeZone,
        }),
      );
      log.info('schedule fired', { schedule: record.name, ...fired });
    },
    await scheduler.listSchedules(),
  );
}

/**
 * The server's part: the console at `/` (its requests reach the API as the CLI's do, with the operator token or
 * signed), the operators' credentials, the port and the event feed.
 */
function served(
  settings: Settings,
  parts: {
    readonly log: Logger;
    readonly assets: ConsoleAssets;
    readonly operatorToken: string;
    readonly events: LocalEventFeed;
    /** Told of each login code; one made after the first is printed. */
    readonly onCode: (code: string) => void;
  },
): ServeOptions {
  const { iam } = settings;
  const { log, assets, operatorToken } = parts;
  const upstream = iam
    ? signedUpstream(iamSigner(iam.region, iam.credentials))
    : bearerUpstream(operatorToken);
  return {
    console: (url) =>
      consoleGateway({
        mode: 'local',
        endpoint: url,
        events: 'poll',
        assets,
        upstream,
        onUpstreamError: (error) => log.warn('console request to the API failed', { error: String(error) }),
        onCode: (code, why) => {
          parts.onCode(code);
          if (why !== 'start') console.log(loginCodeLine(code, why));
        },
      }),
    operatorToken,
    ...(iam ? { operatorSigV4: { region: iam.region, credentials: [iam.credentials] } } : {}),
    port: settings.port,
    events: parts.events,
    ...tracedTo(settings.otlpEndpoint, log),
  };
}

/** The API's spans sent to `endpoint`, as the functions send them with `tracing` on; nothing without one. */
function tracedTo(endpoint: string | undefined, log: Logger): Pick<ServeOptions, 'spans'> {
  const spans =
    endpoint === undefined
      ? undefined
      : spanExporterFromEnvironment(log, {
          [TRACING_ENV.otlpEndpoint]: endpoint,
          AWS_LAMBDA_FUNCTION_NAME: 'agent-scheduler-dev',
        });
  return spans ? { spans } : {};
}

/** What runs where, and what to do next. */
function bannerOf(
  stack: ServedLocalStack,
  settings: Settings,
  facts: {
    readonly queues: readonly string[];
    readonly readyMs: number;
    readonly operatorToken: string;
    readonly restoredHints: number;
    readonly restoreMs: number;
    readonly loginCode: string;
    readonly localFile: string;
  },
): string {
  const { iam, dataDir, inMemory } = settings;
  const url = stack.server.url;
  return `
agent-scheduler is running at ${url}  (ready in ${facts.readyMs} ms)
  queues:          ${facts.queues.join(', ')}
  operators:       ${iam ? `AWS Signature V4 with ${iam.credentials.accessKeyId}, region ${iam.region}` : `operator token ${facts.operatorToken}`}
  data:            ${inMemory ? 'in memory (nothing is kept)' : dataDir}
  dynamodb local:  ${stack.scratch.endpoints.dynamodb} (pid ${stack.scratch.dynamodbPid})
  sqs emulator:    ${stack.scratch.endpoints.sqs}
  restored hints:  ${facts.restoredHints} (in ${facts.restoreMs} ms, while serving)
  leases:          ${settings.leaseTtlSeconds} s, heartbeat every ${settings.heartbeatIntervalSeconds} s
${settings.otlpEndpoint ? `  spans:           ${settings.otlpEndpoint}/v1/traces (OTLP/HTTP)\n` : ''}  events:          GET /v1/events?since=0, and ${join(dataDir, 'events.jsonl')}
  console:         ${url}/  login code ${facts.loginCode} (single use: a new one is printed once it is used)
  endpoint and operator credentials are in ${facts.localFile}

Next: npx agent-scheduler agents create --name worker-1 --queue ${facts.queues[0]}
Ctrl-C stops everything.
`;
}

/**
 * Checks the command line, then starts everything. Throws `DevStackUsageError` for a wrong command line or a port
 * in use, before any emulator starts.
 */
export async function startDevStack(
  args: DevStackArguments,
  definition: DevStackDefinition,
): Promise<DevStack> {
  const started = performance.now();
  const settings = settingsOf(args, definition);
  const { dataDir, inMemory, iam } = settings;
  await refuseBusyPort(settings.port, definition.command);
  mkdirSync(join(dataDir, 'dynamodb'), { recursive: true });
  // JSON lines with timestamps, as the functions log in AWS. POWERTOOLS_LOG_LEVEL=WARN shows less.
  const log = new Logger({ serviceName: 'agent-scheduler' });

  // The console's files (built from source in this repository) while the emulators start.
  const assetsLoaded = loadConsoleAssets();
  // Awaited below; a failure meanwhile is not an unhandled one.
  assetsLoaded.catch(() => undefined);
  // Fires come anywhere in their minute, as EventBridge Scheduler's may: on time only by the early fires.
  const scheduleBackend = new LocalScheduleBackend(log, Date.now, { spreadMs: SCHEDULER_SPREAD_MS });
  const events = new LocalEventFeed(join(dataDir, 'events.jsonl'));
  const localFile = join(dataDir, 'local.json');
  const operatorToken = operatorTokenOf(localFile, inMemory);
  let loginCode = '';
  const stack = await startLocalStack({
    name: 'agent-scheduler',
    exactNames: true,
    queues: definition.queues,
    dbPath: inMemory ? undefined : join(dataDir, 'dynamodb'),
    // The push channel at /v1/push of the same server.
    push: new LocalPushSender(),
    context: {
      log,
      ...(settings.clockOffsetMs === 0 ? {} : { now: () => Date.now() + settings.clockOffsetMs }),
      scheduleBackend,
      events: loggedEvents(log, events),
      // A fire not recorded 5 s after the end of its minute was missed (the runner was down). An idle local
      // worker polls at least every 2 s: nothing is billed here, and work is picked up quickly.
      // Events cost nothing here either: the feed shows every task's way. Agents may submit follow-up tasks to
      // every queue of the local stack.
      settings: {
        agentSubmitQueues: definition.queues,
        missedRunGraceSeconds: SCHEDULER_SPREAD_MS / 1_000 + 5,
        idleClaimRetryMaxMs: 2_000,
        routineEvents: true,
        leaseTtlSeconds: settings.leaseTtlSeconds,
        heartbeatIntervalSeconds: settings.heartbeatIntervalSeconds,
      },
      declaredSchedules: definition.schedules ?? [],
    },
    serve: async () =>
      served(settings, {
        log,
        assets: await assetsLoaded,
        operatorToken,
        events,
        onCode: (code) => {
          loginCode = code;
        },
      }),
  });
  const { scheduler, server } = stack;
  const connection = iam
    ? { endpoint: server.url, auth: 'iam', region: iam.region }
    : { endpoint: server.url, operatorToken };
  writeFileSync(localFile, `${JSON.stringify(connection, null, 2)}\n`, { mode: 0o600 });
  // The SQS emulator keeps nothing across restarts: hint every task still queued from a previous run. Served while
  // this runs: Workers of a killed stack get their heartbeats in first (494 hints took some 20 s on two busy cores).
  const restoreStarted = performance.now();
  const restored = await scheduler.reconcile({ everything: true });
  const restoreMs = Math.round(performance.now() - restoreStarted);

  const supervisor = superviseEvery(scheduler, log, settings.supervisorMs);
  await fireSchedules(scheduleBackend, scheduler, log);

  const banner = bannerOf(stack, settings, {
    queues: definition.queues,
    readyMs: Math.round(performance.now() - started),
    operatorToken,
    restoredHints: restored.redispatched.length,
    restoreMs,
    loginCode,
    localFile,
  });

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      clearInterval(supervisor);
      scheduleBackend.stop();
      await stack.stop();
    })();
    return stopping;
  };
  return { url: server.url, banner, stop };
}
