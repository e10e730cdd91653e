/** Agents, with their presence, a page at a time; a registered agent can be revoked. */
import { type Agent, api } from '../api';
import { confirmAction } from '../dialog';
import { button, el } from '../dom';
import { names, time } from '../format';
import { Pager } from '../pager';
import { DataTable } from '../table';
import type { View } from '../view';

const PAGE_SIZE = 50;

export const agentsView: View = (root, context) => {
  const table = new DataTable('Agents', [
    'Name',
    'Agent ID',
    'Queues',
    'Online',
    'Last heartbeat',
    'Tasks held',
    'Revoked',
    'Actions',
  ]);
  const pager = new Pager('agents', () => void poller.now());
  root.append(el('h1', {}, 'Agents'), table.element, pager.element);

  const revoke = async (agent: Agent, trigger: HTMLElement) => {
    const confirmed = await confirmAction({
      title: `Revoke agent ${agent.name}?`,
      text: `Agent ${agent.agentId} can no longer open a session or claim tasks; its session ends now, the tasks it holds are taken back and its roles handed over. This cannot be undone: the agent must be registered again.`,
      trigger,
    });
    if (!confirmed) return;
    await context.act(async () => {
      await api.revokeAgent(agent.agentId);
      return `Agent ${agent.name} revoked.`;
    });
  };

  const row = (agent: Agent) => [
    agent.name,
    el('span', { class: 'id' }, agent.agentId),
    names(agent.queues),
    agent.online === undefined ? 'unknown' : agent.online ? 'online' : 'offline',
    time(agent.lastHeartbeatAt, 'never'),
    agent.tasksHeld === undefined ? 'unknown' : String(agent.tasksHeld),
    agent.revokedAt ? ['revoked ', time(agent.revokedAt)] : 'no',
    agent.revokedAt
      ? ''
      : button('Revoke', (b) => revoke(agent, b), {
          class: 'danger',
          'aria-label': `Revoke ${agent.name}`,
          'data-key': `revoke:${agent.agentId}`,
        }),
  ];

  let shown = '';
  const poller = context.poll(async () => {
    const cursor = pager.cursor;
    const page = await api.listAgents({ cursor, limit: PAGE_SIZE }, context.signal);
    if (cursor !== pager.cursor) return;
    pager.update(page.nextCursor);
    const key = JSON.stringify([cursor, page.agents]);
    if (key === shown) return;
    shown = key;
    table.rows(page.agents.map(row), 'No agents are registered.');
  });
};
