/**
 * Queue controls in the leases table, one item per queue (`queue#<name>`): `paused`, `limits`, and the state that
 * enforces the limits exactly under parallel claims from many agents:
 * - `held` lists the queue's tasks leased or about to be; a reservation adds its tasks with a condition on the
 *   map's size (the same superset bookkeeping as an agent session's slots);
 * - the token bucket (`tokens`, `tokensAt`) is taken from with a condition on its version (`tokensVersion`), so
 *   two claims cannot spend the same tokens.
 * A limit above `SLOTS_PER_ITEM` keeps its slots in several items (`queueSlotLayout` 2): the control's record and
 * `queue#<control>/slots/<n>` (kind `slots`), each with its share of the limit and the `spread` they were made for.
 * The whole scheduler's control is one item beside them (`scheduler`, kind `scheduler`): `paused` and `updatedAt`.
 * Spawn requests leave a small mark per queue and requirement set (`spawn#<queue>#<hash>`, kind `spawn`).
 */
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type {
  QueueAdmissionState,
  QueueControlStore,
  QueueReservation,
  SlotItemChange,
  StoredQueueControl,
  StoredSchedulerControl,
} from '#core/ports/queue-control-store';
import type { ReadOptions } from '#core/ports/task-store';
import { controlOfSlotItem, type QueueLimits, storedQueueLimitsSchema } from '#domain/queue-limits';
import { conditionalUpdate, Expression, updateExpression, updateIf } from './expression';
import { scanKind } from './session-table';
import { batchGet } from './task-requests';

type Item = Record<string, unknown>;

const controlKey = (queue: string) => ({ leaseId: `queue#${queue}` });

/**
 * What an item of slots records besides them: a control's own record is a `queue` item; another item of its slots
 * (`<control>/slots/<n>`) is a `slots` item, which the list of controls leaves out.
 */
const slotItemFields = (name: string): Item => {
  const control = controlOfSlotItem(name);
  return control === name ? { kind: 'queue', queue: name } : { kind: 'slots', control };
};

function admissionFromItem(item: Item): QueueAdmissionState {
  return {
    ...(item.held === undefined ? {} : { held: numberMap(item.held) }),
    ...(typeof item.tokens === 'number' ? { tokens: item.tokens } : {}),
    ...(typeof item.tokensAt === 'number' ? { tokensAt: item.tokensAt } : {}),
    ...(typeof item.tokensVersion === 'number' ? { tokensVersion: item.tokensVersion } : {}),
    ...(typeof item.spread === 'string' ? { stamp: item.spread } : {}),
  };
}
/**
 * The scheduler's own control. Every other key of the table has a `#` after its kind (`queue#`, `session#`, `role#`…),
 * so this one names nothing else; its kind keeps it out of the list of queue controls.
 */
const SCHEDULER_KEY = { leaseId: 'scheduler' };

function schedulerControlFromItem(item: Item): StoredSchedulerControl {
  return {
    paused: item.paused === true,
    ...(typeof item.updatedAt === 'number' ? { updatedAt: item.updatedAt } : {}),
  };
}

/** When a worker was last asked for, for a queue and a requirement set (its hash): kind `spawn`. */
const spawnKey = (queue: string, requirements: string) => ({ leaseId: `spawn#${queue}#${requirements}` });

/** The list walk's places in a queue's list partitions: apart from the control, which claims read. */
const walkKey = (queue: string) => ({ leaseId: `walk#${queue}` });

const numberMap = (value: unknown): Record<string, number> =>
  typeof value === 'object' && value !== null
    ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, Number(v)]))
    : {};

function controlFromItem(queue: string, item: Item): StoredQueueControl {
  const limits = item.limits ?? undefined;
  const parsed = limits === undefined ? undefined : storedQueueLimitsSchema.safeParse(limits);
  return {
    queue,
    paused: item.paused === true,
    ...(parsed ? { limits: parsed.success ? parsed.data : {} } : {}),
    ...(typeof item.updatedAt === 'number' ? { updatedAt: item.updatedAt } : {}),
  };
}

export class QueueControlTable implements QueueControlStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  async get(queue: string, { consistent = true }: ReadOptions = {}): Promise<StoredQueueControl | undefined> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: controlKey(queue), ConsistentRead: consistent }),
    );
    return output.Item ? controlFromItem(queue, output.Item) : undefined;
  }

  async readWalk(queue: string): Promise<Readonly<Record<string, string>>> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: walkKey(queue), ConsistentRead: true }),
    );
    const places = output.Item?.places;
    if (typeof places !== 'object' || places === null) return {};
    return Object.fromEntries(
      Object.entries(places as Record<string, unknown>).filter(
        (e): e is [string, string] => typeof e[1] === 'string',
      ),
    );
  }

  /**
   * One write a pass for a queue with new tasks. Two walks at once may each save their own places: the later save
   * wins, and a place saved too early only makes a walk look at some tasks again (giving a task an entry in the due
   * index is conditional on it having none).
   */
  async saveWalk(queue: string, places: Readonly<Record<string, string>>, now: number): Promise<void> {
    const e = new Expression();
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: walkKey(queue),
        UpdateExpression: `SET ${e.n('kind')} = ${e.v('walk')}, ${e.n('queue')} = ${e.v(queue)}, ${e.n('places')} = ${e.v(places)}, ${e.n('updatedAt')} = ${e.v(now)}`,
        ...e.attributes(),
      }),
    );
  }

  async noteSpawnRequest(
    queue: string,
    requirements: string,
    note: { readonly at: number; readonly since: number; readonly purgeAt: number },
  ): Promise<boolean> {
    const e = new Expression();
    return updateIf(this.doc, {
      TableName: this.tableName,
      Key: spawnKey(queue, requirements),
      UpdateExpression: updateExpression({
        set: [
          `${e.n('kind')} = ${e.v('spawn')}`,
          `${e.n('queue')} = ${e.v(queue)}`,
          `${e.n('requestedAt')} = ${e.v(note.at)}`,
          `${e.n('purgeAt')} = ${e.v(note.purgeAt)}`,
        ],
      }),
      ConditionExpression: `attribute_not_exists(${e.n('requestedAt')}) OR ${e.n('requestedAt')} < ${e.v(note.since)}`,
      ...e.attributes(),
    });
  }

  async list(): Promise<StoredQueueControl[]> {
    const items = await scanKind(this.doc, this.tableName, 'queue');
    return items.map((item) => controlFromItem(String(item.queue), item));
  }

  setPaused(queue: string, paused: boolean, now: number): Promise<StoredQueueControl> {
    return this.update(queue, { paused }, now);
  }

  async getScheduler({ consistent = true }: ReadOptions = {}): Promise<StoredSchedulerControl | undefined> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: SCHEDULER_KEY, ConsistentRead: consistent }),
    );
    return output.Item ? schedulerControlFromItem(output.Item) : undefined;
  }

  async setSchedulerPaused(paused: boolean, now: number): Promise<StoredSchedulerControl> {
    const e = new Expression();
    const output = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: SCHEDULER_KEY,
        UpdateExpression: updateExpression({
          set: Object.entries({ kind: 'scheduler', paused, updatedAt: now }).map(
            ([name, value]) => `${e.n(name)} = ${e.v(value)}`,
          ),
        }),
        ReturnValues: 'ALL_NEW',
        ...e.attributes(),
      }),
    );
    return schedulerControlFromItem(output.Attributes ?? {});
  }

  setLimits(queue: string, limits: QueueLimits, now: number): Promise<StoredQueueControl> {
    return this.update(queue, { limits }, now);
  }

  /** Sets fields of the control item, creating it if needed, and leaves its other fields alone. */
  private async update(queue: string, fields: Item, now: number): Promise<StoredQueueControl> {
    const e = new Expression();
    const output = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: controlKey(queue),
        UpdateExpression: updateExpression({
          set: Object.entries({ kind: 'queue', queue, ...fields, updatedAt: now }).map(
            ([name, value]) => `${e.n(name)} = ${e.v(value)}`,
          ),
        }),
        ReturnValues: 'ALL_NEW',
        ...e.attributes(),
      }),
    );
    return controlFromItem(queue, output.Attributes ?? {});
  }

  async readAdmission(queue: string): Promise<QueueAdmissionState> {
    const item =
      (
        await this.doc.send(
          new GetCommand({ TableName: this.tableName, Key: controlKey(queue), ConsistentRead: true }),
        )
      ).Item ?? {};
    return admissionFromItem(item);
  }

  async readSlotItems(names: readonly string[]): Promise<Map<string, QueueAdmissionState>> {
    const items = await batchGet(
      { doc: this.doc, tableName: this.tableName },
      [...new Set(names)].map(controlKey),
      true,
    );
    const byKey = new Map(items.map((item) => [String(item.leaseId), item]));
    return new Map(names.map((name) => [name, admissionFromItem(byKey.get(controlKey(name).leaseId) ?? {})]));
  }

  /**
   * One transaction over every item of the spread (at most `SLOT_ITEMS_MAX`, within DynamoDB's 100): billed at
   * twice each item's size, once per change of a limit or of the layout.
   */
  async respread(changes: readonly SlotItemChange[]): Promise<boolean> {
    const updates = changes.map((change) => {
      const e = new Expression();
      const { name, seen, stamp, add, drop } = change;
      const set = Object.entries(slotItemFields(name)).map(
        ([field, value]) => `${e.n(field)} = ${e.v(value)}`,
      );
      const remove: string[] = [];
      if (stamp === undefined) remove.push(e.n('spread'));
      else set.push(`${e.n('spread')} = ${e.v(stamp)}`);
      if (seen.size === undefined) set.push(`${e.n('held')} = ${e.v(Object.fromEntries(add))}`);
      else set.push(...[...add].map(([id, at]) => `${e.n('held', id)} = ${e.v(at)}`));
      remove.push(...[...drop.keys()].map((id) => e.n('held', id)));
      const conditions = [
        seen.stamp === undefined
          ? `attribute_not_exists(${e.n('spread')})`
          : `${e.n('spread')} = ${e.v(seen.stamp)}`,
        seen.size === undefined
          ? `attribute_not_exists(${e.n('held')})`
          : `size(${e.n('held')}) <= ${e.v(seen.size)}`,
        ...[...drop].map(([id, at]) => `${e.n('held', id)} = ${e.v(at)}`),
      ];
      return {
        Update: {
          TableName: this.tableName,
          Key: controlKey(name),
          UpdateExpression: updateExpression({ set, remove }),
          ConditionExpression: conditions.join(' AND '),
          ...e.attributes(),
        },
      };
    });
    try {
      await this.doc.send(new TransactWriteCommand({ TransactItems: updates }));
      return true;
    } catch (error) {
      // Refused: an item changed since it was read (or a write to it was under way). Read again and look again.
      if (error instanceof TransactionCanceledException) return false;
      throw error;
    }
  }

  async reserve(queue: string, seen: QueueAdmissionState, reservation: QueueReservation): Promise<boolean> {
    const { taskIds, at, concurrency, tokens } = reservation;
    const written = await conditionalUpdate(
      this.doc,
      { TableName: this.tableName, Key: controlKey(queue) },
      (e) => {
        const set: string[] = Object.entries(slotItemFields(queue)).map(
          ([field, value]) => `${e.n(field)} = ${e.v(value)}`,
        );
        const remove: string[] = [];
        const conditions: string[] = [];
        if (concurrency) {
          conditions.push(
            concurrency.stamp === undefined
              ? `attribute_not_exists(${e.n('spread')})`
              : `${e.n('spread')} = ${e.v(concurrency.stamp)}`,
          );
          if (seen.held === undefined) {
            set.push(`${e.n('held')} = ${e.v(Object.fromEntries(taskIds.map((id) => [id, at])))}`);
            conditions.push(`attribute_not_exists(${e.n('held')})`);
          } else {
            const { max, stale } = concurrency;
            set.push(...taskIds.map((id) => `${e.n('held', id)} = ${e.v(at)}`));
            // A stale entry of a task admitted again is overwritten (one path cannot be both set and removed).
            remove.push(
              ...[...stale.keys()].filter((id) => !taskIds.includes(id)).map((id) => e.n('held', id)),
            );
            // Before the write, so that after it (the new entries in, the stale ones out) the map is within max.
            conditions.push(`size(${e.n('held')}) <= ${e.v(max - taskIds.length + stale.size)}`);
            conditions.push(
              ...taskIds
                .filter((id) => !stale.has(id))
                .map((id) => `attribute_not_exists(${e.n('held', id)})`),
            );
            conditions.push(
              ...[...stale].map(([id, reservedAt]) => `${e.n('held', id)} = ${e.v(reservedAt)}`),
            );
          }
        }
        if (tokens) {
          set.push(`${e.n('tokens')} = ${e.v(tokens.left)}`);
          set.push(`${e.n('tokensAt')} = ${e.v(tokens.at)}`);
          set.push(`${e.n('tokensVersion')} = ${e.v((seen.tokensVersion ?? 0) + 1)}`);
          // The bucket's version, not its time, is what two claims compare: within one millisecond the time is equal.
          conditions.push(
            seen.tokensVersion === undefined
              ? `attribute_not_exists(${e.n('tokensVersion')})`
              : `${e.n('tokensVersion')} = ${e.v(seen.tokensVersion)}`,
          );
        }
        return { set, remove, condition: conditions.join(' AND ') };
      },
      (value) => value,
    );
    return written.ok;
  }

  async release(queue: string, slots: ReadonlyMap<string, number>): Promise<void> {
    // Nothing comes back: the item may be large (the whole map), and a refusal needs no reason.
    const e = new Expression();
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: controlKey(queue),
          UpdateExpression: updateExpression({ remove: [...slots.keys()].map((id) => e.n('held', id)) }),
          ConditionExpression: [...slots].map(([id, at]) => `${e.n('held', id)} = ${e.v(at)}`).join(' AND '),
          ...e.attributes(),
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}
