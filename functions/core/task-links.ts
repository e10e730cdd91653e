/**
 * The tasks linked to a task, as the console draws its flow: its parent and root, the children its agent submitted,
 * the tasks it depends on and those that depend on it, and its failure hook; each read once, for its status.
 *
 * Cost, one call: the task (a consistent read), a page of its children (a query of the children index: keys only,
 * half a read unit a page), a page of its dependents (a consistent query, one read unit), with `dependsOn` the inputs
 * its ended dependencies left it (a consistent query), then the linked tasks at once (eventually consistent, half a
 * read unit each, 100 to a request). Nothing is written. Children and dependents stop at `LINKS_LISTED`.
 */

import { TaskNotFoundError } from '#domain/errors';
import { onFailureTaskIdOf } from '#domain/ids';
import { deathOf, type Task } from '#domain/task';
import type { SchedulerContext } from './context';

/** Children, and dependents, listed at most: the console draws a task's neighbourhood, not a whole tree. */
export const LINKS_LISTED = 50;

/** The ids linked to a task, by how, and the linked tasks found (a purged or unsubmitted one is missing). */
export interface TaskLinkIds {
  readonly task: Task;
  readonly children: readonly string[];
  readonly childrenTruncated: boolean;
  readonly dependencies: readonly string[];
  readonly dependents: readonly string[];
  readonly dependentsTruncated: boolean;
  /** Its `onFailure` task's id (made when it dies), when it has one. */
  readonly onFailure?: string;
  readonly found: ReadonlyMap<string, Task>;
}

export async function taskLinks(ctx: SchedulerContext, taskId: string): Promise<TaskLinkIds> {
  const task = await ctx.tasks.get(taskId);
  if (!task) throw new TaskNotFoundError(taskId);
  const [children, dependents, inputs] = await Promise.all([
    ctx.cascades.childrenOf(taskId, LINKS_LISTED + 1),
    ctx.dependencies.dependentsOf(taskId),
    task.dependencyCount ? ctx.dependencies.inputsOf(taskId) : new Map<string, unknown>(),
  ]);
  // Those not ended when it last looked (all of them while it waits), then those whose end it was told of.
  const dependencies = [...new Set([...(task.waitingOn ?? []), ...inputs.keys()])];
  const onFailure = task.hasOnFailure ? onFailureTaskIdOf(task.taskId, deathOf(task)) : undefined;
  const listedChildren = children.slice(0, LINKS_LISTED);
  const listedDependents = dependents.ids.slice(0, LINKS_LISTED);
  const ids = new Set(
    [
      task.parentTaskId,
      task.rootTaskId,
      task.failureOf?.taskId,
      onFailure,
      ...listedChildren,
      ...dependencies,
      ...listedDependents,
    ].filter((id): id is string => id !== undefined && id !== taskId),
  );
  const found = ids.size > 0 ? await ctx.tasks.getMany([...ids], { consistent: false }) : new Map();
  return {
    task,
    children: listedChildren,
    childrenTruncated: children.length > LINKS_LISTED,
    dependencies,
    dependents: listedDependents,
    dependentsTruncated: dependents.ids.length > LINKS_LISTED || dependents.startKey !== undefined,
    ...(onFailure === undefined ? {} : { onFailure }),
    found,
  };
}
