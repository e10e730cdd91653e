/**
 * The AgentScheduler construct, read from its synthesized template: secure defaults, exact IAM per function,
 * authorization on every route but health, schedules, alarms, and a clean cdk-nag report.
 */
import { Duration, Stack } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { AccountPrincipal, Role } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it } from 'vitest';
import { payloadObjectDays } from '../../functions/adapters/payload-objects';
import { DEFAULT_SETTINGS } from '../../functions/core/context';
import { DEPLOYED_ROUTES as ROUTES } from '../../functions/http/routes';
import { AgentScheduler } from '../../infra/agent-scheduler';
import type { AgentSchedulerStack } from '../../infra/agent-scheduler-stack';
import { EXAMPLE_SCHEDULER } from '../../infra/example-config';
import { synthExample, synthTemplate, type ValidationReport } from '../helpers/synth';

type Resources = Record<
  string,
  { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string }
>;

const resourcesOf = (template: Template, type: string): Resources =>
  template.findResources(type) as Resources;

describe('AgentScheduler construct', () => {
  let template: Template;
  let stack: AgentSchedulerStack;
  let report: ValidationReport;
  let operatorRole: Role;

  beforeAll(() => {
    // GIVEN the example stack, an alarm topic and an IAM role that submits tasks
    const synth = synthExample(EXAMPLE_SCHEDULER, (s) => {
      operatorRole = new Role(s, 'Submitter', { assumedBy: new AccountPrincipal('123456789012') });
      s.scheduler.grantSubmit(operatorRole);
    });
    ({ template, stack, report } = synth);
  });

  describe('tables', () => {
    it.each(['Tasks', 'Agents', 'Leases', 'Connections'])(
      '%s: PITR, deletion protection, KMS encryption, retained',
      (id) => {
        const tables = resourcesOf(template, 'AWS::DynamoDB::GlobalTable');
        const table = Object.entries(tables).find(([logicalId]) => logicalId.includes(`Tables${id}`))?.[1];
        expect(table).toBeDefined();
        expect(table?.DeletionPolicy).toBe('Retain');
        expect(table?.Properties).toMatchObject({
          BillingMode: 'PAY_PER_REQUEST',
          SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
          Replicas: [
            {
              DeletionProtectionEnabled: true,
              PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
            },
          ],
        });
      },
    );

    it('tasks and leases expire finished items with a TTL attribute; the due, listed, lanes and children indexes are keys-only', () => {
      template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
        KeySchema: [
          { AttributeName: 'taskId', KeyType: 'HASH' },
          { AttributeName: 'part', KeyType: 'RANGE' },
        ],
        TimeToLiveSpecification: { AttributeName: 'purgeAt', Enabled: true },
        GlobalSecondaryIndexes: [
          {
            IndexName: 'due',
            KeySchema: [
              { AttributeName: 'dueShard', KeyType: 'HASH' },
              { AttributeName: 'dueAt', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'KEYS_ONLY' },
          },
          {
            IndexName: 'listed',
            KeySchema: [
              { AttributeName: 'listShard', KeyType: 'HASH' },
              { AttributeName: 'createdAt', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'KEYS_ONLY' },
          },
          {
            IndexName: 'lanes',
            KeySchema: [
              { AttributeName: 'laneId', KeyType: 'HASH' },
              { AttributeName: 'readyAt', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'KEYS_ONLY' },
          },
          {
            IndexName: 'children',
            KeySchema: [
              { AttributeName: 'parentTaskId', KeyType: 'HASH' },
              { AttributeName: 'createdAt', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'KEYS_ONLY' },
          },
        ],
      });
      template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
        KeySchema: [{ AttributeName: 'leaseId', KeyType: 'HASH' }],
        TimeToLiveSpecification: { AttributeName: 'purgeAt', Enabled: true },
      });
    });
  });

  describe('payload bucket', () => {
    it('is private, encrypted, TLS only, kept on stack deletion, and emptied after 28 days', () => {
      const buckets = Object.values(resourcesOf(template, 'AWS::S3::Bucket'));
      expect(buckets).toHaveLength(1);
      expect(buckets[0]).toMatchObject({
        DeletionPolicy: 'Retain',
        Properties: {
          PublicAccessBlockConfiguration: {
            BlockPublicAcls: true,
            BlockPublicPolicy: true,
            IgnorePublicAcls: true,
            RestrictPublicBuckets: true,
          },
          BucketEncryption: {
            ServerSideEncryptionConfiguration: [
              { ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } },
            ],
          },
          OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
          // The longest delay (7 days), queue age (14) and retention (7) after an object's last write: a task that
          // lives longer has its object copied onto itself (payload-lifetimes test), which S3 dates anew.
          LifecycleConfiguration: {
            Rules: [
              expect.objectContaining({ Prefix: 'payloads/', ExpirationInDays: 28, Status: 'Enabled' }),
            ],
          },
        },
      });
      const [policy] = Object.values(resourcesOf(template, 'AWS::S3::BucketPolicy'));
      const document = policy?.Properties.PolicyDocument as { Statement: unknown[] } | undefined;
      expect(document?.Statement).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            Effect: 'Deny',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
          expect.objectContaining({
            Effect: 'Deny',
            Condition: { NumericLessThan: { 's3:TlsVersion': 1.2 } },
          }),
        ]),
      );
      // The expiry the integration suites run in place of S3's (test/helpers/expiry.ts) is the rule deployed.
      expect(payloadObjectDays(DEFAULT_SETTINGS)).toBe(28);
    });

    it('every function that submits or claims is told its name', () => {
      for (const name of ['agentApi', 'operatorApi', 'supervisor', 'scheduleFire'] as const) {
        const fn = stack.scheduler.functions[name];
        const resource = template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as CfnFunction)];
        expect(resource.Properties.Environment.Variables.PAYLOAD_BUCKET_NAME, name).toEqual({
          Ref: stack.getLogicalId(stack.scheduler.payloads.bucket.node.defaultChild as never),
        });
      }
    });
  });

  describe('queues', () => {
    it('four priority queues and a dead-letter queue per task queue, plus one for failed deliveries and the wake timer', () => {
      const queues = resourcesOf(template, 'AWS::SQS::Queue');
      expect(Object.keys(queues)).toHaveLength(EXAMPLE_SCHEDULER.queues.length * 5 + 2);
    });

    it('the wake timer: delayed wakes kept an hour, read ten at a time by its function, dead letters after three tries', () => {
      const timer = stack.getLogicalId(stack.scheduler.wakeTimer.queue.node.defaultChild as never);
      const queue = template.toJSON().Resources[timer];
      expect(queue.Properties).toMatchObject({
        MessageRetentionPeriod: 3_600,
        VisibilityTimeout: 60,
        SqsManagedSseEnabled: true,
        RedrivePolicy: {
          deadLetterTargetArn: {
            'Fn::GetAtt': [
              stack.getLogicalId(stack.scheduler.deadLetterQueue.node.defaultChild as never),
              'Arn',
            ],
          },
          maxReceiveCount: 3,
        },
      });
      template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [timer, 'Arn'] },
        FunctionName: {
          Ref: stack.getLogicalId(stack.scheduler.functions.wakeTimer.node.defaultChild as never),
        },
        BatchSize: 10,
        ScalingConfig: { MaximumConcurrency: 20 },
      });
      // Every function that holds a task back knows where to arm its wake.
      const { agentApi, operatorApi, supervisor, scheduleFire, wakeTimer, pushApi } =
        stack.scheduler.functions;
      const envOf = (fn: typeof agentApi) =>
        template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as never)].Properties.Environment
          .Variables as Record<string, unknown>;
      for (const fn of [agentApi, operatorApi, supervisor, scheduleFire, wakeTimer])
        expect(envOf(fn).WAKE_TIMER_QUEUE_URL, fn.node.id).toEqual({ Ref: timer });
      expect(envOf(pushApi).WAKE_TIMER_QUEUE_URL).toBeUndefined();
    });

    it('every queue is encrypted and refuses requests without TLS', () => {
      for (const queue of Object.values(resourcesOf(template, 'AWS::SQS::Queue'))) {
        expect(queue.Properties.SqsManagedSseEnabled).toBe(true);
      }
      const policies = Object.values(resourcesOf(template, 'AWS::SQS::QueuePolicy'));
      expect(policies).toHaveLength(Object.keys(resourcesOf(template, 'AWS::SQS::Queue')).length);
      for (const policy of policies) {
        expect(policy.Properties.PolicyDocument).toMatchObject({
          Statement: expect.arrayContaining([
            expect.objectContaining({
              Effect: 'Deny',
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
              Principal: { AWS: '*' },
            }),
          ]),
        });
      }
    });

    it.each(['critical', 'high', 'normal', 'low'])(
      '%s queues redrive to their DLQ after 10 receives',
      (priority) => {
        for (const [name, queues] of stack.scheduler.queues) {
          const logicalId = stack.getLogicalId(
            queues.byPriority[priority as 'low'].node.defaultChild as never,
          );
          const dlq = stack.getLogicalId(queues.deadLetterQueue.node.defaultChild as never);
          expect(template.toJSON().Resources[logicalId].Properties, name).toMatchObject({
            RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [dlq, 'Arn'] }, maxReceiveCount: 10 },
            MessageRetentionPeriod: 1_209_600,
            VisibilityTimeout: 30,
          });
        }
      },
    );
  });

  describe('functions', () => {
    it.each([
      ['AgentApi', 512, 10],
      ['OperatorApi', 512, 10],
      ['Authorizer', 256, 5],
      ['Supervisor', 512, 60],
      ['ScheduleFire', 256, 10],
      ['PushAuthorizer', 256, 5],
      ['PushApi', 256, 10],
    ])('%s: nodejs22.x on arm64, %i MB, %i s, JSON logs, Powertools settings', (id, memory, timeout) => {
      const fn = stack.scheduler.functions[(id[0]?.toLowerCase() + id.slice(1)) as 'agentApi'];
      const resource = template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as CfnFunction)];
      expect(resource.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        MemorySize: memory,
        Timeout: timeout,
        LoggingConfig: { LogFormat: 'JSON' },
        Environment: {
          Variables: expect.objectContaining({
            POWERTOOLS_SERVICE_NAME: expect.stringMatching(/^agent-scheduler-/),
            POWERTOOLS_METRICS_NAMESPACE: 'AgentScheduler',
          }),
        },
      });
      // No source maps unless asked for (`sourceMaps`): Node's support of them costs every cold start.
      expect(resource.Properties.Environment.Variables.NODE_OPTIONS).toBeUndefined();
    });

    it('the supervisor is given the starvation ladder (defaults 5, 15, 60 minutes) and the event bus', () => {
      const fn = stack.scheduler.functions.supervisor;
      const resource = template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as CfnFunction)];
      expect(resource.Properties.Environment.Variables).toMatchObject({
        STARVATION_PROMOTE_AFTER_SECONDS: '300',
        STARVATION_ANNOUNCE_AFTER_SECONDS: '900',
        STARVATION_ATTENTION_AFTER_SECONDS: '3600',
        EVENT_BUS_NAME: { Ref: stack.getLogicalId(stack.scheduler.eventBus.node.defaultChild as never) },
      });
      template.resourceCountIs('AWS::Events::EventBus', 1);
    });

    it('the agent API tells idle agents to wait up to 90 s by default (an idle agent: about $0.09 a month)', () => {
      const fn = stack.scheduler.functions.agentApi;
      const resource = template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as CfnFunction)];
      expect(resource.Properties.Environment.Variables.IDLE_RETRY_MAX_SECONDS).toBe('90');
    });

    it('an agent may register 100 roles by default', () => {
      const fn = stack.scheduler.functions.agentApi;
      const resource = template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as CfnFunction)];
      expect(resource.Properties.Environment.Variables.MAX_ROLES_PER_AGENT).toBe('100');
    });

    it('routine task events are off by default, for every function that publishes events', () => {
      for (const fn of [stack.scheduler.functions.agentApi, stack.scheduler.functions.supervisor]) {
        const resource = template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as CfnFunction)];
        expect(resource.Properties.Environment.Variables.ROUTINE_EVENTS).toBe('false');
      }
    });

    it('every function logs to a log group of its own with a retention period', () => {
      for (const group of Object.values(resourcesOf(template, 'AWS::Logs::LogGroup'))) {
        expect(group.Properties.RetentionInDays).toBe(30);
      }
      // Eight functions, and the access logs of the HTTP API and of the push channel.
      const functions = Object.values(stack.scheduler.functions);
      expect(functions).toHaveLength(8);
      expect(Object.keys(resourcesOf(template, 'AWS::Logs::LogGroup'))).toHaveLength(functions.length + 2);
      for (const fn of functions) {
        const resource = template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as CfnFunction)];
        expect(resource.Properties.LoggingConfig.LogGroup, fn.node.id).toEqual({
          Ref: stack.getLogicalId(fn.logGroup.node.defaultChild as never),
        });
      }
    });

    it('functions invoked asynchronously keep failed events in the dead-letter queue', () => {
      const dlq = stack.getLogicalId(stack.scheduler.deadLetterQueue.node.defaultChild as never);
      for (const fn of [stack.scheduler.functions.supervisor, stack.scheduler.functions.scheduleFire]) {
        const resource = template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as CfnFunction)];
        expect(resource.Properties.DeadLetterConfig).toEqual({ TargetArn: { 'Fn::GetAtt': [dlq, 'Arn'] } });
      }
    });
  });

  describe('least privilege', () => {
    interface Statement {
      Effect: string;
      Action: string[];
      Resource: unknown[];
      Condition?: unknown;
    }

    /** Every statement of the policies attached to a role, normalised. */
    function statementsOf(roleLogicalId: string) {
      const statements: Statement[] = [];
      for (const policy of Object.values(resourcesOf(template, 'AWS::IAM::Policy'))) {
        const roles = policy.Properties.Roles as { Ref: string }[];
        if (!roles.some((r) => r.Ref === roleLogicalId)) continue;
        const doc = policy.Properties.PolicyDocument as { Statement: Record<string, unknown>[] };
        for (const s of doc.Statement) {
          statements.push({
            Effect: String(s.Effect),
            Action: ([] as string[]).concat(s.Action as string[]).sort(),
            Resource: ([] as unknown[]).concat(s.Resource),
            ...(s.Condition ? { Condition: s.Condition } : {}),
          });
        }
      }
      return statements.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    }

    /**
     * Statements as the grants they make, one per action and resource: how CDK merges them into statements
     * (`@aws-cdk/aws-iam:minimizePolicies`) is not what is asserted.
     */
    const grantsOf = (statements: readonly Statement[]) =>
      [
        ...new Set(
          statements.flatMap((s) =>
            s.Action.flatMap((action) =>
              s.Resource.map((resource) => JSON.stringify([s.Effect, action, resource, s.Condition ?? null])),
            ),
          ),
        ),
      ].sort();

    const resolve = (value: unknown) => Stack.of(stack).resolve(value);
    const table = (name: 'tasks' | 'agents' | 'leases' | 'connections', ...actions: string[]) => ({
      Effect: 'Allow',
      Action: actions.sort(),
      Resource: [resolve(stack.scheduler.tables[name].tableArn)],
    });
    const index = (actions: string[], name = 'due') => ({
      Effect: 'Allow',
      Action: actions.sort(),
      Resource: [resolve(`${stack.scheduler.tables.tasks.tableArn}/index/${name}`)],
    });
    const queues = (...actions: string[]) =>
      [...stack.scheduler.queues.values()].map((q) => ({
        Effect: 'Allow',
        Action: actions.sort(),
        Resource: q.queues.map((queue) => resolve(queue.queueArn)),
      }));
    const logs = (fn: keyof AgentScheduler['functions']) => ({
      Effect: 'Allow',
      Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
      Resource: [resolve(stack.scheduler.functions[fn].logGroup.logGroupArn)],
    });
    const deadLetters = () =>
      [...stack.scheduler.queues.values()].map((q) => ({
        Effect: 'Allow',
        Action: ['sqs:SendMessage'],
        Resource: [resolve(q.deadLetterQueue.queueArn)],
      }));
    /** Schedule actions in this stack's group, and passing the schedules' role to EventBridge Scheduler only. */
    const inScheduleGroup = (...actions: string[]) => [
      {
        Effect: 'Allow',
        Action: actions.sort(),
        Resource: [
          resolve(
            `arn:${Stack.of(stack).partition}:scheduler:eu-west-1:123456789012:schedule/${stack.scheduler.scheduleGroup.scheduleGroupName}/*`,
          ),
        ],
      },
      {
        Effect: 'Allow',
        Action: ['iam:PassRole'],
        Resource: [resolve(stack.scheduler.schedules.role.roleArn)],
        Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      },
    ];
    /** Frames to connections: PostToConnection on this push channel's stage, nothing else of its management API. */
    const sendFrames = () => ({
      Effect: 'Allow',
      Action: ['execute-api:ManageConnections'],
      Resource: [
        resolve(
          `arn:${Stack.of(stack).partition}:execute-api:eu-west-1:123456789012:${stack.scheduler.push.webSocketApi.apiId}/v1/POST/@connections/*`,
        ),
      ],
    });
    /** Waking idle listeners, telling watchers a task ended, a role's new holder, and forgetting gone connections. */
    const pushes = (...actions: string[]) => [
      sendFrames(),
      table(
        'connections',
        'dynamodb:UpdateItem',
        'dynamodb:Query',
        'dynamodb:GetItem',
        'dynamodb:DeleteItem',
        ...actions,
      ),
    ];
    /** Arming a timed wake: SendMessage on the wake timer's queue, nothing else of it. */
    const armWakes = () => ({
      Effect: 'Allow',
      Action: ['sqs:SendMessage'],
      Resource: [resolve(stack.scheduler.wakeTimer.queue.queueArn)],
    });
    const putEvents = () => ({
      Effect: 'Allow',
      Action: ['events:PutEvents'],
      Resource: [resolve(stack.scheduler.eventBus.eventBusArn)],
    });
    const bucket = () => stack.scheduler.payloads.bucket;
    const payloadObjects = (action: string) => ({
      Effect: 'Allow',
      Action: [action],
      Resource: [resolve(bucket().arnForObjects('payloads/*'))],
    });
    /** Reading payloads: GetObject under the prefix, and ListBucket of the prefix so a missing one is NoSuchKey. */
    const readPayloads = () => [
      payloadObjects('s3:GetObject'),
      {
        Effect: 'Allow',
        Action: ['s3:ListBucket'],
        Resource: [resolve(bucket().bucketArn)],
        Condition: { StringLike: { 's3:prefix': 'payloads/*' } },
      },
    ];

    const expected = () => ({
      agentApi: grantsOf([
        logs('agentApi'),
        ...readPayloads(),
        payloadObjects('s3:DeleteObject'),
        // A task that dies under its agent has its onFailure submitted by that call.
        payloadObjects('s3:PutObject'),
        putEvents(),
        ...deadLetters(),
        table(
          'tasks',
          'dynamodb:GetItem',
          'dynamodb:UpdateItem',
          'dynamodb:BatchGetItem',
          'dynamodb:PutItem',
          'dynamodb:BatchWriteItem',
          'dynamodb:Query',
          'dynamodb:ConditionCheckItem',
        ),
        index(['dynamodb:Query'], 'lanes'),
        table(
          'leases',
          'dynamodb:GetItem',
          'dynamodb:BatchGetItem',
          'dynamodb:UpdateItem',
          'dynamodb:PutItem',
          'dynamodb:ConditionCheckItem',
        ),
        table('agents', 'dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'),
        // PutItem: connect tickets.
        ...pushes('dynamodb:PutItem'),
        armWakes(),
        ...queues(
          'sqs:ReceiveMessage',
          'sqs:DeleteMessage',
          'sqs:ChangeMessageVisibility',
          'sqs:SendMessage',
        ),
      ]),
      operatorApi: grantsOf([
        logs('operatorApi'),
        payloadObjects('s3:PutObject'),
        // `GET /v1/tasks/{taskId}?include=payload` reads a large payload from its object.
        ...readPayloads(),
        putEvents(),
        table(
          'tasks',
          'dynamodb:PutItem',
          'dynamodb:BatchWriteItem',
          'dynamodb:GetItem',
          'dynamodb:UpdateItem',
          'dynamodb:BatchGetItem',
          'dynamodb:Query',
          'dynamodb:DeleteItem',
        ),
        index(['dynamodb:Query']),
        index(['dynamodb:Query'], 'listed'),
        index(['dynamodb:Query'], 'children'),
        table('agents', 'dynamodb:PutItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:Scan'),
        table(
          'leases',
          'dynamodb:GetItem',
          'dynamodb:BatchGetItem',
          'dynamodb:UpdateItem',
          'dynamodb:PutItem',
          'dynamodb:DeleteItem',
          'dynamodb:Scan',
          'dynamodb:ConditionCheckItem',
        ),
        ...queues('sqs:SendMessage'),
        ...deadLetters(),
        ...inScheduleGroup('scheduler:CreateSchedule', 'scheduler:DeleteSchedule'),
        ...pushes('dynamodb:PutItem'),
        armWakes(),
      ]),
      authorizer: grantsOf([logs('authorizer'), table('agents', 'dynamodb:GetItem')]),
      supervisor: grantsOf([
        logs('supervisor'),
        payloadObjects('s3:PutObject'),
        // A payload object of a task that lives long is kept by copying it onto itself.
        ...readPayloads(),
        putEvents(),
        ...deadLetters(),
        table(
          'tasks',
          'dynamodb:GetItem',
          'dynamodb:UpdateItem',
          'dynamodb:BatchGetItem',
          'dynamodb:PutItem',
          'dynamodb:BatchWriteItem',
          'dynamodb:Query',
          'dynamodb:DeleteItem',
        ),
        index(['dynamodb:Query']),
        index(['dynamodb:Query'], 'children'),
        table(
          'leases',
          'dynamodb:Scan',
          'dynamodb:GetItem',
          'dynamodb:UpdateItem',
          'dynamodb:ConditionCheckItem',
        ),
        ...queues('sqs:SendMessage', 'sqs:GetQueueAttributes'),
        ...pushes(),
        armWakes(),
        {
          Effect: 'Allow',
          Action: ['sqs:SendMessage'],
          Resource: [resolve(stack.scheduler.deadLetterQueue.queueArn)],
        },
      ]),
      scheduleFire: grantsOf([
        logs('scheduleFire'),
        payloadObjects('s3:PutObject'),
        putEvents(),
        ...inScheduleGroup('scheduler:CreateSchedule', 'scheduler:UpdateSchedule'),
        table(
          'tasks',
          'dynamodb:PutItem',
          'dynamodb:BatchWriteItem',
          'dynamodb:GetItem',
          'dynamodb:UpdateItem',
          'dynamodb:Query',
        ),
        table('leases', 'dynamodb:GetItem', 'dynamodb:UpdateItem'),
        ...queues('sqs:SendMessage'),
        ...pushes(),
        armWakes(),
        {
          Effect: 'Allow',
          Action: ['sqs:SendMessage'],
          Resource: [resolve(stack.scheduler.deadLetterQueue.queueArn)],
        },
      ]),
      // Uses a ticket up; refuses one of an agent revoked since. Sends nothing.
      pushAuthorizer: grantsOf([
        logs('pushAuthorizer'),
        table('connections', 'dynamodb:DeleteItem'),
        table('agents', 'dynamodb:GetItem'),
      ]),
      pushApi: grantsOf([
        logs('pushApi'),
        sendFrames(),
        table(
          'connections',
          'dynamodb:BatchWriteItem',
          'dynamodb:PutItem',
          'dynamodb:GetItem',
          'dynamodb:DeleteItem',
        ),
        table('agents', 'dynamodb:GetItem'),
        // An operator's watch marks the task watched and reads its status in one write.
        table('tasks', 'dynamodb:UpdateItem'),
      ]),
      // Wakes idle listeners; arms again a wake longer than an SQS delay. Its event source mapping reads the timer
      // queue with this role (the grant CDK's SqsEventSource makes).
      wakeTimer: grantsOf([
        logs('wakeTimer'),
        ...pushes(),
        armWakes(),
        // A wake reads the scheduler's control first: none goes out while the scheduler is paused.
        table('leases', 'dynamodb:GetItem'),
        {
          Effect: 'Allow',
          Action: [
            'sqs:ChangeMessageVisibility',
            'sqs:DeleteMessage',
            'sqs:GetQueueAttributes',
            'sqs:GetQueueUrl',
            'sqs:ReceiveMessage',
          ],
          Resource: [resolve(stack.scheduler.wakeTimer.queue.queueArn)],
        },
      ]),
    });

    it.each([
      'agentApi',
      'operatorApi',
      'authorizer',
      'supervisor',
      'scheduleFire',
      'pushAuthorizer',
      'pushApi',
      'wakeTimer',
    ] as const)('%s has exactly the statements it needs', (name) => {
      const role = stack.scheduler.functions[name].role;
      if (!role) throw new Error('no role');
      const roleId = stack.getLogicalId(role.node.defaultChild as never);
      expect(grantsOf(statementsOf(roleId))).toEqual(expected()[name]);
    });

    it('no function role has a managed policy or a "*" resource', () => {
      for (const fn of Object.values(stack.scheduler.functions)) {
        const roleId = stack.getLogicalId(fn.role?.node.defaultChild as never);
        expect(template.toJSON().Resources[roleId].Properties.ManagedPolicyArns).toBeUndefined();
        for (const s of statementsOf(roleId)) expect(s.Resource).not.toContain('*');
      }
    });

    it('grantSubmit allows execute-api:Invoke on POST /v1/tasks only', () => {
      const roleId = stack.getLogicalId(operatorRole.node.defaultChild as never);
      const statements = statementsOf(roleId);
      expect(statements).toHaveLength(1);
      expect(statements[0]?.Action).toEqual(['execute-api:Invoke']);
      expect(JSON.stringify(statements[0]?.Resource)).toMatch(/\/\$default\/POST\/v1\/tasks"/);
    });
  });

  describe('HTTP API', () => {
    /** Resources of the HTTP API only (the push channel's WebSocket API has routes and a stage too). */
    const ofHttpApi = (type: string) =>
      Object.values(resourcesOf(template, type)).filter(
        (r) =>
          (r.Properties.ApiId as { Ref?: string } | undefined)?.Ref ===
          stack.getLogicalId(stack.scheduler.api.httpApi.node.defaultChild as never),
      );
    const routes = (key: string) =>
      ofHttpApi('AWS::ApiGatewayV2::Route').filter((r) => r.Properties.RouteKey === key);
    it.each(ROUTES.map((r) => [r.method, r.path, r.access] as const))(
      '%s %s is %s',
      (method, path, access) => {
        template.hasResourceProperties('AWS::ApiGatewayV2::Route', {
          RouteKey: `${method} ${path}`,
          AuthorizationType: { public: 'NONE', agent: 'CUSTOM', operator: 'AWS_IAM' }[access],
          ...(access === 'agent' ? { AuthorizerId: Match.anyValue() } : {}),
        });
      },
    );

    it('has exactly the routes of the route table and the catch-all, and only health, callbacks and the catch-all are open', () => {
      const routes = ofHttpApi('AWS::ApiGatewayV2::Route');
      expect(routes).toHaveLength(ROUTES.length + 1);
      expect(
        routes
          .filter((r) => r.Properties.AuthorizationType === 'NONE')
          .map((r) => r.Properties.RouteKey)
          .sort(),
      ).toEqual(['$default', 'GET /v1/health', 'POST /v1/callbacks/{token}']);
    });

    it('the catch-all goes to the operator function, which runs nothing for it (unit-tested in createHttpApi)', () => {
      const [catchAll] = routes('$default');
      const [health] = routes('GET /v1/health');
      // Health is served by the operator function too: both name the same integration.
      expect(catchAll?.Properties.Target).toEqual(health?.Properties.Target);
    });

    it('the agent authorizer reads the bearer token, answers simply and caches briefly', () => {
      template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
        AuthorizerType: 'REQUEST',
        IdentitySource: ['$request.header.Authorization'],
        EnableSimpleResponses: true,
        AuthorizerResultTtlInSeconds: 60,
        AuthorizerPayloadFormatVersion: '2.0',
      });
    });

    it('agent, operator and callback routes have limits of their own (100/200, 50/100, 20/40 by default), health the stage default', () => {
      const [stage] = ofHttpApi('AWS::ApiGatewayV2::Stage');
      const settings = stage?.Properties.RouteSettings as Record<string, unknown>;
      const expected = Object.fromEntries(
        ROUTES.filter((r) => r.access !== 'public' || r.operation === 'answerCallback').map((r) => [
          `${r.method} ${r.path}`,
          r.access === 'agent'
            ? { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 }
            : r.access === 'public'
              ? { ThrottlingRateLimit: 20, ThrottlingBurstLimit: 40 }
              : { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
        ]),
      );
      expect(settings).toEqual(expected);
    });

    it('the stage is deployed after the routes its settings name', () => {
      const [stage] = ofHttpApi('AWS::ApiGatewayV2::Stage') as unknown as { DependsOn?: string[] }[];
      for (const route of stack.scheduler.api.routes.values()) {
        if (route.node.id === 'RouteHealth') continue;
        expect(stage?.DependsOn).toContain(stack.getLogicalId(route.node.defaultChild as never));
      }
    });

    it('the agent API bounds each agent to 50 requests a second, bursts of 100, by default', () => {
      const fn = stack.scheduler.functions.agentApi;
      const resource = template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as CfnFunction)];
      expect(resource.Properties.Environment.Variables).toMatchObject({
        AGENT_RATE_PER_SECOND: '50',
        AGENT_BURST: '100',
      });
    });

    it('the stage writes JSON access logs and throttles by default', () => {
      template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        StageName: '$default',
        AutoDeploy: true,
        DefaultRouteSettings: { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 },
        AccessLogSettings: {
          DestinationArn: Match.anyValue(),
          Format: Match.serializedJson(
            Match.objectLike({ requestId: '$context.requestId', status: '$context.status' }),
          ),
        },
      });
    });
  });

  describe('schedules', () => {
    it('the supervisor runs at rate(1 minute) with no flexible window', () => {
      template.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: 'rate(1 minute)',
        FlexibleTimeWindow: { Mode: 'OFF' },
        Target: Match.objectLike({
          Input: JSON.stringify({ scheduledTime: '<aws.scheduler.scheduled-time>' }),
        }),
      });
    });

    it('a declared cron carries its time zone, name, scheduled time, retry policy and DLQ', () => {
      const dlq = stack.getLogicalId(stack.scheduler.deadLetterQueue.node.defaultChild as never);
      template.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: 'cron(0 2 * * ? *)',
        ScheduleExpressionTimezone: 'Europe/Paris',
        FlexibleTimeWindow: { Mode: 'OFF' },
        GroupName: Match.anyValue(),
        Target: {
          Arn: Match.anyValue(),
          RoleArn: Match.anyValue(),
          Input: Match.serializedJson({
            schedule: 'nightly-digest',
            scheduledTime: '<aws.scheduler.scheduled-time>',
            executionId: '<aws.scheduler.execution-id>',
            attempt: '<aws.scheduler.attempt-number>',
            expression: 'cron(0 2 * * ? *)',
            timeZone: 'Europe/Paris',
            overlap: 'skip',
            missedRuns: 'runOnce',
            task: { queue: 'summaries', priority: 'low', payload: { kind: 'digest' } },
          }),
          RetryPolicy: { MaximumRetryAttempts: 10, MaximumEventAgeInSeconds: 3600 },
          DeadLetterConfig: { Arn: { 'Fn::GetAtt': [dlq, 'Arn'] } },
        },
      });
    });

    it('one group holds them all', () => {
      template.resourceCountIs('AWS::Scheduler::ScheduleGroup', 1);
      template.resourceCountIs('AWS::Scheduler::Schedule', 2);
    });
  });

  describe('alarms', () => {
    it.each([
      ['a DLQ per task queue', /reached its dead-letter queue/, 3],
      ['the oldest hint per priority queue', /oldest .* hint/, 12],
      ['undelivered fires', /could not be delivered/, 1],
      ['supervisor errors', /the supervisor failed/, 1],
      ['starved tasks', /starvation ladder/, 1],
      ['API 5xx', /the API answered .* 5xx/, 1],
      [
        'errors of the API functions and the authorizer',
        /the (AgentApi|OperatorApi|Authorizer) function failed/,
        3,
      ],
      ['errors of the push function', /the PushApi function failed/, 1],
      ['errors and refusals of the push authorizer', /the PushAuthorizer function failed or refused/, 1],
      ['push integration failures', /the push channel failed to run its integration/, 1],
    ])('%s', (_, description, count) => {
      const alarms = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).filter((a) =>
        description.test(String(a.Properties.AlarmDescription)),
      );
      expect(alarms).toHaveLength(count);
    });

    it('API 5xx are counted on the $default stage of this API', () => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/ApiGateway',
        MetricName: '5xx',
        Statistic: 'Sum',
        Period: 300,
        Threshold: 5,
        Dimensions: Match.arrayWith([
          {
            Name: 'ApiId',
            Value: { Ref: stack.getLogicalId(stack.scheduler.api.httpApi.node.defaultChild as never) },
          },
          { Name: 'Stage', Value: '$default' },
        ]),
      });
    });

    it.each(['agentApi', 'operatorApi', 'authorizer'] as const)(
      '%s errors raise an alarm at the first one',
      (name) => {
        const fn = stack.scheduler.functions[name];
        template.hasResourceProperties('AWS::CloudWatch::Alarm', {
          Namespace: 'AWS/Lambda',
          MetricName: 'Errors',
          Threshold: 1,
          Dimensions: [
            { Name: 'FunctionName', Value: { Ref: stack.getLogicalId(fn.node.defaultChild as CfnFunction) } },
          ],
        });
      },
    );

    it('a dashboard that shows every alarm', () => {
      template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
      const [dashboard] = Object.values(resourcesOf(template, 'AWS::CloudWatch::Dashboard'));
      const body = JSON.stringify(dashboard?.Properties.DashboardBody);
      for (const alarm of stack.scheduler.alarms.alarms) {
        expect(body).toContain(stack.getLogicalId(alarm.node.defaultChild as never));
      }
    });
  });

  it('outputs the API URL and the table and queue names', () => {
    const outputs = Object.keys(template.toJSON().Outputs);
    expect(outputs).toEqual(
      expect.arrayContaining([
        'ApiUrl',
        'TasksTableName',
        'AgentsTableName',
        'LeasesTableName',
        'ConnectionsTableName',
        'PushUrl',
        'ScheduleGroupName',
      ]),
    );
    expect(outputs.filter((o) => /^Queue.*Names$/.test(o))).toHaveLength(3);
  });

  describe('cdk-nag', () => {
    it.each(['AwsSolutions', 'Serverless'])('%s: no unacknowledged finding', (pack) => {
      const plugin = report.pluginReports.find((p) => p.pluginName === pack);
      expect(
        plugin?.violations.map((v) => `${v.ruleName} ${v.violatingConstructs[0]?.constructPath}`),
      ).toEqual([]);
      expect(plugin?.conclusion).toBe('success');
    });

    it('every acknowledgment carries a specific reason', () => {
      const suppressed = report.pluginReports.flatMap((p) => p.suppressedViolations);
      expect(suppressed.length).toBeGreaterThan(0);
      for (const s of suppressed) {
        expect(s.reason.length, s.acknowledgedId).toBeGreaterThan(40);
      }
      const summary = [...new Set(suppressed.map((s) => `${s.acknowledgedId}: ${s.reason}`))];
      console.log(
        `[nag] ${suppressed.length} findings acknowledged under ${summary.length} reasons:\n${summary.join('\n')}`,
      );
    });
  });
});

describe('AgentScheduler with an alarm topic', () => {
  it('every alarm notifies the topic', () => {
    let topicId = '';
    const { template, stack } = synthExample(EXAMPLE_SCHEDULER, (s) => {
      const topic = new Topic(s, 'Alarms', { enforceSSL: true });
      topicId = s.getLogicalId(topic.node.defaultChild as never);
      // A new construct: the stack under test already built one without the topic.
      new AgentScheduler(s, 'WithTopic', {
        queues: ['alerts'],
        alarmTopic: topic,
        supervisorPeriod: Duration.minutes(2),
      });
    });
    const alarms = Object.entries(template.toJSON().Resources as Resources).filter(
      ([id, r]) => r.Type === 'AWS::CloudWatch::Alarm' && id.startsWith('WithTopic'),
    );
    expect(alarms.length).toBeGreaterThan(0);
    for (const [, alarm] of alarms) expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
    expect(stack).toBeDefined();
  });
});

describe('AgentScheduler with tracing', () => {
  const TRACED = ['agentApi', 'operatorApi', 'supervisor', 'scheduleFire'] as const;
  const LAYER = 'arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-nodejs-arm64-ver-1-30-2:1';
  type FunctionName = keyof AgentSchedulerStack['scheduler']['functions'];
  const functionOf = (synth: { template: Template; stack: AgentSchedulerStack }, name: FunctionName) =>
    synth.template.toJSON().Resources[
      synth.stack.getLogicalId(synth.stack.scheduler.functions[name].node.defaultChild as CfnFunction)
    ].Properties as { Environment: { Variables: Record<string, unknown> }; Layers?: unknown[] };
  /** A function's role's statements, actions sorted, as the template has them. */
  const statementsOf = (synth: { template: Template; stack: AgentSchedulerStack }, name: FunctionName) => {
    const role = synth.stack.scheduler.functions[name].role;
    const roleId = synth.stack.getLogicalId(role?.node.defaultChild as never);
    return Object.values(resourcesOf(synth.template, 'AWS::IAM::Policy'))
      .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
      .flatMap(
        (p) => (p.Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement,
      )
      .map((s) => JSON.stringify({ ...s, Action: ([] as string[]).concat(s.Action).sort() }))
      .sort();
  };
  const names = (synth: { stack: AgentSchedulerStack }) =>
    Object.keys(synth.stack.scheduler.functions) as FunctionName[];

  it('off by default: no tracing variable, no layer, and with an endpoint only the four functions are told, no role changes', () => {
    // GIVEN the example without tracing, and with an OTLP endpoint
    const off = synthTemplate(EXAMPLE_SCHEDULER);
    const on = synthTemplate({
      ...EXAMPLE_SCHEDULER,
      tracing: {
        otlpEndpoint: 'https://otlp.example.com',
        otlpHeaders: { 'x-api-key': 'k' },
        exportTimeout: Duration.millis(250),
      },
    });
    // THEN off, no function has a tracing variable or a layer
    for (const name of names(off)) {
      const fn = functionOf(off, name);
      expect(
        Object.keys(fn.Environment.Variables).filter((v) => v.startsWith('TRACING_')),
        name,
      ).toEqual([]);
      expect(fn.Layers, name).toBeUndefined();
    }
    // AND on, the four that record spans are told where and how long, the others nothing; no role gains a grant
    for (const name of names(on)) {
      const variables = functionOf(on, name).Environment.Variables;
      const told = Object.fromEntries(Object.entries(variables).filter(([v]) => v.startsWith('TRACING_')));
      expect(told, name).toEqual(
        (TRACED as readonly string[]).includes(name)
          ? {
              TRACING_OTLP_ENDPOINT: 'https://otlp.example.com',
              TRACING_OTLP_HEADERS: '{"x-api-key":"k"}',
              TRACING_EXPORT_TIMEOUT_MS: '250',
            }
          : {},
      );
      expect(functionOf(on, name).Layers, name).toBeUndefined();
      expect(statementsOf(on, name), name).toEqual(statementsOf(off, name));
    }
  });

  it('with the collector layer: the layer on the four, X-Ray writes their one new grant, cdk-nag clean', () => {
    const off = synthTemplate(EXAMPLE_SCHEDULER);
    const on = synthExample({ ...EXAMPLE_SCHEDULER, tracing: { collectorLayerArn: LAYER } });
    for (const name of names(on)) {
      const traced = (TRACED as readonly string[]).includes(name);
      const fn = functionOf(on, name);
      expect(fn.Layers, name).toEqual(traced ? [LAYER] : undefined);
      expect(fn.Environment.Variables.TRACING_OTLP_ENDPOINT, name).toBe(
        traced ? 'http://localhost:4318' : undefined,
      );
      const added = statementsOf(on, name).filter((s) => !statementsOf(off, name).includes(s));
      expect(added, name).toEqual(
        traced
          ? [
              JSON.stringify({
                Action: ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'],
                Effect: 'Allow',
                Resource: '*',
              }),
            ]
          : [],
      );
    }
    for (const plugin of on.report.pluginReports) {
      expect(
        plugin.violations.map((v) => `${v.ruleName} ${v.violatingConstructs[0]?.constructPath}`),
      ).toEqual([]);
    }
  });
});
