/**
 * Cancel and redrive, each confirmed first; approve and reject a suspended task's waitpoint, each in a form that
 * stays open until the API answered; clear the attention mark, at once (it changes nothing but the mark). The outcome
 * says the task's new status, or what became of it.
 */
import { api } from '../api';
import { formDialog } from '../dialog';
import { el } from '../dom';
import { field, formValue } from '../fields';
import type { ViewContext } from '../view';

/** Most characters of a rejection's reason, as the API takes it. */
const REASON_CHARS = 2_048;

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

export const cancelTree = (taskId: string, trigger: HTMLElement, context: ViewContext): Promise<void> =>
  context.confirmThenAct(
    {
      title: `Cancel task ${taskId} and its descendants?`,
      text: 'The task and every open task it led to (its children, theirs, and so on) end cancelled; tasks that ended already stay as they are. A large tree is finished by the supervisor within a minute or two.',
      trigger,
    },
    async () => {
      const task = await api.cancelTask(taskId, true);
      const tree = task.cascade;
      const left = tree && !tree.done ? `; ${tree.pending} still to look at` : '';
      return `Task ${task.taskId} now ${task.status}; ${tree?.cancelled ?? 0} descendants cancelled${left}.`;
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

/** Clears the starvation ladder's mark: nothing else of the task changes, so nothing is asked first. */
export const clearAttention = (taskId: string, context: ViewContext): Promise<void> =>
  context.act(async () => {
    const task = await api.clearAttention(taskId);
    return `Task ${task.taskId}: attention cleared (${task.status}).`;
  });

/** A suspended task and the waitpoint it waits on. */
export interface Suspension {
  readonly taskId: string;
  readonly waitpointId: string;
}

/**
 * Completes the waitpoint with the JSON typed in the form, or with no data when it is left empty. Text that is not
 * JSON is refused in the form, and nothing is sent.
 */
export async function approveWaitpoint(
  { taskId, waitpointId }: Suspension,
  trigger: HTMLElement,
  context: ViewContext,
): Promise<void> {
  const data = el('textarea', { name: 'data', rows: 6, spellcheck: 'false' });
  const approved = await formDialog({
    title: `Approve waitpoint ${waitpointId}?`,
    text: `Task ${taskId} is queued again, and the agent that claims it is handed the data below.`,
    trigger,
    fields: [field('Data (JSON)', data, 'Any JSON value, up to 64 KB; leave it empty to send no data.')],
    submit: async () => {
      const text = data.value.trim();
      let value: unknown;
      if (text !== '') {
        try {
          value = JSON.parse(text);
        } catch (error) {
          data.focus();
          throw new Error(`Data (JSON) is not valid JSON: ${(error as Error).message}`);
        }
      }
      await api.completeWaitpoint(waitpointId, value === undefined ? {} : { data: value });
    },
  });
  if (approved) await context.act(async () => `Waitpoint ${waitpointId} approved: task ${taskId} resumes.`);
}

/** Rejects the waitpoint with the reason typed in the form, which is required. */
export async function rejectWaitpoint(
  { taskId, waitpointId }: Suspension,
  trigger: HTMLElement,
  context: ViewContext,
): Promise<void> {
  const reason = el('textarea', { name: 'reason', rows: 4, required: true, maxlength: REASON_CHARS });
  const rejected = await formDialog({
    title: `Reject waitpoint ${waitpointId}?`,
    text: `Task ${taskId} is queued again, and the agent that claims it is handed the rejection and its reason.`,
    trigger,
    fields: [
      field('Reason', reason, `Why, for the agent: 1 to ${REASON_CHARS.toLocaleString('en')} characters.`),
    ],
    submit: async (form) => {
      const text = formValue(form, 'reason');
      if (text === '') {
        reason.focus();
        throw new Error(`Reason: say why, in 1 to ${REASON_CHARS.toLocaleString('en')} characters.`);
      }
      await api.rejectWaitpoint(waitpointId, { reason: text });
    },
  });
  if (rejected) await context.act(async () => `Waitpoint ${waitpointId} rejected: task ${taskId} resumes.`);
}
