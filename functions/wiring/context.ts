/**
 * The composition root: a scheduler context built from AWS SDK clients, the tables and queues they reach, and
 * the settings. Lambda entries (through `runtime.ts`), the local runner, the bench, the chaos runs and the tests
 * build their schedulers here; `core/` only sees the context.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AgentTable } from '#adapters/agent-table';
import { translatingAwsErrors } from '#adapters/aws-errors';
import { CascadeTable } from '#adapters/cascade-table';
import { ConnectionTable } from '#adapters/connection-table';
import { CycleStatsTable } from '#adapters/cycle-stats-table';
import { DebounceTable } from '#adapters/debounce-table';
import { DependencyTable } from '#adapters/dependency-table';
import { noEvents } from '#adapters/event-publishers';
import { LaneTable } from '#adapters/lane-table';
import { OccurrenceTable } from '#adapters/occurrence-table';
import { PayloadObjects } from '#adapters/payload-objects';
import { PayloadTable } from '#adapters/payload-table';
import { ProgressTable } from '#adapters/progress-table';
import { QueueControlTable } from '#adapters/queue-control-table';
import { RateLimitTable } from '#adapters/rate-limit-table';
import { RoleTable } from '#adapters/role-table';
import { ScheduleTable } from '#adapters/schedule-table';
import { SessionTable } from '#adapters/session-table';
import type { TableNames } from '#adapters/tables';
import { type QueueDirectory, TaskQueues } from '#adapters/task-queues';
import { TaskTable } from '#adapters/task-table';
import { WaitpointTable } from '#adapters/waitpoint-table';
import { WakeTimerQueue } from '#adapters/wake-timer-queue';
import {
  DEFAULT_SETTINGS,
  type SchedulerContext,
  type SchedulerCounters,
  type SchedulerLog,
  type SchedulerSettings,
  silentLog,
} from '#core/context';
import type { EventPublisher } from '#core/ports/event-publisher';
import type { PushChannel, PushSender } from '#core/ports/push-channel';
import type { ScheduleBackend } from '#domain/schedule';

export interface SchedulerDependencies {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly tables: TableNames;
  readonly queues: QueueDirectory;
  readonly settings?: Partial<SchedulerSettings>;
  readonly now?: () => number;
  readonly random?: () => number;
  readonly log?: SchedulerLog;
  /** Counts for metrics (the agent API's claims by queue); absent: nothing counted. */
  readonly counters?: SchedulerCounters;
  readonly declaredSchedules?: readonly unknown[];
  readonly scheduleBackend?: ScheduleBackend;
  /** @default none: events are dropped */
  readonly events?: EventPublisher;
  /** Where large payloads go. @default none: every payload stays in DynamoDB */
  readonly payloadBucket?: { readonly s3: S3Client; readonly bucketName: string };
  /**
   * The push channel: how frames reach connections, and the URL clients open (a function when it is known only
   * once a server listens). Needs `tables.connections`. @default none: agents poll
   */
  readonly push?: {
    readonly sender: PushSender;
    readonly url: string | (() => string);
    /** The wake timer's SQS queue. @default none: a held-back task wakes an agent at the supervisor's next pass */
    readonly timerQueueUrl?: string;
  };
}

/**
 * The context as the wiring builds it: its stores and queues are the DynamoDB and SQS adapters. Tools that look
 * beneath the ports (the tests, the chaos run's deliberate bugs) use this type; the operations see only the ports.
 */
export interface WiredContext extends SchedulerContext {
  readonly tasks: TaskTable;
  readonly payloads: PayloadTable;
  readonly dependencies: DependencyTable;
  readonly lanes: LaneTable;
  readonly sessions: SessionTable;
  readonly roles: RoleTable;
  readonly agents: AgentTable;
  readonly queues: TaskQueues;
}

export function createContext(deps: SchedulerDependencies): WiredContext {
  const settings = { ...DEFAULT_SETTINGS, ...deps.settings };
  const doc = DynamoDBDocumentClient.from(deps.dynamodb, {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
  });
  const now = deps.now ?? Date.now;
  let push: PushChannel | undefined;
  if (deps.push && deps.tables.connections) {
    const { sender, url, timerQueueUrl } = deps.push;
    push = {
      connections: translatingAwsErrors(
        new ConnectionTable(doc, deps.tables.connections, now, settings.listenerShards, deps.random),
      ),
      sender: translatingAwsErrors(sender),
      ...(timerQueueUrl
        ? { timer: translatingAwsErrors(new WakeTimerQueue(deps.sqs, timerQueueUrl, now)) }
        : {}),
      get url() {
        return typeof url === 'string' ? url : url();
      },
    };
  }
  // The dependencies' adapter marks a linked task through the state adapter itself, not its wrapper: the AWS errors
  // of that write are translated once, by the wrapper of the call that made it.
  const tasks = new TaskTable(doc, deps.tables.tasks);
  return {
    tasks: translatingAwsErrors(tasks),
    payloads: translatingAwsErrors(
      new PayloadTable(
        doc,
        deps.tables.tasks,
        deps.payloadBucket && {
          objects: new PayloadObjects(deps.payloadBucket.s3, deps.payloadBucket.bucketName),
          fromBytes: settings.payloadObjectFromBytes,
        },
      ),
    ),
    dependencies: translatingAwsErrors(new DependencyTable(doc, deps.tables.tasks, tasks)),
    lanes: translatingAwsErrors(new LaneTable(doc, deps.tables.tasks)),
    sessions: translatingAwsErrors(
      new SessionTable(doc, deps.tables.leases, settings.taskRetentionSeconds, deps.tables.agents),
    ),
    roles: translatingAwsErrors(new RoleTable(doc, deps.tables.leases, deps.tables.agents)),
    occurrences: translatingAwsErrors(new OccurrenceTable(doc, deps.tables.leases)),
    queueControls: translatingAwsErrors(new QueueControlTable(doc, deps.tables.leases)),
    cycleStats: translatingAwsErrors(new CycleStatsTable(doc, deps.tables.leases)),
    waitpoints: translatingAwsErrors(new WaitpointTable(doc, deps.tables.tasks)),
    progress: translatingAwsErrors(new ProgressTable(doc, deps.tables.tasks)),
    rateLimits: translatingAwsErrors(new RateLimitTable(doc, deps.tables.tasks)),
    cascades: translatingAwsErrors(new CascadeTable(doc, deps.tables.tasks)),
    debounces: translatingAwsErrors(new DebounceTable(doc, deps.tables.tasks, tasks)),
    schedules: translatingAwsErrors(new ScheduleTable(doc, deps.tables.leases)),
    agents: translatingAwsErrors(new AgentTable(doc, deps.tables.agents)),
    queues: translatingAwsErrors(new TaskQueues(deps.sqs, deps.queues)),
    settings,
    declaredSchedules: deps.declaredSchedules ?? [],
    events: translatingAwsErrors(deps.events ?? noEvents),
    ...(deps.scheduleBackend ? { scheduleBackend: translatingAwsErrors(deps.scheduleBackend) } : {}),
    ...(push ? { push } : {}),
    ...(deps.counters ? { counters: deps.counters } : {}),
    now,
    random: deps.random ?? Math.random,
    log: deps.log ?? silentLog,
  };
}
