/**
 * The tasks table: the state item every transition rewrites, and the payload item written once.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type {
  Ending,
  Grant,
  LadderClimb,
  LaneEntry,
  ListingCursor,
  NewPayload,
  Observed,
  OwnerFence,
  OwnerFinish,
  PayloadHolder,
  ReadOptions,
  Requeue,
  StoredInput,
  TakingBack,
  TaskStore,
  TaskWrite,
  TurnSlot,
  WrittenPayloads,
} from '#core/ports/task-store';
import { shardOf } from '#domain/ids';
import { laneOf } from '#domain/lanes';
import { isPriority } from '#domain/priority';
import type { DependencyOutcome, FinishRecord, Task, TaskError } from '#domain/task';
import { isTaskStatus, isTerminal } from '#domain/task-status';
import { type ConditionalClauses, conditionalUpdate, Expression } from './expression';
import { PAYLOAD_OBJECT_PREFIX, type PayloadObjects } from './payload-objects';
import {
  DUE_INDEX,
  DUE_SHARDS,
  dependentPart,
  inputPart,
  LANE_INDEX,
  LISTED_INDEX,
  LISTED_SHARDS,
  laneTurnKey,
  payloadPart,
  RESULT_PART,
  TASK_PART,
} from './tables';
import {
  destinationClauses,
  endingClauses,
  epochFence,
  ownerFence,
  requeueClauses,
  statusCondition,
  stillAsObserved,
} from './task-writes';

type Item = Record<string, unknown>;

const shardName = (prefix: string, shard: number): string => `${prefix}#${String(shard).padStart(2, '0')}`;

/** The `due` index partition of a task: a sweep queries every one. */
export const dueShardOf = (taskId: string): string => shardName('due', shardOf(taskId, DUE_SHARDS));

const ALL_DUE_SHARDS: readonly string[] = Array.from({ length: DUE_SHARDS }, (_, shard) =>
  shardName('due', shard),
);

/** The `listed` index partition of a task: its queue, and a shard of it. */
export const listedShardOf = (queue: string, taskId: string): string =>
  shardName(queue, shardOf(taskId, LISTED_SHARDS));

const stateKey = (taskId: string) => ({ taskId, part: TASK_PART.state });
const payloadKey = (taskId: string, specHash: string) => ({ taskId, part: payloadPart(specHash) });
const legacyPayloadKey = (taskId: string) => ({ taskId, part: 'payload' });
const payloadObjectKey = (taskId: string, specHash: string) =>
  `${PAYLOAD_OBJECT_PREFIX}${taskId}/${specHash}`;

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
      queueSlots: Array.isArray(item.queueSlots) ? item.queueSlots.map(String) : undefined,
      leaseDeadline: optionalNumber(item.leaseDeadline),
      notBefore: optionalNumber(item.notBefore),
      dispatchedAt: optionalNumber(item.dispatchedAt),
      checkpoint: parseJson(item.checkpoint),
      result: parseJson(item.result),
      error: error ? { message: String(error.message), retryable: Boolean(error.retryable) } : undefined,
      lastFinish,
      claimId: optionalString(item.claimId),
      readyAt: item.status === 'queued' ? optionalNumber(item.readyAt) : undefined,
      starvationLevel: optionalNumber(item.starvationLevel),
      needsAttention: item.needsAttention === true ? true : undefined,
      idempotencyKey: optionalString(item.idempotencyKey),
      finishedAt: optionalNumber(item.finishedAt),
      payloadInObject: item.payloadInObject === true ? true : undefined,
      payloadPurgeAt: optionalNumber(item.payloadPurgeAt),
      watched: item.watched === true ? true : undefined,
      expiresAt: optionalNumber(item.expiresAt),
      hasOnFailure: item.hasOnFailure === true ? true : undefined,
      failureOf: failureOfItem(item.failureOf),
      followUpPending: item.followUp === true ? true : undefined,
      redrives: optionalNumber(item.redrives),
      dependencyCount: optionalNumber(item.dependencyCount),
      onDependencyFailure:
        item.onDependencyFailure === 'run' || item.onDependencyFailure === 'cancel'
          ? item.onDependencyFailure
          : undefined,
      waitingOn:
        typeof item.waitingOn === 'object' && item.waitingOn !== null
          ? Object.keys(item.waitingOn)
          : undefined,
      failedDependency: optionalString(item.failedDependency),
      hasDependents: item.hasDependents === true ? true : undefined,
      dependentCount: optionalNumber(item.dependentCount),
      parentTaskId: optionalString(item.parentTaskId),
      rootTaskId: optionalString(item.rootTaskId),
      concurrencyKey: optionalString(item.concurrencyKey),
    }),
  );
}

const turnSlotOf = (item: Item): TurnSlot =>
  definedOnly({
    token: optionalString(item.turnToken),
    visibleAt: optionalNumber(item.visibleAt),
    heldAt: optionalNumber(item.heldAt),
    lastOfferAt: optionalNumber(item.lastOfferAt),
  });

function failureOfItem(value: unknown): Task['failureOf'] {
  if (typeof value !== 'object' || value === null) return undefined;
  const { taskId, error } = value as { taskId?: unknown; error?: TaskError };
  return {
    taskId: String(taskId),
    ...(error ? { error: { message: String(error.message), retryable: Boolean(error.retryable) } } : {}),
  };
}

function definedOnly<T extends Record<string, unknown>>(record: T): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The item for a newly submitted task, due at `dueAt`; its listing partition is its for good. */
export function itemFromNewTask(task: Task, dueAt: number): Item {
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
    payloadPurgeAt: task.payloadPurgeAt,
    expiresAt: task.expiresAt,
    hasOnFailure: task.hasOnFailure,
    failureOf: task.failureOf,
    dependencyCount: task.dependencyCount,
    onDependencyFailure: task.onDependencyFailure,
    waitingOn: task.waitingOn && Object.fromEntries(task.waitingOn.map((id) => [id, true])),
    parentTaskId: task.parentTaskId,
    rootTaskId: task.rootTaskId,
    concurrencyKey: task.concurrencyKey,
    laneId: laneOf(task)?.laneId,
    readyAt: task.status === 'queued' ? (task.notBefore ?? task.createdAt) : undefined,
    createdAt: task.createdAt,
    updatedAt: task.updatedAt,
    dueShard: dueShardOf(task.taskId),
    dueAt,
    listShard: listedShardOf(task.queue, task.taskId),
  });
}

export type ConditionalResult = TaskWrite;

/** The clauses of one conditional update of a state item, written with placeholders from `e`. */
export type StateUpdate = ConditionalClauses;

export class TaskTable implements TaskStore {
  readonly dueShards = ALL_DUE_SHARDS;

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

  async deletePayload(task: Pick<Task, 'taskId' | 'specHash'>): Promise<void> {
    // Through BatchWriteItem, which payloads are written with: the functions that write them need no other grant.
    const writes: Item[] = [{ DeleteRequest: { Key: payloadKey(task.taskId, task.specHash) } }];
    await untilProcessed(writes, 25, 'BatchWriteItem', async (pending) => {
      const output = await this.doc.send(
        new BatchWriteCommand({ RequestItems: { [this.tableName]: [...pending] } }),
      );
      return output.UnprocessedItems?.[this.tableName];
    });
    await this.deletePayloadObject(task);
  }

  private async payloadItem({
    taskId,
    payloadJson,
    specHash,
    purgeAt,
    onFailureJson,
  }: NewPayload): Promise<Item> {
    const encoded = encodePayload(payloadJson);
    const store = this.payloadObjects;
    const followUps = onFailureJson === undefined ? {} : { onFailure: onFailureJson };
    if (!store || encoded.bytes.length <= store.fromBytes) {
      return {
        ...payloadKey(taskId, specHash),
        ...inlineAttributes(payloadJson, encoded),
        ...followUps,
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
      ...followUps,
      specHash,
      purgeAt,
    };
  }

  async getOnFailure(task: Pick<Task, 'taskId' | 'specHash'>): Promise<string | undefined> {
    const output = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: payloadKey(task.taskId, task.specHash),
        ProjectionExpression: 'onFailure',
        ConsistentRead: true,
      }),
    );
    const json = output.Item?.onFailure;
    return typeof json === 'string' ? json : undefined;
  }

  /**
   * The object first, then the items that name it, then the state item that says how long they are kept: a state
   * item never promises more than its records hold. Each item's update is conditional on the item existing (an
   * update would otherwise create one) and on its time being earlier, so it extends only. DynamoDB bills an update
   * by the whole item: a payload item holds at most about 10 KB (a larger payload is an object), so 1 to 11 write
   * units, each input 1 unit (or the size of the result it copies, if written before results were kept once),
   * each result it names the size of that result (at most once per dependent's 10.5 days of life, and not at all
   * once another dependent kept it as long), each link of a waiting task 1 unit.
   */
  async keepPayload(task: PayloadHolder, purgeAt: number): Promise<void> {
    if (task.payloadInObject) {
      await this.payloadObjects?.objects.keep(payloadObjectKey(task.taskId, task.specHash), purgeAt);
    }
    const inputs = task.dependencyCount ? await this.inputKeys(task.taskId) : [];
    // A waiting task's records in its dependencies' partitions, by which their ends tell it at once.
    const links = (task.status === 'waiting' ? (task.waitingOn ?? []) : []).map((dependencyId) => ({
      taskId: dependencyId,
      part: dependentPart(task.taskId),
    }));
    await Promise.all([
      this.extendPurge(payloadKey(task.taskId, task.specHash), 'purgeAt', purgeAt).then(
        // A payload from before items named their specification has the key of that time.
        (kept) => kept || this.extendPurge(legacyPayloadKey(task.taskId), 'purgeAt', purgeAt),
      ),
      ...[...inputs, ...links].map((key) => this.extendPurge(key, 'purgeAt', purgeAt)),
    ]);
    await this.extendPurge(stateKey(task.taskId), 'payloadPurgeAt', purgeAt);
  }

  /** Moves an item's purge time to `purgeAt` if it exists and is to be purged earlier. False if it does not exist. */
  private async extendPurge(key: Item, attribute: string, purgeAt: number): Promise<boolean> {
    const e = new Expression();
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: `SET ${e.n(attribute)} = ${e.v(purgeAt)}`,
          ConditionExpression: `attribute_exists(${e.n('taskId')}) AND (attribute_not_exists(${e.n(attribute)}) OR ${e.n(attribute)} < ${e.v(purgeAt)})`,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ...e.attributes(),
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return error.Item !== undefined;
      throw error;
    }
  }

  /**
   * The keys of the inputs kept for a task, and of the results they name (kept once in their dependency's
   * partition, for every dependent): a result must last as long as the longest-lived dependent that will read it.
   * Projected, though a query bills the whole items it reads.
   */
  private async inputKeys(taskId: string): Promise<Item[]> {
    const keys: Item[] = [];
    const projected = ['taskId', 'part', 'dependencyId', 'resultKept'];
    for await (const item of this.inputItems(taskId, { projected, consistent: false })) {
      keys.push({ taskId: item.taskId, part: item.part });
      if (item.resultKept === true) keys.push({ taskId: String(item.dependencyId), part: RESULT_PART });
    }
    return keys;
  }

  /** The input items kept for a task, page after page (a query bills the whole items it reads, projected or not). */
  private async *inputItems(
    taskId: string,
    options: { projected?: readonly string[]; consistent: boolean },
  ): AsyncGenerator<Item> {
    let startKey: Item | undefined;
    do {
      const e = new Expression();
      const output = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: `${e.n('taskId')} = ${e.v(taskId)} AND begins_with(${e.n('part')}, ${e.v(inputPart(''))})`,
          ...(options.projected
            ? { ProjectionExpression: options.projected.map((name) => e.n(name)).join(', ') }
            : {}),
          ExclusiveStartKey: startKey,
          ...(options.consistent ? { ConsistentRead: true } : {}),
          ...e.attributes(),
        }),
      );
      yield* output.Items ?? [];
      startKey = output.LastEvaluatedKey;
    } while (startKey);
  }

  /** Creates the state item unless one exists; then returns the existing task instead. */
  async create(task: Task, dueAt: number): Promise<{ created: true } | { created: false; existing: Task }> {
    const item = itemFromNewTask(task, dueAt);
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

  async createUnder(
    task: Task,
    dueAt: number,
    parent: OwnerFence & { readonly taskId: string },
    now: number,
  ): Promise<{ created: true } | { created: false; existing: Task } | { parentLost: true }> {
    // A transaction that overlaps another on the parent's item (the agent's heartbeat, a sibling's submit) is
    // refused whole, and nothing was written: it is tried again.
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.createUnderOnce(task, dueAt, parent, now);
      } catch (error) {
        const conflict =
          error instanceof TransactionCanceledException &&
          (error.CancellationReasons ?? []).some((r) => r.Code === 'TransactionConflict');
        if (!conflict || attempt >= 4) throw error;
        await sleep(20 * 2 ** attempt);
      }
    }
  }

  private async createUnderOnce(
    task: Task,
    dueAt: number,
    parent: OwnerFence & { readonly taskId: string },
    now: number,
  ): Promise<{ created: true } | { created: false; existing: Task } | { parentLost: true }> {
    const p = new Expression();
    const c = new Expression();
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              ConditionCheck: {
                TableName: this.tableName,
                Key: stateKey(parent.taskId),
                ConditionExpression: [
                  `${p.n('status')} = ${p.v('leased')}`,
                  ...ownerFence(p, parent, now),
                ].join(' AND '),
                ...p.attributes(),
              },
            },
            {
              Put: {
                TableName: this.tableName,
                Item: itemFromNewTask(task, dueAt),
                ConditionExpression: `attribute_not_exists(${c.n('taskId')})`,
                ...c.attributes(),
              },
            },
          ],
        }),
      );
      return { created: true };
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const reasons = error.CancellationReasons ?? [];
      if (reasons[0]?.Code === 'ConditionalCheckFailed') return { parentLost: true };
      if (reasons[1]?.Code === 'ConditionalCheckFailed') {
        const existing = await this.get(task.taskId);
        if (existing) return { created: false, existing };
      }
      throw error;
    }
  }

  async get(taskId: string, { consistent = true }: ReadOptions = {}): Promise<Task | undefined> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: stateKey(taskId), ConsistentRead: consistent }),
    );
    return output.Item ? taskFromItem(output.Item) : undefined;
  }

  /** Reads many state items, 100 keys per request, retrying unprocessed keys. */
  async getMany(
    taskIds: readonly string[],
    { consistent = true }: ReadOptions = {},
  ): Promise<Map<string, Task>> {
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

  /**
   * One conditional update of a state item; on a failed condition, the task as it is now. Every write below goes
   * through here (the chaos run's deliberate bugs rewrite it).
   */
  async update(taskId: string, build: (e: Expression) => StateUpdate): Promise<ConditionalResult> {
    const outcome = await conditionalUpdate(
      this.doc,
      { TableName: this.tableName, Key: stateKey(taskId) },
      build,
      taskFromItem,
    );
    return outcome.ok ? { ok: true, task: outcome.value } : outcome;
  }

  grant(taskId: string, grant: Grant, now: number): Promise<TaskWrite> {
    return this.update(taskId, (e) => ({
      set: [
        ...(grant.claimId === undefined ? [] : [`${e.n('claimId')} = ${e.v(grant.claimId)}`]),
        ...(grant.queueSlots?.length ? [`${e.n('queueSlots')} = ${e.v(grant.queueSlots)}`] : []),
        `${e.n('status')} = ${e.v('leased')}`,
        `${e.n('leaseEpoch')} = ${e.n('leaseEpoch')} + ${e.v(1)}`,
        `${e.n('attempt')} = ${e.n('attempt')} + ${e.v(1)}`,
        `${e.n('owner')} = ${e.v(grant.agentId)}`,
        `${e.n('sessionId')} = ${e.v(grant.sessionId)}`,
        `${e.n('leasedAt')} = ${e.v(now)}`,
        `${e.n('leaseDeadline')} = ${e.n('timeoutMs')} + ${e.v(now)}`,
        `${e.n('updatedAt')} = ${e.v(now)}`,
      ],
      // A grant of another claim must not be taken for this one's by a retry. The task leaves its lane.
      remove: [
        ...(grant.claimId === undefined ? [e.n('claimId')] : []),
        ...(grant.queueSlots?.length ? [] : [e.n('queueSlots')]),
        e.n('readyAt'),
      ],
      condition: [
        statusCondition(e, 'claim', 'leased'),
        `${e.n('queue')} = ${e.v(grant.queue)}`,
        `(attribute_not_exists(${e.n('notBefore')}) OR ${e.n('notBefore')} <= ${e.v(now)})`,
        `(attribute_not_exists(${e.n('expiresAt')}) OR ${e.n('expiresAt')} > ${e.v(now)})`,
      ].join(' AND '),
    }));
  }

  finish(taskId: string, lease: OwnerFence, finish: OwnerFinish, now: number): Promise<TaskWrite> {
    const record: FinishRecord = {
      kind: finish.event,
      leaseEpoch: lease.leaseEpoch,
      agentId: lease.agentId,
      status: finish.to.status,
    };
    return this.update(taskId, (e) => {
      const clauses = destinationClauses(e, now, finish.to);
      const set = [...clauses.set];
      if (finish.event === 'complete' && finish.result !== undefined)
        set.push(`${e.n('result')} = ${e.v(finish.result)}`);
      if (finish.event === 'fail') set.push(`${e.n('error')} = ${e.v(finish.error)}`);
      if (finish.event === 'release') set.push(`${e.n('attempt')} = ${e.n('attempt')} - ${e.v(1)}`);
      set.push(`${e.n('lastFinish')} = ${e.v(record)}`);
      return {
        set,
        remove: clauses.remove,
        condition: [statusCondition(e, finish.event, finish.to.status), ...ownerFence(e, lease, now)].join(
          ' AND ',
        ),
      };
    });
  }

  takeBack(observed: Observed, { event, to, error }: TakingBack, now: number): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => {
      const clauses = destinationClauses(e, now, to);
      return {
        set: [...clauses.set, `${e.n('error')} = ${e.v(error)}`],
        remove: clauses.remove,
        condition: `${statusCondition(e, event, to.status, observed)} AND ${epochFence(e, observed)}`,
      };
    });
  }

  cancel(
    observed: Observed,
    to: Ending & { status: 'cancelled' },
    now: number,
    because?: { readonly failedDependency: string; readonly error: TaskError },
  ): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => {
      const clauses = endingClauses(e, now, to);
      return {
        set: [
          ...clauses.set,
          ...(because
            ? [
                `${e.n('failedDependency')} = ${e.v(because.failedDependency)}`,
                `${e.n('error')} = ${e.v(because.error)}`,
              ]
            : []),
        ],
        remove: clauses.remove,
        condition: `${statusCondition(e, 'cancel', to.status, observed)} AND ${epochFence(e, observed)}`,
      };
    });
  }

  unblock(observed: Observed, to: Requeue, now: number): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => {
      const clauses = requeueClauses(e, now, to);
      return {
        set: clauses.set,
        remove: [...clauses.remove, e.n('waitingOn')],
        condition: [
          statusCondition(e, 'unblock', to.status, observed),
          epochFence(e, observed),
          `(attribute_not_exists(${e.n('waitingOn')}) OR size(${e.n('waitingOn')}) = ${e.v(0)})`,
        ].join(' AND '),
      };
    });
  }

  async laneTasks(laneId: string, readyBy: number | undefined, limit: number): Promise<LaneEntry[]> {
    const e = new Expression();
    const key = [`${e.n('laneId')} = ${e.v(laneId)}`];
    if (readyBy !== undefined) key.push(`${e.n('readyAt')} <= ${e.v(readyBy)}`);
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: LANE_INDEX,
        KeyConditionExpression: key.join(' AND '),
        Limit: limit,
        ...e.attributes(),
      }),
    );
    return (output.Items ?? []).map((item) => ({
      taskId: String(item.taskId),
      readyAt: Number(item.readyAt),
    }));
  }

  async noteOffer(laneId: string, now: number): Promise<TurnSlot> {
    const e = new Expression();
    const output = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: laneTurnKey(laneId),
        UpdateExpression: `SET ${e.n('lastOfferAt')} = ${e.v(now)}`,
        ReturnValues: 'ALL_NEW',
        ...e.attributes(),
      }),
    );
    return turnSlotOf(output.Attributes ?? {});
  }

  takeTurnSlot(
    laneId: string,
    slot: { readonly token: string; readonly visibleAt: number; readonly now: number },
    replacing: string | undefined,
  ): Promise<boolean> {
    return this.writeTurnSlot(laneId, (e) => ({
      set: `SET ${e.n('turnToken')} = ${e.v(slot.token)}, ${e.n('visibleAt')} = ${e.v(slot.visibleAt)}, ${e.n('heldAt')} = ${e.v(slot.now)}`,
      condition:
        replacing === undefined
          ? `attribute_not_exists(${e.n('turnToken')})`
          : `${e.n('turnToken')} = ${e.v(replacing)}`,
    }));
  }

  holdTurnSlot(laneId: string, token: string, visibleAt: number, now: number): Promise<boolean> {
    return this.writeTurnSlot(laneId, (e) => ({
      set: `SET ${e.n('visibleAt')} = ${e.v(visibleAt)}, ${e.n('heldAt')} = ${e.v(now)}`,
      condition: `${e.n('turnToken')} = ${e.v(token)}`,
    }));
  }

  /** One conditional write of a lane's turn slot: true if its condition held. */
  private async writeTurnSlot(
    laneId: string,
    build: (e: Expression) => { set: string; condition: string },
  ): Promise<boolean> {
    const e = new Expression();
    const { set, condition } = build(e);
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: laneTurnKey(laneId),
          UpdateExpression: set,
          ConditionExpression: condition,
          ...e.attributes(),
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async freeTurnSlot(
    laneId: string,
    token: string,
    quietSince: number,
  ): Promise<'freed' | 'offered' | 'superseded'> {
    const e = new Expression();
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: laneTurnKey(laneId),
          UpdateExpression: `REMOVE ${e.n('turnToken')}, ${e.n('visibleAt')}, ${e.n('heldAt')}`,
          ConditionExpression: `${e.n('turnToken')} = ${e.v(token)} AND (attribute_not_exists(${e.n('lastOfferAt')}) OR ${e.n('lastOfferAt')} < ${e.v(quietSince)})`,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ...e.attributes(),
        }),
      );
      return 'freed';
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const current = error.Item ? unmarshall(error.Item) : {};
      return current.turnToken === token ? 'offered' : 'superseded';
    }
  }

  async addDependent(taskId: string, dependentId: string, purgeAt: number): Promise<Task | undefined> {
    // The record is written once: a linking repeated (a retried submit) finds it and does not count it again.
    const p = new Expression();
    let added = true;
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { taskId, part: dependentPart(dependentId), dependentId, purgeAt },
          ConditionExpression: `attribute_not_exists(${p.n('part')})`,
          ...p.attributes(),
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      added = false;
    }
    const marked = await this.update(taskId, (e) => ({
      set: [
        `${e.n('hasDependents')} = ${e.v(true)}`,
        ...(added
          ? [`${e.n('dependentCount')} = if_not_exists(${e.n('dependentCount')}, ${e.v(0)}) + ${e.v(1)}`]
          : []),
      ],
      condition: `attribute_exists(${e.n('taskId')})`,
    }));
    return marked.ok ? marked.task : undefined;
  }

  async dependentsOf(
    taskId: string,
    startKey?: ListingCursor,
  ): Promise<{ ids: string[]; startKey?: ListingCursor }> {
    const e = new Expression();
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: `${e.n('taskId')} = ${e.v(taskId)} AND begins_with(${e.n('part')}, ${e.v(dependentPart(''))})`,
        ProjectionExpression: e.n('dependentId'),
        // A record written just before the dependency's end must be seen by the reading that end makes.
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
        Limit: 100,
        ...e.attributes(),
      }),
    );
    return {
      ids: (output.Items ?? []).map((item) => String(item.dependentId)),
      ...(output.LastEvaluatedKey ? { startKey: output.LastEvaluatedKey } : {}),
    };
  }

  async putInput(
    dependentId: string,
    dependencyId: string,
    outcome: StoredInput,
    purgeAt: number,
  ): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          taskId: dependentId,
          part: inputPart(dependencyId),
          dependencyId,
          status: outcome.status,
          ...(outcome.error ? { error: outcome.error } : {}),
          // The released functions read an input's result from `payload` and know nothing of `resultKept`: an
          // empty one makes them fail (the claim is retried, and answered by a current function) where they would
          // hand the outcome over without its result, during a deploy or after a rollback.
          ...(outcome.resultKept ? { resultKept: true, payload: '' } : {}),
          ...(outcome.result === undefined ? {} : payloadAttributes(JSON.stringify(outcome.result))),
          purgeAt,
        },
      }),
    );
  }

  async keepResult(
    task: Pick<Task, 'taskId' | 'result'>,
    neededUntil: number,
    purgeAt: number,
  ): Promise<void> {
    const key = { taskId: task.taskId, part: RESULT_PART };
    // A read of a record that is there bills its size in read units, a write of it its size in write units (4 to
    // 10 times the price): the record is read first, and written only when missing or kept too short.
    const e = new Expression();
    const kept = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: key,
        ProjectionExpression: e.n('purgeAt'),
        ConsistentRead: true,
        ...e.attributes(),
      }),
    );
    const keptUntil = kept.Item?.purgeAt;
    if (typeof keptUntil === 'number' && keptUntil >= neededUntil) return;
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...key, ...payloadAttributes(JSON.stringify(task.result ?? null)), purgeAt },
      }),
    );
  }

  async keptResults(taskIds: readonly string[]): Promise<Map<string, unknown>> {
    const found = new Map<string, unknown>();
    const items = await this.batchGet(
      [...new Set(taskIds)].map((taskId) => ({ taskId, part: RESULT_PART })),
      true,
    );
    for (const item of items) {
      const json = payloadJsonOf(item);
      if (json !== undefined) found.set(String(item.taskId), JSON.parse(json));
    }
    return found;
  }

  async inputsOf(taskId: string): Promise<Map<string, StoredInput>> {
    const inputs = new Map<string, StoredInput>();
    for await (const item of this.inputItems(taskId, { consistent: true })) {
      const resultJson = item.resultKept === true ? undefined : payloadJsonOf(item);
      const error = item.error as TaskError | undefined;
      inputs.set(String(item.dependencyId), {
        status: item.status as DependencyOutcome['status'],
        ...(item.resultKept === true ? { resultKept: true as const } : {}),
        ...(resultJson === undefined ? {} : { result: JSON.parse(resultJson) }),
        ...(error ? { error: { message: String(error.message), retryable: Boolean(error.retryable) } } : {}),
      });
    }
    return inputs;
  }

  strikeDependency(taskId: string, dependencyId: string): Promise<TaskWrite> {
    return this.update(taskId, (e) => ({
      set: [],
      remove: [e.n('waitingOn', dependencyId)],
      condition: `${e.n('status')} = ${e.v('waiting')} AND attribute_exists(${e.n('waitingOn', dependencyId)})`,
    }));
  }

  expire(observed: Observed, to: Ending & { status: 'expired' }, now: number): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => ({
      ...endingClauses(e, now, to),
      condition: [
        statusCondition(e, 'expire', to.status, observed),
        epochFence(e, observed),
        `${e.n('expiresAt')} <= ${e.v(now)}`,
      ].join(' AND '),
    }));
  }

  settleEnd(observed: Observed): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => ({
      set: [],
      remove: [e.n('followUp'), ...(isTerminal(observed.status) ? [e.n('dueShard'), e.n('dueAt')] : [])],
      condition: stillAsObserved(e, observed),
    }));
  }

  redrive(observed: Observed, to: Requeue, now: number): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => {
      const clauses = requeueClauses(e, now, to);
      return {
        set: [
          ...clauses.set,
          `${e.n('attempt')} = ${e.v(0)}`,
          `${e.n('dueShard')} = ${e.v(dueShardOf(observed.taskId))}`,
          // Counted, so that its next death has an onFailure of its own.
          `${e.n('redrives')} = if_not_exists(${e.n('redrives')}, ${e.v(0)}) + ${e.v(1)}`,
        ],
        // An operator's redrive runs the task: a deadline to start that passed is lifted with it, and what was to
        // follow from its death was made before (`redriveTask`), never from a task running again.
        remove: [...clauses.remove, e.n('finishedAt'), e.n('purgeAt'), e.n('expiresAt'), e.n('followUp')],
        condition: `${statusCondition(e, 'redrive', to.status, observed)} AND ${epochFence(e, observed)}`,
      };
    });
  }

  checkpoint(taskId: string, lease: OwnerFence, checkpointJson: string, now: number): Promise<TaskWrite> {
    return this.update(taskId, (e) => ({
      set: [`${e.n('checkpoint')} = ${e.v(checkpointJson)}`],
      condition: [`${e.n('status')} = ${e.v('leased')}`, ...ownerFence(e, lease, now)].join(' AND '),
    }));
  }

  lookAgainAt(observed: Observed, dueAt: number): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => ({
      set: [`${e.n('dueAt')} = ${e.v(dueAt)}`],
      condition: stillAsObserved(e, observed),
    }));
  }

  async watch(taskId: string): Promise<Task | undefined> {
    const written = await this.update(taskId, (e) => ({
      set: [`${e.n('watched')} = ${e.v(true)}`],
      condition: `attribute_exists(${e.n('taskId')})`,
    }));
    return written.ok ? written.task : undefined;
  }

  recordDispatch(observed: Observed, dispatch: { dispatchedAt: number; dueAt: number }): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => ({
      set: [
        `${e.n('dispatchedAt')} = ${e.v(dispatch.dispatchedAt)}`,
        `${e.n('dispatchCount')} = ${e.n('dispatchCount')} + ${e.v(1)}`,
        `${e.n('dueAt')} = ${e.v(dispatch.dueAt)}`,
      ],
      condition: stillAsObserved(e, observed),
    }));
  }

  markUnsent(observed: Observed, now: number): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => ({
      set: [`${e.n('dueAt')} = ${e.v(now)}`],
      remove: [e.n('dispatchedAt')],
      condition: stillAsObserved(e, observed),
    }));
  }

  climbLadder(observed: Observed, climb: LadderClimb): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => ({
      set: [
        `${e.n('starvationLevel')} = ${e.v(climb.toLevel)}`,
        ...(climb.priority ? [`${e.n('priority')} = ${e.v(climb.priority)}`] : []),
        ...(climb.needsAttention ? [`${e.n('needsAttention')} = ${e.v(true)}`] : []),
      ],
      condition: [
        stillAsObserved(e, observed),
        climb.fromLevel === 0
          ? `attribute_not_exists(${e.n('starvationLevel')})`
          : `${e.n('starvationLevel')} = ${e.v(climb.fromLevel)}`,
      ].join(' AND '),
    }));
  }

  listedShards(queue: string): readonly string[] {
    return Array.from({ length: LISTED_SHARDS }, (_, shard) => shardName(queue, shard));
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
    from: { atOrBefore?: number; startKey?: ListingCursor; limit: number },
  ): Promise<{ entries: { taskId: string; createdAt: number }[]; startKey?: ListingCursor }> {
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
