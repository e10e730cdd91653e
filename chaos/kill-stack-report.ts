/**
 * What a kill -9 run reports: the outages against their bound, and, from the handlers' records and the server's
 * event feed, tasks lost, finished twice, run twice at once or run again after they finished.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Task } from '#sdk/types';

export interface Outage {
  /** Kill to the restarted server answering `/v1/health`. */
  readonly ms: number;
  /** The restart alone: spawn to the server answering `/v1/health`. */
  readonly startMs: number;
  /**
   * What `local/start.ts` itself took (its banner's "ready in"): both emulators, the tables, and re-sending the
   * hints of queued tasks; the rest of `startMs` is loading the TypeScript.
   */
  readonly readyInMs: number;
  readonly restoredHints: number;
  /** Re-sending those hints, after the server answers. */
  readonly restoreMs: number;
  /** Tasks finished (by the handlers' record) when the stack was killed. */
  readonly finishedAtKill: number;
  /** The DynamoDB Local JVM of the killed stack was still running after the group kill. */
  readonly staleJvmAfterGroupKill: boolean;
}

export interface KillStackReport {
  readonly tasks: number;
  readonly workers: number;
  readonly concurrency: number;
  readonly seed: number;
  readonly leaseTtlSeconds: number;
  readonly heartbeatSeconds: number;
  readonly marginMs: number;
  /** TTL − heartbeat − margin: every outage must be shorter. */
  readonly outageBoundMs: number;
  readonly outages: readonly Outage[];
  readonly outagesWithinBound: boolean;
  /** After a SIGKILL of the server process alone, its DynamoDB Local JVM kept running. */
  readonly staleJvmAfterServerKill: boolean | undefined;
  readonly firstStartMs: number;
  readonly durationMs: number;
  readonly drainMs: number;
  readonly drained: boolean;
  readonly byStatus: Readonly<Record<string, number>>;
  readonly lost: number;
  /** Tasks with more than one `task.completed` in the server's event feed. */
  readonly finishedTwice: number;
  /** Tasks whose handler returned more than once (the Worker's side of a re-run). */
  readonly handlerReturnedTwice: number;
  /** Handlers stopped by their signal: the Worker reckoned their lease over (the stack was down too long). */
  readonly handlerAborts: number;
  /** Pairs of runs of one task that overlapped in time, each from its start to its return or abort. */
  readonly overlappingRuns: number;
  /** `task.completed` events in the feed: one per task when nothing finished twice. */
  readonly completedEvents: number;
  readonly rerunAfterFinish: number;
  /** For each re-run: the task, and seconds from its handler's first return to the next start. */
  readonly reruns: readonly { taskId: string; afterSeconds: number }[];
  /** The handler records (ms from the first start) of every task run twice at once or again after it finished. */
  readonly twiceRun: Readonly<Record<string, readonly string[]>>;
  readonly handlerStarts: number;
  readonly handlerEnds: number;
  /** `error` events of the Workers: heartbeats, claims and completions that failed while the stack was down. */
  readonly workerErrors: number;
  readonly violations: number;
}

export interface HandlerRecord {
  readonly taskId: string;
  readonly kind: 'start' | 'end' | 'abort';
  readonly attempt: number;
  readonly leaseEpoch: number;
  readonly at: number;
}

/**
 * Pairs of one task's runs that overlap in time: a run lasts from its start to its return or abort (the next
 * record of the same lease), and one never ended lasts to the end.
 */
function overlapsOf(records: readonly HandlerRecord[]): number {
  const runs = records
    .filter((r) => r.kind === 'start')
    .map((start) => ({
      start: start.at,
      end:
        records.find((r) => r.kind !== 'start' && r.leaseEpoch === start.leaseEpoch && r.at >= start.at)
          ?.at ?? Number.POSITIVE_INFINITY,
    }));
  let pairs = 0;
  runs.forEach((run, i) => {
    for (const other of runs.slice(i + 1)) if (run.start < other.end && other.start < run.end) pairs++;
  });
  return pairs;
}

/** The server's record of successes: `task.completed` in the event feed, kept across restarts, by task. */
export function completedEventsOf(dataDir: string): Map<string, number> {
  const completedEvents = new Map<string, number>();
  for (const line of readFileSync(join(dataDir, 'events.jsonl'), 'utf8').split('\n')) {
    if (!line) continue;
    const event = JSON.parse(line) as { type?: string; detail?: { taskId?: string }; taskId?: string };
    const taskId = event.taskId ?? event.detail?.taskId;
    if (event.type === 'task.completed' && taskId)
      completedEvents.set(taskId, (completedEvents.get(taskId) ?? 0) + 1);
  }
  return completedEvents;
}

/** What the run phase leaves for the report. */
export interface KillRunOutcome {
  readonly taskIds: readonly string[];
  readonly outages: readonly Outage[];
  /** The tasks as last listed by the drain. */
  readonly tasks: readonly Task[];
  readonly drained: boolean;
  readonly drainMs: number;
  readonly records: readonly HandlerRecord[];
  readonly completedEvents: ReadonlyMap<string, number>;
}

/** Each task's runs, by the handlers' records: overlapping, run again after a return, returned twice. */
function twiceRunTasks(outcome: KillRunOutcome) {
  const byTask = new Map<string, HandlerRecord[]>();
  for (const r of outcome.records) byTask.set(r.taskId, [...(byTask.get(r.taskId) ?? []), r]);
  const reruns: { taskId: string; afterSeconds: number }[] = [];
  let finishedTwice = 0;
  let handlerReturnedTwice = 0;
  let overlappingRuns = 0;
  /** Tasks run twice at once or again after they finished: their records go into the report. */
  const twice = new Set<string>();
  for (const taskId of outcome.taskIds) {
    const own = byTask.get(taskId) ?? [];
    const atOnce = overlapsOf(own);
    overlappingRuns += atOnce;
    if (atOnce > 0) twice.add(taskId);
    const firstEnd = own.find((r) => r.kind === 'end');
    const startAfter = firstEnd && own.find((r) => r.kind === 'start' && r.at > firstEnd.at);
    if (firstEnd && startAfter) {
      reruns.push({ taskId, afterSeconds: Math.round((startAfter.at - firstEnd.at) / 100) / 10 });
      twice.add(taskId);
    }
    if ((outcome.completedEvents.get(taskId) ?? 0) > 1) finishedTwice++;
    if (own.filter((r) => r.kind === 'end').length > 1) handlerReturnedTwice++;
  }
  const twiceRun = Object.fromEntries(
    [...twice].map((id) => {
      const own = byTask.get(id) ?? [];
      const first = own[0]?.at ?? 0;
      return [id, own.map((r) => `${r.kind} epoch ${r.leaseEpoch} attempt ${r.attempt} +${r.at - first} ms`)];
    }),
  );
  return { reruns, finishedTwice, handlerReturnedTwice, overlappingRuns, twiceRun };
}

/** The figures of a run, and its violations: a task lost, finished twice, run again or dead; an outage too long. */
export function reportOf(
  settings: Pick<
    KillStackReport,
    | 'workers'
    | 'concurrency'
    | 'seed'
    | 'leaseTtlSeconds'
    | 'heartbeatSeconds'
    | 'marginMs'
    | 'outageBoundMs'
    | 'staleJvmAfterServerKill'
    | 'firstStartMs'
  > & { readonly started: number; readonly workerErrors: number },
  outcome: KillRunOutcome,
): KillStackReport {
  const { taskIds, outages, tasks, records, completedEvents } = outcome;
  const { reruns, finishedTwice, handlerReturnedTwice, overlappingRuns, twiceRun } = twiceRunTasks(outcome);
  const byStatus: Record<string, number> = {};
  for (const t of tasks) byStatus[t.status] = (byStatus[t.status] ?? 0) + 1;
  const terminal = new Set(
    tasks.filter((t) => t.status !== 'queued' && t.status !== 'leased').map((t) => t.taskId),
  );
  const lost = taskIds.filter((id) => !terminal.has(id)).length;
  const outagesWithinBound = outages.every((o) => o.ms < settings.outageBoundMs);
  const violations =
    lost +
    finishedTwice +
    reruns.length +
    overlappingRuns +
    (byStatus.dead ?? 0) +
    (outagesWithinBound ? 0 : 1);
  return {
    tasks: taskIds.length,
    workers: settings.workers,
    concurrency: settings.concurrency,
    seed: settings.seed,
    leaseTtlSeconds: settings.leaseTtlSeconds,
    heartbeatSeconds: settings.heartbeatSeconds,
    marginMs: settings.marginMs,
    outageBoundMs: settings.outageBoundMs,
    outages,
    outagesWithinBound,
    staleJvmAfterServerKill: settings.staleJvmAfterServerKill,
    firstStartMs: settings.firstStartMs,
    durationMs: Date.now() - settings.started,
    drainMs: outcome.drainMs,
    drained: outcome.drained,
    byStatus,
    lost,
    finishedTwice,
    handlerReturnedTwice,
    handlerAborts: records.filter((r) => r.kind === 'abort').length,
    overlappingRuns,
    completedEvents: [...completedEvents.values()].reduce((sum, n) => sum + n, 0),
    rerunAfterFinish: reruns.length,
    reruns,
    twiceRun,
    handlerStarts: records.filter((r) => r.kind === 'start').length,
    handlerEnds: records.filter((r) => r.kind === 'end').length,
    workerErrors: settings.workerErrors,
    violations,
  };
}
