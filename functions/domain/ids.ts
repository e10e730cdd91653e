/**
 * Identifiers. Random ids carry 128 bits; a task submitted with an idempotency key gets an id derived from
 * the key, so the same key can only ever name one task, even when two submissions race.
 */
import { createHash, randomBytes } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/** RFC 4648 base32, lower case, no padding. */
function base32(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

const randomId = (prefix: string): string => `${prefix}_${base32(randomBytes(16))}`;

export const newTaskId = (): string => randomId('t');
export const newAgentId = (): string => randomId('a');
export const newSessionId = (): string => randomId('s');
export const newWaitpointId = (): string => randomId('w');

/** A waitpoint's callback secret: 256 random bits, base64url, shown once and kept only as its hash. */
export const newCallbackSecret = (): string => randomBytes(32).toString('base64url');

/** The task id an idempotency key stands for. */
export const taskIdForIdempotencyKey = (key: string): string =>
  `t_${base32(createHash('sha256').update(`idempotency-key:${key}`).digest().subarray(0, 16))}`;

/**
 * The idempotency key of the `onFailure` task of the `death`-th death of `taskId` (a redrive lets a task die
 * again): one per death, whoever submits it. The first death keeps the key it has always had, so functions of
 * either version make the same task for it.
 */
export const onFailureKeyOf = (taskId: string, death = 1): string =>
  death <= 1 ? `on-failure:${taskId}` : `on-failure:${taskId}:${death}`;

/** The id the `onFailure` task of that death of `taskId` has (or will have, once it dies). */
export const onFailureTaskIdOf = (taskId: string, death = 1): string =>
  taskIdForIdempotencyKey(onFailureKeyOf(taskId, death));

/** Ids as the API accepts them: a one-letter kind, "_", 26 base32 characters. */
export const ID_PATTERN = /^[tas]_[a-z2-7]{26}$/;
export const TASK_ID_PATTERN = /^t_[a-z2-7]{26}$/;
export const AGENT_ID_PATTERN = /^a_[a-z2-7]{26}$/;
export const WAITPOINT_ID_PATTERN = /^w_[a-z2-7]{26}$/;

export const sha256Base64Url = (text: string): string =>
  createHash('sha256').update(text).digest('base64url');

/** A stable shard in [0, shards) for a key, so that sweep indexes spread over many partitions. */
export function shardOf(key: string, shards: number): number {
  const digest = createHash('sha256').update(key).digest();
  return digest.readUInt32BE(0) % shards;
}
