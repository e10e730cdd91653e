/**
 * `AgentScheduler`: serverless task scheduling for fleets of worker agents. Tables for tasks, agents, leases and
 * push connections, four SQS priority queues per task queue, EventBridge Scheduler schedules, a supervisor, the
 * HTTP API agents and operators call, the WebSocket push channel that wakes idle agents and announces task
 * endings, alarms and a dashboard. Secure by default; every resource it creates is reachable.
 */
import { Aws, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { type Grant, type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { payloadObjectDays } from '../functions/adapters/payload-objects';
import { DEFAULT_SETTINGS } from '../functions/core/context';
import { PRIORITIES } from '../functions/domain/priority';
import { RESOURCE_ENV, TEXT_SETTINGS } from '../functions/domain/settings';
import { grantLeastPrivilege } from './function-grants';
import { acknowledgeNagFindings, nagArn } from './nag-acknowledgements';
import { PayloadBucket } from './payload-bucket';
import { PriorityQueues, SECURE_QUEUE_DEFAULTS } from './priority-queues';
import { PushChannel } from './push-channel';
import { SchedulerAlarms } from './scheduler-alarms';
import { SchedulerApi } from './scheduler-api';
import { createSchedulerFunctions, type SchedulerFunctions, tellWherePushIs } from './scheduler-functions';
import { type AgentSchedulerProps, validateProps } from './scheduler-props';
import { SchedulerTables } from './scheduler-tables';
import { addTracing } from './scheduler-tracing';
import type { TaskScheduleProps } from './task-schedule';
import { TaskSchedules } from './task-schedules';
import { WakeTimer } from './wake-timer';

export type { AgentSchedulerProps } from './scheduler-props';

export class AgentScheduler extends Construct {
  readonly tables: SchedulerTables;
  /** The priority queues of each task queue, by task queue name. */
  readonly queues: ReadonlyMap<string, PriorityQueues>;
  readonly functions: SchedulerFunctions;
  readonly api: SchedulerApi;
  /** The WebSocket API over which agents are woken and told of role grants, and operators of task endings. */
  readonly push: PushChannel;
  /** Timed wakes: an idle agent hears of a held-back task within a second of its time, not at the next sweep. */
  readonly wakeTimer: WakeTimer;
  /**
   * Schedule fires and supervisor passes that could not be delivered, failed asynchronous invocations, and timed
   * wakes whose function failed three times.
   */
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
          taskRetentionSeconds: settings.taskRetention,
        }),
      ),
      removalPolicy,
    });

    this.functions = createSchedulerFunctions(this, {
      props,
      settings,
      tables: this.tables,
      queueDirectory: this.queueDirectoryJson(),
      eventBusName: this.eventBus.eventBusName,
      payloadBucketName: this.payloads.bucket.bucketName,
      deadLetterQueue: this.deadLetterQueue,
      logRetention,
      metricsNamespace,
    });

    this.push = new PushChannel(this, 'Push', {
      pushApi: this.functions.pushApi,
      authorizer: this.functions.pushAuthorizer,
      throttle: props.pushThrottle ?? { rateLimit: 100, burstLimit: 200 },
      logRetention,
      accountLogRole: props.apiGatewayAccountLogRole ?? true,
    });
    this.wakeTimer = new WakeTimer(this, 'Timer', {
      reader: this.functions.wakeTimer,
      deadLetterQueue: this.deadLetterQueue,
      removalPolicy,
    });
    tellWherePushIs(this.functions, this.tables.connections, this.push, this.wakeTimer);
    if (props.tracing) addTracing(this, this.functions, props.tracing);
    grantLeastPrivilege({
      tables: this.tables,
      queues: [...this.queues.values()],
      functions: this.functions,
      push: this.push,
      wakeTimer: this.wakeTimer,
      eventBus: this.eventBus,
      payloads: this.payloads,
    });

    this.api = new SchedulerApi(this, 'Api', {
      agentApi: this.functions.agentApi,
      operatorApi: this.functions.operatorApi,
      authorizer: this.functions.authorizer,
      throttle: props.apiThrottle ?? { rateLimit: 100, burstLimit: 200 },
      routeThrottle: {
        agent: props.agentRouteThrottle ?? { rateLimit: 100, burstLimit: 200 },
        operator: props.operatorRouteThrottle ?? { rateLimit: 50, burstLimit: 100 },
        callback: props.callbackRouteThrottle ?? { rateLimit: 20, burstLimit: 40 },
      },
      logRetention,
      authorizerCacheTtl: Duration.seconds(60),
    });

    this.schedules = new TaskSchedules(this, 'Schedules', {
      schedules: props.schedules ?? [],
      queueNames: props.queues,
      supervisor: this.functions.supervisor,
      supervisorPeriod: props.supervisorPeriod ?? Duration.minutes(1),
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
    acknowledgeNagFindings(this);
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

  /**
   * The operator API creates and deletes schedules at run time: in this stack's group only, targeting the fire
   * function through the schedules' own role.
   */
  private allowRuntimeSchedules(declared: readonly TaskScheduleProps[]): void {
    const { operatorApi, scheduleFire, supervisor } = this.functions;
    const stack = Stack.of(this);
    supervisor.addEnvironment(TEXT_SETTINGS.schedules.env, JSON.stringify(declared));
    // The operator API creates and deletes run-time schedules; the fire function arms each next early fire.
    operatorApi.addEnvironment(RESOURCE_ENV.scheduleTarget, scheduleFire.functionArn);
    for (const fn of [operatorApi, scheduleFire]) {
      fn.addEnvironment(RESOURCE_ENV.scheduleGroup, this.scheduleGroup.scheduleGroupName);
      fn.addEnvironment(RESOURCE_ENV.scheduleRole, this.schedules.role.roleArn);
      fn.addEnvironment(RESOURCE_ENV.scheduleDeadLetters, this.deadLetterQueue.queueArn);
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
      // cdk-nag names the finding by the ARN as written in the template.
      Validations.of(fn.role ?? fn).acknowledge({
        id: `AwsSolutions::AwsSolutions-IAM5[Resource::${nagArn(stack, 'scheduler')}:schedule/${this.scheduleGroup.scheduleGroupName}/*]`,
        reason:
          'Run-time schedules and early fires get their names after deployment; the grant is limited to this stack’s schedule group.',
      });
    }
    operatorApi.addEnvironment(TEXT_SETTINGS.schedules.env, JSON.stringify(declared));
  }
}
