/**
 * `npm run chaos -- [--mode inprocess|http] --tasks N --agents M --seed S [--dag D] [--waitpoints W]
 * [--rate-limited R] [--labelled L] [--lease-ttl-seconds T] [--reconcile-after-seconds R] [--late-share F] [--sizes small|agent] [--seeds A-B]
 * [--rare-boost B] [--drain-seconds D] [--json]`
 * (`--lease-ttl-seconds`, `--reconcile-after-seconds`, `--late-share`, the share of requests delivered late,
 * `--sizes`, the sizes of results and checkpoints and the Workers' concurrency, `--seeds`, a range of seeds run one
 * after another with a line of figures each, and `--rare-boost`, how many times the fault shares are on rarely
 * called routes and writes (default 5), and `--drain-seconds`, how long the run waits for every task to end once
 * the fleet runs (default 300), are read in the HTTP mode; `--dag`, the tasks of a random workflow
 * run beside the flat ones, default 1,000, and `--waitpoints`, tasks among the flat ones whose first run suspends on
 * a waitpoint, answered by racing operators and callbacks or (8 %) left to time out, default 1,000, and
 * `--rate-limited`, tasks among the flat ones that name the run's budget with an estimate of 10 to 100 units, their
 * agents reporting usage (0 to 200) on every complete and fail, default 1,000, whose ledger must equal what the
 * committed grants and settlements owe it (seed 1 with the defaults, in 3 min 34 s on two shared cores: 1,224 grants
 * and 1,137 finishes reporting usage, 72 settlements' answers lost and sent again, 121,215 units expected and
 * found), and `--labelled`, tasks among the flat ones that require labels of agents registered with mixed labels
 * (`labels.ts`), every lease of them checked against its session's labels, default 2,000, in the in-process mode).
 *
 * Runs the scheduler under seeded faults and checks the history it records: in process, on the handlers
 * (`run-chaos.ts`), or through the HTTP edge and SDK Workers (`run-http-chaos.ts`). Exits non-zero on any
 * violation.
 */
import { integer, readOptions, share } from './command-line';
import { summaryLines } from './http-report';
import { summaryLines as inProcessSummaryLines } from './inprocess-report';
import { runChaos } from './run-chaos';
import { runHttpChaos } from './run-http-chaos';

const values = readOptions({
  mode: { type: 'string', default: 'inprocess' },
  tasks: { type: 'string', default: '1000' },
  agents: { type: 'string', default: '20' },
  dag: { type: 'string', default: '1000' },
  waitpoints: { type: 'string', default: '1000' },
  'rate-limited': { type: 'string', default: '1000' },
  labelled: { type: 'string', default: '2000' },
  seed: { type: 'string', default: '1' },
  json: { type: 'boolean', default: false },
  'lease-ttl-seconds': { type: 'string', default: '2' },
  'reconcile-after-seconds': { type: 'string', default: '2' },
  'late-share': { type: 'string', default: '0.01' },
  'drain-seconds': { type: 'string', default: '300' },
  sizes: { type: 'string', default: 'small' },
  'rare-boost': { type: 'string', default: '5' },
  seeds: { type: 'string' },
});

/** `--seeds 1-5` (or one seed, `--seeds 3`): the seeds to run one after another; `--seed` when absent. */
const seedsOf = (range: string | undefined): number[] => {
  if (range === undefined) return [integer('seed', values.seed, 0, 2 ** 31)];
  const [from, to = from] = range.split('-');
  const first = integer('seeds', from, 0, 2 ** 31);
  const last = integer('seeds', to, first, first + 1_000);
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
};

if (values.mode === 'http') {
  if (values.sizes !== 'small' && values.sizes !== 'agent') {
    console.error('--sizes must be small or agent');
    process.exit(2);
  }
  const sizes = values.sizes;
  const seeds = seedsOf(values.seeds);
  let violations = 0;
  for (const seed of seeds) {
    const report = await runHttpChaos({
      tasks: integer('tasks', values.tasks, 1, 1_000_000),
      agents: integer('agents', values.agents, 1, 1_000),
      seed,
      sizes,
      leaseTtlSeconds: integer('lease-ttl-seconds', values['lease-ttl-seconds'], 2, 3_600),
      reconcileAfterSeconds: integer('reconcile-after-seconds', values['reconcile-after-seconds'], 1, 3_600),
      lateShare: share('late-share', values['late-share'], 0.5),
      rareBoost: integer('rare-boost', values['rare-boost'], 1, 10),
      drainTimeoutMs: integer('drain-seconds', values['drain-seconds'], 10, 86_400) * 1_000,
    });
    violations += report.violations;
    if (values.json) console.log(JSON.stringify(report));
    else if (seeds.length > 1 || report.violations === 0) console.log(summaryLines(report).join('\n'));
    else console.log(JSON.stringify(report, null, 2));
  }
  process.exit(violations === 0 ? 0 : 1);
}
if (values.mode !== 'inprocess') {
  console.error('--mode must be inprocess or http');
  process.exit(2);
}

const report = await runChaos({
  tasks: integer('tasks', values.tasks, 1, 1_000_000),
  agents: integer('agents', values.agents, 1, 1_000),
  seed: integer('seed', values.seed, 0, 2 ** 31),
  dag: integer('dag', values.dag, 0, 1_000_000),
  waitpoints: integer('waitpoints', values.waitpoints, 0, 1_000_000),
  rateLimited: integer('rate-limited', values['rate-limited'], 0, 1_000_000),
  labelled: integer('labelled', values.labelled, 0, 1_000_000),
  drainTimeoutMs: 300_000,
});

if (values.json) console.log(JSON.stringify(report));
else console.log(inProcessSummaryLines(report).join('\n'));
process.exit(report.violations === 0 ? 0 : 1);
