/**
 * The task flow's layout, without a browser: the tasks before a task above it, those after it below, rows of at most
 * `PER_ROW`, one edge per link in the direction the work goes, and the root above the parent when they differ.
 */
import { describe, expect, it } from 'vitest';
import type { TaskLinks } from '#sdk/types';
import { LANE, layoutFlow, NODE, PER_ROW, perRowFor, statusTone } from '../../../console/app/flow-graph';

const id = (n: number) => `t_${String(n).padStart(26, 'a')}`;
const SELF = { taskId: id(0), status: 'leased' as const };
const none: TaskLinks = { taskId: SELF.taskId, children: [], dependencies: [], dependents: [] };

describe('a task’s flow, laid out', () => {
  it('a task alone is one node and no edge', () => {
    const layout = layoutFlow(SELF, none);
    expect(layout.nodes).toEqual([{ ...SELF, relation: 'self', x: 0, y: 0 }]);
    expect(layout.edges).toEqual([]);
    expect([layout.width, layout.height]).toEqual([NODE.width, NODE.height]);
  });

  it('puts the root, then the parent and dependencies, above the task, and children and dependents below', () => {
    const layout = layoutFlow(SELF, {
      ...none,
      root: { taskId: id(1), status: 'leased' },
      parent: { taskId: id(2), status: 'leased' },
      dependencies: [{ taskId: id(3), status: 'succeeded' }],
      children: [{ taskId: id(4), status: 'queued' }],
      dependents: [{ taskId: id(5), status: 'waiting' }],
      onFailure: { taskId: id(6) },
    });
    const row = (relation: string) => layout.nodes.find((n) => n.relation === relation)?.y;
    expect(row('root')).toBeLessThan(row('parent') ?? 0);
    expect(row('parent')).toBe(row('dependency'));
    expect(row('dependency')).toBeLessThan(row('self') ?? 0);
    expect(row('self')).toBeLessThan(row('child') ?? 0);
    expect(row('child')).toBe(row('on-failure'));
    expect(layout.edges.map((e) => [e.from.taskId, e.says, e.to.taskId, e.indirect ?? false])).toEqual([
      [id(1), 'began the tree of', id(2), true],
      [id(2), 'submitted', id(0), false],
      [id(3), 'must succeed before', id(0), false],
      [id(0), 'submitted', id(4), false],
      [id(0), 'must succeed before', id(5), false],
      [id(0), 'submits when it dies', id(6), false],
    ]);
    // A task not there has no status.
    expect(layout.nodes.find((n) => n.relation === 'on-failure')).not.toHaveProperty('status');
  });

  it('draws no root of its own when the parent is the root', () => {
    const layout = layoutFlow(SELF, {
      ...none,
      root: { taskId: id(2), status: 'leased' },
      parent: { taskId: id(2), status: 'leased' },
    });
    expect(layout.nodes.map((n) => n.relation)).toEqual(['parent', 'self']);
  });

  it('wraps many children into rows, each centred, none overlapping', () => {
    const children = Array.from({ length: 7 }, (_, i) => ({ taskId: id(10 + i), status: 'queued' as const }));
    const layout = layoutFlow(SELF, { ...none, children });
    const rows = new Map<number, number[]>();
    for (const node of layout.nodes) rows.set(node.y, [...(rows.get(node.y) ?? []), node.x]);
    expect([...rows.values()].map((xs) => xs.length)).toEqual([1, PER_ROW, PER_ROW, 1]);
    for (const xs of rows.values())
      for (let i = 1; i < xs.length; i++) expect((xs[i] ?? 0) - (xs[i - 1] ?? 0)).toBeGreaterThan(NODE.width);
    for (const node of layout.nodes) {
      expect(node.x).toBeGreaterThanOrEqual(0);
      expect(node.x + NODE.width).toBeLessThanOrEqual(layout.width);
      expect(node.y + NODE.height).toBeLessThanOrEqual(layout.height);
    }
  });

  it('puts as many nodes side by side as the width takes: one on a phone, three on a laptop', () => {
    expect([366, 500, 1_248].map(perRowFor)).toEqual([1, 2, PER_ROW]);
    const children = Array.from({ length: 3 }, (_, i) => ({ taskId: id(10 + i), status: 'queued' as const }));
    const narrow = layoutFlow(SELF, { ...none, children }, perRowFor(366));
    expect(new Set(narrow.nodes.map((n) => n.y)).size).toBe(4);
    // The children rows apart from the task are reached along the lane on the left, not through the first child.
    expect(narrow.edges.map((e) => e.lane ?? false)).toEqual([false, true, true]);
    expect(narrow.width).toBe(LANE + NODE.width);
    expect(narrow.nodes.every((n) => n.x === LANE)).toBe(true);
    // Side by side, nothing needs the lane.
    const wide = layoutFlow(SELF, { ...none, children });
    expect(wide.edges.some((e) => e.lane)).toBe(false);
    expect(wide.width).toBe(3 * NODE.width + 2 * 20);
  });

  it('colours a status by what it means', () => {
    expect(
      ['leased', 'queued', 'succeeded', 'dead', 'cancelled', undefined].map((s) =>
        statusTone(s as Parameters<typeof statusTone>[0]),
      ),
    ).toEqual(['running', 'waiting', 'done', 'failed', 'ended', 'absent']);
  });
});
