/**
 * The items of the tasks table, read and written by its adapters (`task-table.ts` the state item, `lane-table.ts`
 * lanes and their turns, `payload-table.ts` payloads, `dependency-table.ts` dependents, inputs and kept results):
 * their keys, the partitions of the indexes, the state item's codec and the payload's encoding.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { PayloadOwner } from '#core/ports/payload-store';
import { sha256Base64Url, shardOf } from '#domain/ids';
import { normaliseRequirements, requirementsKey } from '#domain/labels';
import { laneOf } from '#domain/lanes';
import { isPriority } from '#domain/priority';
import type { FinishRecord, Task, TaskError } from '#domain/task';
import { isTaskStatus } from '#domain/task-status';
import { PAYLOAD_OBJECT_PREFIX } from './payload-objects';
import { DUE_SHARDS, LISTED_SHARDS, listedPayloadPart, payloadPart, TASK_PART } from './tables';

export type Item = Record<string, unknown>;

const shardName = (prefix: string, shard: number): string => `${prefix}#${String(shard).padStart(2, '0')}`;

/** The `due` index partition of a task: a sweep queries every one. */
export const dueShardOf = (taskId: string): string => shardName('due', shardOf(taskId, DUE_SHARDS));

/**
 * The `due` index partition of suspended tasks, whatever their id: their waitpoints' timeouts, which a supervisor pass
 * takes first, so that a timeout never waits behind the pass's looks at queued tasks. One partition: it takes about
 * 500 suspensions and as many ends a second (the open waitpoints' list has the same ceiling).
 */
export const SUSPENDED_DUE_SHARD = 'due#suspended';

/** Every partition of the `due` index, the suspended tasks' first. */
export const ALL_DUE_SHARDS: readonly string[] = [
  SUSPENDED_DUE_SHARD,
  ...Array.from({ length: DUE_SHARDS }, (_, shard) => shardName('due', shard)),
];

/** The `listed` index partition of a task: its queue, and a shard of it. */
export const listedShardOf = (queue: string, taskId: string): string =>
  shardName(queue, shardOf(taskId, LISTED_SHARDS));

/** Every partition of the `listed` index for `queue`. */
export const listedShardsOf = (queue: string): readonly string[] =>
  Array.from({ length: LISTED_SHARDS }, (_, shard) => shardName(queue, shard));

/**
 * The list partition (of the table, `taskLayout` 2) that stands beside a `listed` index partition: the payload items
 * of the same queue and shard. Queue names have no `#`, so the two kinds of name never meet.
 */
export const payloadListOf = (listShard: string): string => `${LIST_PREFIX}${listShard}`;
const LIST_PREFIX = 'list#';
/** The `listed` index partition a list partition of the table stands beside; undefined for an index partition. */
export const listShardOfPayloadList = (partition: string): string | undefined =>
  partition.startsWith(LIST_PREFIX) && partition.indexOf('#', LIST_PREFIX.length) > 0
    ? partition.slice(LIST_PREFIX.length)
    : undefined;

/** The key of a task's payload item, by the layout its state item was written with. */
export const payloadItemKey = (task: PayloadOwner) =>
  task.payloadListed
    ? {
        taskId: payloadListOf(listedShardOf(task.queue, task.taskId)),
        part: listedPayloadPart(task.createdAt, task.taskId, task.specHash),
      }
    : payloadKey(task.taskId, task.specHash);

/** A list entry read from a list partition of the table: the task and its creation, from the item's sort key. */
export function listEntryOfPayloadPart(part: string): { taskId: string; createdAt: number } | undefined {
  const [createdAt, taskId] = part.split('#');
  const at = Number(createdAt);
  return taskId && Number.isSafeInteger(at) ? { taskId, createdAt: at } : undefined;
}

export const stateKey = (taskId: string) => ({ taskId, part: TASK_PART.state });
export const payloadKey = (taskId: string, specHash: string) => ({ taskId, part: payloadPart(specHash) });
/** The key of a payload item written before payload items named their specification. */
export const legacyPayloadKey = (taskId: string) => ({ taskId, part: 'payload' });
export const payloadObjectKey = (taskId: string, specHash: string) =>
  `${PAYLOAD_OBJECT_PREFIX}${taskId}/${specHash}`;

export const optionalNumber = (value: unknown): number | undefined =>
  typeof value === 'number' ? value : undefined;
export const optionalString = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : undefined;
const parseJson = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : undefined);

/**
 * Payloads shorter than this are stored as they are: they fit a write unit with the item's keys anyway.
 * DynamoDB bills writes per started kilobyte of item, so a longer one is stored deflated when that is smaller:
 * a 1 KB JSON payload of random base64 (the worst case short of encrypted data) fits one write unit, not two.
 */
const COMPRESS_FROM_BYTES = 512;

/** A payload's bytes as stored: its JSON text, or the raw deflate of it when that is smaller. */
export function encodePayload(payloadJson: string): { bytes: Uint8Array; encoding: PayloadEncoding } {
  const text = Buffer.from(payloadJson);
  if (text.length < COMPRESS_FROM_BYTES) return { bytes: text, encoding: 'json' };
  const deflated = deflateRawSync(text);
  return deflated.length < text.length
    ? { bytes: deflated, encoding: 'deflate' }
    : { bytes: text, encoding: 'json' };
}

/** The attributes of an item that holds an encoded payload itself. */
export const inlineAttributes = (
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

export type PayloadEncoding = 'json' | 'deflate';

export const decodePayload = (bytes: Uint8Array, encoding: PayloadEncoding): string =>
  (encoding === 'deflate' ? inflateRawSync(bytes) : Buffer.from(bytes)).toString('utf8');

/**
 * The key of a barred grant in the task's `barredGrants` set: the session and the time of its reservation, which is
 * the grant time its claim writes (see `TaskStore.barGrant`).
 */
export const barKey = (sessionId: string, reservedAt: number): string => `${sessionId}@${reservedAt}`;

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
      payloadListed: item.payloadListed === true ? true : undefined,
      inDueIndex: item.dueShard !== undefined && item.dueAt !== undefined ? true : undefined,
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
      maxSnoozes: optionalNumber(item.maxSnoozes),
      waitpointId: optionalString(item.waitpointId),
      maxTimeoutSeconds: item.maxTimeoutMs === undefined ? undefined : Number(item.maxTimeoutMs) / 1_000,
      snoozes: optionalNumber(item.snoozes),
      debounceKey: optionalString(item.debounceKey),
      debounceSpec: optionalString(item.debounceSpec),
      debounceUntil: optionalNumber(item.debounceUntil),
      debounceJoins: optionalNumber(item.debounceJoins),
      debounceClosed: item.debounceClosed === true ? true : undefined,
      rateLimits: rateLimitsOfItem(item.rateLimits),
      rateTaken: rateTakenOfItem(item.rateTaken),
      require: requirementsOfItem(item.require),
      traceparent: optionalString(item.traceparent),
      tracestate: optionalString(item.tracestate),
    }),
  );
}

/** A task's requirements as stored: a map of label names to values (`'*'` any), read only if well formed. */
function requirementsOfItem(value: unknown): Task['require'] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const entries = Object.entries(value).filter(
    (entry): entry is [string, string] => typeof entry[1] === 'string',
  );
  return entries.length === 0 ? undefined : normaliseRequirements(Object.fromEntries(entries));
}

/** A task's rate limits as stored: `[name, units, key?]` each, a few bytes a limit on the hot record. */
function rateLimitsOfItem(value: unknown): Task['rateLimits'] {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  return value.map((entry: unknown[]) => ({
    name: String(entry[0]),
    units: Number(entry[1]),
    ...(entry[2] === undefined ? {} : { key: String(entry[2]) }),
  }));
}

/** What a grant took, as stored: `[name, units, window, key?]` each. */
function rateTakenOfItem(value: unknown): Task['rateTaken'] {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  return value.map((entry: unknown[]) => ({
    name: String(entry[0]),
    units: Number(entry[1]),
    window: Number(entry[2]),
    ...(entry[3] === undefined ? {} : { key: String(entry[3]) }),
  }));
}

/**
 * A transaction's `ClientRequestToken` (at most 36 characters), from what makes the request the same one: the same
 * writes sent again with it after a lost answer are not made twice.
 */
export const requestToken = (...parts: string[]): string =>
  sha256Base64Url(parts.join('\u0000')).slice(0, 36);

/** `rateLimits` as an item stores them. */
export const rateLimitsItem = (limits: NonNullable<Task['rateLimits']>): unknown[][] =>
  limits.map((l) => [l.name, l.units, ...(l.key === undefined ? [] : [l.key])]);

/** `rateTaken` as an item stores it. */
export const rateTakenItem = (taken: NonNullable<Task['rateTaken']>): unknown[][] =>
  taken.map((t) => [t.name, t.units, t.window, ...(t.key === undefined ? [] : [t.key])]);

function failureOfItem(value: unknown): Task['failureOf'] {
  if (typeof value !== 'object' || value === null) return undefined;
  const { taskId, error } = value as { taskId?: unknown; error?: TaskError };
  return {
    taskId: String(taskId),
    ...(error ? { error: { message: String(error.message), retryable: Boolean(error.retryable) } } : {}),
  };
}

export function definedOnly<T extends Record<string, unknown>>(record: T): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The item for a newly submitted task, due at `dueAt` (out of the due index when undefined); its listing partition
 * (layout 1) is its for good.
 */
export function itemFromNewTask(task: Task, dueAt: number | undefined): Item {
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
    payloadListed: task.payloadListed,
    payloadPurgeAt: task.payloadPurgeAt,
    expiresAt: task.expiresAt,
    hasOnFailure: task.hasOnFailure,
    failureOf: task.failureOf,
    dependencyCount: task.dependencyCount,
    onDependencyFailure: task.onDependencyFailure,
    maxSnoozes: task.maxSnoozes,
    maxTimeoutMs: task.maxTimeoutSeconds === undefined ? undefined : task.maxTimeoutSeconds * 1_000,
    waitingOn: task.waitingOn && Object.fromEntries(task.waitingOn.map((id) => [id, true])),
    parentTaskId: task.parentTaskId,
    rootTaskId: task.rootTaskId,
    concurrencyKey: task.concurrencyKey,
    debounceKey: task.debounceKey,
    debounceSpec: task.debounceSpec,
    debounceUntil: task.debounceUntil,
    rateLimits: task.rateLimits && rateLimitsItem(task.rateLimits),
    laneId: laneOf(task)?.laneId,
    require: task.require,
    // The requirement set's name: a grant's condition names the set its claim matched against its labels.
    requireKey: task.require && requirementsKey(task.require),
    // Written only when given: 66 bytes with its name (11) and value (55), and `tracestate` its length plus 10.
    traceparent: task.traceparent,
    tracestate: task.tracestate,
    readyAt: task.status === 'queued' ? (task.notBefore ?? task.createdAt) : undefined,
    createdAt: task.createdAt,
    updatedAt: task.updatedAt,
    dueShard: dueAt === undefined ? undefined : dueShardOf(task.taskId),
    dueAt,
    // Layout 2 lists the task by its payload item: no `listed` index entry, one write unit less.
    listShard: task.payloadListed ? undefined : listedShardOf(task.queue, task.taskId),
  });
}
