/**
 * What an SQS message of a task queue carries. We call such a message a *hint*, here and throughout: it says only
 * that a task may be claimable (its id and the lease epoch it was sent at). The task record in DynamoDB is the
 * truth, every grant is a conditional write on it, so a duplicate, late or stale hint changes nothing.
 */
import type { Priority } from './priority';

export interface DispatchHint {
  readonly taskId: string;
  /** The task's lease epoch when it was dispatched; a later grant makes the hint stale. */
  readonly leaseEpoch: number;
}

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
  /** Names this turn in its lane's slot: a turn whose token the slot no longer holds is a duplicate, and goes. */
  readonly token: string;
  /** Times in a row it found its key at its limit: its next look waits longer. */
  readonly waits: number;
  readonly receiptHandle: string;
  readonly messageId: string;
  readonly receiveCount: number;
}
