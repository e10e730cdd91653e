/** Queues: depth by priority, age of the oldest queued task, leases, pause and limits, from `GET /v1/queues`. */
import { api, PRIORITIES, type QueueStats } from '../api';
import { button, el } from '../dom';
import { duration } from '../format';
import { DataTable } from '../table';
import type { View } from '../view';
import { describeLimits, editLimits } from './queue-limits';

const capitalised = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

export const queuesView: View = (root, context) => {
  const table = new DataTable('Queues', [
    'Queue',
    ...PRIORITIES.map(capitalised),
    'Oldest queued',
    'Leased',
    'State',
    'Limits',
    'Actions',
  ]);
  const note = el('p', { class: 'note' });
  root.append(
    el('h1', {}, 'Queues'),
    el('p', { class: 'lead' }, 'Tasks waiting by priority, tasks leased now, and each queue’s controls.'),
    table.element,
    note,
  );

  const togglePaused = async (queue: QueueStats, trigger: HTMLElement) => {
    const pausing = !queue.paused;
    await context.confirmThenAct(
      {
        title: `${pausing ? 'Pause' : 'Resume'} queue ${queue.name}?`,
        text: pausing
          ? `Agents claim nothing from ${queue.name} until it is resumed. Tasks already leased go on; retries and sweeps continue.`
          : `Agents claim from ${queue.name} again, and its idle agents are woken.`,
        trigger,
      },
      async () => {
        const control = pausing ? await api.pauseQueue(queue.name) : await api.resumeQueue(queue.name);
        return `Queue ${control.name} ${control.paused ? 'paused' : 'resumed'}.`;
      },
    );
  };

  const changeLimits = async (queue: QueueStats, trigger: HTMLElement) => {
    if (await editLimits(queue.name, queue.limits, trigger)) {
      await context.act(async () => `Limits of queue ${queue.name} saved.`);
    }
  };

  const row = (queue: QueueStats) => {
    const queued = PRIORITIES.reduce((sum, p) => sum + (queue.depth[p] ?? 0), 0);
    const verb = queue.paused ? 'Resume' : 'Pause';
    return [
      queue.name,
      ...PRIORITIES.map((p) => String(queue.depth[p] ?? 0)),
      queued > 0 ? duration(queue.oldestAgeSeconds) : 'none queued',
      String(queue.running),
      el(
        'span',
        { class: `badge ${queue.paused ? 'paused' : 'running'}` },
        queue.paused ? 'paused' : 'running',
      ),
      describeLimits(queue.limits),
      el(
        'div',
        { class: 'row-actions' },
        button(verb, (b) => togglePaused(queue, b), {
          'aria-label': `${verb} ${queue.name}`,
          'data-key': `pause:${queue.name}`,
          class: 'secondary',
        }),
        button('Limits', (b) => changeLimits(queue, b), {
          'aria-label': `Limits for ${queue.name}`,
          'data-key': `limits:${queue.name}`,
          class: 'secondary',
        }),
      ),
    ];
  };

  let shown = '';
  context.poll(async () => {
    const queues = await api.listQueues(context.signal);
    const key = JSON.stringify(queues);
    if (key === shown) return;
    shown = key;
    table.rows(queues.map(row), 'No queues are declared.');
    note.textContent = queues.some((q) => q.truncated)
      ? 'The counts stopped at their bound: they are lower bounds.'
      : '';
  });
};
