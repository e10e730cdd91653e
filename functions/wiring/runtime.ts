/**
 * The scheduler as a deployed function builds it: SDK clients created once per execution environment, and the
 * configuration read once from the environment.
 */
import { ApiGatewayManagementApiClient } from '@aws-sdk/client-apigatewaymanagementapi';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { S3Client } from '@aws-sdk/client-s3';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { SQSClient } from '@aws-sdk/client-sqs';
import { ApiGatewayPushSender } from '#adapters/api-gateway-push';
import { pushConfigFromEnv, requiredEnv, schedulerConfigFromEnv } from '#adapters/environment';
import { EventBridgePublisher } from '#adapters/event-publishers';
import { EventBridgeScheduleBackend } from '#adapters/eventbridge-schedules';
import { withoutSdkLogging } from '#adapters/sdk-clients';
import { type SchedulerCounters, type SchedulerLog, schedulerSettingsOf } from '#core/context';
import { Scheduler } from '#core/scheduler';
import { RESOURCE_ENV, TEXT_SETTINGS } from '#domain/settings';
import { createContext } from './context';

/**
 * `schedules`: this function also creates and deletes run-time schedules (the operator API), so it needs the
 * schedule group, the fire function, the role and the dead-letter queue.
 */
export function schedulerFromEnvironment(
  log: SchedulerLog,
  env: NodeJS.ProcessEnv = process.env,
  options: { schedules?: boolean; targetArn?: () => string; counters?: SchedulerCounters } = {},
): Scheduler {
  const config = schedulerConfigFromEnv(env);
  const push = pushConfigFromEnv(env);
  const eventBus = env[RESOURCE_ENV.eventBus];
  const payloadBucket = env[RESOURCE_ENV.payloadBucket];
  return new Scheduler(
    createContext({
      dynamodb: withoutSdkLogging(new DynamoDBClient({})),
      sqs: withoutSdkLogging(new SQSClient({})),
      tables: config.tables,
      queues: config.queues,
      settings: {
        ...schedulerSettingsOf(config.settings),
        routineEvents: config.routineEvents,
        queueLimits: config.queueLimits,
        rateLimits: config.rateLimits,
        agentSubmitQueues: config.agentSubmitQueues,
      },
      log,
      ...(options.counters ? { counters: options.counters } : {}),
      declaredSchedules: JSON.parse(env[TEXT_SETTINGS.schedules.env] ?? '[]') as unknown[],
      ...(eventBus
        ? { events: new EventBridgePublisher(withoutSdkLogging(new EventBridgeClient({})), eventBus) }
        : {}),
      ...(payloadBucket
        ? { payloadBucket: { s3: withoutSdkLogging(new S3Client({})), bucketName: payloadBucket } }
        : {}),
      ...(push
        ? {
            push: {
              url: push.url,
              ...(push.timerQueueUrl ? { timerQueueUrl: push.timerQueueUrl } : {}),
              sender: new ApiGatewayPushSender(
                withoutSdkLogging(new ApiGatewayManagementApiClient({ endpoint: push.callbackUrl })),
              ),
            },
          }
        : {}),
      ...(options.schedules
        ? {
            scheduleBackend: new EventBridgeScheduleBackend(withoutSdkLogging(new SchedulerClient({})), {
              groupName: requiredEnv(RESOURCE_ENV.scheduleGroup, env),
              targetArn: options.targetArn ?? requiredEnv(RESOURCE_ENV.scheduleTarget, env),
              roleArn: requiredEnv(RESOURCE_ENV.scheduleRole, env),
              deadLetterArn: requiredEnv(RESOURCE_ENV.scheduleDeadLetters, env),
            }),
          }
        : {}),
    }),
  );
}
