/**
 * Lanes: fairness between the keys of one queue. Tasks with a `concurrencyKey` wait in a lane of their own
 * (queue, priority, key), oldest first, and the lane takes turns: one *turn* message in the tier's SQS queue stands
 * for the whole lane, however deep, so a key with 5,000 tasks waiting is one message in line, as is a key with one.
 * A claim that receives a turn takes up to a claim's worth of the lane's oldest tasks and puts the turn back at the
 * end of the line if the lane has more.
 */

import { sha256Base64Url } from './ids';
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

/** The lane a task is in (undefined for a task without a key). */
export const laneOf = (task: {
  readonly queue: string;
  readonly priority: Priority;
  readonly concurrencyKey?: string;
}): { readonly laneId: string; readonly keyHash: string } | undefined => {
  if (task.concurrencyKey === undefined) return undefined;
  const keyHash = keyHashOf(task.concurrencyKey);
  return { laneId: laneIdOf(task.queue, task.priority, keyHash), keyHash };
};
