/**
 * The scheduler's eight functions, each with the environment it reads: the names of the resources it uses and the
 * props that reach it, both as `#domain/settings` declares them (the same names the functions read).
 */
import { Duration } from 'aws-cdk-lib';
import type { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import {
  RESOURCE_ENV,
  type ReadBy,
  SETTINGS,
  type SettingName,
  settingsReadBy,
  TEXT_SETTINGS,
} from '../functions/domain/settings';
import { type FunctionEntry, SchedulerFunction } from './scheduler-function';
import type { AgentSchedulerProps } from './scheduler-props';
import type { SchedulerTables } from './scheduler-tables';

export interface SchedulerFunctions {
  readonly agentApi: SchedulerFunction;
  readonly operatorApi: SchedulerFunction;
  readonly authorizer: SchedulerFunction;
  readonly supervisor: SchedulerFunction;
  readonly scheduleFire: SchedulerFunction;
  /** The push channel's `$connect` authorizer: uses up a connect ticket and names its caller. */
  readonly pushAuthorizer: SchedulerFunction;
  /** The push channel's `$connect`, `$disconnect` and `$default` routes. */
  readonly pushApi: SchedulerFunction;
  /** Reads the wake timer's queue: wakes idle agents when a held-back task becomes claimable. */
  readonly wakeTimer: SchedulerFunction;
}

/** What the functions are given at creation; the push channel and the schedules are told them later. */
export interface SchedulerFunctionsProps {
  readonly props: AgentSchedulerProps;
  /** Every number setting as this deployment has it (`validateProps`). */
  readonly settings: Readonly<Record<SettingName, number>>;
  readonly tables: SchedulerTables;
  /** The queues' URLs, compactly (`AgentScheduler.queueDirectoryJson`). */
  readonly queueDirectory: string;
  readonly eventBusName: string;
  readonly payloadBucketName: string;
  /** Where failed asynchronous invocations go. */
  readonly deadLetterQueue: IQueue;
  readonly logRetention: RetentionDays;
  readonly metricsNamespace: string;
}

interface FunctionShape {
  readonly entry: FunctionEntry;
  readonly memorySize: number;
  readonly timeout: Duration;
  readonly environment: Record<string, string>;
  /** Invoked by EventBridge Scheduler: a failed invocation is kept in the dead-letter queue. */
  readonly invokedAsynchronously?: boolean;
}

export function createSchedulerFunctions(
  scope: Construct,
  given: SchedulerFunctionsProps,
): SchedulerFunctions {
  const seconds = (amount: number) => Duration.seconds(amount);
  const { props, settings, tables } = given;
  // Each prop by the name `#domain/settings` gives it: a prop renamed on one side only fails the type check.
  const routineEvents = props[TEXT_SETTINGS.routineEvents.prop] ?? false;
  const queueLimits = props[TEXT_SETTINGS.queueLimits.prop] ?? {};
  const rateLimits = props[TEXT_SETTINGS.rateLimits.prop] ?? [];
  const agentSubmitQueues = props[TEXT_SETTINGS.agentSubmitQueues.prop] ?? [];
  // What every function that builds a scheduler reads (`schedulerFromEnvironment`).
  const base = {
    [RESOURCE_ENV.tasksTable]: tables.tasks.tableName,
    [RESOURCE_ENV.agentsTable]: tables.agents.tableName,
    [RESOURCE_ENV.leasesTable]: tables.leases.tableName,
    [TEXT_SETTINGS.queues.env]: given.queueDirectory,
    ...settingsEnvironment(settings, 'all but the authorizer'),
  };
  const environment = {
    ...base,
    [RESOURCE_ENV.eventBus]: given.eventBusName,
    [RESOURCE_ENV.payloadBucket]: given.payloadBucketName,
    [TEXT_SETTINGS.routineEvents.env]: String(routineEvents),
    // Declared limits hold from the first claim, before any operator has set a queue's control item.
    ...(Object.keys(queueLimits).length > 0
      ? { [TEXT_SETTINGS.queueLimits.env]: JSON.stringify(queueLimits) }
      : {}),
    ...(rateLimits.length > 0 ? { [TEXT_SETTINGS.rateLimits.env]: JSON.stringify(rateLimits) } : {}),
    ...(agentSubmitQueues.length > 0
      ? { [TEXT_SETTINGS.agentSubmitQueues.env]: JSON.stringify(agentSubmitQueues) }
      : {}),
  };
  const fn = (id: string, shape: FunctionShape) =>
    new SchedulerFunction(scope, id, {
      entry: shape.entry,
      memorySize: shape.memorySize,
      timeout: shape.timeout,
      environment: shape.environment,
      logRetention: given.logRetention,
      serviceName: `agent-scheduler-${shape.entry}`,
      metricsNamespace: given.metricsNamespace,
      sourceMaps: props.sourceMaps ?? false,
      ...(shape.invokedAsynchronously ? { deadLetterQueue: given.deadLetterQueue } : {}),
    });
  return {
    agentApi: fn('AgentApi', {
      entry: 'agent-api',
      memorySize: 512,
      timeout: seconds(10),
      environment: { ...environment, ...settingsEnvironment(settings, 'agent API') },
    }),
    operatorApi: fn('OperatorApi', {
      entry: 'operator-api',
      memorySize: 512,
      timeout: seconds(10),
      environment,
    }),
    authorizer: fn('Authorizer', {
      entry: 'authorizer',
      memorySize: 256,
      timeout: seconds(5),
      environment: { [RESOURCE_ENV.agentsTable]: tables.agents.tableName },
    }),
    supervisor: fn('Supervisor', {
      entry: 'supervisor',
      memorySize: 512,
      timeout: seconds(60),
      environment,
      invokedAsynchronously: true,
    }),
    scheduleFire: fn('ScheduleFire', {
      entry: 'schedule-fire',
      memorySize: 256,
      timeout: seconds(10),
      environment,
      invokedAsynchronously: true,
    }),
    // The push functions publish no events and touch no payloads: neither the bus nor the bucket is named.
    pushAuthorizer: fn('PushAuthorizer', {
      entry: 'push-authorizer',
      memorySize: 256,
      timeout: seconds(5),
      environment: base,
    }),
    pushApi: fn('PushApi', { entry: 'push-api', memorySize: 256, timeout: seconds(10), environment: base }),
    // Wakes touch only the push channel's records and frames, and read the scheduler's control: no bus, no bucket.
    wakeTimer: fn('WakeTimer', {
      entry: 'wake-timer',
      memorySize: 256,
      timeout: seconds(10),
      environment: base,
    }),
  };
}

/** The number settings `readBy` reads, each under its environment variable. */
function settingsEnvironment(
  chosen: Readonly<Record<SettingName, number>>,
  readBy: ReadBy,
): Record<string, string> {
  return Object.fromEntries(settingsReadBy(readBy).map((name) => [SETTINGS[name].env, String(chosen[name])]));
}

/**
 * The functions that use the push channel are told where it is; the channel is on in a function when all three
 * are set (`pushConfigFromEnv`).
 */
export function tellWherePushIs(
  functions: SchedulerFunctions,
  connections: TableV2,
  push: { readonly url: string; readonly callbackUrl: string },
  timer: { readonly queue: { readonly queueUrl: string } },
): void {
  const { agentApi, operatorApi, supervisor, scheduleFire, pushAuthorizer, pushApi, wakeTimer } = functions;
  for (const pushing of [
    agentApi,
    operatorApi,
    supervisor,
    scheduleFire,
    pushAuthorizer,
    pushApi,
    wakeTimer,
  ]) {
    pushing.addEnvironment(RESOURCE_ENV.connectionsTable, connections.tableName);
    pushing.addEnvironment(RESOURCE_ENV.pushUrl, push.url);
    pushing.addEnvironment(RESOURCE_ENV.pushCallbackUrl, push.callbackUrl);
  }
  // Whoever holds a task back arms its wake; the timer's function arms again a wake longer than SQS's delay.
  for (const arming of [agentApi, operatorApi, supervisor, scheduleFire, wakeTimer])
    arming.addEnvironment(RESOURCE_ENV.wakeTimerQueue, timer.queue.queueUrl);
}
