/**
 * What every dependency store promises (the port `DependencyStore`), as one suite over the DynamoDB adapter and
 * the fake: links counted once on the linked task, inputs kept as each dependency ended, a result kept once and
 * written again only when kept too short.
 */
import { describe, expect, it } from 'vitest';
import type { DependencyStore } from '#core/ports/dependency-store';
import type { TaskStore } from '#core/ports/task-store';
import { newTask } from './task-store-contract';

export interface DependenciesUnderTest {
  readonly dependencies: DependencyStore;
  readonly tasks: TaskStore;
  now(): number;
}

export function dependencyStoreContract(name: string, subject: () => DependenciesUnderTest): void {
  describe(`the dependency store contract: ${name}`, () => {
    it('counts each dependent once, however often it is linked; a task that is not there is not marked', async () => {
      const { dependencies, tasks, now } = subject();
      const task = newTask(now());
      await tasks.create(task, now());
      const purgeAt = Math.ceil(now() / 1_000) + 3_600;
      await dependencies.addDependent(task.taskId, 't_firstdependentfirstdepende', purgeAt);
      await dependencies.addDependent(task.taskId, 't_firstdependentfirstdepende', purgeAt);
      const marked = await dependencies.addDependent(task.taskId, 't_seconddependentseconddepen', purgeAt);
      expect(marked).toMatchObject({ hasDependents: true, dependentCount: 2 });
      expect((await dependencies.dependentsOf(task.taskId)).ids.sort()).toEqual([
        't_firstdependentfirstdepende',
        't_seconddependentseconddepen',
      ]);
      const missing = newTask(now());
      expect(await dependencies.addDependent(missing.taskId, task.taskId, purgeAt)).toBeUndefined();
      expect(await tasks.get(missing.taskId)).toBeUndefined();
    });

    it('keeps, for a dependent, how each dependency ended: a result copied, a result kept once, an error', async () => {
      const { dependencies, now } = subject();
      const dependent = newTask(now()).taskId;
      const purgeAt = Math.ceil(now() / 1_000) + 3_600;
      const error = { message: 'no', retryable: false };
      await dependencies.putInput(
        dependent,
        't_copiedcopiedcopiedcopiedco',
        { status: 'succeeded', result: { n: 1 } },
        purgeAt,
      );
      await dependencies.putInput(
        dependent,
        't_keptkeptkeptkeptkeptkeptke',
        { status: 'succeeded', resultKept: true },
        purgeAt,
      );
      await dependencies.putInput(
        dependent,
        't_deaddeaddeaddeaddeaddeadde',
        { status: 'dead', error },
        purgeAt,
      );
      expect(Object.fromEntries(await dependencies.inputsOf(dependent))).toEqual({
        t_copiedcopiedcopiedcopiedco: { status: 'succeeded', result: { n: 1 } },
        t_keptkeptkeptkeptkeptkeptke: { status: 'succeeded', resultKept: true },
        t_deaddeaddeaddeaddeaddeadde: { status: 'dead', error },
      });
      expect(await dependencies.inputsOf(newTask(now()).taskId)).toEqual(new Map());
    });

    it('keeps a result once, and writes it again only when it is kept shorter than needed', async () => {
      const { dependencies, now } = subject();
      const task = newTask(now());
      const other = newTask(now());
      const at = Math.ceil(now() / 1_000);
      await dependencies.keepResult({ taskId: task.taskId, result: { v: 1 } }, at + 100, at + 100);
      expect(Object.fromEntries(await dependencies.keptResults([task.taskId, other.taskId]))).toEqual({
        [task.taskId]: { v: 1 },
      });
      // Kept long enough: not written again.
      await dependencies.keepResult({ taskId: task.taskId, result: { v: 2 } }, at + 100, at + 200);
      expect((await dependencies.keptResults([task.taskId])).get(task.taskId)).toEqual({ v: 1 });
      await dependencies.keepResult({ taskId: task.taskId, result: { v: 3 } }, at + 150, at + 200);
      expect((await dependencies.keptResults([task.taskId])).get(task.taskId)).toEqual({ v: 3 });
    });
  });
}
