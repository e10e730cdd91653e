/**
 * `npm run chaos:kill -- --tasks 600 --workers 10 --concurrency 4 --kills 3 --seed 1`
 *
 * Kills the whole local stack with SIGKILL under a running Worker fleet and starts it again on the same data (see
 * `run-kill-stack.ts`). Prints a JSON report; exits non-zero on a lost task, a task finished twice, a finished task
 * run again, or an outage longer than the lease allows.
 */
import { integer, readOptions } from './command-line';
import { runKillStack } from './run-kill-stack';

const values = readOptions({
  tasks: { type: 'string', default: '600' },
  workers: { type: 'string', default: '10' },
  concurrency: { type: 'string', default: '4' },
  kills: { type: 'string', default: '3' },
  seed: { type: 'string', default: '1' },
  'lease-ttl-seconds': { type: 'string', default: '30' },
  'heartbeat-seconds': { type: 'string', default: '3' },
  'task-timeout-seconds': { type: 'string', default: '45' },
});

const report = await runKillStack({
  tasks: integer('tasks', values.tasks, 1, 100_000),
  workers: integer('workers', values.workers, 1, 100),
  concurrency: integer('concurrency', values.concurrency, 1, 100),
  kills: integer('kills', values.kills, 0, 100),
  seed: integer('seed', values.seed, 0, 2 ** 31),
  leaseTtlSeconds: integer('lease-ttl-seconds', values['lease-ttl-seconds'], 2, 3_600),
  heartbeatSeconds: integer('heartbeat-seconds', values['heartbeat-seconds'], 1, 3_600),
  taskTimeoutSeconds: integer('task-timeout-seconds', values['task-timeout-seconds'], 1, 3_600),
  verbose: true,
});
console.log(JSON.stringify(report, null, 2));
process.exit(report.violations === 0 ? 0 : 1);
