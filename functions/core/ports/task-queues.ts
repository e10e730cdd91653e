/**
 * The queues that carry hints (see `#domain/hint`): every task queue is one queue per priority, and a dead-letter
 * queue. A hint is only a hint, so none of these calls is a commitment: the task record is.
 */
import type { DispatchHint, ReceivedHint, ReceivedTurn, TurnMessage } from '#domain/hint';
import type { Priority } from '#domain/priority';

/** A message that does not parse as a hint; it can never lead to a task and is deleted. */
export interface PoisonMessage {
  readonly queue: string;
  readonly priority: Priority;
  readonly receiptHandle: string;
  readonly messageId: string;
}

export interface ReceiveOptions {
  readonly max: number;
  /** How long a received hint stays invisible to other claims while this claim decides on it. */
  readonly visibilityTimeoutSeconds: number;
  /** 0 returns at once (no function is held open); up to 20 waits for a hint. */
  readonly waitTimeSeconds: number;
}

/** The task queues this deployment has. */
export interface QueueNames {
  names(): string[];
  has(queue: string): boolean;
}

export interface TaskQueuePort {
  readonly directory: QueueNames;
  /** Sends one hint, visible after `delaySeconds`. */
  send(queue: string, priority: Priority, hint: DispatchHint, delaySeconds?: number): Promise<void>;
  /** Sends many hints; answers those the queues did not take. */
  sendMany(
    hints: readonly { queue: string; priority: Priority; hint: DispatchHint; delaySeconds: number }[],
  ): Promise<DispatchHint[]>;
  /** Puts a lane's turn in line, visible after `delaySeconds`; its `MessageGroupId` is the key's hash. */
  sendTurn(queue: string, priority: Priority, turn: TurnMessage, delaySeconds?: number): Promise<void>;
  receive(
    queue: string,
    priority: Priority,
    options: ReceiveOptions,
  ): Promise<{ hints: ReceivedHint[]; turns: ReceivedTurn[]; poison: PoisonMessage[] }>;
  /** About how many hints are ready in one tier. */
  readyCount(queue: string, priority: Priority): Promise<number>;
  /** Deletes handled messages. */
  delete(messages: readonly Pick<ReceivedHint, 'queue' | 'priority' | 'receiptHandle'>[]): Promise<void>;
  /** Records a dead task in the queue's dead-letter queue. */
  sendDeadLetter(queue: string, record: Record<string, unknown>): Promise<void>;
  /** Hands messages back as they are, visible again after `seconds`; ten of a queue a request. */
  handBack(
    messages: readonly Pick<ReceivedHint, 'queue' | 'priority' | 'receiptHandle'>[],
    seconds: number,
  ): Promise<void>;
  /** Hands a hint back, visible again after `seconds` (sent anew when it has been handed back too often). */
  returnLater(hint: ReceivedHint, seconds: number): Promise<void>;
}
