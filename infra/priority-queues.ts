/**
 * The four SQS queues of one task queue (critical, high, normal, low) and their dead-letter queue. SQS has no
 * priorities; claims read these queues in priority order.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { HINT_MAX_RECEIVES } from '../functions/adapters/task-queues';
import { PRIORITIES, type Priority } from '../functions/domain/priority';

/** Every queue the scheduler creates: encrypted, TLS only, messages kept the longest SQS allows. */
export const SECURE_QUEUE_DEFAULTS = {
  encryption: QueueEncryption.SQS_MANAGED,
  enforceSSL: true,
  retentionPeriod: Duration.days(14),
} as const;

export interface PriorityQueuesProps {
  /** The task queue's name: the capability agents declare to be given its tasks. */
  readonly queueName: string;
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
}

export class PriorityQueues extends Construct {
  readonly queueName: string;
  readonly byPriority: Readonly<Record<Priority, Queue>>;
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: PriorityQueuesProps) {
    super(scope, id);
    this.queueName = props.queueName;
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    this.deadLetterQueue = new Queue(this, 'DeadLetters', { ...SECURE_QUEUE_DEFAULTS, removalPolicy });
    const byPriority = {} as Record<Priority, Queue>;
    for (const priority of PRIORITIES) {
      byPriority[priority] = new Queue(this, priority[0]?.toUpperCase() + priority.slice(1), {
        ...SECURE_QUEUE_DEFAULTS,
        // A claim hides a hint only while it decides on it; the task's own lease lives in DynamoDB. Claims delete
        // stale hints and send anew those they hand back often, so only a hint whose claims keep failing midway
        // reaches the dead-letter queue; `reconcile` sends its task again.
        visibilityTimeout: Duration.seconds(30),
        deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: HINT_MAX_RECEIVES },
        removalPolicy,
      });
    }
    this.byPriority = byPriority;
  }

  get queues(): Queue[] {
    return PRIORITIES.map((p) => this.byPriority[p]);
  }

  /** Grants `actions` on the four priority queues (not the dead-letter queue). */
  grant(grantee: IGrantable, ...actions: string[]): Grant {
    return Grant.addToPrincipal({
      grantee,
      actions,
      resourceArns: this.queues.map((q) => q.queueArn),
    });
  }
}
