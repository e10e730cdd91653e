/** Roles: who holds each, since when, and who waits in line; refreshed so a hand-over shows without a reload. */
import { api, type Role } from '../api';
import { el } from '../dom';
import { names, time } from '../format';
import { DataTable } from '../table';
import type { View } from '../view';

export const rolesView: View = (root, context) => {
  const table = new DataTable('Roles', ['Role', 'Holder', 'Epoch', 'Since', 'Volunteers', 'Registered']);
  root.append(
    el('h1', {}, 'Roles'),
    el('p', { class: 'lead' }, 'Each role is held by one agent at a time; volunteers wait in line for it.'),
    table.element,
  );

  const row = (role: Role) => [
    role.role,
    el('span', { class: 'id' }, role.holder ?? 'none'),
    String(role.leaseEpoch),
    time(role.since, 'none'),
    names(role.volunteers),
    names(role.registered),
  ];

  let shown = '';
  context.poll(async () => {
    const roles = await api.listRoles(context.signal);
    const key = JSON.stringify(roles);
    if (key === shown) return;
    shown = key;
    table.rows(roles.map(row), 'No roles are registered.');
  });
};
