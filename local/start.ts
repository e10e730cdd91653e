/**
 * `npm start`: the whole system on this machine, with the example stack's queues and schedules (see
 * `dev-stack.ts`), on http://127.0.0.1:3000. Ctrl-C stops everything. In a user's project the same runs as
 * `agent-scheduler dev`.
 *
 *   npm start                  data kept under .agent-scheduler/
 *   npm start -- --in-memory   nothing kept
 *   PORT=4000 npm start        another port
 *   npm start -- --lease-ttl-seconds 10 --heartbeat-seconds 3   short leases, for a kill -9 run
 *   npm start -- --clock-offset-seconds 86400   the scheduler's clock a day ahead, on the data kept: a daily budget's
 *                              window has rolled
 *   npm start -- --iam         operator routes take AWS Signature V4 instead of the operator token, as a deployed
 *                              stack's do: signed with the key in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, for
 *                              AWS_REGION (default us-east-1)
 */
import { parseArgs } from 'node:util';
import { EXAMPLE_SCHEDULER } from '../infra/example-config';
import { DevStackUsageError, runDevStack } from './run-dev-stack';

const { values } = parseArgs({
  options: {
    'in-memory': { type: 'boolean', default: false },
    port: { type: 'string' },
    'data-dir': { type: 'string' },
    'supervisor-seconds': { type: 'string' },
    'lease-ttl-seconds': { type: 'string' },
    'heartbeat-seconds': { type: 'string' },
    iam: { type: 'boolean', default: false },
    'clock-offset-seconds': { type: 'string' },
  },
});
await runDevStack(
  {
    port: values.port,
    dataDir: values['data-dir'],
    inMemory: values['in-memory'],
    supervisorSeconds: values['supervisor-seconds'],
    leaseTtlSeconds: values['lease-ttl-seconds'],
    heartbeatSeconds: values['heartbeat-seconds'],
    iam: values.iam,
    clockOffsetSeconds: values['clock-offset-seconds'],
  },
  { command: 'npm start', queues: EXAMPLE_SCHEDULER.queues, schedules: EXAMPLE_SCHEDULER.schedules ?? [] },
).catch((error: unknown) => {
  if (!(error instanceof DevStackUsageError)) throw error;
  console.error(error.message);
  process.exitCode = 2;
});
