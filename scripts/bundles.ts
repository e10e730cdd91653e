/**
 * Bundles every function as the construct and the package build do (esbuild, ESM, minified, node22) and measures each bundle: its
 * size, what takes the most room (from esbuild's metafile), and the time a fresh Node process takes to import it
 * (a local stand-in for the cold-start import cost).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build, type Metafile } from 'esbuild';
import { RESOURCE_ENV, TEXT_SETTINGS } from '../functions/domain/settings';
import { bundleOptions, FUNCTION_ENTRIES } from '../infra/scheduler-function';

/** Environment a function reads at start-up; dummy values, nothing is called while importing. */
const DUMMY_ENV = {
  [RESOURCE_ENV.tasksTable]: 'tasks',
  [RESOURCE_ENV.agentsTable]: 'agents',
  [RESOURCE_ENV.leasesTable]: 'leases',
  [TEXT_SETTINGS.queues.env]: JSON.stringify({
    base: 'https://sqs.us-east-1.amazonaws.com/000000000000/',
    queues: { q: ['c', 'h', 'n', 'l'] },
  }),
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'x',
  AWS_SECRET_ACCESS_KEY: 'y',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  [RESOURCE_ENV.scheduleGroup]: 'group',
  [RESOURCE_ENV.scheduleTarget]: 'arn:aws:lambda:us-east-1:000000000000:function:fire',
  [RESOURCE_ENV.scheduleRole]: 'arn:aws:iam::000000000000:role/scheduler',
  [RESOURCE_ENV.scheduleDeadLetters]: 'arn:aws:sqs:us-east-1:000000000000:dead-letters',
  POWERTOOLS_SERVICE_NAME: 'size',
};

function topInputs(metafile: Metafile, output: string, count: number) {
  const inputs = metafile.outputs[output]?.inputs ?? {};
  const byPackage = new Map<string, number>();
  for (const [path, { bytesInOutput }] of Object.entries(inputs)) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
    const key = match?.[1] ?? 'agent-scheduler';
    byPackage.set(key, (byPackage.get(key) ?? 0) + bytesInOutput);
  }
  return [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, count);
}

function importMs(file: string, runs: number): number {
  const script = `const t=performance.now();await import(${JSON.stringify(file)});console.log(performance.now()-t)`;
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH, ...DUMMY_ENV },
      encoding: 'utf8',
    });
    if (run.status !== 0) throw new Error(`importing ${file} failed: ${run.stderr.slice(-600)}`);
    times.push(Number(run.stdout.trim()));
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)] ?? Number.NaN;
}

export interface BundleReport {
  readonly function: string;
  readonly bytes: number;
  readonly gzipBytes: number;
  /** Median over `importRuns` fresh processes. */
  readonly coldImportMs: number;
  readonly largest: string;
}

export async function measureBundles(importRuns = 5): Promise<BundleReport[]> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-scheduler-size-'));
  const rows: BundleReport[] = [];
  try {
    for (const entry of FUNCTION_ENTRIES) {
      const options = bundleOptions(entry, join(dir, entry));
      const outfile = options.outfile;
      const result = await build({ ...options, metafile: true, logLevel: 'silent' });
      const metafile = result.metafile;
      const output = Object.keys(metafile.outputs).find((o) => o.endsWith('.mjs')) ?? '';
      rows.push({
        function: entry,
        bytes: statSync(outfile).size,
        gzipBytes: gzipSync(readFileSync(outfile)).length,
        coldImportMs: Math.round(importMs(outfile, importRuns) * 10) / 10,
        largest: topInputs(metafile, output, 3)
          .map(([name, size]) => `${name} ${(size / 1024).toFixed(0)} KB`)
          .join(', '),
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}
