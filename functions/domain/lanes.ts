/**
 * Lanes: fairness between the keys of one queue. Tasks with a `concurrencyKey` wait in a lane of their own
 * (queue, priority, key), oldest first, and the lane takes turns: one *turn* message in the tier's SQS queue stands
 * for the whole lane, however deep, so a key with 5,000 tasks waiting is one message in line, as is a key with one.
 * A claim that receives a turn takes up to a claim's worth of the lane's oldest tasks and puts the turn back at the
 * end of the line if the lane has more.
 *
 * Tasks that require labels (`#domain/labels`) wait in lanes of their requirement set, so that a claim whose agent
 * cannot serve a set reads past one turn of it, not its tasks. The turn carries the set, which the claim matches
 * against its session's labels before it takes anything, and the grant's condition names the set the claim matched.
 * - Without a key, a set's tasks are spread over `REQUIREMENT_LANES` lanes (by task id), so that as many claims take
 *   a deep backlog of one set at once: a lane's turn is with one claim at a time.
 * - With a key, the lane is the key's and the set's: its key's `perKeyConcurrency` counts across every set of the
 *   key, and each set of a key takes its own turns.
 */

import { sha256Base64Url, shardOf } from './ids';
import { canonicalRequirements, type Requirements, requiresAny } from './labels';
import type { Priority } from './priority';

/** Longest `concurrencyKey`. */
export const CONCURRENCY_KEY_CHARS = 128;

/**
 * A key's hash: what names its lane and its turns' `MessageGroupId` (SQS allows only some characters there, and
 * keys are any printable text). 22 characters of base64url, 132 bits.
 */
export const keyHashOf = (key: string): string => sha256Base64Url(`concurrency-key:${key}`).slice(0, 22);

/** The lane of a key's tasks of one queue and priority. */
export const laneIdOf = (queue: string, priority: Priority, keyHash: string): string =>
  `${queue}#${priority}#${keyHash}`;

/** Lanes one requirement set's tasks without a key are spread over. */
export const REQUIREMENT_LANES = 4;

/** A lane, as a task's fields name it. */
export interface Lane {
  readonly laneId: string;
  /** Names the lane in its turns (and their `MessageGroupId`): a key's hash, or a requirement lane's. */
  readonly keyHash: string;
  /** The hash of the tasks' `concurrencyKey`, whose per-key limit their grants take slots of; none without a key. */
  readonly concurrencyKeyHash?: string;
  /** What the lane's tasks require; none for a key's lane. */
  readonly require?: Requirements;
}

/**
 * A requirement lane's hash: the set in its canonical form (names sorted), with the key's hash when the tasks have a
 * key, else one of the set's `REQUIREMENT_LANES` shards.
 */
const requirementLaneHash = (require: Requirements, keyHash: string | undefined, taskId: string): string =>
  sha256Base64Url(
    `requirements:${keyHash ?? `shard-${shardOf(taskId, REQUIREMENT_LANES)}`}:${canonicalRequirements(require)}`,
  ).slice(0, 22);

/** The lane a task is in: a key's, a requirement set's, or both; undefined for a task with neither. */
export const laneOf = (task: {
  readonly taskId: string;
  readonly queue: string;
  readonly priority: Priority;
  readonly concurrencyKey?: string;
  readonly require?: Requirements;
}): Lane | undefined => {
  const concurrencyKeyHash = task.concurrencyKey === undefined ? undefined : keyHashOf(task.concurrencyKey);
  if (!requiresAny(task.require)) {
    if (concurrencyKeyHash === undefined) return undefined;
    return {
      laneId: laneIdOf(task.queue, task.priority, concurrencyKeyHash),
      keyHash: concurrencyKeyHash,
      concurrencyKeyHash,
    };
  }
  const keyHash = requirementLaneHash(task.require, concurrencyKeyHash, task.taskId);
  return {
    laneId: laneIdOf(task.queue, task.priority, keyHash),
    keyHash,
    ...(concurrencyKeyHash === undefined ? {} : { concurrencyKeyHash }),
    require: task.require,
  };
};

/** Whether a task waits in a lane (a key's or a requirement set's) rather than with a hint of its own. */
export const inLane = (task: {
  readonly concurrencyKey?: string;
  readonly require?: Requirements;
}): boolean => task.concurrencyKey !== undefined || requiresAny(task.require);
