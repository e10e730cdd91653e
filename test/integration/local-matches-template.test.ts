/**
 * The local runner creates the tables and queues the construct deploys: both come from the same definitions,
 * and this compares what DynamoDB Local and the SQS emulator report with the synthesized template.
 */
import { DescribeTableCommand, DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { PRIORITIES } from '#domain/priority';
import { localDynamoDbClient, localSqsClient } from '#local/emulators/clients';
import { provisionQueues, provisionTables, provisionWakeTimerQueue, tableNamesFor } from '#local/provision';
import { EXAMPLE_SCHEDULER } from '../../infra/example-config';
import { synthTemplate } from '../helpers/synth';

type CfnTable = {
  KeySchema: { AttributeName: string; KeyType: string }[];
  AttributeDefinitions: { AttributeName: string; AttributeType: string }[];
  GlobalSecondaryIndexes?: {
    IndexName: string;
    KeySchema: unknown[];
    Projection: { ProjectionType: string };
  }[];
  TimeToLiveSpecification?: { AttributeName: string; Enabled: boolean };
  BillingMode: string;
};

const byName = <T extends { AttributeName?: string }>(list: T[]) =>
  [...list].sort((a, b) => (a.AttributeName ?? '').localeCompare(b.AttributeName ?? ''));

describe('local resources match the synthesized template', () => {
  const dynamodb = localDynamoDbClient(inject('dynamodbEndpoint'));
  const sqs = localSqsClient(inject('sqsEndpoint'));
  const prefix = `tpl${Date.now().toString(36)}`;
  const names = tableNamesFor(prefix);
  let cfnTables: CfnTable[];
  let cfnQueues: Record<string, unknown>[];
  let cfnTimerQueue: Record<string, unknown>;

  beforeAll(async () => {
    const { template, stack } = synthTemplate();
    const timerId = stack.getLogicalId(stack.scheduler.wakeTimer.queue.node.defaultChild as never);
    cfnTimerQueue = (template.toJSON().Resources[timerId] as { Properties: Record<string, unknown> })
      .Properties;
    cfnTables = Object.values(template.findResources('AWS::DynamoDB::GlobalTable')).map(
      (r) => (r as { Properties: CfnTable }).Properties,
    );
    cfnQueues = Object.entries(template.findResources('AWS::SQS::Queue'))
      .filter(([id]) => id !== timerId)
      .map(([, r]) => (r as { Properties: Record<string, unknown> }).Properties);
    await provisionTables(dynamodb, names);
  });

  it.each(['tasks', 'agents', 'leases'] as const)(
    'table %s: keys, attributes, indexes, TTL, billing',
    async (table) => {
      const local = (await dynamodb.send(new DescribeTableCommand({ TableName: names[table] }))).Table;
      const ttl = (await dynamodb.send(new DescribeTimeToLiveCommand({ TableName: names[table] })))
        .TimeToLiveDescription;
      const cfn = cfnTables.find((t) => JSON.stringify(t.KeySchema) === JSON.stringify(local?.KeySchema));

      expect(cfn, `no table in the template has the key schema of ${table}`).toBeDefined();
      expect(byName(local?.AttributeDefinitions ?? [])).toEqual(byName(cfn?.AttributeDefinitions ?? []));
      // DynamoDB Local describes indexes in an order of its own: compared by name.
      const byIndexName = <T extends { IndexName?: string }>(list: T[]) =>
        [...list].sort((a, b) => (a.IndexName ?? '').localeCompare(b.IndexName ?? ''));
      expect(
        byIndexName(
          (local?.GlobalSecondaryIndexes ?? []).map((i) => ({
            IndexName: i.IndexName,
            KeySchema: i.KeySchema,
            Projection: { ProjectionType: i.Projection?.ProjectionType },
          })),
        ),
      ).toEqual(byIndexName(cfn?.GlobalSecondaryIndexes ?? []));
      expect(local?.BillingModeSummary?.BillingMode ?? 'PAY_PER_REQUEST').toBe(cfn?.BillingMode);
      expect(ttl?.AttributeName).toBe(cfn?.TimeToLiveSpecification?.AttributeName);
    },
  );

  it('queues: four priority queues and a DLQ per task queue, same redrive, retention and visibility', async () => {
    const directory = await provisionQueues(sqs, prefix, EXAMPLE_SCHEDULER.queues);
    const priorityQueues = cfnQueues.filter((q) => q.RedrivePolicy !== undefined);

    expect(directory.names()).toEqual([...EXAMPLE_SCHEDULER.queues]);
    expect(priorityQueues).toHaveLength(EXAMPLE_SCHEDULER.queues.length * PRIORITIES.length);
    for (const queue of EXAMPLE_SCHEDULER.queues) {
      for (const priority of PRIORITIES) {
        const attributes = (
          await sqs.send(
            new GetQueueAttributesCommand({
              QueueUrl: directory.urlFor(queue, priority),
              AttributeNames: ['All'],
            }),
          )
        ).Attributes;
        const redrive = JSON.parse(attributes?.RedrivePolicy ?? '{}') as { maxReceiveCount?: number };
        for (const cfn of priorityQueues) {
          expect(Number(redrive.maxReceiveCount)).toBe(
            (cfn.RedrivePolicy as { maxReceiveCount: number }).maxReceiveCount,
          );
          expect(Number(attributes?.MessageRetentionPeriod)).toBe(cfn.MessageRetentionPeriod);
          expect(Number(attributes?.VisibilityTimeout)).toBe(cfn.VisibilityTimeout);
        }
      }
    }
  });

  it('the wake timer queue: same retention and visibility', async () => {
    const url = await provisionWakeTimerQueue(sqs, prefix);
    const attributes = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }))
    ).Attributes;
    expect(Number(attributes?.MessageRetentionPeriod)).toBe(cfnTimerQueue.MessageRetentionPeriod);
    expect(Number(attributes?.VisibilityTimeout)).toBe(cfnTimerQueue.VisibilityTimeout);
  });
});
