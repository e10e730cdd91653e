/**
 * `npm start`: the whole system on this machine. DynamoDB Local and the SQS emulator, the tables and queues of
 * the example stack created from the same definitions, the same HTTP handlers on http://127.0.0.1:3000, the
 * supervisor every few seconds and the declared schedules. Ctrl-C stops everything.
 *
 *   npm start                  data kept under .agent-scheduler/
 *   npm start -- --in-memory   nothing kept
 *   PORT=4000 npm start        another port
 *   npm start -- --lease-ttl-seconds 10 --heartbeat-seconds 3   short leases, for a kill -9 run
 *   npm start -- --iam         operator routes take AWS Signature V4 instead of the operator token, as a deployed
 *                              stack's do: signed with the key in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, for
 *                              AWS_REGION (default us-east-1)
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Logger } from '@aws-lambda-powertools/logger';
import { NUMERIC_SETTINGS, type NumericSetting, outOfBounds } from '#adapters/environment';
import { type EventPublisher, LocalEventFeed } from '#adapters/event-publishers';
import { createContext } from '#core/context';
import { fireSchedule } from '#core/fire-schedule';
import { Scheduler } from '#core/scheduler';
import { EXAMPLE_SCHEDULER } from '../infra/example-config';
import { localDynamoDbClient, localSqsClient } from './emulators/clients';
import { isPortFree, startDynamoDbLocal } from './emulators/dynamodb-local';
import { startSqsEmulator } from './emulators/sqs';
import { runAs } from './function-scope';
import { LocalScheduleBackend } from './local-schedules';
import { provisionQueues, provisionTables, tableNamesFor } from './provision';
import { startLocalServer } from './server';

// The emulators run on this machine's Node; the deployed functions run on Node 22.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const started = performance.now();
const { values } = parseArgs({
  options: {
    'in-memory': { type: 'boolean', default: false },
    port: { type: 'string' },
    'data-dir': { type: 'string', default: '.agent-scheduler' },
    'supervisor-seconds': { type: 'string', default: '5' },
    'lease-ttl-seconds': { type: 'string' },
    'heartbeat-seconds': { type: 'string' },
    iam: { type: 'boolean', default: false },
  },
});
/** A setting given on the command line, in the bounds the construct and the functions accept. */
const boundedFlag = (flag: string, setting: NumericSetting, raw: string | undefined): number => {
  if (raw === undefined) return setting.fallback;
  const problem = outOfBounds(setting, Number(raw));
  if (problem) {
    console.error(`--${flag} must be ${problem} (got "${raw.slice(0, 40)}")`);
    process.exit(2);
  }
  return Number(raw);
};
const leaseTtlSeconds = boundedFlag(
  'lease-ttl-seconds',
  NUMERIC_SETTINGS.LEASE_TTL_SECONDS,
  values['lease-ttl-seconds'],
);
const heartbeatIntervalSeconds = boundedFlag(
  'heartbeat-seconds',
  NUMERIC_SETTINGS.HEARTBEAT_INTERVAL_SECONDS,
  values['heartbeat-seconds'],
);
const port = Number(values.port ?? process.env.PORT ?? 3000);
const dataDir = values['data-dir'] ?? '.agent-scheduler';
const inMemory = values['in-memory'] === true;
mkdirSync(join(dataDir, 'dynamodb'), { recursive: true });

// JSON lines with timestamps, as the functions log in AWS. POWERTOOLS_LOG_LEVEL=WARN shows less.
const log = new Logger({ serviceName: 'agent-scheduler' });

if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  console.error(
    `the port must be a number from 0 to 65535 (got "${String(values.port ?? process.env.PORT).slice(0, 20)}")`,
  );
  process.exit(2);
}
// Before any emulator starts: a port in use is one line, at once, not a stack trace after them.
if (port !== 0 && !(await isPortFree(port))) {
  console.error(
    `port ${port} is in use: stop what listens there, or pick another, e.g. PORT=${port === 65_535 ? 3000 : port + 1} npm start`,
  );
  process.exit(2);
}

/** The key operators sign with under `--iam`, from the environment as the AWS SDKs read it. */
function iamSettings() {
  const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey } = process.env;
  if (!accessKeyId || !secretAccessKey) {
    console.error('--iam checks signatures made with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: set both');
    process.exit(2);
  }
  const region = process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1';
  return { region, credentials: { accessKeyId, secretAccessKey } };
}

const [dynamodbLocal, sqsEmulator] = await Promise.all([
  startDynamoDbLocal(inMemory ? { inMemory: true } : { dbPath: join(dataDir, 'dynamodb') }),
  startSqsEmulator({}),
]);
const dynamodb = localDynamoDbClient(dynamodbLocal.endpoint);
const sqs = localSqsClient(sqsEmulator.endpoint);
const tables = tableNamesFor('agent-scheduler');
await provisionTables(dynamodb, tables);
const queues = await provisionQueues(sqs, 'agent-scheduler', EXAMPLE_SCHEDULER.queues);

const scheduleBackend = new LocalScheduleBackend(log);
const events = new LocalEventFeed(join(dataDir, 'events.jsonl'));
/** Every event also makes a log line: one per task transition, as it happens. */
const loggedEvents: EventPublisher = {
  publish: async (published) => {
    for (const { type, time: _time, version: _version, ...fields } of published) log.info(type, fields);
    await events.publish(published);
  },
};
const scheduler = new Scheduler(
  createContext({
    dynamodb,
    sqs,
    tables,
    queues,
    log,
    scheduleBackend,
    events: loggedEvents,
    // Locally schedules fire on time; a fire not recorded 5 s after its time was missed (the runner was down).
    // An idle local worker polls at least every 2 s: nothing is billed here, and work is picked up quickly.
    // Events cost nothing here either: the feed shows every task's way.
    settings: {
      missedRunGraceSeconds: 5,
      idleRetryMaxMs: 2_000,
      routineEvents: true,
      leaseTtlSeconds,
      heartbeatIntervalSeconds,
    },
    declaredSchedules: EXAMPLE_SCHEDULER.schedules ?? [],
  }),
);

// Keep the operator token across restarts of a persistent store, so scripts and the CLI keep working.
const localFile = join(dataDir, 'local.json');
const previous =
  !inMemory && existsSync(localFile)
    ? (JSON.parse(readFileSync(localFile, 'utf8')) as { operatorToken?: string })
    : {};
const operatorToken = previous.operatorToken ?? `op_${randomBytes(24).toString('base64url')}`;
const iam = values.iam ? iamSettings() : undefined;
const server = await startLocalServer({
  scheduler,
  agents: scheduler.ctx.agents,
  operatorToken,
  ...(iam ? { operatorSigV4: { region: iam.region, credentials: [iam.credentials] } } : {}),
  port,
  log,
  events,
});
const connection = iam
  ? { endpoint: server.url, auth: 'iam', region: iam.region }
  : { endpoint: server.url, operatorToken };
writeFileSync(localFile, `${JSON.stringify(connection, null, 2)}\n`, { mode: 0o600 });
// The SQS emulator keeps nothing across restarts: hint every task still queued from a previous run. Served while
// this runs: Workers of a killed stack get their heartbeats in first (494 hints took some 20 s on two busy cores).
const restoreStarted = performance.now();
const restored = await scheduler.reconcile({ everything: true });
const restoreMs = Math.round(performance.now() - restoreStarted);

const supervisorMs = Number(values['supervisor-seconds']) * 1_000;
const supervisor = setInterval(() => {
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
    .catch((error: unknown) => log.error('supervisor pass failed', { error: String(error) }));
}, supervisorMs);
scheduleBackend.start(
  async (record, scheduledTime) => {
    const fired = await runAs('scheduleFire', () =>
      fireSchedule(scheduler, {
        schedule: record.name,
        scheduledTime: new Date(scheduledTime).toISOString(),
        overlap: record.overlap,
        missedRuns: record.missedRuns,
        task: record.task,
      }),
    );
    log.info('schedule fired', { schedule: record.name, ...fired });
  },
  await scheduler.listSchedules(),
);

console.log(`
agent-scheduler is running at ${server.url}  (ready in ${Math.round(performance.now() - started)} ms)
  queues:          ${EXAMPLE_SCHEDULER.queues.join(', ')}
  operators:       ${iam ? `AWS Signature V4 with ${iam.credentials.accessKeyId}, region ${iam.region}` : `operator token ${operatorToken}`}
  data:            ${inMemory ? 'in memory (nothing is kept)' : dataDir}
  dynamodb local:  ${dynamodbLocal.endpoint} (pid ${dynamodbLocal.pid})
  sqs emulator:    ${sqsEmulator.endpoint}
  restored hints:  ${restored.redispatched.length} (in ${restoreMs} ms, while serving)
  leases:          ${leaseTtlSeconds} s, heartbeat every ${heartbeatIntervalSeconds} s
  events:          GET /v1/events?since=0, and ${join(dataDir, 'events.jsonl')}
  endpoint and operator credentials are in ${localFile}

Next: npx agent-scheduler agents create --name worker-1 --queue research
Ctrl-C stops everything.
`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  clearInterval(supervisor);
  scheduleBackend.stop();
  await server.close();
  await Promise.allSettled([dynamodbLocal.stop(), sqsEmulator.stop()]);
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
