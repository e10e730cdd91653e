/**
 * The transactions of a task that names rate limits (`#adapters/task-table`): its grant updates its state item and
 * adds the units it takes to each window of its limits (`grantTaking`); a finish that reports usage other than the
 * units taken updates the state item and moves each window by the difference (`finishSettling`). DynamoDB returns
 * no item from a transaction, so the state is the last one recorded with the transaction's update applied (as for
 * a waitpoint's, `waitpoint-writes.ts`), and each window's change is the `ADD` the transaction made to its `used`.
 */
import { plainItem } from './plain-item';
import { applyUpdate, type TransactItem } from './waitpoint-writes';

type Item = Record<string, unknown>;

/** A window's item: `taskId = rate#<name>`, `part = w#<start>#<key>`. */
const isWindow = (key: Item): boolean =>
  String(key.taskId).startsWith('rate#') && String(key.part).startsWith('w#');

/** What one transaction wrote of a task naming limits. */
export interface TaskTransaction {
  readonly taskId: string;
  /** The task's state item as the transaction left it. */
  readonly state: Item;
  /** What it changed of each window: its limit, its item's sort key and the units added (negative: given back). */
  readonly windows: readonly { readonly limit: string; readonly part: string; readonly delta: number }[];
}

/** The units an update adds to `used` (its `ADD used :n` clause), or 0. */
function addedToUsed(update: NonNullable<TransactItem['Update']>): number {
  const names = update.ExpressionAttributeNames ?? {};
  const values = plainItem(update.ExpressionAttributeValues ?? {});
  const [, clauses = ''] =
    /\bADD (.*?)(?=\b(?:SET|REMOVE|DELETE) |$)/s.exec(update.UpdateExpression ?? '') ?? [];
  for (const clause of clauses.split(/,\s*(?=#)/)) {
    const [, name = '', value = ''] = /^(#\w+)\s+(:\w+)$/.exec(clause.trim()) ?? [];
    const added = values[value];
    if (names[name] === 'used' && typeof added === 'number') return added;
  }
  return 0;
}

/**
 * The task's state and the windows' changes of a transaction that updates one task's state item and one or more
 * windows (a grant taking units, a finish settling usage); undefined for any other transaction.
 */
export function taskTransactionOf(
  items: readonly TransactItem[],
  last: (taskId: string) => Item | undefined,
): TaskTransaction | undefined {
  const updates = items.flatMap((item) => (item.Update?.Key ? [item.Update] : []));
  const stateUpdates = updates.filter((u) => plainItem(u.Key ?? {}).part === 'state');
  const windowUpdates = updates.filter((u) => isWindow(plainItem(u.Key ?? {})));
  const [stateUpdate] = stateUpdates;
  if (!stateUpdate?.Key || stateUpdates.length !== 1 || windowUpdates.length === 0) return undefined;
  const key = plainItem(stateUpdate.Key);
  const taskId = String(key.taskId);
  return {
    taskId,
    state: applyUpdate(last(taskId) ?? key, stateUpdate),
    windows: windowUpdates.map((u) => {
      const windowKey = plainItem(u.Key ?? {});
      return {
        limit: String(windowKey.taskId).slice('rate#'.length),
        part: String(windowKey.part),
        delta: addedToUsed(u),
      };
    }),
  };
}
