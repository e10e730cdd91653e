/**
 * The bench's figures over commits, kept in the repository (`bench/history.csv`): one row per recorded run
 * (`npm run bench -- --record`), so a change that costs more per task shows as a step in the file. The units a
 * single-call lifecycle may cost are held in `bench/budget.json`, which `npm test` enforces.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { BenchReport } from './run-bench';

export const HISTORY_FILE = fileURLToPath(new URL('./history.csv', import.meta.url));
export const BUDGET_FILE = fileURLToPath(new URL('./budget.json', import.meta.url));

const COLUMNS = [
  'commit',
  'date',
  'tasks',
  'agents',
  'batch',
  'payloadBytes',
  'writeUnits',
  'readUnits',
  'indexWriteUnits',
  'failedWriteUnits',
  'sqsRequests',
  'apiCalls',
  'lambdaMs',
  'localLambdaMs',
  'usdPerMillionTasks',
  'tasksPerSecond',
] as const;

/** The units a lifecycle may cost, per run shape: what `docs/guarantees.md` documents and `npm test` holds to. */
export interface UnitBudget {
  readonly dynamodbWriteUnits: number;
  readonly dynamodbReadUnits: number;
}

export function readBudget(): { readonly singleCall: UnitBudget; readonly batchOf10: UnitBudget } {
  return JSON.parse(readFileSync(BUDGET_FILE, 'utf8'));
}

const commitOf = (): string => {
  try {
    const head = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { encoding: 'utf8' }).trim();
    // The history itself changes with every recorded run: a second run on one commit is not a change of code.
    const dirty = execFileSync(
      'git',
      ['status', '--porcelain', '--untracked-files=no', '--', '.', ':(exclude)bench/history.csv'],
      { encoding: 'utf8' },
    );
    return dirty.trim() ? `${head}+` : head;
  } catch {
    return 'unknown';
  }
};

export function historyRow(report: BenchReport, commit = commitOf(), date = new Date()): string {
  const t = report.perTask;
  const values: Record<(typeof COLUMNS)[number], string | number> = {
    commit,
    date: date.toISOString().slice(0, 10),
    tasks: report.tasks,
    agents: report.agents,
    batch: report.batch,
    payloadBytes: report.payloadBytes,
    writeUnits: t.dynamodbWriteUnits,
    readUnits: t.dynamodbReadUnits,
    indexWriteUnits: t.dynamodbIndexWriteUnits,
    failedWriteUnits: t.dynamodbFailedWriteUnits,
    sqsRequests: t.sqsRequests,
    apiCalls: t.apiCalls,
    lambdaMs: t.lambdaMs,
    localLambdaMs: t.localLambdaMs,
    usdPerMillionTasks: report.usdPerMillionTasks,
    tasksPerSecond: report.tasksPerSecond,
  };
  return COLUMNS.map((column) => values[column]).join(',');
}

/** Appends the run to `bench/history.csv` (with its header when the file is new). */
export function recordHistory(report: BenchReport, file = HISTORY_FILE): string {
  const row = historyRow(report);
  if (!existsSync(file)) appendFileSync(file, `${COLUMNS.join(',')}\n`);
  appendFileSync(file, `${row}\n`);
  return row;
}
