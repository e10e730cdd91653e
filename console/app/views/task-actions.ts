/** Cancel and redrive, each confirmed first; the outcome says the task's new status. */
import { api } from '../api';
import { confirmAction } from '../dialog';
import type { ViewContext } from '../view';

export async function cancelTask(taskId: string, trigger: HTMLElement, context: ViewContext): Promise<void> {
  const confirmed = await confirmAction({
    title: `Cancel task ${taskId}?`,
    text: 'The task ends cancelled and will not run again. If an agent holds it, the agent is told at its next heartbeat and its later writes are refused.',
    trigger,
  });
  if (!confirmed) return;
  await context.act(async () => {
    const task = await api.cancelTask(taskId);
    return `Task ${task.taskId} cancelled: now ${task.status}.`;
  });
}

export async function redriveTask(taskId: string, trigger: HTMLElement, context: ViewContext): Promise<void> {
  const confirmed = await confirmAction({
    title: `Redrive task ${taskId}?`,
    text: 'The dead task goes back to its queue with a fresh set of attempts, and agents may claim it again.',
    trigger,
  });
  if (!confirmed) return;
  await context.act(async () => {
    const task = await api.redriveTask(taskId);
    return `Task ${task.taskId} redriven: now ${task.status}.`;
  });
}
