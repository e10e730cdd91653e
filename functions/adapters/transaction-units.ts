/**
 * The write units AWS bills a `TransactWriteItems`, worked out from the items themselves: DynamoDB Local's own
 * figure for a transaction follows no rule we could find (one put of 500 B reported 4 units, 500 B and 1,500 B
 * together 12, three of 500 B 4), where AWS bills each item twice (prepare and commit) at the larger of its size
 * before and after, a condition check included, and each index entry it adds, removes or changes once.
 *
 * It reads the items before and after the transaction with a client of its own (strongly consistent, not
 * metered), and each table's keys and indexes once. Under concurrent writes to the same items the figure is an
 * estimate; the bench and the tests that count units do not race on one item.
 */
import {
  type AttributeValue,
  BatchGetItemCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import { itemSize, writeUnitsFor } from './item-size';

type Item = Record<string, AttributeValue>;
type Action = {
  TableName?: string;
  Key?: Item;
  Item?: Item;
};
export type TransactItem = Partial<Record<'Put' | 'Update' | 'Delete' | 'ConditionCheck', Action>>;

interface Target {
  readonly kind: keyof TransactItem;
  readonly table: string;
  readonly key: Item;
}

interface Schema {
  readonly keys: readonly string[];
  readonly indexes: readonly {
    readonly keys: readonly string[];
    readonly projection: string;
    readonly include: readonly string[];
  }[];
}

export class TransactionUnits {
  private readonly schemas = new Map<string, Promise<Schema>>();

  constructor(private readonly observer: Pick<DynamoDBClient, 'send'>) {}

  private schema(table: string): Promise<Schema> {
    let schema = this.schemas.get(table);
    if (!schema) {
      schema = this.observer
        .send(new DescribeTableCommand({ TableName: table }))
        .then(({ Table }) => schemaOf(Table));
      this.schemas.set(table, schema);
    }
    return schema;
  }

  private async targets(items: readonly TransactItem[]): Promise<Target[]> {
    const targets: Target[] = [];
    for (const item of items) {
      for (const [kind, action] of Object.entries(item) as [keyof TransactItem, Action | undefined][]) {
        if (!action?.TableName) continue;
        const { keys } = await this.schema(action.TableName);
        const key =
          action.Key ?? Object.fromEntries(keys.map((k) => [k, action.Item?.[k] as AttributeValue]));
        targets.push({ kind, table: action.TableName, key });
      }
    }
    return targets;
  }

  /** The items as they stand now, one per target (undefined where there is none). */
  private async read(targets: readonly Target[]): Promise<(Item | undefined)[]> {
    const found = new Map<string, Item>();
    const byTable = new Map<string, Item[]>();
    for (const t of targets) byTable.set(t.table, [...(byTable.get(t.table) ?? []), t.key]);
    if (byTable.size === 0) return [];
    const answer = await this.observer.send(
      new BatchGetItemCommand({
        RequestItems: Object.fromEntries(
          [...byTable].map(([table, keys]) => [table, { Keys: keys, ConsistentRead: true }]),
        ),
      }),
    );
    for (const [table, items] of Object.entries(answer.Responses ?? {})) {
      const { keys } = await this.schema(table);
      for (const item of items) found.set(`${table}|${keyText(item, keys)}`, item);
    }
    return Promise.all(
      targets.map(async (t) => found.get(`${t.table}|${keyText(t.key, (await this.schema(t.table)).keys)}`)),
    );
  }

  /**
   * Runs `send` (the transaction), and returns it with the units AWS bills for it: table and index writes when
   * it commits; when a condition cancels it, its prepare phase, each item once.
   */
  async around<T>(
    items: readonly TransactItem[],
    send: () => Promise<T>,
  ): Promise<{ result?: T; error?: unknown; writeUnits: number; indexWriteUnits: number }> {
    const targets = await this.targets(items);
    const before = await this.read(targets);
    try {
      const result = await send();
      const after = await this.read(targets);
      let writeUnits = 0;
      let indexWriteUnits = 0;
      for (const [i, target] of targets.entries()) {
        const size = Math.max(itemSize(before[i]), target.kind === 'ConditionCheck' ? 0 : itemSize(after[i]));
        writeUnits += 2 * writeUnitsFor(size);
        if (target.kind !== 'ConditionCheck')
          indexWriteUnits += indexWrites(await this.schema(target.table), before[i], after[i]);
      }
      return { result, writeUnits: writeUnits + indexWriteUnits, indexWriteUnits };
    } catch (error) {
      const cancelled = (error as { name?: string }).name === 'TransactionCanceledException';
      const writeUnits = cancelled ? before.reduce((sum, item) => sum + writeUnitsFor(itemSize(item)), 0) : 0;
      return { error, writeUnits, indexWriteUnits: 0 };
    }
  }
}

const keyText = (item: Item, keys: readonly string[]) => JSON.stringify(keys.map((k) => item[k]));
/** An item as text whatever the order its attributes came back in. */
const canonical = (item: Item) =>
  JSON.stringify(
    Object.keys(item)
      .sort()
      .map((name) => [name, item[name]]),
  );

function schemaOf(table: TableDescription | undefined): Schema {
  return {
    keys: (table?.KeySchema ?? []).map((k) => k.AttributeName ?? ''),
    indexes: (table?.GlobalSecondaryIndexes ?? []).map((index) => ({
      keys: (index.KeySchema ?? []).map((k) => k.AttributeName ?? ''),
      projection: index.Projection?.ProjectionType ?? 'ALL',
      include: index.Projection?.NonKeyAttributes ?? [],
    })),
  };
}

/** The index entry an item has in an index (keys and projected attributes), or none when it lacks a key. */
function entryOf(schema: Schema, index: Schema['indexes'][number], item: Item | undefined): Item | undefined {
  if (!item || index.keys.some((k) => item[k] === undefined)) return undefined;
  if (index.projection === 'ALL') return item;
  const names = [...schema.keys, ...index.keys, ...(index.projection === 'INCLUDE' ? index.include : [])];
  return Object.fromEntries(
    names.filter((n) => item[n] !== undefined).map((n) => [n, item[n] as AttributeValue]),
  );
}

/** Index writes of changing `before` into `after`: one per entry added, removed or changed, two when its key moves. */
function indexWrites(schema: Schema, before: Item | undefined, after: Item | undefined): number {
  let units = 0;
  for (const index of schema.indexes) {
    const old = entryOf(schema, index, before);
    const next = entryOf(schema, index, after);
    if (!old && !next) continue;
    if (!old || !next) {
      units += writeUnitsFor(itemSize(old ?? next));
      continue;
    }
    if (keyText(old, index.keys) !== keyText(next, index.keys))
      units += writeUnitsFor(itemSize(old)) + writeUnitsFor(itemSize(next));
    else if (canonical(old) !== canonical(next)) units += writeUnitsFor(itemSize(next));
  }
  return units;
}
