/**
 * Granted = used. While the integration and e2e suites run, every AWS action a function performs is recorded with
 * the kind of resource it touches (a table, an index, a queue, the payload objects, the event bus, the schedule
 * group, the schedules' role, the push channel's connections), attributed to the function that would make it in
 * AWS (see `local/function-scope`).
 * At the end of the run the records are checked against the roles of the synthesized example stack: every action
 * used must be granted to that function, and, when the whole suite ran, every action granted must have been used
 * or be on the allowlist below with its reason.
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Stack } from 'aws-cdk-lib';
import type { MiddlewareClient } from '#adapters/aws-meter';
import { CHILDREN_INDEX, DUE_INDEX, LANE_INDEX, LISTED_INDEX, type TableNames } from '#adapters/tables';
import type { QueueDirectory } from '#adapters/task-queues';
import type { EventPublisher } from '#core/ports/event-publisher';
import { PRIORITIES } from '#domain/priority';
import type { ScheduleBackend } from '#domain/schedule';
import { currentFunction, FUNCTION_NAMES, type FunctionName } from '#local/function-scope';
import type { AgentSchedulerStack } from '../../infra/agent-scheduler-stack';

/** One use: `function|action|resource kind`. */
export type Use = `${FunctionName}|${string}|${string}`;

/**
 * Grants no local run can exercise, each with why it exists. Anything else granted and never used fails the check.
 */
export const UNEXERCISED_GRANTS: Readonly<Record<string, string>> = {
  '*|logs:CreateLogStream|logs':
    'Lambda writes the function’s own log stream with its role; nothing local writes CloudWatch Logs.',
  '*|logs:PutLogEvents|logs':
    'Lambda writes the function’s own log events with its role; nothing local writes CloudWatch Logs.',
  'supervisor|sqs:SendMessage|schedulerDeadLetters':
    'Lambda sends a failed asynchronous invocation to the function’s dead-letter queue with its role; locally nothing is invoked asynchronously.',
  'scheduleFire|sqs:SendMessage|schedulerDeadLetters':
    'Lambda sends a failed asynchronous invocation to the function’s dead-letter queue with its role; locally nothing is invoked asynchronously.',
  'operatorApi|s3:ListBucket|bucket':
    'Lets S3 answer NoSuchKey (not AccessDenied) for a payload object that is gone, which an operator’s read of the payload reports as payloadGone; the S3 emulator does not check permissions.',
  'supervisor|s3:ListBucket|bucket':
    'Lets S3 answer NoSuchKey (not AccessDenied) when the supervisor keeps a payload object that is gone, which it then leaves gone; the S3 emulator does not check permissions.',
  'agentApi|s3:ListBucket|bucket':
    'Lets S3 answer NoSuchKey (not AccessDenied) for a payload object that is gone; the S3 emulator does not check permissions, so the difference never shows locally.',
  'supervisor|dynamodb:ConditionCheckItem|table:leases':
    'A hand-over whose old holder has a newer session item checks that the session it saw is gone instead of ending it; only a sweep racing a session open reaches it (openSession hands its old roles over first).',
  'agentApi|dynamodb:ConditionCheckItem|table:leases':
    'A volunteer taking a role from a holder whose session item was replaced checks that the old session is gone instead of ending it; an open hands its roles over before it replaces the item, so only a volunteer racing that open reaches it.',
  'operatorApi|dynamodb:ConditionCheckItem|table:leases':
    'The same hand-over check, reached only when a revocation races a session open that read the agent before it was marked revoked.',
  '*|execute-api:ManageConnections|pushConnections':
    'Frames reach connections through API Gateway’s management API (PostToConnection) only in AWS; locally the push server writes to its sockets itself, and tests record frames with a sender of their own.',
  'agentApi|dynamodb:DeleteItem|table:connections':
    'Forgets a connection API Gateway answered 410 for, after a wake; the same code as the operator API’s, which the push suite runs (a gone listener woken by a submission).',
  'scheduleFire|dynamodb:Query|table:tasks':
    'Tells the dependents of an earlier occurrence’s task that `cancelOther` cancelled; the same code as the operator API’s cancel, which the dependency suite runs (a cancelled dependency cancels its dependent).',
  'supervisor|dynamodb:GetItem|table:connections':
    'Reads a connection found gone after a wake, or the connection a role’s new holder listens on after a sweep’s hand-over; the suites run both through the agent and operator APIs.',
  'supervisor|dynamodb:DeleteItem|table:connections':
    'Forgets a connection found gone after a wake; the same code as the operator API’s, which the push suite runs.',
  'scheduleFire|dynamodb:GetItem|table:connections':
    'Reads a connection found gone after a fire’s wake; the same code as the operator API’s, which the push suite runs.',
  'scheduleFire|dynamodb:DeleteItem|table:connections':
    'Forgets a connection found gone after a fire’s wake; the same code as the operator API’s, which the push suite runs.',
  'wakeTimer|sqs:GetQueueAttributes|wakeTimer':
    'Lambda’s event source mapping reads the timer queue’s attributes with the function’s role (the grant CDK’s SqsEventSource makes); the local poller needs none.',
  'wakeTimer|sqs:GetQueueUrl|wakeTimer':
    'Part of the grant CDK’s SqsEventSource makes for the event source mapping; the local poller is given the URL.',
  'wakeTimer|sqs:ChangeMessageVisibility|wakeTimer':
    'Part of the grant CDK’s SqsEventSource makes for the event source mapping (it may shorten a failed batch’s visibility); the local poller lets a failed batch reappear on its own.',
  'wakeTimer|dynamodb:GetItem|table:connections':
    'Reads a connection found gone after a timed wake; the same code as the operator API’s, which the push suite runs.',
  'wakeTimer|dynamodb:DeleteItem|table:connections':
    'Forgets a connection found gone after a timed wake; the same code as the operator API’s, which the push suite runs.',
  'scheduleFire|scheduler:UpdateSchedule|scheduleGroup':
    'Replaces an early fire that already exists (EventBridge answers ConflictException); the local stand-in never conflicts. The request is asserted with the SDK mock in the adapter’s unit test.',
};

/** Where this run's records go: one directory per run, one file per test process. */
let recordFile: string | undefined;
const noted = new Set<string>();

export function startRecording(dir: string): void {
  mkdirSync(dir, { recursive: true });
  recordFile = join(dir, `${process.pid}-${Math.random().toString(36).slice(2)}.txt`);
}

function note(action: string, kind: string): void {
  const fn = currentFunction();
  if (!fn || !recordFile) return;
  const use = `${fn}|${action}|${kind}`;
  if (noted.has(use)) return;
  noted.add(use);
  appendFileSync(recordFile, `${use}\n`);
}

export function readRecords(dir: string): Set<Use> {
  const uses = new Set<Use>();
  for (const file of readdirSync(dir)) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) if (line) uses.add(line as Use);
  }
  return uses;
}

type Input = Record<string, unknown>;

/** IAM authorizes a transaction item by item, and a batch of SQS entries by the single action. */
const TRANSACT_ACTIONS: Readonly<Record<string, string>> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
};
const SQS_BATCH_ACTIONS: Readonly<Record<string, string>> = {
  SendMessageBatch: 'SendMessage',
  DeleteMessageBatch: 'DeleteMessage',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibility',
};

/** The resource kinds of one test stack's own tables, queues and bucket. */
export interface StackResources {
  readonly tables: TableNames;
  readonly queues: QueueDirectory;
  readonly bucketName?: string | undefined;
  /** The wake timer's queue, where the stack has one. */
  readonly wakeTimerQueue?: string | undefined;
}

export function recordAwsUsage(
  clients: { dynamodb: MiddlewareClient; sqs: MiddlewareClient; s3: MiddlewareClient },
  resources: StackResources,
): void {
  const tableKind = (name: unknown) => {
    const kind = Object.entries(resources.tables).find(([, table]) => table === name)?.[0];
    return kind ? `table:${kind}` : undefined;
  };
  const queueKinds = new Map<string, string>();
  for (const queue of resources.queues.names()) {
    for (const priority of PRIORITIES) queueKinds.set(resources.queues.urlFor(queue, priority), 'queue');
    const dlq = resources.queues.deadLetterUrlFor(queue);
    if (dlq) queueKinds.set(dlq, 'deadLetters');
  }
  if (resources.wakeTimerQueue) queueKinds.set(resources.wakeTimerQueue, 'wakeTimer');
  const add = (client: MiddlewareClient, name: string, record: (operation: string, input: Input) => void) =>
    client.middlewareStack.add(
      (next, context) => async (args) => {
        record((context.commandName ?? '').replace(/Command$/, ''), args.input as Input);
        return next(args);
      },
      { step: 'initialize', name },
    );

  add(clients.dynamodb, 'iamUsageDynamoDb', (operation, input) => {
    const one = (action: string, table: unknown, index?: unknown) => {
      const kind = tableKind(table);
      if (kind) note(`dynamodb:${action}`, typeof index === 'string' ? `${kind}/index/${index}` : kind);
    };
    if (operation === 'TransactWriteItems') {
      for (const item of (input.TransactItems ?? []) as Input[]) {
        for (const [kind, body] of Object.entries(item)) {
          const action = TRANSACT_ACTIONS[kind];
          if (action) one(action, (body as Input).TableName);
        }
      }
    } else if (operation === 'BatchWriteItem' || operation === 'BatchGetItem') {
      for (const table of Object.keys((input.RequestItems ?? {}) as Input)) one(operation, table);
    } else if (operation === 'TransactGetItems') {
      for (const item of (input.TransactItems ?? []) as Input[])
        one('GetItem', (item.Get as Input)?.TableName);
    } else {
      one(operation, input.TableName, input.IndexName);
    }
  });
  add(clients.sqs, 'iamUsageSqs', (operation, input) => {
    const kind = queueKinds.get(String(input.QueueUrl));
    if (kind) note(`sqs:${SQS_BATCH_ACTIONS[operation] ?? operation}`, kind);
  });
  add(clients.s3, 'iamUsageS3', (operation, input) => {
    if (input.Bucket !== resources.bucketName || !String(input.Key).startsWith('payloads/')) return;
    // A copy is authorized as a read of its source and a write of its destination: both payload objects here.
    for (const action of operation === 'CopyObject' ? ['GetObject', 'PutObject'] : [operation])
      note(`s3:${action}`, 'objects');
  });
}

/** Records `events:PutEvents` on the bus for what a publisher is given (locally events stay in process). */
export function recordingPublisher(inner: EventPublisher): EventPublisher {
  return {
    publish: async (events) => {
      if (events.length > 0) note('events:PutEvents', 'bus');
      return inner.publish(events);
    },
  };
}

/**
 * Records what EventBridge Scheduler would be asked for (and the role passed to it) by the backend a run stands in
 * with: creating a schedule passes the schedules' role; an early fire is created the same way.
 */
export function recordingScheduleBackend(inner: ScheduleBackend): ScheduleBackend {
  const passRole = () => note('iam:PassRole', 'schedulesRole');
  return {
    put: async (record) => {
      note('scheduler:CreateSchedule', 'scheduleGroup');
      passRole();
      return inner.put(record);
    },
    remove: async (name) => {
      note('scheduler:DeleteSchedule', 'scheduleGroup');
      return inner.remove(name);
    },
    ...(inner.armEarlyFire
      ? {
          armEarlyFire: async (schedule, scheduledTime) => {
            note('scheduler:CreateSchedule', 'scheduleGroup');
            passRole();
            return inner.armEarlyFire?.(schedule, scheduledTime);
          },
        }
      : {}),
  };
}

/** Every (function, action, resource kind) the example stack's roles grant. */
export function grantedUses(stack: AgentSchedulerStack, template: CloudFormation): Set<Use> {
  const { scheduler } = stack;
  const key = (value: unknown) => JSON.stringify(stack.resolve(value));
  const kinds = new Map<string, string>();
  const kindOf = (value: unknown, kind: string) => kinds.set(key(value), kind);
  for (const [name, table] of Object.entries(scheduler.tables) as [string, { tableArn: string }][]) {
    if (typeof table === 'object' && table && 'tableArn' in table) {
      kindOf(table.tableArn, `table:${name}`);
      for (const index of [DUE_INDEX, LISTED_INDEX, LANE_INDEX, CHILDREN_INDEX])
        kindOf(`${table.tableArn}/index/${index}`, `table:${name}/index/${index}`);
    }
  }
  for (const queues of scheduler.queues.values()) {
    for (const priority of PRIORITIES) kindOf(queues.byPriority[priority].queueArn, 'queue');
    kindOf(queues.deadLetterQueue.queueArn, 'deadLetters');
  }
  kindOf(scheduler.deadLetterQueue.queueArn, 'schedulerDeadLetters');
  kindOf(scheduler.wakeTimer.queue.queueArn, 'wakeTimer');
  kindOf(scheduler.payloads.bucket.arnForObjects('payloads/*'), 'objects');
  kindOf(scheduler.payloads.bucket.bucketArn, 'bucket');
  kindOf(scheduler.eventBus.eventBusArn, 'bus');
  kindOf(scheduler.schedules.role.roleArn, 'schedulesRole');
  kindOf(scheduler.push.connectionsArn, 'pushConnections');
  kindOf(
    (stack as Stack).formatArn({
      service: 'scheduler',
      resource: 'schedule',
      resourceName: `${scheduler.scheduleGroup.scheduleGroupName}/*`,
    }),
    'scheduleGroup',
  );
  for (const fn of FUNCTION_NAMES) kindOf(scheduler.functions[fn].logGroup.logGroupArn, 'logs');
  const granted = new Set<Use>();
  for (const fn of FUNCTION_NAMES) {
    const role = scheduler.functions[fn].role;
    if (!role) continue;
    for (const statement of policyStatementsOf(stack, template, role)) {
      const actions = ([] as string[]).concat(statement.Action ?? []);
      const targets = ([] as unknown[]).concat(statement.Resource ?? []);
      for (const action of actions) {
        for (const target of targets) {
          granted.add(
            `${fn}|${action}|${kinds.get(JSON.stringify(target)) ?? `unknown:${JSON.stringify(target)}`}`,
          );
        }
      }
    }
  }
  return granted;
}

interface Statement {
  readonly Action?: string | string[];
  readonly Resource?: unknown;
}

export interface CloudFormation {
  readonly Resources: Record<string, Input>;
}

/** The statements of every policy attached to `role` in the synthesized template. */
function policyStatementsOf(
  stack: AgentSchedulerStack,
  template: CloudFormation,
  role: { node: { defaultChild?: unknown } },
): Statement[] {
  const roleId = (stack as Stack).getLogicalId(role.node.defaultChild as never);
  const statements: Statement[] = [];
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const properties = resource.Properties as Input;
    const roles = (properties.Roles ?? []) as { Ref?: string }[];
    if (!roles.some((r) => r.Ref === roleId)) continue;
    statements.push(...(((properties.PolicyDocument as Input).Statement ?? []) as Statement[]));
  }
  return statements;
}

/** What is used and not granted, and (when `complete`) what is granted, never used and not on the allowlist. */
export function compareUses(
  used: ReadonlySet<Use>,
  granted: ReadonlySet<Use>,
  complete: boolean,
): { notGranted: string[]; unused: string[] } {
  const allowlisted = (use: string) => {
    const [fn, action, kind] = use.split('|');
    return `${fn}|${action}|${kind}` in UNEXERCISED_GRANTS || `*|${action}|${kind}` in UNEXERCISED_GRANTS;
  };
  return {
    notGranted: [...used].filter((use) => !granted.has(use)).sort(),
    unused: complete ? [...granted].filter((use) => !used.has(use) && !allowlisted(use)).sort() : [],
  };
}
