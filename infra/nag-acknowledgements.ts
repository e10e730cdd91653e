/**
 * The findings of cdk-nag's AwsSolutions and Serverless packs that are deliberate, each acknowledged where it is
 * found, with its reason. A finding not acknowledged here fails the infrastructure tests.
 */
import { Stack, Token, Validations } from 'aws-cdk-lib';
import type { CfnApi } from 'aws-cdk-lib/aws-apigatewayv2';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import type { CfnBucket } from 'aws-cdk-lib/aws-s3';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { PAYLOAD_OBJECT_PREFIX } from '../functions/adapters/payload-objects';
import type { PayloadBucket } from './payload-bucket';
import type { PriorityQueues } from './priority-queues';
import { PushChannel } from './push-channel';
import type { SchedulerApi } from './scheduler-api';
import type { SchedulerFunctions } from './scheduler-functions';
import type { TaskSchedules } from './task-schedules';

/** The parts of the scheduler whose findings are acknowledged. */
export interface AcknowledgedParts {
  readonly functions: SchedulerFunctions;
  readonly schedules: TaskSchedules;
  readonly deadLetterQueue: IQueue;
  readonly queues: ReadonlyMap<string, PriorityQueues>;
  readonly payloads: PayloadBucket;
  readonly api: SchedulerApi;
  readonly push: PushChannel;
}

/** Findings of cdk-nag's AwsSolutions and Serverless packs that are deliberate, each with its reason. */
export function acknowledgeNagFindings(scheduler: AcknowledgedParts): void {
  const stack = Stack.of(scheduler.api);
  for (const fn of Object.values(scheduler.functions)) {
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
    scheduler.functions.agentApi,
    scheduler.functions.operatorApi,
    scheduler.functions.authorizer,
    scheduler.functions.pushAuthorizer,
    scheduler.functions.pushApi,
  ]) {
    Validations.of(fn).acknowledge({
      id: 'Serverless::Serverless-LambdaDLQ',
      reason:
        'Invoked synchronously by API Gateway: a failure is returned to the caller, there is no event to keep.',
    });
  }
  // The timer's function and its event source mapping (a child of the function).
  Validations.of(scheduler.functions.wakeTimer).acknowledge(
    {
      id: 'Serverless::Serverless-LambdaDLQ',
      reason:
        'Invoked synchronously by its SQS event source mapping: a failed batch goes back to the timer queue, whose redrive policy moves it to the stack’s dead-letter queue after three receives.',
    },
    {
      id: 'Serverless::Serverless-LambdaEventSourceMappingDestination',
      reason:
        'The timer queue’s redrive policy already keeps a wake that failed three times, in the stack’s dead-letter queue (alarmed); an on-failure destination would keep it twice.',
    },
  );
  for (const fn of [scheduler.functions.supervisor, scheduler.functions.scheduleFire]) {
    Validations.of(scheduler.schedules.role).acknowledge({
      id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${stack.getLogicalId(fn.node.defaultChild as CfnFunction)}.Arn>:*]`,
      reason:
        'EventBridge Scheduler may invoke this one function; the ":*" suffix covers its versions and aliases, as the Lambda target grants.',
    });
  }
  for (const queue of [
    scheduler.deadLetterQueue,
    ...[...scheduler.queues.values()].map((q) => q.deadLetterQueue),
  ]) {
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
  Validations.of(scheduler.payloads.bucket).acknowledge({
    id: 'AwsSolutions::AwsSolutions-S1',
    reason:
      'Objects are task payloads written once and read by the scheduler functions alone; every submission and claim is already in the API access log. A log bucket would cost more than the payloads.',
  });
  const payloadObjects = `${stack.getLogicalId(scheduler.payloads.bucket.node.defaultChild as CfnBucket)}.Arn>/${PAYLOAD_OBJECT_PREFIX}*`;
  for (const fn of [
    scheduler.functions.agentApi,
    scheduler.functions.operatorApi,
    scheduler.functions.supervisor,
    scheduler.functions.scheduleFire,
  ]) {
    Validations.of(fn.role ?? fn).acknowledge({
      id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${payloadObjects}]`,
      reason:
        'Payload objects are named by task id and specification at run time; the grants are single actions (put; get and delete) under the payloads/ prefix.',
    });
  }
  const publicRoutes: readonly (readonly [string, string])[] = [
    [
      'GET /v1/health',
      'GET /v1/health is public by design, for uptime checks; it answers {"status":"ok"} and reads nothing.',
    ],
    [
      'POST /v1/callbacks/{token}',
      'A waitpoint callback is called by outside systems that hold no credential of the stack: the token in its path (256 random bits, single-use, kept only as a hash) is its credential; a wrong one is answered as a waitpoint that does not exist, and the route has a throttle of its own.',
    ],
  ];
  for (const [routeKey, reason] of publicRoutes) {
    const route = scheduler.api.routes.get(routeKey);
    if (route) Validations.of(route).acknowledge({ id: 'AwsSolutions::AwsSolutions-APIG4', reason });
  }
  Validations.of(scheduler.api.catchAll).acknowledge({
    id: 'AwsSolutions::AwsSolutions-APIG4',
    reason:
      'The $default route only answers requests that match no route with a JSON 404 or 405; the function runs no operation for it.',
  });
  acknowledgePushFindings(scheduler);
}

/** The push channel's deliberate findings: routes past `$connect`, and sending to connections named at run time. */
function acknowledgePushFindings(scheduler: AcknowledgedParts): void {
  for (const [routeKey, route] of scheduler.push.routes) {
    if (routeKey === '$connect') continue;
    Validations.of(route).acknowledge({
      id: 'AwsSolutions::AwsSolutions-APIG4',
      reason: `API Gateway authorizes a WebSocket connection once, on $connect (with the ticket authorizer); ${routeKey} cannot have an authorizer and only runs on a connection that was authorized.`,
    });
  }
  const stack = Stack.of(scheduler.api);
  const api = stack.getLogicalId(scheduler.push.webSocketApi.node.defaultChild as CfnApi);
  for (const fn of [
    scheduler.functions.agentApi,
    scheduler.functions.operatorApi,
    scheduler.functions.supervisor,
    scheduler.functions.scheduleFire,
    scheduler.functions.pushApi,
    scheduler.functions.wakeTimer,
  ]) {
    Validations.of(fn.role ?? fn).acknowledge({
      id: `AwsSolutions::AwsSolutions-IAM5[Resource::${nagArn(stack, 'execute-api')}:<${api}>/${PushChannel.STAGE_NAME}/POST/@connections/*]`,
      reason:
        'Connection ids are given by API Gateway at run time; the grant is PostToConnection (POST) on this API’s stage only.',
    });
  }
}

/** The start of an ARN of `service` as cdk-nag names it in a finding: pseudo-parameters in angle brackets. */
export function nagArn(stack: Stack, service: string): string {
  const partition = Token.isUnresolved(stack.partition) ? '<AWS::Partition>' : stack.partition;
  const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
  const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
  return `arn:${partition}:${service}:${region}:${account}`;
}
