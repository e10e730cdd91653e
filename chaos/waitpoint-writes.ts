/**
 * The waitpoints' committed writes, read from the transactions that make them (`#adapters/waitpoint-table`): a
 * suspension puts the waitpoint and moves its task to `suspended`; a resolution (or a close) updates the waitpoint
 * and moves its task on. DynamoDB returns no item from a transaction, so each item's version is the last one
 * recorded with the transaction's update applied: the task's state as the suspension left it (an owner it kept would
 * show), as the resolution left it. A transaction the SDK sent again after its answer was lost carries the same
 * `ClientRequestToken`, and DynamoDB answers it without writing again: it is recorded once.
 */
import { plainItem } from './plain-item';
import type { WaitpointStatus, WaitpointVersion } from './waitpoint-history';

type Item = Record<string, unknown>;

export interface Update {
  readonly TableName?: string;
  readonly Key?: Item;
  readonly UpdateExpression?: string;
  readonly ExpressionAttributeNames?: Record<string, string>;
  readonly ExpressionAttributeValues?: Item;
}

export interface TransactItem {
  readonly Put?: { readonly TableName?: string; readonly Item?: Item };
  readonly Update?: Update;
}

const STATUSES: readonly WaitpointStatus[] = ['open', 'completed', 'rejected', 'timedOut', 'cancelled'];

/**
 * An item with an update's clauses applied to its top-level attributes: `SET name = :value`, `SET name = other`,
 * the arithmetic `SET name = other + :value` (or `-`, or of `if_not_exists(other, :value)`), `REMOVE name`, and a
 * number's `ADD name :value`. What a clause reads that the item lacks, and nested paths, leave what it writes out.
 */
export function applyUpdate(item: Item, update: Update): Item {
  const names = update.ExpressionAttributeNames ?? {};
  const values = plainItem(update.ExpressionAttributeValues ?? {});
  const next = { ...item };
  /** An operand as it stands in `item` (the update's right-hand sides read the item before it). */
  const operand = (text: string): unknown => {
    const notExists = /^if_not_exists\((#\w+),\s*(:\w+)\)$/.exec(text);
    if (notExists) {
      const current = item[names[notExists[1] ?? ''] ?? ''];
      return current === undefined ? values[notExists[2] ?? ''] : current;
    }
    if (text.startsWith(':')) return values[text];
    const attribute = names[text];
    return attribute === undefined ? undefined : item[attribute];
  };
  for (const section of (update.UpdateExpression ?? '').split(/(?=\b(?:SET|REMOVE|ADD|DELETE) )/)) {
    const [, action = '', clauses = ''] = /^(SET|REMOVE|ADD|DELETE) (.*)$/s.exec(section.trim()) ?? [];
    if (action === 'SET') {
      for (const clause of clauses.split(/,\s*(?=#)/)) {
        const [, name = '', left = '', sign, right = ''] =
          /^(#\w+)\s*=\s*(if_not_exists\(#\w+,\s*:\w+\)|#\w+|:\w+)(?:\s*([+-])\s*(:\w+|#\w+))?$/.exec(
            clause.trim(),
          ) ?? [];
        const attribute = names[name];
        if (attribute === undefined) continue;
        const a = operand(left);
        if (sign === undefined) {
          if (a !== undefined) next[attribute] = a;
          continue;
        }
        const b = operand(right);
        if (typeof a === 'number' && typeof b === 'number') next[attribute] = sign === '+' ? a + b : a - b;
      }
    }
    if (action === 'REMOVE') {
      for (const path of clauses.split(',')) {
        const attribute = names[path.trim()];
        if (attribute !== undefined) delete next[attribute];
      }
    }
    if (action === 'ADD') {
      for (const clause of clauses.split(/,\s*(?=#)/)) {
        const [, name = '', value = ''] = /^(#\w+)\s+(:\w+)$/.exec(clause.trim()) ?? [];
        const attribute = names[name];
        const added = values[value];
        const current = attribute === undefined ? undefined : (item[attribute] ?? 0);
        if (attribute !== undefined && typeof added === 'number' && typeof current === 'number')
          next[attribute] = current + added;
      }
    }
  }
  return next;
}

/** The waitpoint's item a transaction writes, and its task's state item, each as the transaction left it. */
export interface WaitpointWrite {
  readonly waitpoint: Item;
  readonly state?: Item;
}

/**
 * What a transaction wrote of a waitpoint and its task, from the last recorded items (`recorded`); undefined for a
 * transaction that writes no waitpoint.
 */
export function waitpointWriteOf(
  items: readonly TransactItem[],
  recorded: { state(taskId: string): Item | undefined; waitpoint(waitpointId: string): Item | undefined },
): WaitpointWrite | undefined {
  const put = items
    .map((item) => item.Put?.Item && plainItem(item.Put.Item))
    .find((p) => p?.kind === 'waitpoint');
  const updateOf = (part: string) =>
    items.find((item) => item.Update?.Key && plainItem(item.Update.Key).part === part)?.Update;
  const waitpointUpdate = updateOf('waitpoint');
  let waitpoint: Item;
  if (put) waitpoint = put;
  else if (waitpointUpdate?.Key) {
    const waitpointId = String(plainItem(waitpointUpdate.Key).taskId);
    waitpoint = applyUpdate(recorded.waitpoint(waitpointId) ?? { waitpointId }, waitpointUpdate);
  } else return undefined;
  const stateUpdate = updateOf('state');
  if (!stateUpdate?.Key) return { waitpoint };
  const key = plainItem(stateUpdate.Key);
  return { waitpoint, state: applyUpdate(recorded.state(String(key.taskId)) ?? key, stateUpdate) };
}

/** A waitpoint's version, from its item and its task's state as one transaction (`write`) left them. */
export function waitpointVersionOf(
  write: string,
  waitpoint: Item,
  state: Item | undefined,
): WaitpointVersion {
  const status = STATUSES.find((s) => s === waitpoint.status) ?? 'open';
  const error = state?.error as { message?: unknown } | undefined;
  return {
    at: Number(status === 'open' ? waitpoint.createdAt : waitpoint.resolvedAt),
    waitpointId: String(waitpoint.waitpointId),
    taskId: String(waitpoint.forTask ?? state?.taskId),
    write,
    leaseEpoch: Number(waitpoint.leaseEpoch),
    status,
    onTimeout: waitpoint.onTimeout === 'fail' ? 'fail' : 'resume',
    timeoutAt: Number(waitpoint.timeoutAt),
    ...(typeof waitpoint.dataJson === 'string' ? { dataJson: waitpoint.dataJson } : {}),
    ...(typeof waitpoint.reason === 'string' ? { reason: waitpoint.reason } : {}),
    ...(typeof state?.status === 'string' ? { taskStatus: state.status } : {}),
    ...(typeof error?.message === 'string' ? { taskError: error.message } : {}),
  };
}

/**
 * Records what committed transactions wrote of waitpoints into `versions`, and their task's state through
 * `states.record` (the record of committed writes, which keeps the last state of each task for `states.last`). A
 * transaction is named by its `ClientRequestToken`; one without is recorded each time.
 */
export function waitpointRecorder(
  versions: WaitpointVersion[],
  states: { last(taskId: string): Item | undefined; record(state: Item): void },
): (items: readonly TransactItem[], token: () => string | undefined) => void {
  const waitpoints = new Map<string, Item>();
  const recorded = new Set<string>();
  let unnamed = 0;
  return (items, token) => {
    const write = waitpointWriteOf(items, {
      state: (taskId) => states.last(taskId),
      waitpoint: (waitpointId) => waitpoints.get(waitpointId),
    });
    if (!write) return;
    const name = token() ?? `unnamed-${unnamed++}`;
    if (recorded.has(name)) return;
    recorded.add(name);
    waitpoints.set(String(write.waitpoint.waitpointId), write.waitpoint);
    if (write.state) states.record(write.state);
    versions.push(waitpointVersionOf(name, write.waitpoint, write.state));
  };
}
