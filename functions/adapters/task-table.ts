/**
 * The tasks table: the state item every transition rewrites, and the payload item written once.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { isPriority } from '#domain/priority';
import type { FinishRecord, Task, TaskError } from '#domain/task';
import { isTaskStatus } from '#domain/task-status';
import { type ConditionalClauses, conditionalUpdate, Expression } from './expression';
import { PAYLOAD_OBJECT_PREFIX, type PayloadObjects } from './payload-objects';
import { DUE_INDEX, LISTED_INDEX, payloadPart, TASK_PART } from './tables';

type Item = Record<string, unknown>;

const stateKey = (taskId: string) => ({ taskId, part: TASK_PART.state });
const payloadKey = (taskId: string, specHash: string) => ({ taskId, part: payloadPart(specHash) });
const legacyPayloadKey = (taskId: string) => ({ taskId, part: 'payload' });
const payloadObjectKey = (taskId: string, specHash: string) =>
  `${PAYLOAD_OBJECT_PREFIX}${taskId}/${specHash}`;

/** What `putPayloads` wrote: whether a payload went to S3. */
export interface WrittenPayloads {
  inObject(payload: Pick<NewPayload, 'taskId' | 'specHash'>): boolean;
}

/** A payload to write: the task's, with the hash of its specification and when it may be purged. */
export interface NewPayload {
  readonly taskId: string;
  readonly payloadJson: string;
  readonly specHash: string;
  readonly purgeAt: number;
}

const optionalNumber = (value: unknown): number | undefined =>
  typeof value === 'number' ? value : undefined;
const optionalString = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : undefined;
const parseJson = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : undefined);

/**
 * Payloads shorter than this are stored as they are: they fit a write unit with the item's keys anyway.
 * DynamoDB bills writes per started kilobyte of item, so a longer one is stored deflated when that is smaller:
 * a 1 KB JSON payload of random base64 (the worst case short of encrypted data) fits one write unit, not two.
 */
const COMPRESS_FROM_BYTES = 512;

/** A payload's bytes as stored: its JSON text, or the raw deflate of it when that is smaller. */
function encodePayload(payloadJson: string): { bytes: Uint8Array; encoding: PayloadEncoding } {
  const text = Buffer.from(payloadJson);
  if (text.length < COMPRESS_FROM_BYTES) return { bytes: text, encoding: 'json' };
  const deflated = deflateRawSync(text);
  return deflated.length < text.length
    ? { bytes: deflated, encoding: 'deflate' }
    : { bytes: text, encoding: 'json' };
}

const inlineAttributes = (
  payloadJson: string,
  { bytes, encoding }: ReturnType<typeof encodePayload>,
): { payload: string } | { payloadDeflated: Uint8Array } =>
  encoding === 'deflate' ? { payloadDeflated: bytes } : { payload: payloadJson };

/** The attributes holding a payload: `payload` (JSON text) or `payloadDeflated` (raw deflate of it). */
export const payloadAttributes = (payloadJson: string) =>
  inlineAttributes(payloadJson, encodePayload(payloadJson));

/** The payload's JSON text from a payload item that holds it; undefined when it has none (or names an object). */
export function payloadJsonOf(item: Item): string | undefined {
  if (typeof item.payload === 'string') return item.payload;
  if (item.payloadDeflated instanceof Uint8Array) return decodePayload(item.payloadDeflated, 'deflate');
  return undefined;
}

type PayloadEncoding = 'json' | 'deflate';

const decodePayload = (bytes: Uint8Array, encoding: PayloadEncoding): string =>
  (encoding === 'deflate' ? inflateRawSync(bytes) : Buffer.from(bytes)).toString('utf8');

/** Where large payloads go; without it every payload stays in its DynamoDB item. */
export interface PayloadObjectStore {
  readonly objects: PayloadObjects;
  /** Payloads larger than this once encoded become S3 objects. */
  readonly fromBytes: number;
}

/** Reads a state item. Unknown or missing enumerations fail loudly: they mean a corrupt record. */
export function taskFromItem(item: Item): Task {
  const { status, priority } = item;
  if (!isTaskStatus(status)) throw new Error(`task ${String(item.taskId)} has an unknown status`);
  if (!isPriority(priority)) throw new Error(`task ${String(item.taskId)} has an unknown priority`);
  const error = item.error as TaskError | undefined;
  const lastFinish = item.lastFinish as FinishRecord | undefined;
  const task: Task = {
    taskId: String(item.taskId),
    queue: String(item.queue),
    priority,
    status,
    attempt: Number(item.attempt ?? 0),
    retryPolicy: {
      maxAttempts: Number(item.maxAttempts),
      backoffBaseSeconds: Number(item.backoffBaseSeconds),
      backoffMaxSeconds: Number(item.backoffMaxSeconds),
    },
    timeoutSeconds: Number(item.timeoutMs) / 1_000,
    leaseEpoch: Number(item.leaseEpoch ?? 0),
    dispatchCount: Number(item.dispatchCount ?? 0),
    specHash: String(item.specHash),
    payloadBytes: Number(item.payloadBytes ?? 0),
    createdAt: Number(item.createdAt),
    updatedAt: Number(item.updatedAt),
  };
  return Object.assign(
    task,
    definedOnly({
      owner: optionalString(item.owner),
      sessionId: optionalString(item.sessionId),
      leasedAt: optionalNumber(item.leasedAt),
      leaseDeadline: optionalNumber(item.leaseDeadline),
      notBefore: optionalNumber(item.notBefore),
      dispatchedAt: optionalNumber(item.dispatchedAt),
      checkpoint: parseJson(item.checkpoint),
      result: parseJson(item.result),
      error: error ? { message: String(error.message), retryable: Boolean(error.retryable) } : undefined,
      lastFinish,
      claimId: optionalString(item.claimId),
      starvationLevel: optionalNumber(item.starvationLevel),
      needsAttention: item.needsAttention === true ? true : undefined,
      idempotencyKey: optionalString(item.idempotencyKey),
      finishedAt: optionalNumber(item.finishedAt),
      payloadInObject: item.payloadInObject === true ? true : undefined,
    }),
  );
}

function definedOnly<T extends Record<string, unknown>>(record: T): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The item for a newly submitted task; `listShard` places it in the `listed` index, for good. */
export function itemFromNewTask(
  task: Task,
  due: { dueShard: string; dueAt: number },
  listShard: string,
): Item {
  return definedOnly({
    ...stateKey(task.taskId),
    queue: task.queue,
    priority: task.priority,
    status: task.status,
    attempt: task.attempt,
    maxAttempts: task.retryPolicy.maxAttempts,
    backoffBaseSeconds: task.retryPolicy.backoffBaseSeconds,
    backoffMaxSeconds: task.retryPolicy.backoffMaxSeconds,
    timeoutMs: task.timeoutSeconds * 1_000,
    leaseEpoch: task.leaseEpoch,
    notBefore: task.notBefore,
    dispatchedAt: task.dispatchedAt,
    dispatchCount: task.dispatchCount,
    idempotencyKey: task.idempotencyKey,
    specHash: task.specHash,
    payloadBytes: task.payloadBytes,
    payloadInObject: task.payloadInObject,
    createdAt: task.createdAt,
    updatedAt: task.updatedAt,
    dueShard: due.dueShard,
    dueAt: due.dueAt,
    listShard,
  });
}

export type ConditionalResult =
  | { readonly ok: true; readonly task: Task }
  | { readonly ok: false; readonly current?: Task };

/** The clauses of one conditional update of a state item, written with placeholders from `e`. */
export type StateUpdate = ConditionalClauses;

export class TaskTable {
  constructor(
    readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    readonly payloadObjects?: PayloadObjectStore,
  ) {}

  /**
   * Writes payload items, 25 to a `BatchWriteItem` request. An item's key names the task's specification
   * (`payload#<specHash>`), so these writes need no condition: a retry writes the same item again, and an
   * idempotency key reused for a different task writes an item of its own, which the conflict found at the
   * state item leaves to expire, instead of overwriting the payload of the task that holds the id.
   *
   * A large payload is written to S3 first, under a key that names the specification too, so an item never names
   * a missing object. A payload named twice (one idempotency key twice in a batch) is written once: a
   * `BatchWriteItem` refuses a request that names one key twice.
   */
  async putPayloads(payloads: readonly NewPayload[]): Promise<WrittenPayloads> {
    const distinct = new Map(payloads.map((p) => [payloadObjectKey(p.taskId, p.specHash), p]));
    const items = await Promise.all([...distinct.values()].map((p) => this.payloadItem(p)));
    const objects = new Set(
      items.flatMap((item) => (typeof item.payloadObject === 'string' ? [item.payloadObject] : [])),
    );
    const inObject = (payload: Pick<NewPayload, 'taskId' | 'specHash'>) =>
      objects.has(payloadObjectKey(payload.taskId, payload.specHash));
    const writes = items.map((Item): Item => ({ PutRequest: { Item } }));
    await untilProcessed(writes, 25, 'BatchWriteItem', async (pending) => {
      const output = await this.doc.send(
        new BatchWriteCommand({ RequestItems: { [this.tableName]: [...pending] } }),
      );
      return output.UnprocessedItems?.[this.tableName];
    });
    return { inObject };
  }

  /** Lets go of a payload's S3 object once its task can never run again; best effort, DELETE is free. */
  async deletePayloadObject(task: Pick<Task, 'taskId' | 'specHash'>): Promise<void> {
    await this.payloadObjects?.objects.delete(payloadObjectKey(task.taskId, task.specHash));
  }

  private async payloadItem({ taskId, payloadJson, specHash, purgeAt }: NewPayload): Promise<Item> {
    const encoded = encodePayload(payloadJson);
    const store = this.payloadObjects;
    if (!store || encoded.bytes.length <= store.fromBytes) {
      return {
        ...payloadKey(taskId, specHash),
        ...inlineAttributes(payloadJson, encoded),
        specHash,
        purgeAt,
      };
    }
    const key = payloadObjectKey(taskId, specHash);
    await store.objects.put(key, encoded.bytes);
    return {
      ...payloadKey(taskId, specHash),
      payloadObject: key,
      payloadEncoding: encoded.encoding,
      payloadObjectBytes: encoded.bytes.length,
      specHash,
      purgeAt,
    };
  }

  /** Creates the state item unless one exists; then returns the existing task instead. */
  async createState(item: Item): Promise<{ created: true } | { created: false; existing: Task }> {
    const e = new Expression();
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: `attribute_not_exists(${e.n('taskId')})`,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ...e.attributes(),
        }),
      );
      return { created: true };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException && error.Item) {
        return { created: false, existing: taskFromItem(unmarshall(error.Item)) };
      }
      throw error;
    }
  }

  async get(taskId: string, consistent = true): Promise<Task | undefined> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: stateKey(taskId), ConsistentRead: consistent }),
    );
    return output.Item ? taskFromItem(output.Item) : undefined;
  }

  /** Reads many state items, 100 keys per request, retrying unprocessed keys. */
  async getMany(taskIds: readonly string[], consistent = true): Promise<Map<string, Task>> {
    const items = await this.batchGet(taskIds.map(stateKey), consistent);
    return new Map(items.map((item) => [String(item.taskId), taskFromItem(item)]));
  }

  /**
   * Reads payloads. Payload items never change once written, so an eventually consistent read is enough,
   * except right after submit; misses are read again strongly consistent.
   */
  async getPayloads(tasks: readonly Pick<Task, 'taskId' | 'specHash'>[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    const collect = async (items: Item[]) => {
      await Promise.all(
        items.map(async (item) => {
          const json = await this.readPayloadJson(item);
          if (json !== undefined) found.set(String(item.taskId), json);
        }),
      );
    };
    await collect(
      await this.batchGet(
        tasks.map((t) => payloadKey(t.taskId, t.specHash)),
        false,
      ),
    );
    const missing = tasks.filter((t) => !found.has(t.taskId));
    if (missing.length > 0) {
      // Strongly consistent, and under the key payloads had before they named their specification.
      const keys = missing.flatMap((t) => [payloadKey(t.taskId, t.specHash), legacyPayloadKey(t.taskId)]);
      await collect(await this.batchGet(keys, true));
    }
    return found;
  }

  /** A payload item's JSON, from its object when it names one; undefined when the object is gone. */
  private async readPayloadJson(item: Item): Promise<string | undefined> {
    if (typeof item.payloadObject !== 'string') return payloadJsonOf(item);
    if (!this.payloadObjects)
      throw new Error(`task ${String(item.taskId)} has its payload in S3, unconfigured`);
    const bytes = await this.payloadObjects.objects.get(item.payloadObject);
    return bytes && decodePayload(bytes, item.payloadEncoding === 'deflate' ? 'deflate' : 'json');
  }

  /** One conditional update of a state item; on a failed condition, the task as it is now. */
  async update(taskId: string, build: (e: Expression) => StateUpdate): Promise<ConditionalResult> {
    const outcome = await conditionalUpdate(
      this.doc,
      { TableName: this.tableName, Key: stateKey(taskId) },
      build,
      taskFromItem,
    );
    return outcome.ok ? { ok: true, task: outcome.value } : outcome;
  }

  /** Task ids in one shard of the `due` index whose time to be looked at has come. */
  async queryDue(dueShard: string, now: number, limit: number): Promise<string[]> {
    const e = new Expression();
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: DUE_INDEX,
        KeyConditionExpression: `${e.n('dueShard')} = ${e.v(dueShard)} AND ${e.n('dueAt')} <= ${e.v(now)}`,
        Limit: limit,
        ...e.attributes(),
      }),
    );
    return (output.Items ?? []).map((item) => String(item.taskId));
  }

  /**
   * One page of a shard of the `listed` index, newest first: task ids with their creation times, from `startKey`
   * (the `startKey` of the page before) or else from the newest task created at or before `atOrBefore`. Tasks
   * created in the same millisecond come in no promised order.
   */
  async queryListed(
    listShard: string,
    from: { atOrBefore?: number; startKey?: Item; limit: number },
  ): Promise<{ entries: { taskId: string; createdAt: number }[]; startKey?: Item }> {
    const e = new Expression();
    const key = [`${e.n('listShard')} = ${e.v(listShard)}`];
    if (from.atOrBefore !== undefined) key.push(`${e.n('createdAt')} <= ${e.v(from.atOrBefore)}`);
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: LISTED_INDEX,
        KeyConditionExpression: key.join(' AND '),
        ScanIndexForward: false,
        Limit: from.limit,
        ExclusiveStartKey: from.startKey,
        ...e.attributes(),
      }),
    );
    return {
      entries: (output.Items ?? []).map((item) => ({
        taskId: String(item.taskId),
        createdAt: Number(item.createdAt),
      })),
      ...(output.LastEvaluatedKey ? { startKey: output.LastEvaluatedKey } : {}),
    };
  }

  private async batchGet(keys: readonly Item[], consistent: boolean): Promise<Item[]> {
    const items: Item[] = [];
    await untilProcessed(keys, 100, 'BatchGetItem', async (pending) => {
      const output = await this.doc.send(
        new BatchGetCommand({
          RequestItems: { [this.tableName]: { Keys: [...pending], ConsistentRead: consistent } },
        }),
      );
      items.push(...(output.Responses?.[this.tableName] ?? []));
      return output.UnprocessedKeys?.[this.tableName]?.Keys;
    });
    return items;
  }
}

/**
 * Sends `all` in requests of at most `size`, and sends again whatever DynamoDB left unprocessed (it may under
 * load), backing off up to a second; ten rounds per request at most.
 */
async function untilProcessed<T>(
  all: readonly T[],
  size: number,
  operation: string,
  send: (pending: readonly T[]) => Promise<readonly T[] | undefined>,
): Promise<void> {
  for (let i = 0; i < all.length; i += size) {
    let pending: readonly T[] | undefined = all.slice(i, i + size);
    for (let round = 0; pending && pending.length > 0; round++) {
      if (round >= 10) throw new Error(`${operation} left items unprocessed after retries`);
      if (round > 0) await sleep(Math.min(1_000, 25 * 2 ** round));
      pending = await send(pending);
    }
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
