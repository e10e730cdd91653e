/**
 * The push channel's records in the connections table (`pk`, `sk`, expiring through `purgeAt`):
 * - `ticket#<hash>`: a connect ticket, deleted by the one connect that uses it;
 * - `connection#<id>`: an open connection and its caller;
 * - `agent#<agentId>`: the connection an agent listens on (the newest);
 * - `queue#<name>[#<shard>]` / `agent#<agentId>`: an agent listening to a queue, with `idle`, `wokenAt` and the
 *   tasks its last empty claim asked for (`capacity`). A queue's listeners are spread over `listenerShards`
 *   partitions by a hash of the agent id (the first is `queue#<name>`, as functions before shards wrote every
 *   listener), so no partition takes every wake and idle mark of a busy queue. A wake reads a random partition
 *   (small items, one request for a fleet of hundreds), and the others only if it found too few idle agents there;
 *   it takes a listener with a conditional write, so two wakes never take the same idle agent, and the cooldown
 *   holds under parallel wakes;
 * - `task#<taskId>` / `connection#<id>`: a connection watching a task, to hear when it ends.
 *
 * Every record carries `purgeAt` (seconds) for DynamoDB's TTL, which deletes late: reads check `expiresAt` too.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type UpdateCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import type { ConnectionStore, Listener, PushConnection } from '#core/ports/connection-store';
import { shardOf } from '#domain/ids';
import type { Labels } from '#domain/labels';
import type { PushPrincipal } from '#domain/push';
import { labelsOfItem } from './agent-table';
import { Expression, updateIf } from './expression';

type Item = Record<string, unknown>;

const ONE = '-';
const ticketKey = (hash: string) => ({ pk: `ticket#${hash}`, sk: ONE });
const connectionKey = (connectionId: string) => ({ pk: `connection#${connectionId}`, sk: ONE });
const agentKey = (agentId: string) => ({ pk: `agent#${agentId}`, sk: ONE });
/** A queue's listener partition `shard`: the first is the queue's own, as listeners were kept before shards. */
const listenerPartition = (queue: string, shard: number) =>
  shard === 0 ? `queue#${queue}` : `queue#${queue}#${shard}`;

const purgeAt = (expiresAt: number) => Math.ceil(expiresAt / 1_000);

function principalOf(item: Item): PushPrincipal | undefined {
  if (item.principal === 'operator') return { kind: 'operator' };
  if (item.principal === 'agent' && typeof item.agentId === 'string')
    return { kind: 'agent', agentId: item.agentId };
  return undefined;
}

const principalItem = (principal: PushPrincipal) =>
  principal.kind === 'agent' ? { principal: 'agent', agentId: principal.agentId } : { principal: 'operator' };

const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];

function listenerOf(item: Item): Listener {
  const capacity = Number(item.capacity ?? 1);
  return {
    agentId: String(item.sk).slice('agent#'.length),
    connectionId: String(item.connectionId),
    queues: strings(item.queues),
    // Listeners marked idle by functions before capacities were kept claimed one task at a time, as far as known.
    capacity: Number.isInteger(capacity) && capacity >= 1 ? capacity : 1,
    ...labelsOfItem(item.labels),
    // An agent connected while the listeners were spread otherwise (fewer partitions, or one) is where it was put.
    partition: String(item.pk),
  };
}

const failedCondition = (error: unknown) => error instanceof ConditionalCheckFailedException;

export class ConnectionTable implements ConnectionStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    private readonly now: () => number = Date.now,
    /** Partitions each queue's listeners are spread over (`listenerShards`). */
    private readonly listenerShards = 1,
    private readonly random: () => number = Math.random,
  ) {}

  /** The listener item of an agent in a queue, in the partition its id hashes to. */
  private listenerKey(queue: string, agentId: string) {
    return { pk: listenerPartition(queue, shardOf(agentId, this.listenerShards)), sk: `agent#${agentId}` };
  }

  async putTicket(hash: string, principal: PushPrincipal, expiresAt: number): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...ticketKey(hash), ...principalItem(principal), expiresAt, purgeAt: purgeAt(expiresAt) },
      }),
    );
  }

  async takeTicket(hash: string, now: number): Promise<PushPrincipal | undefined> {
    const e = new Expression();
    try {
      const output = await this.doc.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: ticketKey(hash),
          ConditionExpression: `attribute_exists(${e.n('pk')}) AND ${e.n('expiresAt')} > ${e.v(now)}`,
          ...e.attributes(),
          ReturnValues: 'ALL_OLD',
        }),
      );
      return output.Attributes ? principalOf(output.Attributes) : undefined;
    } catch (error) {
      if (failedCondition(error)) return undefined;
      throw error;
    }
  }

  async open(connection: PushConnection, expiresAt: number): Promise<void> {
    const common = { expiresAt, purgeAt: purgeAt(expiresAt) };
    const items: Item[] = [
      {
        ...connectionKey(connection.connectionId),
        ...principalItem(connection.principal),
        queues: [...connection.queues],
        connectedAt: connection.connectedAt,
        ...common,
      },
    ];
    if (connection.principal.kind === 'agent') {
      const { agentId } = connection.principal;
      items.push({ ...agentKey(agentId), connectionId: connection.connectionId, ...common });
      for (const queue of connection.queues)
        items.push({
          ...this.listenerKey(queue, agentId),
          connectionId: connection.connectionId,
          queues: [...connection.queues],
          idle: false,
          wokenAt: 0,
          ...common,
        });
    }
    // At most 1 + 1 + 32 items: two batches at most; unprocessed items are sent again.
    for (let i = 0; i < items.length; i += 25) {
      let pending = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt === 5) throw new Error('the connection records could not all be written');
        const output = await this.doc.send(
          new BatchWriteCommand({ RequestItems: { [this.tableName]: pending } }),
        );
        pending = (output.UnprocessedItems?.[this.tableName] ?? []) as typeof pending;
        if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** attempt));
      }
    }
  }

  async get(connectionId: string): Promise<PushConnection | undefined> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: connectionKey(connectionId), ConsistentRead: true }),
    );
    const item = output.Item;
    const principal = item && principalOf(item);
    if (!item || !principal || Number(item.expiresAt) <= this.now()) return undefined;
    return {
      connectionId,
      principal,
      queues: strings(item.queues),
      connectedAt: Number(item.connectedAt),
    };
  }

  async close(connection: PushConnection): Promise<void> {
    const { connectionId } = connection;
    await this.doc.send(new DeleteCommand({ TableName: this.tableName, Key: connectionKey(connectionId) }));
    if (connection.principal.kind !== 'agent') return;
    const { agentId } = connection.principal;
    // Records a newer connection of the same agent wrote are its own: deleted only while they name this one.
    const mine = (Key: Item) => {
      const e = new Expression();
      return this.doc
        .send(
          new DeleteCommand({
            TableName: this.tableName,
            Key,
            ConditionExpression: `${e.n('connectionId')} = ${e.v(connectionId)}`,
            ...e.attributes(),
          }),
        )
        .catch((error: unknown) => {
          if (!failedCondition(error)) throw error;
        });
    };
    await Promise.all([
      mine(agentKey(agentId)),
      ...connection.queues.map((queue) => mine(this.listenerKey(queue, agentId))),
    ]);
  }

  async connectionOf(agentId: string): Promise<string | undefined> {
    const output = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: agentKey(agentId) }));
    const item = output.Item;
    return item && Number(item.expiresAt) > this.now() && typeof item.connectionId === 'string'
      ? item.connectionId
      : undefined;
  }

  async markIdle(
    agentId: string,
    queues: readonly string[],
    capacity = 1,
    labels: Labels = {},
  ): Promise<{ readonly wokenAt: number; readonly wasIdle: boolean } | undefined> {
    const marked = await Promise.all(
      queues.map((queue) =>
        this.setIdle(
          this.listenerKey(queue, agentId),
          // Its labels as its session has them now: a wake for tasks that require labels finds it by these.
          { idle: true, capacity, labels },
          (e) => `attribute_exists(${e.n('pk')}) AND ${e.n('expiresAt')} > ${e.v(this.now())}`,
          // The item as it was: whether it was idle already, and when it was last woken (a mark leaves that).
          'ALL_OLD',
        ),
      ),
    );
    const listening = marked
      .filter((output) => output !== undefined)
      .map((output) => ({
        wokenAt: Number(output.Attributes?.wokenAt ?? 0),
        wasIdle: output.Attributes?.idle === true,
      }));
    return listening.length > 0
      ? {
          wokenAt: Math.max(...listening.map((mark) => mark.wokenAt)),
          wasIdle: listening.every((mark) => mark.wasIdle),
        }
      : undefined;
  }

  async findIdle(
    queue: string,
    wokenBefore: number,
    capacity: number,
    serves: (listener: Listener) => boolean = () => true,
  ): Promise<Listener[]> {
    const idleIn = async (shard: number) => {
      const items = await this.query(listenerPartition(queue, shard), Number.POSITIVE_INFINITY, (e) =>
        [
          `${e.n('idle')} = ${e.v(true)}`,
          `${e.n('wokenAt')} <= ${e.v(wokenBefore)}`,
          `${e.n('expiresAt')} > ${e.v(this.now())}`,
        ].join(' AND '),
      );
      return items.map(listenerOf).filter(serves);
    };
    // A random partition first; the others, at once, only if it holds too few idle agents for `capacity` tasks.
    const first = Math.min(this.listenerShards - 1, Math.floor(this.random() * this.listenerShards));
    const found = await idleIn(first);
    if (found.reduce((sum, listener) => sum + listener.capacity, 0) >= capacity || this.listenerShards === 1)
      return found;
    const others = Array.from({ length: this.listenerShards }, (_, shard) => shard).filter(
      (s) => s !== first,
    );
    return [...found, ...(await Promise.all(others.map(idleIn))).flat()];
  }

  async takeForWake(queue: string, listener: Listener, now: number, wokenBefore: number): Promise<boolean> {
    const e = new Expression();
    return updateIf(this.doc, {
      TableName: this.tableName,
      Key: listener.partition
        ? { pk: listener.partition, sk: `agent#${listener.agentId}` }
        : this.listenerKey(queue, listener.agentId),
      UpdateExpression: `SET ${e.n('idle')} = ${e.v(false)}, ${e.n('wokenAt')} = ${e.v(now)}`,
      ConditionExpression: [
        `${e.n('connectionId')} = ${e.v(listener.connectionId)}`,
        `${e.n('idle')} = ${e.v(true)}`,
        `${e.n('wokenAt')} <= ${e.v(wokenBefore)}`,
      ].join(' AND '),
      ...e.attributes(),
    });
  }

  /** A query of each listener partition of the queue, then one conditional write per listener still cooling down. */
  async clearWakeMarks(queue: string, wokenAfter: number): Promise<number> {
    const partitions = Array.from({ length: this.listenerShards }, (_, shard) =>
      listenerPartition(queue, shard),
    );
    const cleared = await Promise.all(
      partitions.map(async (pk) => {
        const items = await this.query(
          pk,
          Number.POSITIVE_INFINITY,
          (e) => `${e.n('wokenAt')} > ${e.v(wokenAfter)}`,
        );
        const set = await Promise.all(
          items.map((item) => {
            const e = new Expression();
            return updateIf(this.doc, {
              TableName: this.tableName,
              Key: { pk: item.pk, sk: item.sk },
              UpdateExpression: `SET ${e.n('wokenAt')} = ${e.v(0)}`,
              ConditionExpression: `${e.n('wokenAt')} = ${e.v(Number(item.wokenAt))}`,
              ...e.attributes(),
            });
          }),
        );
        return set.filter(Boolean).length;
      }),
    );
    return cleared.reduce((a, b) => a + b, 0);
  }

  async markBusy(listener: Listener, queues: readonly string[]): Promise<void> {
    await Promise.all(
      queues.map((queue) =>
        this.setIdle(
          this.listenerKey(queue, listener.agentId),
          { idle: false },
          (e) => `${e.n('connectionId')} = ${e.v(listener.connectionId)}`,
        ),
      ),
    );
  }

  /**
   * Sets the `idle` flag of one listener item (and, marking it idle, the tasks it may claim) if `condition` holds:
   * what the update answered, or undefined when the condition failed (the agent no longer listens there, or listens
   * under another connection).
   */
  private async setIdle(
    key: Record<string, string>,
    mark: { readonly idle: boolean; readonly capacity?: number; readonly labels?: Labels },
    condition: (e: Expression) => string,
    returnValues?: 'ALL_OLD',
  ): Promise<UpdateCommandOutput | undefined> {
    const e = new Expression();
    const sets = Object.entries(mark).map(([name, value]) => `${e.n(name)} = ${e.v(value)}`);
    try {
      return await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: `SET ${sets.join(', ')}`,
          ConditionExpression: condition(e),
          ...e.attributes(),
          ...(returnValues ? { ReturnValues: returnValues } : {}),
        }),
      );
    } catch (error) {
      if (failedCondition(error)) return undefined;
      throw error;
    }
  }

  async watch(taskId: string, connectionId: string, expiresAt: number): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          pk: `task#${taskId}`,
          sk: `connection#${connectionId}`,
          connectionId,
          expiresAt,
          purgeAt: purgeAt(expiresAt),
        },
      }),
    );
  }

  async watchers(taskId: string): Promise<string[]> {
    // The task was marked watched after the watch was written: a strong read sees every such watch.
    const items = await this.query(
      `task#${taskId}`,
      Number.POSITIVE_INFINITY,
      (e) => `${e.n('expiresAt')} > ${e.v(this.now())}`,
      { consistent: true },
    );
    return items.map((item) => String(item.connectionId));
  }

  /** Items of a partition passing `filter`, read page by page until `limit` are found or the partition ends. */
  private async query(
    pk: string,
    limit: number,
    filter: (e: Expression) => string,
    { consistent = false } = {},
  ): Promise<Item[]> {
    const e = new Expression();
    const keyCondition = `${e.n('pk')} = ${e.v(pk)}`;
    const filterExpression = filter(e);
    const found: Item[] = [];
    let startKey: Item | undefined;
    do {
      const output = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: keyCondition,
          FilterExpression: filterExpression,
          ...e.attributes(),
          ...(consistent ? { ConsistentRead: true } : {}),
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      found.push(...(output.Items ?? []));
      startKey = output.LastEvaluatedKey;
    } while (startKey && found.length < limit);
    return found.slice(0, limit);
  }
}
