/**
 * Alarms that need a person (dead letters, work waiting too long, a failing supervisor, starved tasks, an API
 * answering 5xx, failing API functions, a push channel that cannot reach its function) and one dashboard with the
 * alarms, the queues, the API, the push channel and the functions.
 */
import { Duration } from 'aws-cdk-lib';
import type { IHttpStage, IWebSocketStage } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { PriorityQueues } from './priority-queues';
import type { SchedulerFunction } from './scheduler-function';

export interface SchedulerAlarmsProps {
  readonly queues: readonly PriorityQueues[];
  readonly scheduleDeadLetters: Queue;
  readonly supervisor: SchedulerFunction;
  /** The functions behind the API (agent API, operator API, authorizer): any error of theirs fails a caller. */
  readonly apiFunctions: readonly SchedulerFunction[];
  /** The API's stage, whose 5xx answers are alarmed. */
  readonly apiStage: IHttpStage;
  /** The push channel's function: an error of its fails a connect, a disconnect's clean-up or a client frame. */
  readonly pushApi: SchedulerFunction;
  /** The push channel's ticket authorizer, which also fails (throws `Unauthorized`) to refuse a ticket. */
  readonly pushAuthorizer: SchedulerFunction;
  /** The push channel's stage, whose failures to run its integration are alarmed. */
  readonly pushStage: IWebSocketStage;
  readonly functions: readonly SchedulerFunction[];
  readonly metricsNamespace: string;
  /** A hint older than this in a priority queue means work is not being taken. */
  readonly oldestMessageAge: Duration;
  readonly alarmTopic?: ITopic;
  readonly apiId: string;
}

export class SchedulerAlarms extends Construct {
  readonly alarms: Alarm[] = [];
  readonly dashboard: Dashboard;
  private readonly action: SnsAction | undefined;

  constructor(scope: Construct, id: string, props: SchedulerAlarmsProps) {
    super(scope, id);
    this.action = props.alarmTopic ? new SnsAction(props.alarmTopic) : undefined;
    this.alarmOnWorkNotTaken(props);
    this.alarmOnFailingCallers(props);
    this.alarm(
      'StarvedTasks',
      new Metric({
        namespace: props.metricsNamespace,
        metricName: 'NeedsAttention',
        dimensionsMap: { service: 'agent-scheduler-supervisor' },
        period: Duration.minutes(5),
        statistic: 'Maximum',
      }),
      1,
      'tasks waited past the last step of the starvation ladder and need a person',
    );

    this.dashboard = this.dashboardOf(props);
  }

  /** One dashboard: the alarms, the queues, the API, the functions and the push channel. */
  private dashboardOf(props: SchedulerAlarmsProps): Dashboard {
    return new Dashboard(this, 'Dashboard', {
      widgets: [
        [new AlarmStatusWidget({ title: 'Alarms', width: 24, alarms: [...this.alarms] })],
        [
          new GraphWidget({
            title: 'Hints waiting, by task queue and priority',
            width: 12,
            left: props.queues.flatMap((queue) =>
              queue.queues.map((q) =>
                q.metricApproximateNumberOfMessagesVisible({ label: `${queue.queueName} ${q.node.id}` }),
              ),
            ),
          }),
          new GraphWidget({
            title: 'Oldest hint age (s)',
            width: 12,
            left: props.queues.flatMap((queue) =>
              queue.queues.map((q) =>
                q.metricApproximateAgeOfOldestMessage({ label: `${queue.queueName} ${q.node.id}` }),
              ),
            ),
          }),
        ],
        [
          new GraphWidget({
            title: 'API requests and errors',
            width: 12,
            left: ['Count', '4xx', '5xx'].map(
              (metricName) =>
                new Metric({
                  namespace: 'AWS/ApiGateway',
                  metricName,
                  dimensionsMap: { ApiId: props.apiId },
                  statistic: 'Sum',
                }),
            ),
          }),
          new GraphWidget({
            title: 'Function errors and duration (p99)',
            width: 12,
            left: props.functions.map((fn) => fn.metricErrors({ label: fn.node.id })),
            right: props.functions.map((fn) => fn.metricDuration({ label: fn.node.id, statistic: 'p99' })),
          }),
        ],
        [
          new GraphWidget({
            title: 'Push channel connects, frames and errors',
            width: 12,
            left: ['ConnectCount', 'MessageCount', 'ClientError', 'ExecutionError'].map((metricName) =>
              props.pushStage.metric(metricName, { statistic: 'Sum' }),
            ),
          }),
        ],
      ],
    });
  }

  private alarm(alarmId: string, metric: IMetric, threshold: number, description: string): Alarm {
    const created = new Alarm(this, alarmId, {
      metric,
      threshold,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription: description,
    });
    if (this.action) created.addAlarmAction(this.action);
    this.alarms.push(created);
    return created;
  }

  /** Hints that reached a dead-letter queue or wait too long, fires not delivered, a failing supervisor. */
  private alarmOnWorkNotTaken(props: SchedulerAlarmsProps): void {
    for (const queue of props.queues) {
      this.alarm(
        `${queue.node.id}DeadLetters`,
        queue.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(5),
          statistic: 'Maximum',
        }),
        1,
        `hints of task queue ${queue.queueName} reached its dead-letter queue`,
      );
      for (const [priority, q] of Object.entries(queue.byPriority)) {
        this.alarm(
          `${queue.node.id}${priority}OldestMessage`,
          q.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(5), statistic: 'Maximum' }),
          props.oldestMessageAge.toSeconds(),
          `the oldest ${priority} hint of task queue ${queue.queueName} waited ${props.oldestMessageAge.toHumanString()} or more`,
        );
      }
    }
    this.alarm(
      'ScheduleDeadLetters',
      props.scheduleDeadLetters.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(5),
        statistic: 'Maximum',
      }),
      1,
      'a schedule fire or supervisor pass could not be delivered',
    );
    this.alarm(
      'SupervisorErrors',
      props.supervisor.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      1,
      'the supervisor failed',
    );
  }

  /** An API answering 5xx, and the functions whose errors fail the callers of the API or the push channel. */
  private alarmOnFailingCallers(props: SchedulerAlarmsProps): void {
    // The edge answers 503 when a dependency throttles, and clients retry it; a few in five minutes is noise, a
    // steady stream (or 500s and 502s) is not.
    this.alarm(
      'Api5xx',
      props.apiStage.metricServerError({ period: Duration.minutes(5), statistic: 'Sum' }),
      5,
      'the API answered 5 or more 5xx responses in 5 minutes',
    );
    // The edge turns every error into a response, so a function error is a crash, a timeout or a cold start that
    // could not read its configuration: every caller of that function gets a 500.
    for (const fn of props.apiFunctions) {
      this.alarm(
        `${fn.node.id}Errors`,
        fn.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
        1,
        `the ${fn.node.id} function failed`,
      );
    }
    // Pushes are hints (agents keep a safety poll, watchers can read the task), but a failing push function means
    // agents fall back to polling and operators to reading: someone should look.
    this.alarm(
      `${props.pushApi.node.id}Errors`,
      props.pushApi.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      1,
      `the ${props.pushApi.node.id} function failed`,
    );
    // API Gateway's way for an authorizer to answer 401 is to throw `Unauthorized`, so a ticket refused (expired,
    // used, of an agent revoked since) is an error to Lambda: one is a client's mistake, a stream is not.
    this.alarm(
      `${props.pushAuthorizer.node.id}Errors`,
      props.pushAuthorizer.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      5,
      `the ${props.pushAuthorizer.node.id} function failed or refused 5 or more tickets in 5 minutes`,
    );
    // The stage could not run an integration (the function throttled, timed out or could not be invoked): connects
    // fail, and agents poll until they connect again.
    this.alarm(
      'PushExecutionErrors',
      props.pushStage.metric('ExecutionError', { period: Duration.minutes(5), statistic: 'Sum' }),
      5,
      'the push channel failed to run its integration 5 or more times in 5 minutes',
    );
  }
}
