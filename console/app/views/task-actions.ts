/** Cancel and redrive, each confirmed first; the outcome says the task's new status. */
import { api } from '../api';
import type { ViewContext } from '../view';

export const cancelTask = (taskId: string, trigger: HTMLElement, context: ViewContext): Promise<void> =>
  context.confirmThenAct(
    {
      title: `Cancel task ${taskId}?`,
      text: 'The task ends cancelled and will not run again. If an agent holds it, the agent is told at its next heartbeat and its later writes are refused.',
      trigger,
    },
    async () => {
      const task = await api.cancelTask(taskId);
      return `Task ${task.taskId} cancelled: now ${task.status}.`;
    },
  );

export const redriveTask = (taskId: string, trigger: HTMLElement, context: ViewContext): Promise<void> =>
  context.confirmThenAct(
    {
      title: `Redrive task ${taskId}?`,
      text: 'The dead task goes back to its queue with a fresh set of attempts, and agents may claim it again.',
      trigger,
    },
    async () => {
      const task = await api.redriveTask(taskId);
      return `Task ${task.taskId} redriven: now ${task.status}.`;
    },
  );
