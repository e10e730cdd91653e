/**
 * The figures of a supervisor pass, by name: what each pass reports (`CycleResult`), publishes as EMF metrics and
 * adds to the scheduler's cumulative counters (`cycle-stats.ts`). One list, so the metrics, the counters, the API's
 * answer and its schema name the same figures. Each is counted where its work happens:
 * - `pendingRuns`: queued tasks the pass looked at; `activeRuns`: leased tasks it looked at (those the due index
 *   named, those still leased to sessions found over, and those of live sessions whose deadline it read);
 * - `sessionsScanned`: agent sessions the pass's scans returned (the live sessions, whose tasks' deadlines it reads,
 *   and the sessions found over while holding tasks);
 * - `leasesRecovered`: leases taken back (requeued or dead);
 * - `wakeAttempts`, `wakesSucceeded`, `wakesFailed`: what the pass did to bring a queued task to an agent, one per
 *   task (see `ReconcileSummary.wakeAttempts`): a hint sent again, or a turn put in line, with the push wake that
 *   follows; or a push wake for a task whose hint just became visible;
 * - `noMatchingSession`: starving tasks whose queue no live session serves;
 * - `recentlyNotified`: queued tasks left alone because their hint went out recently (or waits behind a backlog);
 * - `unclaimable`: queued tasks no claim can take, their queue or the whole scheduler paused;
 * - `starved`, `needsAttention`: tasks the starvation ladder announced as starved, and marked;
 * - `spawnRequested`: workers asked for (`agent.spawnRequested`), one per queue at most;
 * - `errors`: errors the pass met and went on from.
 */

export const CYCLE_FIGURES = [
  'pendingRuns',
  'activeRuns',
  'sessionsScanned',
  'leasesRecovered',
  'wakeAttempts',
  'wakesSucceeded',
  'wakesFailed',
  'noMatchingSession',
  'recentlyNotified',
  'unclaimable',
  'starved',
  'spawnRequested',
  'needsAttention',
  'errors',
] as const;

export type CycleFigureName = (typeof CYCLE_FIGURES)[number];
export type CycleFigures = Readonly<Record<CycleFigureName, number>>;

/**
 * The figures that name the tasks they count (for `spawnRequested`, the task each request named: its queue's starving
 * task that has waited longest), at most `CYCLE_IDS_KEPT` each.
 */
export const CYCLE_ID_FIGURES = [
  'leasesRecovered',
  'wakesFailed',
  'noMatchingSession',
  'recentlyNotified',
  'unclaimable',
  'starved',
  'spawnRequested',
  'needsAttention',
] as const;

export type CycleIdFigureName = (typeof CYCLE_ID_FIGURES)[number];
export type CycleIds = Readonly<Record<CycleIdFigureName, readonly string[]>>;

/**
 * Task ids kept per figure: the first a pass counted. Enough to open a few tasks from the console; a deep backlog's
 * ids are in the task list, not here. 20 ids of 28 characters are some 600 bytes a figure in the stats item.
 */
export const CYCLE_IDS_KEPT = 20;

/** Ids for every id-bearing figure, as `of` gives them, at most `CYCLE_IDS_KEPT` each. */
export function cycleIds(of: (name: CycleIdFigureName) => readonly string[]): CycleIds {
  const ids: Partial<Record<CycleIdFigureName, readonly string[]>> = {};
  for (const name of CYCLE_ID_FIGURES) ids[name] = of(name).slice(0, CYCLE_IDS_KEPT);
  return ids as CycleIds;
}
