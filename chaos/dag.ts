/**
 * The chaos run's workflow: a random DAG of tasks with fan-out (a task many others depend on) and fan-in (joins of
 * up to ten), one in a hundred of whose tasks is doomed to die, and the checks of its history:
 *
 * - **premature start**: a claim of a task whose dependencies did not all succeed (its claim carries how each
 *   ended: every one must be there, succeeded, or the task was made claimable too early);
 * - **cascade**: a task with a dependency that did not succeed must end `cancelled` (the default policy), and one
 *   whose dependencies all succeeded must not be cancelled for it;
 * - each join succeeding once, and every task ending, are the run's own checks (duplicate terminals, never terminal).
 */
import { taskIdForIdempotencyKey } from '#domain/ids';

export interface DagTask {
  readonly taskId: string;
  readonly spec: Record<string, unknown>;
  readonly dependsOn: readonly string[];
  readonly doomed: boolean;
}

/** Every 50th task joins ten earlier ones; the rest depend on up to three; 1 % are doomed to die. */
export function buildDag(
  size: number,
  seed: number,
  random: () => number,
  base: Record<string, unknown>,
): DagTask[] {
  const tasks: DagTask[] = [];
  for (let n = 0; n < size; n++) {
    const key = `chaos-dag-${seed}-${n}`;
    // Dependencies come from earlier batches of 25 only: a batch's tasks are written in parallel.
    const before = n - (n % 25);
    const window = tasks.slice(Math.max(0, before - 150), before);
    const wanted = window.length === 0 ? 0 : n % 50 === 49 ? 10 : Math.floor(random() * 4);
    const dependsOn = new Set<string>();
    // Fan-out: a third of the picks go to the first tasks of the window, which many others then share.
    for (let i = 0; i < wanted * 3 && dependsOn.size < Math.min(wanted, window.length); i++) {
      const pick =
        random() < 0.33
          ? window[Math.floor(random() * Math.min(5, window.length))]
          : window[Math.floor(random() * window.length)];
      if (pick) dependsOn.add(pick.taskId);
    }
    const doomed = random() < 0.01;
    tasks.push({
      taskId: taskIdForIdempotencyKey(key),
      dependsOn: [...dependsOn],
      doomed,
      spec: {
        ...base,
        payload: { dag: n, ...(doomed ? { doom: true } : {}) },
        idempotencyKey: key,
        ...(dependsOn.size > 0 ? { dependsOn: [...dependsOn] } : {}),
      },
    });
  }
  return tasks;
}

export interface DagVerdict {
  readonly dagTasks: number;
  readonly joins: number;
  /** Claims of a task whose dependencies had not all succeeded. */
  readonly prematureStartCount: number;
  /** Tasks whose end does not follow from their dependencies' (not cancelled after a failed one, or cancelled without). */
  readonly cascadeViolationCount: number;
  readonly dagEnds: Readonly<Record<string, number>>;
}

export function checkDag(
  dag: readonly DagTask[],
  claims: readonly { taskId: string; dependencies?: Readonly<Record<string, { readonly status: string }>> }[],
  finalStatus: ReadonlyMap<string, string | undefined>,
  details: string[],
): DagVerdict {
  const byId = new Map(dag.map((t) => [t.taskId, t]));
  let prematureStartCount = 0;
  for (const claim of claims) {
    const task = byId.get(claim.taskId);
    if (!task || task.dependsOn.length === 0) continue;
    const missing = task.dependsOn.filter((id) => claim.dependencies?.[id]?.status !== 'succeeded');
    if (missing.length > 0) {
      prematureStartCount++;
      if (details.length < 20)
        details.push(`dag: ${task.taskId} claimed before ${missing.join(', ')} succeeded`);
    }
  }
  let cascadeViolationCount = 0;
  const dagEnds: Record<string, number> = {};
  for (const task of dag) {
    const status = finalStatus.get(task.taskId);
    if (status === undefined) continue;
    dagEnds[status] = (dagEnds[status] ?? 0) + 1;
    const failedDependency = task.dependsOn.some((id) => finalStatus.get(id) !== 'succeeded');
    const wrong = failedDependency ? status !== 'cancelled' : status === 'cancelled';
    if (wrong) {
      cascadeViolationCount++;
      if (details.length < 20)
        details.push(
          `dag: ${task.taskId} ended ${status} with dependencies ${task.dependsOn.map((id) => `${id}=${finalStatus.get(id)}`).join(', ')}`,
        );
    }
  }
  return {
    dagTasks: dag.length,
    joins: dag.filter((t) => t.dependsOn.length > 1).length,
    prematureStartCount,
    cascadeViolationCount,
    dagEnds,
  };
}
