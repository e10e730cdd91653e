/**
 * The labelled tasks of the in-process chaos run, the labels of its agents, and the check of every grant against
 * them.
 *
 * The agents take their labels in turn from `LABEL_PROFILES` (agent `i` the profile `i % 5`): a fleet with GPUs of
 * two kinds, one with a T4, one with none; two profiles narrow their sessions (every session they open, a crashed
 * agent's next one too), so a claim that matched a turn against the agent's registered labels instead of its
 * session's would take work the session gave up. The labelled tasks take their requirement sets in turn from
 * `REQUIREMENT_SETS`: a value, `'*'`, two labels at once, and a set whose tasks have a concurrency key too. The first
 * three profiles meet every set between them, so a fleet of three or more serves each set (a fleet of five or more,
 * with one agent in five at least, crashes and pauses or not: a crashed agent comes back with the same labels).
 *
 * The check, once everything has stopped, reads only what DynamoDB committed: each lease of a task that requires
 * labels (its versions `leased`, by task and epoch) against the labels of the session it names, as that session's
 * item was written at its open. A lease whose session's labels do not meet its task's requirements is a mismatched
 * grant; a lease whose session no recorded write shows is counted apart (the check could not look at it).
 */
import { type Labels, meets, normaliseLabels, type Requirements } from '#domain/labels';
import type { History, SessionVersion } from './history';
import { explain } from './violation-details';

/** What an agent is registered with, and what each of its sessions narrows that to. */
export interface LabelProfile {
  readonly labels?: Readonly<Record<string, string | readonly string[]>>;
  readonly session?: Readonly<Record<string, string | readonly string[]>>;
}

export const LABEL_PROFILES: readonly LabelProfile[] = [
  { labels: { gpu: ['a100', 'h100'], model: 'claude' } },
  // Narrowed to its H100 and gpt: never an a100's task, nor claude's.
  { labels: { gpu: ['a100', 'h100'], model: ['claude', 'gpt'] }, session: { gpu: 'h100', model: 'gpt' } },
  { labels: { gpu: 't4' } },
  {},
  // Narrowed to its T4: never a gpt task.
  { labels: { gpu: 't4', model: 'gpt' }, session: { gpu: 't4' } },
];

/** A labelled task's requirements, and for one set a concurrency key (its lane the key's and the set's). */
export interface RequirementSet {
  readonly name: string;
  readonly require: Requirements;
  readonly keyed?: boolean;
}

export const REQUIREMENT_SETS: readonly RequirementSet[] = [
  { name: 'gpu=a100', require: { gpu: 'a100' } },
  { name: 'gpu=*', require: { gpu: '*' } },
  { name: 'gpu=h100,model=claude', require: { gpu: 'h100', model: 'claude' } },
  { name: 'gpu=t4', require: { gpu: 't4' } },
  { name: 'model=gpt+key', require: { model: 'gpt' }, keyed: true },
  { name: 'model=*', require: { model: '*' } },
];

/** Keys the keyed set's tasks are spread over. */
const KEYS = 3;

/** A labelled task's payload: its number in the run. */
export interface LabelledPayload {
  readonly l: number;
}

/** The labels agent `index` claims under: its session's, or its agent's when the session does not narrow them. */
export const sessionLabelsOf = (index: number): Labels => {
  const profile = LABEL_PROFILES[index % LABEL_PROFILES.length] ?? {};
  return normaliseLabels(profile.session ?? profile.labels ?? {});
};

/**
 * The requirement sets no agent of a fleet of `agents` meets: a run with labelled tasks needs none, or those tasks
 * would never end.
 */
export const unservedSets = (agents: number): string[] =>
  REQUIREMENT_SETS.filter(
    (set) => !Array.from({ length: agents }, (_, i) => sessionLabelsOf(i)).some((l) => meets(l, set.require)),
  ).map((set) => set.name);

/** The run's labelled tasks, each set's in turn. */
export function labelledSpecs(
  seed: number,
  count: number,
  common: Readonly<Record<string, unknown>>,
): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, l) => {
    const set = REQUIREMENT_SETS[l % REQUIREMENT_SETS.length] as RequirementSet;
    return {
      ...common,
      payload: { l } satisfies LabelledPayload,
      require: set.require,
      ...(set.keyed ? { concurrencyKey: `chaos-key-${l % KEYS}` } : {}),
      idempotencyKey: `chaos-${seed}-l${l}`,
    };
  });
}

/** What the check found of the leases of tasks that require labels. */
export interface LabelVerdict {
  /** Leases of tasks that require labels, each checked against its session's labels. */
  readonly grants: number;
  /** Those, by requirement set. */
  readonly grantsBySet: Readonly<Record<string, number>>;
  /** Sessions of the run that claimed under labels. */
  readonly sessions: number;
  /** Leases whose session's labels do not meet their task's requirements. */
  readonly mismatchedGrantCount: number;
  /** Leases whose session no committed write shows: not checked. */
  readonly unknownSessionCount: number;
}

const setName = (require: Requirements): string =>
  REQUIREMENT_SETS.find(
    (set) => JSON.stringify(normalised(set.require)) === JSON.stringify(normalised(require)),
  )?.name ??
  Object.entries(require)
    .map(([name, value]) => `${name}=${value}`)
    .join(',');

const normalised = (require: Requirements): [string, string][] =>
  Object.keys(require)
    .sort()
    .map((name) => [name, require[name] as string]);

/**
 * Every lease of a task that requires labels, against the labels of the session it was granted to (the session's
 * item as its open wrote it: a session's labels never change).
 */
export function checkLabelledGrants(history: Pick<History, 'tasks' | 'sessions'>): LabelVerdict {
  const labelsOf = new Map<string, SessionVersion['labels']>();
  for (const version of history.sessions)
    if (!labelsOf.has(version.sessionId)) labelsOf.set(version.sessionId, version.labels);
  const checked = new Set<string>();
  const grantsBySet: Record<string, number> = {};
  let mismatchedGrantCount = 0;
  let unknownSessionCount = 0;
  for (const version of history.tasks) {
    if (version.status !== 'leased' || !version.require || Object.keys(version.require).length === 0)
      continue;
    const lease = `${version.taskId}#${version.leaseEpoch}`;
    if (checked.has(lease)) continue;
    checked.add(lease);
    const set = setName(version.require);
    grantsBySet[set] = (grantsBySet[set] ?? 0) + 1;
    if (version.sessionId === undefined || !labelsOf.has(version.sessionId)) {
      unknownSessionCount++;
      explain('a lease of a labelled task whose session no write shows', { version });
      continue;
    }
    const labels = labelsOf.get(version.sessionId);
    if (!meets(labels, version.require)) {
      mismatchedGrantCount++;
      explain('a lease of a task whose requirements its session does not meet', { version, labels });
    }
  }
  return {
    grants: checked.size,
    grantsBySet,
    sessions: [...labelsOf.values()].filter((labels) => labels !== undefined).length,
    mismatchedGrantCount,
    unknownSessionCount,
  };
}

/** A run's violations of the labels: each mismatched grant, and each lease that could not be checked. */
export const labelViolations = (verdict: LabelVerdict): number =>
  verdict.mismatchedGrantCount + verdict.unknownSessionCount;
