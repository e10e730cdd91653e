/**
 * `npm run chaos:fleet -- --tasks N --agents M --python-share F --seed S [--concurrency C] [--lease-ttl-seconds T]
 * [--kill-every-seconds K] [--drain-seconds D] [--json]`
 *
 * Runs the HTTP chaos run's work on a fleet of agent processes, Python and TypeScript (`--python-share` of them
 * Python, rounded up; default 0.5), through a fault-injecting proxy, killing processes with SIGKILL about every
 * `--kill-every-seconds` (default 10) while the faults last (`run-fleet-chaos.ts`), and prints its figures: tasks,
 * the fleet, violations, double runs, lost results, faults by kind and where they fell, the time it took. Exits
 * non-zero on any violation. `CHAOS_KEEP_LOGS=1` keeps the processes' execution logs.
 */
import { integer, readOptions, share } from './command-line';
import { summaryLines } from './fleet-report';
import { runFleetChaos } from './run-fleet-chaos';

const values = readOptions({
  tasks: { type: 'string', default: '2000' },
  agents: { type: 'string', default: '8' },
  'python-share': { type: 'string', default: '0.5' },
  seed: { type: 'string', default: '1' },
  concurrency: { type: 'string', default: '4' },
  'lease-ttl-seconds': { type: 'string', default: '5' },
  'kill-every-seconds': { type: 'string', default: '10' },
  'drain-seconds': { type: 'string', default: '600' },
  json: { type: 'boolean', default: false },
});

const report = await runFleetChaos({
  tasks: integer('tasks', values.tasks, 1, 1_000_000),
  agents: integer('agents', values.agents, 1, 200),
  pythonShare: share('python-share', values['python-share'], 1),
  seed: integer('seed', values.seed, 0, 2 ** 31),
  concurrency: integer('concurrency', values.concurrency, 1, 100),
  leaseTtlSeconds: integer('lease-ttl-seconds', values['lease-ttl-seconds'], 2, 3_600),
  killEverySeconds: integer('kill-every-seconds', values['kill-every-seconds'], 1, 86_400),
  drainTimeoutMs: integer('drain-seconds', values['drain-seconds'], 10, 86_400) * 1_000,
});

if (values.json) console.log(JSON.stringify(report));
else console.log(summaryLines(report).join('\n'));
process.exit(report.violations === 0 ? 0 : 1);
