/**
 * The wake timer: an SQS queue of timed wakes, each message delayed until a held-back task becomes claimable (a
 * delay, a retry's backoff, a schedule fired ahead of its time), and the function that reads it through an event
 * source mapping and wakes idle agents of the task's queue. EventBridge Scheduler's precision is a minute and the
 * supervisor passes once a minute; an SQS delay ends within a second of its time.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { type IQueue, Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { WAKE_TIMER_MAX_CONCURRENCY } from '../functions/adapters/wake-timer-queue';
import { SECURE_QUEUE_DEFAULTS } from './priority-queues';
import type { SchedulerFunction } from './scheduler-function';

export interface WakeTimerProps {
  /** The function that reads the queue (`functions/wake-timer.ts`). */
  readonly reader: SchedulerFunction;
  /** Where a wake goes after three failed deliveries: the stack's dead-letter queue, which is alarmed. */
  readonly deadLetterQueue: IQueue;
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
}

export class WakeTimer extends Construct {
  readonly queue: Queue;

  constructor(scope: Construct, id: string, props: WakeTimerProps) {
    super(scope, id);
    this.queue = new Queue(this, 'Queue', {
      ...SECURE_QUEUE_DEFAULTS,
      // A wake is worth nothing late; an hour outlasts the longest delay (15 minutes) and any retries.
      retentionPeriod: Duration.hours(1),
      // Six times the function's timeout, as AWS advises for an event source mapping.
      visibilityTimeout: Duration.seconds(60),
      deadLetterQueue: { queue: props.deadLetterQueue, maxReceiveCount: 3 },
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    props.reader.addEventSource(
      new SqsEventSource(this.queue, {
        // Up to ten wakes an invocation, sent on at once: a wake that waits for a fuller batch is late.
        batchSize: 10,
        maxConcurrency: WAKE_TIMER_MAX_CONCURRENCY,
      }),
    );
  }

  /** Lets a function arm wakes (`sqs:SendMessage` only). */
  grantArm(grantee: IGrantable): Grant {
    return Grant.addToPrincipal({
      grantee,
      actions: ['sqs:SendMessage'],
      resourceArns: [this.queue.queueArn],
    });
  }
}
