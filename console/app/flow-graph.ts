/**
 * A task's flow as a layered graph, laid out without the DOM: the tasks before it on top (its root, its parent, the
 * task it is the failure hook of, the tasks it depends on), the task itself, and the tasks after it below (its
 * children, the tasks that depend on it, its own failure hook). Each layer wraps into rows of `PER_ROW` nodes; every
 * edge runs from an earlier layer to a later one, drawn beneath the nodes.
 */
import type { LinkedTask, TaskLinks, TaskStatus } from '../../sdk/types';

export type Relation =
  | 'root'
  | 'parent'
  | 'failure-of'
  | 'dependency'
  | 'self'
  | 'child'
  | 'dependent'
  | 'on-failure';

/** How each relation reads, on a node and in the list. */
export const RELATION_LABELS: Readonly<Record<Relation, string>> = {
  root: 'root of the tree',
  parent: 'parent',
  'failure-of': 'hook of',
  dependency: 'depends on',
  self: 'this task',
  child: 'child',
  dependent: 'dependent',
  'on-failure': 'on failure',
};

export interface FlowNode {
  readonly taskId: string;
  readonly relation: Relation;
  /** Absent: the task is not there (not submitted yet, or purged). */
  readonly status?: TaskStatus;
  /** The node's top left corner. */
  readonly x: number;
  readonly y: number;
}

export interface FlowEdge {
  readonly from: FlowNode;
  readonly to: FlowNode;
  /** What the edge says, read from `from` to `to`. */
  readonly says: string;
  /** Not a direct link: the root is an ancestor of the parent, perhaps several steps up. */
  readonly indirect?: true;
  /** Its nodes are rows apart: it runs in the lane left of the nodes, from side to side. */
  readonly lane?: true;
}

export interface FlowLayout {
  readonly nodes: readonly FlowNode[];
  readonly edges: readonly FlowEdge[];
  readonly width: number;
  readonly height: number;
}

export const NODE = { width: 216, height: 60 } as const;
/** The lane on the left that edges between rows further apart run in. */
export const LANE = 20;
const GAP = { x: 20, y: 44 } as const;
/** Nodes side by side at most, however wide the page: a layer of more wraps into rows. */
export const PER_ROW = 3;

/** The nodes side by side that fit in `width` pixels: 1 to `PER_ROW` (a phone's 390 px takes one). */
export const perRowFor = (width: number) =>
  Math.max(1, Math.min(PER_ROW, Math.floor((width + GAP.x) / (NODE.width + GAP.x))));

type Placed = { readonly taskId: string; readonly relation: Relation; readonly status?: TaskStatus };

const placed = (linked: LinkedTask, relation: Relation): Placed => ({
  taskId: linked.taskId,
  relation,
  ...(linked.status === undefined ? {} : { status: linked.status }),
});

/** The graph of `task` (its id and status) and its links, `perRow` nodes side by side at most. */
export function layoutFlow(
  task: { taskId: string; status: TaskStatus },
  links: TaskLinks,
  perRow = PER_ROW,
): FlowLayout {
  const before: Placed[] = [
    ...(links.parent ? [placed(links.parent, 'parent')] : []),
    ...(links.failureOf ? [placed(links.failureOf, 'failure-of')] : []),
    ...links.dependencies.map((d) => placed(d, 'dependency')),
  ];
  const after: Placed[] = [
    ...links.children.map((c) => placed(c, 'child')),
    ...links.dependents.map((d) => placed(d, 'dependent')),
    ...(links.onFailure ? [placed(links.onFailure, 'on-failure')] : []),
  ];
  const rootAbove =
    links.root && links.root.taskId !== links.parent?.taskId && links.root.taskId !== task.taskId
      ? [placed(links.root, 'root')]
      : [];
  const layers = [
    rootAbove,
    before,
    [{ taskId: task.taskId, relation: 'self' as const, status: task.status }],
    after,
  ]
    .filter((layer) => layer.length > 0)
    .flatMap((layer) => rowsOf(layer, perRow));
  const selfRow = layers.findIndex((row) => row.some((node) => node.relation === 'self'));
  // A layer that wraps has rows beyond the one next to the task: their edges run in a lane on the left, not
  // through the rows between.
  const lane = layers.length - selfRow > 2 || selfRow > 1 + (rootAbove.length > 0 ? 1 : 0) ? LANE : 0;
  const columns = Math.max(1, ...layers.map((row) => row.length));
  const width = lane + columns * NODE.width + (columns - 1) * GAP.x;
  const nodes: FlowNode[] = [];
  layers.forEach((row, r) => {
    // Each row centred over the widest.
    const rowWidth = row.length * NODE.width + (row.length - 1) * GAP.x;
    const left = lane + (width - lane - rowWidth) / 2;
    row.forEach((node, i) => {
      nodes.push({ ...node, x: left + i * (NODE.width + GAP.x), y: r * (NODE.height + GAP.y) });
    });
  });
  const self = nodes.find((n) => n.relation === 'self');
  const edges: FlowEdge[] = [];
  if (self) {
    for (const node of nodes) {
      const edge = edgeOf(node, self, nodes);
      if (!edge) continue;
      const rows = Math.abs(edge.to.y - edge.from.y) / (NODE.height + GAP.y);
      edges.push(rows > 1 ? { ...edge, lane: true } : edge);
    }
  }
  return {
    nodes,
    edges,
    width,
    height: layers.length * NODE.height + (layers.length - 1) * GAP.y,
  };
}

function rowsOf(layer: readonly Placed[], perRow: number): Placed[][] {
  const rows: Placed[][] = [];
  for (let i = 0; i < layer.length; i += perRow) rows.push(layer.slice(i, i + perRow));
  return rows;
}

function edgeOf(node: FlowNode, self: FlowNode, nodes: readonly FlowNode[]): FlowEdge | undefined {
  switch (node.relation) {
    case 'root': {
      const parent = nodes.find((n) => n.relation === 'parent');
      return parent ? { from: node, to: parent, says: 'began the tree of', indirect: true } : undefined;
    }
    case 'parent':
      return { from: node, to: self, says: 'submitted' };
    case 'failure-of':
      return { from: node, to: self, says: 'died, and so submitted' };
    case 'dependency':
      return { from: node, to: self, says: 'must succeed before' };
    case 'child':
      return { from: self, to: node, says: 'submitted' };
    case 'dependent':
      return { from: self, to: node, says: 'must succeed before' };
    case 'on-failure':
      return { from: self, to: node, says: 'submits when it dies' };
    case 'self':
      return undefined;
  }
}

/** The colour class of a status: running, waiting, done, failed, ended otherwise, or not there. */
export function statusTone(status: TaskStatus | undefined): string {
  switch (status) {
    case 'leased':
      return 'running';
    case 'queued':
    case 'waiting':
    case 'suspended':
      return 'waiting';
    case 'succeeded':
      return 'done';
    case 'dead':
      return 'failed';
    case 'cancelled':
    case 'expired':
      return 'ended';
    case undefined:
      return 'absent';
  }
}
