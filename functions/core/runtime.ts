/**
 * The scheduler as a deployed function builds it: SDK clients created once per execution environment, and the
 * configuration read once from the environment.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { schedulerConfigFromEnv } from '#adapters/environment';
import type { SchedulerLog } from './context';
import { Scheduler } from './scheduler';

export function schedulerFromEnvironment(log: SchedulerLog, env: NodeJS.ProcessEnv = process.env): Scheduler {
  const config = schedulerConfigFromEnv(env);
  return new Scheduler({
    dynamodb: new DynamoDBClient({}),
    sqs: new SQSClient({}),
    tables: config.tables,
    queues: config.queues,
    settings: {
      leaseTtlSeconds: config.leaseTtlSeconds,
      heartbeatIntervalSeconds: config.heartbeatIntervalSeconds,
      retentionSeconds: config.retentionSeconds,
    },
    log,
  });
}
