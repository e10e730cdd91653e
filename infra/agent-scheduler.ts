/**
 * `AgentScheduler`: serverless task scheduling for fleets of worker agents. Tables for tasks, agents, leases and
 * push connections, four SQS priority queues per task queue, EventBridge Scheduler schedules, a supervisor, the
 * HTTP API agents and operators call, the WebSocket push channel that wakes idle agents and announces task
 * endings, alarms and a dashboard. Secure by default; every resource it creates is reachable.
 */
import { Aws, Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import type { CfnApi } from 'aws-cdk-lib/aws-apigatewayv2';
import type { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { type Grant, type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { CfnBucket } from 'aws-cdk-lib/aws-s3';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { PAYLOAD_OBJECT_PREFIX, payloadObjectDays } from '../functions/adapters/payload-objects';
import { DUE_INDEX, LANE_INDEX, LISTED_INDEX } from '../functions/adapters/tables';
import { DEFAULT_SETTINGS } from '../functions/core/context';
import { PRIORITIES } from '../functions/domain/priority';
import { queueLimitsSchema } from '../functions/domain/queue-limits';
import { type NumberSetting, outOfBounds, SETTINGS, type SettingName } from '../functions/domain/settings';
import { QUEUE_NAME_PATTERN } from '../functions/domain/task-spec';
import type { QueueLimits } from '../sdk/types';
import { PayloadBucket } from './payload-bucket';
import { PriorityQueues, SECURE_QUEUE_DEFAULTS } from './priority-queues';
import { PushChannel } from './push-channel';
import { SchedulerAlarms } from './scheduler-alarms';
import { SchedulerApi } from './scheduler-api';
import { type FunctionEntry, SchedulerFunction } from './scheduler-function';
import { SchedulerTables } from './scheduler-tables';
import type { TaskScheduleProps } from './task-schedule';
import { TaskSchedules } from './task-schedules';

export interface AgentSchedulerProps {
  /**
   * The task queues. A queue's name is the capability an agent declares to be given its tasks; each gets four SQS
   * queues (critical, high, normal, low) and a dead-letter queue.
   */
  readonly queues: readonly string[];
  /** Cron, rate and one-time schedules that submit tasks. @default - none */
  readonly schedules?: readonly TaskScheduleProps[];
  /** How long a session, and every lease it holds, lives after the agent's last heartbeat. @default 30 seconds */
  readonly leaseTtl?: Duration;
  /** The heartbeat interval agents are told to use. @default a third of `leaseTtl` */
  readonly heartbeatInterval?: Duration;
  /** How often the supervisor sweeps; whole minutes, at least one. @default 1 minute */
  readonly supervisorPeriod?: Duration;
  /** How long finished tasks are kept before DynamoDB's TTL removes them. @default 7 days */
  readonly taskRetention?: Duration;
  /** What happens to tables and queues when the stack is deleted. @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /** Where alarms notify. @default - alarms change state without notifying anyone */
  readonly alarmTopic?: ITopic;
  /** Retention of function and access logs. @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
  /** API Gateway's default throttling, for routes without limits of their own. @default 100 requests per second, bursts of 200 */
  readonly apiThrottle?: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * API Gateway's limit of each agent route (session, heartbeat, claim, complete, …), across all agents.
   * @default 100 requests per second, bursts of 200
   */
  readonly agentRouteThrottle?: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * API Gateway's limit of each operator route, apart from the agent routes' so agents cannot starve operators.
   * @default 50 requests per second, bursts of 100
   */
  readonly operatorRouteThrottle?: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * API Gateway's limit of the push channel's WebSocket stage: connects and client frames (keep-alives included,
   * about one per connection every five minutes) across all connections.
   * @default 100 requests per second, bursts of 200
   */
  readonly pushThrottle?: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * Sets the account's API Gateway CloudWatch role (one per account and region), which the push channel's access
   * logs need: without it the WebSocket stage cannot be created. `false` when the account already has one.
   * @default true
   */
  readonly apiGatewayAccountLogRole?: boolean;
  /**
   * Requests a second one agent may make, enforced by each agent API instance (with N instances the bound is N
   * times this); past it the agent gets 429 with `Retry-After`. A Worker makes about one call per task.
   * @default 50 requests per second, bursts of 100
   */
  readonly agentRateLimit?: { readonly ratePerSecond: number; readonly burst: number };
  /** A hint waiting longer than this raises the queue's alarm. @default 15 minutes */
  readonly oldestMessageAlarmAge?: Duration;
  /** CloudWatch namespace of the scheduler's own metrics. @default 'AgentScheduler' */
  readonly metricsNamespace?: string;
  /**
   * The starvation ladder: a claimable task waiting this long is promoted one priority, then announced with a
   * `task.starved` event, then marked as needing attention (the StarvedTasks alarm).
   * @default 5, 15 and 60 minutes
   */
  readonly starvation?: {
    readonly promoteAfter?: Duration;
    readonly announceAfter?: Duration;
    readonly attentionAfter?: Duration;
  };
  /**
   * The longest wait an empty claim tells an idle agent to take. Idle polling is what an idle agent costs: at 90 s
   * about $0.09 a month (API call, function invocation, SQS receives); shorter picks up new work sooner.
   * @default Duration.seconds(90)
   */
  readonly idleClaimRetryMax?: Duration;
  /**
   * Publish `task.submitted`, `task.claimed` and `task.completed` for every task. EventBridge charges $1 per
   * million events, so these three alone cost $3 per million tasks, about as much as the API calls. Failures,
   * losses, dead letters, starvation, agent, role and schedule events are published either way.
   * @default false
   */
  readonly routineEvents?: boolean;
  /**
   * Most roles one agent may register, 1 to 10,000: each registered role is an entry in the role's item and a
   * line of every role listing. Counted exactly, even under parallel registrations.
   * @default 100
   */
  readonly maxRolesPerAgent?: number;
  /**
   * Limits per task queue across all agents: at most `maxConcurrency` tasks leased at once, at most
   * `ratePerSecond` claims a second with bursts of `burst`. Operators may change them at run time. A concurrency
   * limit (`maxConcurrency`, `perKeyConcurrency`) is at most 5,000, the slots one queue's control record holds.
   * @default - no limits
   */
  readonly queueLimits?: Readonly<Record<string, QueueLimits>>;
  /**
   * The queues agents may submit follow-up tasks to (`POST /v1/agent/tasks`), each fenced by the agent's lease on
   * the task it runs. Agents submit nothing unless named here.
   * @default - none
   */
  readonly agentSubmitQueues?: readonly string[];
}

export class AgentScheduler extends Construct {
  readonly tables: SchedulerTables;
  /** The priority queues of each task queue, by task queue name. */
  readonly queues: ReadonlyMap<string, PriorityQueues>;
  readonly functions: {
    readonly agentApi: SchedulerFunction;
    readonly operatorApi: SchedulerFunction;
    readonly authorizer: SchedulerFunction;
    readonly supervisor: SchedulerFunction;
    readonly scheduleFire: SchedulerFunction;
    /** The push channel's `$connect` authorizer: uses up a connect ticket and names its caller. */
    readonly pushAuthorizer: SchedulerFunction;
    /** The push channel's `$connect`, `$disconnect` and `$default` routes. */
    readonly pushApi: SchedulerFunction;
  };
  readonly api: SchedulerApi;
  /** The WebSocket API over which agents are woken and told of role grants, and operators of task endings. */
  readonly push: PushChannel;
  /** Schedule fires and supervisor passes that could not be delivered, and failed asynchronous invocations. */
  readonly deadLetterQueue: Queue;
  /** Lifecycle events (`source: agent-scheduler`): task, agent, schedule and queue events, schema version 1. */
  readonly eventBus: EventBus;
  /** Payloads larger than about ten kilobytes, which cost less as S3 objects than as DynamoDB write units. */
  readonly payloads: PayloadBucket;
  readonly schedules: TaskSchedules;
  /** The schedule group every schedule of this scheduler lives in, declared or created at run time. */
  readonly scheduleGroup: TaskSchedules['group'];
  readonly alarms: SchedulerAlarms;

  constructor(scope: Construct, id: string, props: AgentSchedulerProps) {
    super(scope, id);
    const settings = validateProps(props);
    const supervisorPeriod = props.supervisorPeriod ?? Duration.minutes(1);
    const retention = Duration.seconds(settings.taskRetention);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const logRetention = props.logRetention ?? RetentionDays.ONE_MONTH;
    const metricsNamespace = props.metricsNamespace ?? 'AgentScheduler';

    this.tables = new SchedulerTables(this, 'Tables', { removalPolicy });
    this.queues = new Map(
      props.queues.map((name) => [
        name,
        new PriorityQueues(this, `Queue${name.replace(/[^A-Za-z0-9]/g, '')}`, {
          queueName: name,
          removalPolicy,
        }),
      ]),
    );

    this.deadLetterQueue = new Queue(this, 'DeadLetters', { ...SECURE_QUEUE_DEFAULTS, removalPolicy });

    this.eventBus = new EventBus(this, 'Events', { description: 'agent-scheduler lifecycle events' });

    // A payload may be needed until the longest delay, then the longest queue age, then the retention are over.
    this.payloads = new PayloadBucket(this, 'Payloads', {
      expiration: Duration.days(
        payloadObjectDays({
          maxQueueAgeSeconds: DEFAULT_SETTINGS.maxQueueAgeSeconds,
          retentionSeconds: retention.toSeconds(),
        }),
      ),
      removalPolicy,
    });

    // What every function that builds a scheduler reads (`schedulerFromEnvironment`).
    const base = {
      TASKS_TABLE_NAME: this.tables.tasks.tableName,
      AGENTS_TABLE_NAME: this.tables.agents.tableName,
      LEASES_TABLE_NAME: this.tables.leases.tableName,
      QUEUE_DIRECTORY: this.queueDirectoryJson(),
      ...settingsEnvironment(settings, FUNCTION_SETTINGS),
    };
    const environment = {
      ...base,
      EVENT_BUS_NAME: this.eventBus.eventBusName,
      PAYLOAD_BUCKET_NAME: this.payloads.bucket.bucketName,
      ROUTINE_EVENTS: String(props.routineEvents ?? false),
      // Declared limits hold from the first claim, before any operator has set a queue's control item.
      ...(props.queueLimits && Object.keys(props.queueLimits).length > 0
        ? { QUEUE_LIMITS: JSON.stringify(props.queueLimits) }
        : {}),
      ...(props.agentSubmitQueues && props.agentSubmitQueues.length > 0
        ? { AGENT_SUBMIT_QUEUES: JSON.stringify(props.agentSubmitQueues) }
        : {}),
    };
    const fn = (
      fnId: string,
      entry: FunctionEntry,
      memorySize: number,
      timeout: Duration,
      env: Record<string, string>,
      invokedAsynchronously = false,
    ) =>
      new SchedulerFunction(this, fnId, {
        entry,
        memorySize,
        timeout,
        environment: env,
        logRetention,
        serviceName: `agent-scheduler-${entry}`,
        metricsNamespace,
        ...(invokedAsynchronously ? { deadLetterQueue: this.deadLetterQueue } : {}),
      });
    this.functions = {
      agentApi: fn('AgentApi', 'agent-api', 512, Duration.seconds(10), {
        ...environment,
        ...settingsEnvironment(settings, ['agentRatePerSecond', 'agentBurst']),
      }),
      operatorApi: fn('OperatorApi', 'operator-api', 512, Duration.seconds(10), environment),
      authorizer: fn('Authorizer', 'authorizer', 256, Duration.seconds(5), {
        AGENTS_TABLE_NAME: this.tables.agents.tableName,
      }),
      supervisor: fn('Supervisor', 'supervisor', 512, Duration.seconds(60), environment, true),
      scheduleFire: fn('ScheduleFire', 'schedule-fire', 256, Duration.seconds(10), environment, true),
      // The push functions publish no events and touch no payloads: neither the bus nor the bucket is named.
      pushAuthorizer: fn('PushAuthorizer', 'push-authorizer', 256, Duration.seconds(5), base),
      pushApi: fn('PushApi', 'push-api', 256, Duration.seconds(10), base),
    };

    this.push = new PushChannel(this, 'Push', {
      pushApi: this.functions.pushApi,
      authorizer: this.functions.pushAuthorizer,
      throttle: props.pushThrottle ?? { rateLimit: 100, burstLimit: 200 },
      logRetention,
      accountLogRole: props.apiGatewayAccountLogRole ?? true,
    });
    // The channel is on in a function when all three are set (`pushConfigFromEnv`).
    for (const pushing of this.pushFunctions()) {
      pushing.addEnvironment('CONNECTIONS_TABLE_NAME', this.tables.connections.tableName);
      pushing.addEnvironment('PUSH_URL', this.push.url);
      pushing.addEnvironment('PUSH_CALLBACK_URL', this.push.callbackUrl);
    }
    this.grantLeastPrivilege();

    this.api = new SchedulerApi(this, 'Api', {
      agentApi: this.functions.agentApi,
      operatorApi: this.functions.operatorApi,
      authorizer: this.functions.authorizer,
      throttle: props.apiThrottle ?? { rateLimit: 100, burstLimit: 200 },
      routeThrottle: {
        agent: props.agentRouteThrottle ?? { rateLimit: 100, burstLimit: 200 },
        operator: props.operatorRouteThrottle ?? { rateLimit: 50, burstLimit: 100 },
      },
      logRetention,
      authorizerCacheTtl: Duration.seconds(60),
    });

    this.schedules = new TaskSchedules(this, 'Schedules', {
      schedules: props.schedules ?? [],
      queueNames: props.queues,
      supervisor: this.functions.supervisor,
      supervisorPeriod,
      fire: this.functions.scheduleFire,
      deadLetterQueue: this.deadLetterQueue,
    });
    this.scheduleGroup = this.schedules.group;
    this.allowRuntimeSchedules(props.schedules ?? []);

    this.alarms = new SchedulerAlarms(this, 'Alarms', {
      queues: [...this.queues.values()],
      scheduleDeadLetters: this.deadLetterQueue,
      supervisor: this.functions.supervisor,
      apiFunctions: [this.functions.agentApi, this.functions.operatorApi, this.functions.authorizer],
      apiStage: this.api.stage,
      pushApi: this.functions.pushApi,
      pushAuthorizer: this.functions.pushAuthorizer,
      pushStage: this.push.stage,
      functions: Object.values(this.functions),
      metricsNamespace,
      oldestMessageAge: props.oldestMessageAlarmAge ?? Duration.minutes(15),
      apiId: this.api.httpApi.apiId,
      ...(props.alarmTopic ? { alarmTopic: props.alarmTopic } : {}),
    });
    this.acknowledgeNagFindings();
  }

  /** The URL push connections open (`wss://…`), with a ticket from `POST /v1/push-ticket` or `/v1/agent/push-ticket`. */
  get pushUrl(): string {
    return this.push.url;
  }

  /** Lets an IAM principal submit tasks through the API (`POST /v1/tasks`). */
  grantSubmit(grantee: IGrantable): Grant {
    return this.api.grantInvoke(grantee, (route) => route.operation === 'submitTask');
  }

  /** Lets an IAM principal read tasks, queues, agents and schedules through the API. */
  grantRead(grantee: IGrantable): Grant {
    return this.api.grantInvoke(grantee, (route) => route.method === 'GET');
  }

  /** Lets an IAM principal call every operator route: submit, cancel, pause, register and revoke agents, …. */
  grantOperate(grantee: IGrantable): Grant {
    return this.api.grantInvoke(grantee);
  }

  /**
   * The queue URLs, compactly: a shared base and, per task queue, its four queue names and its dead-letter
   * queue's, so that many task queues fit in Lambda's 4 KB of environment.
   */
  private queueDirectoryJson(): string {
    return Stack.of(this).toJsonString({
      base: `https://sqs.${Aws.REGION}.${Aws.URL_SUFFIX}/${Aws.ACCOUNT_ID}/`,
      queues: Object.fromEntries(
        [...this.queues].map(([name, q]) => [
          name,
          [...PRIORITIES.map((p) => q.byPriority[p].queueName), q.deadLetterQueue.queueName],
        ]),
      ),
    });
  }

  /** The functions that use the push channel, and are told where it is. */
  private pushFunctions(): SchedulerFunction[] {
    const { agentApi, operatorApi, supervisor, scheduleFire, pushAuthorizer, pushApi } = this.functions;
    return [agentApi, operatorApi, supervisor, scheduleFire, pushAuthorizer, pushApi];
  }

  /** Each function gets the actions it uses on the resources it uses, nothing else. */
  private grantLeastPrivilege(): void {
    const { tasks, agents, leases, connections } = this.tables;
    const { agentApi, operatorApi, authorizer, supervisor, scheduleFire, pushAuthorizer, pushApi } =
      this.functions;
    const queues = [...this.queues.values()];
    const onQueues = (grantee: IGrantable, ...actions: string[]) => {
      for (const q of queues) q.grant(grantee, ...actions);
    };

    // PutItem, BatchWriteItem: a task that dies under its agent has its `onFailure` submitted by that call.
    // Query (the table's own key): a task's dependents when it ends, and its dependencies' outcomes at its claim.
    // ConditionCheckItem: a follow-up task is created in a transaction that checks the lease on its parent.
    grantOnTable(agentApi, tasks, [
      'dynamodb:GetItem',
      'dynamodb:UpdateItem',
      'dynamodb:BatchGetItem',
      'dynamodb:PutItem',
      'dynamodb:BatchWriteItem',
      'dynamodb:Query',
      'dynamodb:ConditionCheckItem',
    ]);
    // A claim reads the oldest tasks of a key's lane when it receives the lane's turn.
    grantOnTable(agentApi, tasks, ['dynamodb:Query'], LANE_INDEX);
    // ConditionCheckItem: a role changes hands in a transaction that checks the old holder's session is over.
    grantOnTable(agentApi, leases, [
      'dynamodb:GetItem',
      'dynamodb:UpdateItem',
      'dynamodb:PutItem',
      'dynamodb:ConditionCheckItem',
    ]);
    // UpdateItem: registering a role counts it on the agent's item, in the transaction that records it.
    // ConditionCheckItem: a session is opened in a transaction that checks the agent is not revoked.
    grantOnTable(agentApi, agents, [
      'dynamodb:GetItem',
      'dynamodb:UpdateItem',
      'dynamodb:ConditionCheckItem',
    ]);
    onQueues(
      agentApi,
      'sqs:ReceiveMessage',
      'sqs:DeleteMessage',
      'sqs:ChangeMessageVisibility',
      'sqs:SendMessage',
    );

    // BatchWriteItem: payload items, written without a condition (their key names the specification).
    // Query (the table's own key): a cancelled task's dependents are told.
    grantOnTable(operatorApi, tasks, [
      'dynamodb:PutItem',
      'dynamodb:BatchWriteItem',
      'dynamodb:GetItem',
      'dynamodb:UpdateItem',
      'dynamodb:BatchGetItem',
      'dynamodb:Query',
    ]);
    grantOnTable(operatorApi, tasks, ['dynamodb:Query'], DUE_INDEX);
    // Listing tasks reads the `listed` index, then the tasks of a page with BatchGetItem.
    grantOnTable(operatorApi, tasks, ['dynamodb:Query'], LISTED_INDEX);
    grantOnTable(operatorApi, agents, [
      'dynamodb:PutItem',
      'dynamodb:GetItem',
      'dynamodb:UpdateItem',
      'dynamodb:Scan',
    ]);
    // DeleteItem: deleting a schedule removes its record (and a failed create takes its record back).
    // ConditionCheckItem: revoking an agent hands its roles over in transactions that check sessions.
    // BatchGetItem: a page of agents reads their sessions (online, last heartbeat, tasks held) in one request.
    grantOnTable(operatorApi, leases, [
      'dynamodb:GetItem',
      'dynamodb:BatchGetItem',
      'dynamodb:UpdateItem',
      'dynamodb:PutItem',
      'dynamodb:DeleteItem',
      'dynamodb:Scan',
      'dynamodb:ConditionCheckItem',
    ]);
    onQueues(operatorApi, 'sqs:SendMessage');

    grantOnTable(authorizer, agents, ['dynamodb:GetItem']);

    // PutItem: a missed schedule occurrence that its policy runs is submitted by the supervisor.
    // Query (the table's own key): the dependents of a task that died or expired are told.
    grantOnTable(supervisor, tasks, [
      'dynamodb:GetItem',
      'dynamodb:UpdateItem',
      'dynamodb:BatchGetItem',
      'dynamodb:PutItem',
      'dynamodb:BatchWriteItem',
      'dynamodb:Query',
    ]);
    grantOnTable(supervisor, tasks, ['dynamodb:Query'], DUE_INDEX);
    grantOnTable(supervisor, leases, [
      'dynamodb:Scan',
      'dynamodb:GetItem',
      'dynamodb:UpdateItem',
      'dynamodb:ConditionCheckItem',
    ]);
    // Reconcile reads how many hints wait in a queue before sending a task's hint again.
    onQueues(supervisor, 'sqs:SendMessage', 'sqs:GetQueueAttributes');

    // Submit, look at earlier occurrences' tasks, cancel them (cancelOther), and keep the occurrence ledger.
    // Query (the table's own key): a task cancelled by `cancelOther` has its dependents told.
    grantOnTable(scheduleFire, tasks, [
      'dynamodb:PutItem',
      'dynamodb:BatchWriteItem',
      'dynamodb:GetItem',
      'dynamodb:UpdateItem',
      'dynamodb:Query',
    ]);
    grantOnTable(scheduleFire, leases, ['dynamodb:GetItem', 'dynamodb:UpdateItem']);
    onQueues(scheduleFire, 'sqs:SendMessage');

    // The push channel (`connection-table.ts`). Whoever makes a task claimable wakes idle listeners of its queue
    // (Query a queue's listeners, UpdateItem to take one and mark it busy in its other queues); whoever ends a task
    // tells the connections watching it (Query); whoever hands a role over looks up the new holder's connection
    // (GetItem); and a frame that finds its connection gone forgets it (GetItem, then DeleteItem).
    grantOnTable(agentApi, connections, [
      // PutItem: connect tickets. UpdateItem: also an empty claim marks its agent idle.
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:Query',
      'dynamodb:GetItem',
      'dynamodb:DeleteItem',
    ]);
    grantOnTable(operatorApi, connections, [
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:Query',
      'dynamodb:GetItem',
      'dynamodb:DeleteItem',
    ]);
    for (const fn of [supervisor, scheduleFire])
      grantOnTable(fn, connections, [
        'dynamodb:UpdateItem',
        'dynamodb:Query',
        'dynamodb:GetItem',
        'dynamodb:DeleteItem',
      ]);
    // The connect ticket is used up with a conditional DeleteItem; a ticket of an agent revoked since is refused.
    grantOnTable(pushAuthorizer, connections, ['dynamodb:DeleteItem']);
    grantOnTable(pushAuthorizer, agents, ['dynamodb:GetItem']);
    // $connect: the agent's queues, then its connection and listener records in a BatchWriteItem. $disconnect:
    // read the connection, delete its records. $default: an operator's watch (PutItem) marks the task watched
    // and reads its status in one UpdateItem.
    grantOnTable(pushApi, connections, [
      'dynamodb:BatchWriteItem',
      'dynamodb:PutItem',
      'dynamodb:GetItem',
      'dynamodb:DeleteItem',
    ]);
    grantOnTable(pushApi, agents, ['dynamodb:GetItem']);
    grantOnTable(pushApi, tasks, ['dynamodb:UpdateItem']);
    // Every function that sends frames; the authorizer sends none.
    for (const fn of [agentApi, operatorApi, supervisor, scheduleFire, pushApi]) this.push.grantSend(fn);

    for (const fn of [agentApi, operatorApi, supervisor, scheduleFire]) this.eventBus.grantPutEventsTo(fn);
    // Whoever submits writes large payloads (the supervisor submits missed schedule occurrences); claims read them.
    for (const fn of [agentApi, operatorApi, supervisor, scheduleFire]) this.payloads.grantWrite(fn);
    // Claims read payloads; so does an operator's `GET /v1/tasks/{taskId}?include=payload`.
    this.payloads.grantRead(agentApi);
    this.payloads.grantRead(operatorApi);
    // Keeping a payload object for a task that lives long is a copy of it onto itself: a read and a write.
    this.payloads.grantRead(supervisor);
    this.payloads.grantDelete(agentApi);
    // A task that dies leaves a record in its queue's dead-letter queue (revoking an agent can end a task's last
    // attempt, as a sweep can).
    for (const fn of [agentApi, operatorApi, supervisor])
      for (const q of queues) q.deadLetterQueue.grant(fn, 'sqs:SendMessage');
  }

  /**
   * The operator API creates and deletes schedules at run time: in this stack's group only, targeting the fire
   * function through the schedules' own role.
   */
  private allowRuntimeSchedules(declared: readonly TaskScheduleProps[]): void {
    const { operatorApi, scheduleFire, supervisor } = this.functions;
    const stack = Stack.of(this);
    supervisor.addEnvironment('DECLARED_SCHEDULES', JSON.stringify(declared));
    // The operator API creates and deletes run-time schedules; the fire function arms each next early fire.
    operatorApi.addEnvironment('SCHEDULE_TARGET_ARN', scheduleFire.functionArn);
    for (const fn of [operatorApi, scheduleFire]) {
      fn.addEnvironment('SCHEDULE_GROUP_NAME', this.scheduleGroup.scheduleGroupName);
      fn.addEnvironment('SCHEDULE_ROLE_ARN', this.schedules.role.roleArn);
      fn.addEnvironment('SCHEDULE_DEAD_LETTER_ARN', this.deadLetterQueue.queueArn);
      fn.addToRolePolicy(
        new PolicyStatement({
          actions:
            fn === operatorApi
              ? ['scheduler:CreateSchedule', 'scheduler:DeleteSchedule']
              : ['scheduler:CreateSchedule', 'scheduler:UpdateSchedule'],
          resources: [
            stack.formatArn({
              service: 'scheduler',
              resource: 'schedule',
              resourceName: `${this.scheduleGroup.scheduleGroupName}/*`,
            }),
          ],
        }),
      );
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: ['iam:PassRole'],
          resources: [this.schedules.role.roleArn],
          conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
        }),
      );
      // cdk-nag names the finding by the ARN as written in the template, pseudo-parameters in angle brackets.
      const partition = Token.isUnresolved(stack.partition) ? '<AWS::Partition>' : stack.partition;
      const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
      const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
      Validations.of(fn.role ?? fn).acknowledge({
        id: `AwsSolutions::AwsSolutions-IAM5[Resource::arn:${partition}:scheduler:${region}:${account}:schedule/${this.scheduleGroup.scheduleGroupName}/*]`,
        reason:
          'Run-time schedules and early fires get their names after deployment; the grant is limited to this stack’s schedule group.',
      });
    }
    operatorApi.addEnvironment('DECLARED_SCHEDULES', JSON.stringify(declared));
  }

  /** Findings of cdk-nag's AwsSolutions and Serverless packs that are deliberate, each with its reason. */
  private acknowledgeNagFindings(): void {
    for (const fn of Object.values(this.functions)) {
      Validations.of(fn).acknowledge(
        {
          id: 'AwsSolutions::AwsSolutions-L1',
          reason: 'Pinned to nodejs22.x, the runtime the bundles are built (target node22) and tested for.',
        },
        {
          id: 'Serverless::Serverless-LambdaLatestVersion',
          reason: 'Pinned to nodejs22.x, the runtime the bundles are built (target node22) and tested for.',
        },
        {
          id: 'Serverless::Serverless-LambdaTracing',
          reason:
            'X-Ray bills per trace, on every task request; structured logs with request ids and EMF metrics cover operations. Enable tracing on the exposed functions when needed.',
        },
      );
    }
    for (const fn of [
      this.functions.agentApi,
      this.functions.operatorApi,
      this.functions.authorizer,
      this.functions.pushAuthorizer,
      this.functions.pushApi,
    ]) {
      Validations.of(fn).acknowledge({
        id: 'Serverless::Serverless-LambdaDLQ',
        reason:
          'Invoked synchronously by API Gateway: a failure is returned to the caller, there is no event to keep.',
      });
    }
    for (const fn of [this.functions.supervisor, this.functions.scheduleFire]) {
      Validations.of(this.schedules.role).acknowledge({
        id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${Stack.of(this).getLogicalId(fn.node.defaultChild as CfnFunction)}.Arn>:*]`,
        reason:
          'EventBridge Scheduler may invoke this one function; the ":*" suffix covers its versions and aliases, as the Lambda target grants.',
      });
    }
    for (const queue of [this.deadLetterQueue, ...[...this.queues.values()].map((q) => q.deadLetterQueue)]) {
      Validations.of(queue).acknowledge(
        {
          id: 'Serverless::Serverless-SQSRedrivePolicy',
          reason:
            'This queue is itself a dead-letter queue; what lands here is kept for a person, not redriven again.',
        },
        {
          id: 'AwsSolutions::AwsSolutions-SQS3',
          reason:
            'This queue is itself a dead-letter queue (of SQS redrive, EventBridge Scheduler or asynchronous invocations).',
        },
      );
    }
    Validations.of(this.payloads.bucket).acknowledge({
      id: 'AwsSolutions::AwsSolutions-S1',
      reason:
        'Objects are task payloads written once and read by the scheduler functions alone; every submission and claim is already in the API access log. A log bucket would cost more than the payloads.',
    });
    const payloadObjects = `${Stack.of(this).getLogicalId(this.payloads.bucket.node.defaultChild as CfnBucket)}.Arn>/${PAYLOAD_OBJECT_PREFIX}*`;
    for (const fn of [
      this.functions.agentApi,
      this.functions.operatorApi,
      this.functions.supervisor,
      this.functions.scheduleFire,
    ]) {
      Validations.of(fn.role ?? fn).acknowledge({
        id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${payloadObjects}]`,
        reason:
          'Payload objects are named by task id and specification at run time; the grants are single actions (put; get and delete) under the payloads/ prefix.',
      });
    }
    const health = this.api.routes.get('GET /v1/health');
    if (health) {
      Validations.of(health).acknowledge({
        id: 'AwsSolutions::AwsSolutions-APIG4',
        reason:
          'GET /v1/health is public by design, for uptime checks; it answers {"status":"ok"} and reads nothing.',
      });
    }
    Validations.of(this.api.catchAll).acknowledge({
      id: 'AwsSolutions::AwsSolutions-APIG4',
      reason:
        'The $default route only answers requests that match no route with a JSON 404 or 405; the function runs no operation for it.',
    });
    this.acknowledgePushFindings();
  }

  /** The push channel's deliberate findings: routes past `$connect`, and sending to connections named at run time. */
  private acknowledgePushFindings(): void {
    for (const [routeKey, route] of this.push.routes) {
      if (routeKey === '$connect') continue;
      Validations.of(route).acknowledge({
        id: 'AwsSolutions::AwsSolutions-APIG4',
        reason: `API Gateway authorizes a WebSocket connection once, on $connect (with the ticket authorizer); ${routeKey} cannot have an authorizer and only runs on a connection that was authorized.`,
      });
    }
    const stack = Stack.of(this);
    const partition = Token.isUnresolved(stack.partition) ? '<AWS::Partition>' : stack.partition;
    const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
    const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
    const api = stack.getLogicalId(this.push.webSocketApi.node.defaultChild as CfnApi);
    for (const fn of [
      this.functions.agentApi,
      this.functions.operatorApi,
      this.functions.supervisor,
      this.functions.scheduleFire,
      this.functions.pushApi,
    ]) {
      Validations.of(fn.role ?? fn).acknowledge({
        id: `AwsSolutions::AwsSolutions-IAM5[Resource::arn:${partition}:execute-api:${region}:${account}:<${api}>/${PushChannel.STAGE_NAME}/POST/@connections/*]`,
        reason:
          'Connection ids are given by API Gateway at run time; the grant is PostToConnection (POST) on this API’s stage only.',
      });
    }
  }
}

/** Grants `actions` on a table (or one of its indexes) by exact ARN, without the `index/*` wildcard. */
function grantOnTable(grantee: IGrantable, table: TableV2, actions: string[], indexName?: string): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions,
      resources: [indexName ? `${table.tableArn}/index/${indexName}` : table.tableArn],
    }),
  );
}

/** Refuses props a deployment cannot run with; answers the settings of the contract as they are chosen. */
function validateProps(props: AgentSchedulerProps): Record<SettingName, number> {
  if (props.queues.length === 0) throw new Error('queues must name at least one task queue');
  const seen = new Set<string>();
  for (const name of props.queues) {
    if (!QUEUE_NAME_PATTERN.test(name))
      throw new Error(`queue name "${name}" must be 1 to 48 letters, digits, "-" or "_"`);
    if (seen.has(name)) throw new Error(`queue name "${name}" is declared twice`);
    seen.add(name);
  }
  const period = props.supervisorPeriod;
  if (period && !Token.isUnresolved(period) && (period.toSeconds() < 60 || period.toSeconds() % 60 !== 0)) {
    throw new Error(`supervisorPeriod must be whole minutes, at least one (got ${period.toHumanString()})`);
  }
  for (const queue of props.agentSubmitQueues ?? []) {
    if (!props.queues.includes(queue))
      throw new Error(`agentSubmitQueues names queue "${queue}", which is not declared`);
  }
  for (const [queue, limits] of Object.entries(props.queueLimits ?? {})) {
    if (!props.queues.includes(queue))
      throw new Error(`queueLimits names queue "${queue}", which is not declared`);
    const parsed = queueLimitsSchema.safeParse(limits);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = String(issue?.path[0] ?? '');
      const got = field ? (limits as Record<string, unknown>)[field] : limits;
      throw new Error(
        `queueLimits of "${queue}" are invalid: ${field} ${issue?.message ?? ''} (got ${JSON.stringify(got)})`,
      );
    }
  }
  for (const [name, given] of Object.entries(settingsInProps(props)) as [SettingName, Given][]) {
    const setting: NumberSetting = SETTINGS[name];
    const problem = outOfBounds(setting, given.value);
    if (problem) {
      const unit = setting.unit === 'seconds' ? ' seconds' : '';
      throw new Error(`${setting.prop} must be ${problem}${unit} (got ${given.shown})`);
    }
  }
  // SQS reports ages up to its longest retention, 14 days.
  const alarmAge = props.oldestMessageAlarmAge;
  if (alarmAge !== undefined && !alarmAge.isUnresolved()) {
    const problem = outOfBounds(
      { min: 1, max: 14 * 86_400, integer: true },
      alarmAge.toSeconds({ integral: false }),
    );
    if (problem)
      throw new Error(`oldestMessageAlarmAge must be ${problem} seconds (got ${alarmAge.toHumanString()})`);
  }
  type Bounds = Pick<NumberSetting, 'min' | 'max' | 'integer'>;
  const throttles: [string, number | undefined, Bounds][] = [
    // API Gateway's account limit is 10,000 requests a second, bursts of 5,000.
    ...(['apiThrottle', 'agentRouteThrottle', 'operatorRouteThrottle', 'pushThrottle'] as const).flatMap(
      (name): [string, number | undefined, Bounds][] => [
        [`${name}.rateLimit`, props[name]?.rateLimit, { min: 1, max: 10_000, integer: false }],
        [`${name}.burstLimit`, props[name]?.burstLimit, { min: 1, max: 5_000, integer: true }],
      ],
    ),
  ];
  for (const [name, value, bounds] of throttles) {
    if (value === undefined || Token.isUnresolved(value)) continue;
    const problem = outOfBounds(bounds, value);
    if (problem) throw new Error(`${name} must be ${problem} (got ${value})`);
  }
  const chosen = chosenSettings(props);
  const promote = chosen.starvationPromoteAfter;
  const announce = chosen.starvationAnnounceAfter;
  const attention = chosen.starvationAttentionAfter;
  if (!(promote < announce && announce < attention)) {
    throw new Error(
      `starvation thresholds must grow: promoteAfter < announceAfter < attentionAfter (got ${promote}, ${announce}, ${attention} s)`,
    );
  }
  if (props.heartbeatInterval !== undefined && chosen.heartbeatInterval >= chosen.leaseTtl) {
    throw new Error(
      `heartbeatInterval (${chosen.heartbeatInterval} s) must be shorter than leaseTtl (${chosen.leaseTtl} s)`,
    );
  }
  return chosen;
}

/** A setting of the contract as the props give it: its value in the contract's unit, and as the caller wrote it. */
interface Given {
  readonly value: number;
  readonly shown: string;
}

/** The settings of the contract (`#domain/settings`) the props set; unresolved tokens are left to CloudFormation. */
function settingsInProps(props: AgentSchedulerProps): Partial<Record<SettingName, Given>> {
  const duration = (d: Duration | undefined): Given | undefined =>
    d === undefined || d.isUnresolved()
      ? undefined
      : { value: d.toSeconds({ integral: false }), shown: d.toHumanString() };
  const count = (n: number | undefined): Given | undefined =>
    n === undefined || Token.isUnresolved(n) ? undefined : { value: n, shown: String(n) };
  const given: Record<SettingName, Given | undefined> = {
    leaseTtl: duration(props.leaseTtl),
    heartbeatInterval: duration(props.heartbeatInterval),
    taskRetention: duration(props.taskRetention),
    starvationPromoteAfter: duration(props.starvation?.promoteAfter),
    starvationAnnounceAfter: duration(props.starvation?.announceAfter),
    starvationAttentionAfter: duration(props.starvation?.attentionAfter),
    idleClaimRetryMax: duration(props.idleClaimRetryMax),
    maxRolesPerAgent: count(props.maxRolesPerAgent),
    agentRatePerSecond: count(props.agentRateLimit?.ratePerSecond),
    agentBurst: count(props.agentRateLimit?.burst),
  };
  return Object.fromEntries(Object.entries(given).filter(([, g]) => g !== undefined));
}

/** Every setting of the contract as this deployment has it: given, or its default. */
function chosenSettings(props: AgentSchedulerProps): Record<SettingName, number> {
  const given = settingsInProps(props);
  const chosen = Object.fromEntries(
    (Object.keys(SETTINGS) as SettingName[]).map((name) => [
      name,
      given[name]?.value ?? SETTINGS[name].default,
    ]),
  ) as Record<SettingName, number>;
  // Unless given, agents beat three times per lease.
  if (given.heartbeatInterval === undefined)
    chosen.heartbeatInterval = Math.max(1, Math.floor(chosen.leaseTtl / 3));
  return chosen;
}

/** The settings every function reads; the agent API also reads the per-agent rate limit. */
const FUNCTION_SETTINGS: readonly SettingName[] = [
  'leaseTtl',
  'heartbeatInterval',
  'taskRetention',
  'starvationPromoteAfter',
  'starvationAnnounceAfter',
  'starvationAttentionAfter',
  'idleClaimRetryMax',
  'maxRolesPerAgent',
];

function settingsEnvironment(
  chosen: Record<SettingName, number>,
  names: readonly SettingName[],
): Record<string, string> {
  return Object.fromEntries(names.map((name) => [SETTINGS[name].env, String(chosen[name])]));
}
