/** Agents, with their presence and the roles they hold, a page at a time; a registered agent can be revoked. */
import { type Agent, api, type Role } from '../api';
import { button, el } from '../dom';
import { names, time } from '../format';
import { Pager } from '../pager';
import { DataTable } from '../table';
import type { View } from '../view';

const PAGE_SIZE = 50;

/** Each holder's roles, by agent id. */
function holders(roles: readonly Role[]): Map<string, string[]> {
  const held = new Map<string, string[]>();
  for (const { role, holder } of roles) {
    if (holder !== null) held.set(holder, [...(held.get(holder) ?? []), role]);
  }
  return held;
}

export const agentsView: View = (root, context) => {
  const table = new DataTable('Agents', [
    'Name',
    'Agent ID',
    'Queues',
    'Labels',
    'State',
    'Last heartbeat',
    'Tasks held',
    'Roles held',
    'Revoked',
    'Actions',
  ]);
  const pager = new Pager('agents', () => void poller.now());
  root.append(el('h1', {}, 'Agents'), table.element, pager.element);

  const revoke = async (agent: Agent, trigger: HTMLElement) => {
    await context.confirmThenAct(
      {
        title: `Revoke agent ${agent.name}?`,
        text: `Agent ${agent.agentId} can no longer open a session or claim tasks; its session ends now, the tasks it holds are taken back and its roles handed over. This cannot be undone: the agent must be registered again.`,
        trigger,
      },
      async () => {
        await api.revokeAgent(agent.agentId);
        return `Agent ${agent.name} revoked.`;
      },
    );
  };

  /** `held` maps an agent id to the roles it holds; `undefined` when the roles could not be read. */
  const row = (agent: Agent, held: ReadonlyMap<string, string[]> | undefined) => [
    agent.name,
    el('span', { class: 'id' }, agent.agentId),
    names(agent.queues),
    // A server before labels answers none: the agent has none.
    names(Object.entries(agent.labels ?? {}).map(([name, values]) => `${name}=${values.join('|')}`)),
    // A server older than states says online or not.
    agent.state ?? (agent.online === undefined ? 'unknown' : agent.online ? 'online' : 'offline'),
    time(agent.lastHeartbeatAt, 'never'),
    agent.tasksHeld === undefined ? 'unknown' : String(agent.tasksHeld),
    held === undefined ? 'unknown' : names(held.get(agent.agentId)),
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
    const [agents, roles] = await Promise.allSettled([
      api.listAgents({ cursor, limit: PAGE_SIZE }, context.signal),
      api.listRoles(context.signal),
    ]);
    if (agents.status === 'rejected') throw agents.reason;
    if (cursor !== pager.cursor) return;
    const page = agents.value;
    pager.update(page.nextCursor);
    // Roles that could not be read leave the agents shown, their roles "unknown", and the error alerted.
    const held = roles.status === 'fulfilled' ? holders(roles.value) : undefined;
    const key = JSON.stringify([cursor, page.agents, held && [...held]]);
    if (key !== shown) {
      shown = key;
      table.rows(
        page.agents.map((agent) => row(agent, held)),
        'No agents are registered.',
      );
    }
    if (roles.status === 'rejected') throw roles.reason;
  });
};
