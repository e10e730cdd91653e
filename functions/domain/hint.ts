/**
 * What an SQS message of a task queue carries. We call such a message a *hint*, here and throughout: it says only
 * that a task may be claimable (its id and the lease epoch it was sent at). The task record in DynamoDB is the
 * truth, every grant is a conditional write on it, so a duplicate, late or stale hint changes nothing.
 */
import type { Requirements } from './labels';
import type { Priority } from './priority';
import type { TaskRateLimit } from './rate-limits';

export interface DispatchHint {
  readonly taskId: string;
  /** The task's lease epoch when it was dispatched; a later grant makes the hint stale. */
  readonly leaseEpoch: number;
  /**
   * The task's payload, carried by the hint its submission sent when it is small (`HINT_PAYLOAD_BYTES`): a claim that
   * grants the task under the same specification hands this over instead of reading the payload item. Hints sent
   * later (a retry, a hint sent again) and those of earlier releases carry none.
   */
  readonly payload?: HintPayload;
  /**
   * The named rate limits the task takes units of: a claim takes them with the grant at once, where a hint without
   * them (an earlier release's, a lane's stand-in) has its grant refused first and learns them from the refusal.
   */
  readonly rateLimits?: readonly TaskRateLimit[];
  /**
   * A lane's stand-in (a turn's task, see `turns.ts`) of a requirement lane: the set the claim matched against its
   * session's labels, which the grant's condition names. A hint of a task that requires labels has no grant without it.
   */
  readonly require?: Requirements;
}

/** What a hint of `task` carries besides its id and epoch: its rate limits, if it names any. */
export const hintFieldsOf = (task: { readonly rateLimits?: readonly TaskRateLimit[] }) =>
  task.rateLimits?.length ? { rateLimits: task.rateLimits } : {};

/** A payload as a hint carries it: the specification it belongs to, and its JSON text. */
export interface HintPayload {
  readonly specHash: string;
  readonly json: string;
}

/**
 * The largest payload a hint carries, in bytes of its JSON text as the hint's own JSON holds it (escaped as a
 * string): ten hints stay within the 64 KB that SQS bills as one request, and a payload item this small is half a
 * read unit, which the claim then saves.
 */
export const HINT_PAYLOAD_BYTES = 4_096;

/** The payload a hint of `task` carries: its JSON text if small enough and kept in DynamoDB, else none. */
export const hintPayloadOf = (
  task: { readonly specHash: string; readonly payloadInObject?: boolean },
  json: string,
): HintPayload | undefined =>
  task.payloadInObject || Buffer.byteLength(JSON.stringify(json)) > HINT_PAYLOAD_BYTES
    ? undefined
    : { specHash: task.specHash, json };

export interface ReceivedHint extends DispatchHint {
  readonly queue: string;
  readonly priority: Priority;
  readonly receiptHandle: string;
  readonly messageId: string;
  /** When SQS first accepted the message (ms). */
  readonly sentAt: number;
  /** How many times SQS has handed this message out, this time included. */
  readonly receiveCount: number;
}

/**
 * A lane's turn (see `#domain/lanes`): one message in a tier's queue that stands for every waiting task of one
 * key. Sent with the key's hash as `MessageGroupId`, so SQS fair queues tell the keys apart too.
 */
export interface ReceivedTurn {
  readonly queue: string;
  readonly priority: Priority;
  readonly keyHash: string;
  /**
   * The hash of its tasks' `concurrencyKey`, whose per-key limit they count against: the lane's own (`keyHash`) for a
   * key's lane, none for a requirement lane without a key.
   */
  readonly concurrencyKeyHash?: string;
  /** What its lane's tasks require (a requirement lane): only a claim whose session's labels meet it takes any. */
  readonly require?: Requirements;
  /** Names this turn in its lane's slot: a turn whose token the slot no longer holds is a duplicate, and goes. */
  readonly token: string;
  /** Times in a row it found its key at its limit: its next look waits longer. */
  readonly waits: number;
  /**
   * Sent back for its lane's quiet time: its lane was found empty just after an offer. Back again, its lane is most
   * likely empty and quiet now, so its slot is freed first rather than held again.
   */
  readonly held?: boolean;
  readonly receiptHandle: string;
  readonly messageId: string;
  readonly receiveCount: number;
}

/** What a turn's message says: its lane's key, its token, its waits at a full key, whether it is back from a hold. */
export type TurnMessage = Pick<
  ReceivedTurn,
  'keyHash' | 'token' | 'held' | 'concurrencyKeyHash' | 'require'
> & {
  readonly waits?: number;
};
