/**
 * Payloads in the tasks table: the item written once at submit (`payload#<specHash>`, with the task's `onFailure`
 * beside it), and the S3 object a large payload goes to, which that item names.
 */
import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type {
  NewPayload,
  PayloadHolder,
  PayloadOwner,
  PayloadStore,
  WrittenPayloads,
} from '#core/ports/payload-store';
import type { Task } from '#domain/task';
import { Expression } from './expression';
import type { PayloadObjects } from './payload-objects';
import { dependentPart, RESULT_PART } from './tables';
import {
  decodePayload,
  encodePayload,
  type Item,
  inlineAttributes,
  legacyPayloadKey,
  payloadItemKey,
  payloadJsonOf,
  payloadKey,
  payloadObjectKey,
  stateKey,
} from './task-items';
import { batchGet, batchWrite, extendPurge, inputItems } from './task-requests';

/** Where large payloads go; without it every payload stays in its DynamoDB item. */
export interface PayloadObjectStore {
  readonly objects: PayloadObjects;
  /** Payloads larger than this once encoded become S3 objects. */
  readonly fromBytes: number;
}

/** A key as text, to find the task of an item read by its key. */
const keyText = (key: Item): string => `${String(key.taskId)}\n${String(key.part)}`;

export class PayloadTable implements PayloadStore {
  constructor(
    readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    readonly payloadObjects?: PayloadObjectStore,
  ) {}

  /**
   * Writes payload items, 25 to a `BatchWriteItem` request. An item's key names the task's specification
   * (`payload#<specHash>`; with layout 2 its list partition, creation, id and specification), so these writes need
   * no condition: an idempotency key reused for a different task writes an item of its own, which the conflict
   * found at the state item leaves to expire, instead of overwriting the payload of the task that holds the id. A
   * retry writes the same item again (layout 1) or one of its own creation (layout 2), which the list passes over
   * for its task's creation is another.
   *
   * A large payload is written to S3 first, under a key that names the specification too, so an item never names
   * a missing object. A payload named twice (one idempotency key twice in a batch) is written once: a
   * `BatchWriteItem` refuses a request that names one key twice.
   */
  async putPayloads(payloads: readonly NewPayload[]): Promise<WrittenPayloads> {
    const distinct = new Map(payloads.map((p) => [keyText(payloadItemKey(p)), p]));
    const items = await Promise.all([...distinct.values()].map((p) => this.payloadItem(p)));
    const objects = new Set(
      items.flatMap((item) => (typeof item.payloadObject === 'string' ? [item.payloadObject] : [])),
    );
    const inObject = (payload: Pick<NewPayload, 'taskId' | 'specHash'>) =>
      objects.has(payloadObjectKey(payload.taskId, payload.specHash));
    const writes = items.map((Item): Item => ({ PutRequest: { Item } }));
    await batchWrite(this, writes);
    return { inObject };
  }

  /** Lets go of a payload's S3 object once its task can never run again; best effort, DELETE is free. */
  async deletePayloadObject(task: Pick<Task, 'taskId' | 'specHash'>): Promise<void> {
    await this.payloadObjects?.objects.delete(payloadObjectKey(task.taskId, task.specHash));
  }

  async deletePayload(task: PayloadOwner): Promise<void> {
    // Through BatchWriteItem, which payloads are written with: the functions that write them need no other grant.
    const writes: Item[] = [{ DeleteRequest: { Key: payloadItemKey(task) } }];
    await batchWrite(this, writes);
    await this.deletePayloadObject(task);
  }

  private async payloadItem(payload: NewPayload): Promise<Item> {
    const { taskId, payloadJson, specHash, purgeAt, onFailureJson } = payload;
    const encoded = encodePayload(payloadJson);
    const store = this.payloadObjects;
    // Layout 1 names the specification in an attribute too; layout 2's key holds it, and the item is as small as it
    // can be, for it is also the task's list entry.
    const named = payload.payloadListed ? {} : { specHash };
    const followUps = onFailureJson === undefined ? {} : { onFailure: onFailureJson };
    if (!store || encoded.bytes.length <= store.fromBytes) {
      return {
        ...payloadItemKey(payload),
        ...inlineAttributes(payloadJson, encoded),
        ...followUps,
        ...named,
        purgeAt,
      };
    }
    const key = payloadObjectKey(taskId, specHash);
    await store.objects.put(key, encoded.bytes);
    return {
      ...payloadItemKey(payload),
      payloadObject: key,
      payloadEncoding: encoded.encoding,
      payloadObjectBytes: encoded.bytes.length,
      ...followUps,
      ...named,
      purgeAt,
    };
  }

  async getOnFailure(task: PayloadOwner): Promise<string | undefined> {
    const e = new Expression();
    const output = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: payloadItemKey(task),
        ProjectionExpression: e.n('onFailure'),
        ConsistentRead: true,
        ...e.attributes(),
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
   * once another dependent kept it as long), each link of a waiting task 1 unit. The inputs, the results, the links
   * and the state item are other kinds' records; they are kept here, through the shared requests of
   * `task-requests.ts`, so that one call holds that order.
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
      extendPurge(this, payloadItemKey(task), 'purgeAt', purgeAt).then(
        // A payload from before items named their specification has the key of that time.
        (kept) =>
          kept ||
          task.payloadListed === true ||
          extendPurge(this, legacyPayloadKey(task.taskId), 'purgeAt', purgeAt),
      ),
      ...[...inputs, ...links].map((key) => extendPurge(this, key, 'purgeAt', purgeAt)),
    ]);
    await extendPurge(this, stateKey(task.taskId), 'payloadPurgeAt', purgeAt);
  }

  /**
   * The keys of the inputs kept for a task, and of the results they name (kept once in their dependency's
   * partition, for every dependent): a result must last as long as the longest-lived dependent that will read it.
   * Projected, though a query bills the whole items it reads.
   */
  private async inputKeys(taskId: string): Promise<Item[]> {
    const keys: Item[] = [];
    const projected = ['taskId', 'part', 'dependencyId', 'resultKept'];
    for await (const item of inputItems(this, taskId, { projected, consistent: false })) {
      keys.push({ taskId: item.taskId, part: item.part });
      if (item.resultKept === true) keys.push({ taskId: String(item.dependencyId), part: RESULT_PART });
    }
    return keys;
  }

  /**
   * Reads payloads. Payload items never change once written, so an eventually consistent read is enough,
   * except right after submit; misses are read again strongly consistent.
   */
  async getPayloads(tasks: readonly PayloadOwner[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    // A layout 2 item is keyed by its list partition, not by its task: each item read is mapped back to its task.
    const taskOfKey = new Map(tasks.map((t) => [keyText(payloadItemKey(t)), t.taskId]));
    const collect = async (items: Item[]) => {
      await Promise.all(
        items.map(async (item) => {
          const json = await this.readPayloadJson(item);
          if (json !== undefined) found.set(taskOfKey.get(keyText(item)) ?? String(item.taskId), json);
        }),
      );
    };
    await collect(
      await batchGet(
        this,
        tasks.map((t) => payloadItemKey(t)),
        false,
      ),
    );
    const missing = tasks.filter((t) => !found.has(t.taskId));
    if (missing.length > 0) {
      // Strongly consistent, and under the key payloads had before they named their specification.
      const keys = missing.flatMap((t) =>
        t.payloadListed
          ? [payloadItemKey(t)]
          : [payloadKey(t.taskId, t.specHash), legacyPayloadKey(t.taskId)],
      );
      await collect(await batchGet(this, keys, true));
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
}
