/** A task id as a link to the task's page, its full id as the text. */
import { link } from '../dom';
import { taskHref } from '../router';

export const taskLink = (taskId: string, key = `task:${taskId}`) =>
  link(taskHref(taskId), taskId, { class: 'id', 'data-key': key });
