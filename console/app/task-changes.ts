/**
 * A feed for a stack whose events are not served (a deployed one: they go to the EventBridge bus): the changes
 * seen among the newest tasks, read a page at a time through the same list the Tasks view reads. A task's change
 * is a new status or a new update time since the last read; the first read only takes note.
 */
import { api, type TaskSummary } from './api';

/** The newest tasks looked at by each read: one request. */
export const WATCHED = 50;

export interface TaskChange {
  /** Increasing, for keys. */
  readonly sequence: number;
  readonly task: TaskSummary;
  /** The status before, when the task was seen before. */
  readonly from?: string;
}

export class TaskChanges {
  /** Newest last; at most `keep`. */
  changes: TaskChange[] = [];
  private readonly seen = new Map<string, TaskSummary>();
  private sequence = 0;
  private primed = false;

  constructor(private readonly keep = 500) {}

  async read(signal?: AbortSignal): Promise<void> {
    const page = await api.listTasks({ limit: WATCHED }, signal);
    const fresh: TaskChange[] = [];
    for (const task of [...page.tasks].reverse()) {
      const before = this.seen.get(task.taskId);
      if (this.primed && (!before || before.updatedAt !== task.updatedAt || before.status !== task.status))
        fresh.push({ sequence: ++this.sequence, task, ...(before ? { from: before.status } : {}) });
      this.seen.set(task.taskId, task);
    }
    // Only the tasks still on the page are remembered: the map stays the size of a page.
    const onPage = new Set(page.tasks.map((task) => task.taskId));
    for (const taskId of this.seen.keys()) if (!onPage.has(taskId)) this.seen.delete(taskId);
    this.primed = true;
    this.changes = [...this.changes, ...fresh].slice(-this.keep);
  }
}
