/**
 * Dependencies in memory, as `dependency-table.ts` keeps them: each task's dependents, its inputs and its kept
 * result; a link marks the linked task on the fake task store's record, as the adapter does on the state item.
 */
import type * as DependencyPort from '#core/ports/dependency-store';
import type { Task } from '#domain/task';
import type { FakeTaskStore } from './fake-task-store';

export class FakeDependencyStore implements DependencyPort.DependencyStore {
  private readonly dependents = new Map<string, Set<string>>();
  private readonly inputs = new Map<string, Map<string, DependencyPort.StoredInput>>();
  /** Results kept once for their dependents, with the time they are kept until. */
  private readonly results = new Map<string, { result: unknown; purgeAt: number }>();

  constructor(private readonly tasks: FakeTaskStore) {}

  async addDependent(taskId: string, dependentId: string): Promise<Task | undefined> {
    const set = this.dependents.get(taskId) ?? new Set<string>();
    const added = !set.has(dependentId);
    set.add(dependentId);
    this.dependents.set(taskId, set);
    const marked = await this.tasks.write('addDependent', taskId, (r) => {
      r.task = {
        ...r.task,
        hasDependents: true,
        ...(added ? { dependentCount: (r.task.dependentCount ?? 0) + 1 } : {}),
      };
      return true;
    });
    return marked.ok ? marked.task : undefined;
  }

  async dependentsOf(taskId: string): Promise<{ ids: string[] }> {
    return { ids: [...(this.dependents.get(taskId) ?? [])] };
  }

  async putInput(
    dependentId: string,
    dependencyId: string,
    outcome: DependencyPort.StoredInput,
  ): Promise<void> {
    const map = this.inputs.get(dependentId) ?? new Map<string, DependencyPort.StoredInput>();
    map.set(dependencyId, structuredClone(outcome));
    this.inputs.set(dependentId, map);
  }

  async inputsOf(taskId: string): Promise<Map<string, DependencyPort.StoredInput>> {
    return new Map(this.inputs.get(taskId) ?? []);
  }

  async keepResult(
    task: Pick<Task, 'taskId' | 'result'>,
    neededUntil: number,
    purgeAt: number,
  ): Promise<void> {
    const kept = this.results.get(task.taskId);
    if (kept && kept.purgeAt >= neededUntil) return;
    this.results.set(task.taskId, { result: structuredClone(task.result ?? null), purgeAt });
  }

  async keptResults(taskIds: readonly string[]): Promise<Map<string, unknown>> {
    return new Map(
      taskIds.flatMap((id) => {
        const kept = this.results.get(id);
        return kept ? [[id, structuredClone(kept.result)] as const] : [];
      }),
    );
  }
}
