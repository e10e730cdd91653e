/**
 * The push channel, read from the synthesized example stack: a WebSocket API whose `$connect` is authorized by a
 * connect ticket in the query string, whose keep-alives invoke no function, with a logged and throttled stage;
 * `PostToConnection` granted on this stage's connections only, to the functions that send frames; the connections
 * table, the environment that turns the channel on in each function, its alarms and its output.
 */
import { Stack } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { PONG_FRAME } from '#domain/push';
import type { AgentScheduler } from '../../infra/agent-scheduler';
import type { AgentSchedulerStack } from '../../infra/agent-scheduler-stack';
import { synthTemplate } from '../helpers/synth';

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
}

type FunctionName = keyof AgentScheduler['functions'];

/** The functions that send frames to connections. */
const SENDERS: readonly FunctionName[] = [
  'agentApi',
  'operatorApi',
  'supervisor',
  'scheduleFire',
  'pushApi',
  'wakeTimer',
];
/** The functions in which the channel is on: the senders, and the ticket authorizer. */
const PUSHING: readonly FunctionName[] = [...SENDERS, 'pushAuthorizer'];

describe('push channel', () => {
  let template: Template;
  let stack: AgentSchedulerStack;
  let resources: Record<string, Resource>;
  const id = (construct: { node: { defaultChild?: unknown } }) =>
    stack.getLogicalId(construct.node.defaultChild as never);
  const apiRef = () => ({ Ref: id(stack.scheduler.push.webSocketApi) });
  const ofPushApi = (type: string) =>
    Object.entries(resources).filter(
      ([, r]) => r.Type === type && JSON.stringify(r.Properties.ApiId) === JSON.stringify(apiRef()),
    );
  const routeOf = (routeKey: string) => {
    const found = ofPushApi('AWS::ApiGatewayV2::Route').filter(([, r]) => r.Properties.RouteKey === routeKey);
    expect(found, routeKey).toHaveLength(1);
    return found[0]?.[1] as Resource;
  };
  /** The integration a route targets (`integrations/<id>`). */
  const integrationOf = (route: Resource) => {
    const target = JSON.stringify(route.Properties.Target);
    const found = ofPushApi('AWS::ApiGatewayV2::Integration').filter(([logicalId]) =>
      target.includes(`"Ref":"${logicalId}"`),
    );
    expect(found).toHaveLength(1);
    return found[0]?.[1] as Resource;
  };
  const functionArn = (name: FunctionName) => ({
    'Fn::GetAtt': [id(stack.scheduler.functions[name]), 'Arn'],
  });
  const variablesOf = (name: FunctionName): Record<string, unknown> => {
    const fn = resources[id(stack.scheduler.functions[name])];
    return (
      (fn?.Properties.Environment as { Variables: Record<string, unknown> } | undefined)?.Variables ?? {}
    );
  };

  beforeAll(() => {
    // The template only: agent-scheduler.test.ts checks this example with cdk-nag.
    ({ template, stack } = synthTemplate());
    resources = template.toJSON().Resources as Record<string, Resource>;
  });

  describe('WebSocket API', () => {
    it('is the one WebSocket API, routing client frames by their "type"', () => {
      const apis = Object.values(resources).filter(
        (r) => r.Type === 'AWS::ApiGatewayV2::Api' && r.Properties.ProtocolType === 'WEBSOCKET',
      );
      expect(apis).toHaveLength(1);
      expect(apis[0]?.Properties.RouteSelectionExpression).toBe('$request.body.type');
      expect(resources[apiRef().Ref]?.Properties.ProtocolType).toBe('WEBSOCKET');
    });

    it('has exactly the routes $connect, $disconnect, $default and ping, and a route response on ping only', () => {
      expect(ofPushApi('AWS::ApiGatewayV2::Route').map(([, r]) => r.Properties.RouteKey)).toEqual(
        expect.arrayContaining(['$connect', '$disconnect', '$default', 'ping']),
      );
      expect(ofPushApi('AWS::ApiGatewayV2::Route')).toHaveLength(4);
      // The keep-alive is answered (a socket that no longer answers is dead); nothing else is.
      template.resourceCountIs('AWS::ApiGatewayV2::RouteResponse', 1);
      template.resourceCountIs('AWS::ApiGatewayV2::IntegrationResponse', 1);
    });

    it('the ticket authorizer is a REQUEST authorizer of the push authorizer function, on the ticket query string', () => {
      const authorizers = ofPushApi('AWS::ApiGatewayV2::Authorizer');
      expect(authorizers).toHaveLength(1);
      expect(authorizers[0]?.[1].Properties).toMatchObject({
        AuthorizerType: 'REQUEST',
        IdentitySource: ['route.request.querystring.ticket'],
      });
      const uri = JSON.stringify(authorizers[0]?.[1].Properties.AuthorizerUri);
      expect(uri).toContain(JSON.stringify(functionArn('pushAuthorizer')));
      // No result cache: a ticket is good for one connect only.
      expect(authorizers[0]?.[1].Properties.AuthorizerResultTtlInSeconds).toBeUndefined();
    });

    it('$connect is behind the ticket authorizer and goes to the push function', () => {
      const connect = routeOf('$connect');
      const [authorizer] = ofPushApi('AWS::ApiGatewayV2::Authorizer');
      expect(connect.Properties).toMatchObject({
        AuthorizationType: 'CUSTOM',
        AuthorizerId: { Ref: authorizer?.[0] },
      });
      const integration = integrationOf(connect);
      expect(integration.Properties.IntegrationType).toBe('AWS_PROXY');
      expect(JSON.stringify(integration.Properties.IntegrationUri)).toContain(
        JSON.stringify(functionArn('pushApi')),
      );
    });

    it.each(['$disconnect', '$default'])('%s goes to the push function, like $connect', (routeKey) => {
      const route = routeOf(routeKey);
      // API Gateway authorizes a WebSocket once, on $connect: no other route can have an authorizer.
      expect(route.Properties.AuthorizationType).toBe('NONE');
      expect(route.Properties.Target).toEqual(routeOf('$connect').Properties.Target);
    });

    it('ping is answered with a pong by a mock integration and invokes no function', () => {
      const ping = routeOf('ping');
      expect(ping.Properties.AuthorizationType).toBe('NONE');
      expect(ping.Properties.RouteResponseSelectionExpression).toBe('$default');
      const integration = integrationOf(ping);
      expect(integration.Properties).toMatchObject({
        IntegrationType: 'MOCK',
        IntegrationUri: '',
        RequestTemplates: { $default: '{"statusCode": 200}' },
        TemplateSelectionExpression: '\\$default',
      });
      const logicalIdOf = (resource: Resource) =>
        Object.entries(resources).find(([, r]) => r === resource)?.[0];
      const [routeResponse] = ofPushApi('AWS::ApiGatewayV2::RouteResponse');
      expect(routeResponse?.[1].Properties).toMatchObject({
        RouteId: { Ref: logicalIdOf(ping) },
        RouteResponseKey: '$default',
      });
      const [integrationResponse] = ofPushApi('AWS::ApiGatewayV2::IntegrationResponse');
      const answered = integrationResponse?.[1].Properties as { ResponseTemplates: Record<string, string> };
      expect(answered).toMatchObject({
        IntegrationId: { Ref: logicalIdOf(integration) },
        IntegrationResponseKey: '$default',
        TemplateSelectionExpression: '\\$default',
      });
      // What the SDK reads as the answer: the pong frame, as the local server sends it.
      expect(JSON.parse(answered.ResponseTemplates.$default ?? '')).toEqual(PONG_FRAME);
      // Only $connect, $disconnect and $default may invoke the push function (and the authorizer its own).
      const invokers = Object.values(resources)
        .filter(
          (r) =>
            r.Type === 'AWS::Lambda::Permission' &&
            JSON.stringify(r.Properties.FunctionName) === JSON.stringify(functionArn('pushApi')),
        )
        .map((r) => JSON.stringify(r.Properties.SourceArn));
      expect(invokers).toHaveLength(3);
      for (const routeKey of ['$connect', '$disconnect', '$default'])
        expect(
          invokers.some((arn) => arn.endsWith(`/*${routeKey}"]]}`)),
          routeKey,
        ).toBe(true);
    });

    it('the v1 stage deploys itself, throttles by default and writes JSON access logs to a log group of its own', () => {
      const stages = ofPushApi('AWS::ApiGatewayV2::Stage');
      expect(stages).toHaveLength(1);
      expect(stages[0]?.[1].Properties).toMatchObject({
        StageName: 'v1',
        AutoDeploy: true,
        DefaultRouteSettings: { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 },
        AccessLogSettings: {
          DestinationArn: { 'Fn::GetAtt': [id(stack.scheduler.push.accessLogs), 'Arn'] },
        },
      });
      const settings = stages[0]?.[1].Properties.AccessLogSettings as { Format?: string } | undefined;
      const format = JSON.parse(settings?.Format ?? '{}') as Record<string, string>;
      expect(format).toMatchObject({
        requestId: '$context.requestId',
        eventType: '$context.eventType',
        routeKey: '$context.routeKey',
        status: '$context.status',
        connectionId: '$context.connectionId',
        agentId: '$context.authorizer.agentId',
      });
      expect(resources[id(stack.scheduler.push.accessLogs)]?.Properties.RetentionInDays).toBe(30);
    });

    it('sets the account’s API Gateway log role before the stage, which a logged WebSocket stage needs', () => {
      const accounts = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::ApiGateway::Account');
      expect(accounts).toHaveLength(1);
      const [accountId, account] = accounts[0] as [string, Resource];
      const roleRef = (account.Properties.CloudWatchRoleArn as { 'Fn::GetAtt': [string, string] })[
        'Fn::GetAtt'
      ];
      const role = resources[roleRef[0]] as Resource;
      expect(role.Type).toBe('AWS::IAM::Role');
      expect(role.DeletionPolicy).toBe('Retain');
      expect(JSON.stringify(role.Properties.AssumeRolePolicyDocument)).toContain('apigateway.amazonaws.com');
      expect(JSON.stringify(role.Properties.ManagedPolicyArns)).toContain(
        'service-role/AmazonAPIGatewayPushToCloudWatchLogs',
      );
      const [stageId] = ofPushApi('AWS::ApiGatewayV2::Stage')[0] as [string, Resource];
      const stageDependsOn =
        (template.toJSON().Resources[stageId] as { DependsOn?: string[] }).DependsOn ?? [];
      expect(stageDependsOn).toContain(accountId);
    });

    it('outputs the URL to open: wss, this API, the v1 stage', () => {
      template.hasOutput('PushUrl', {
        Value: {
          'Fn::Join': ['', ['wss://', apiRef(), '.execute-api.eu-west-1.', { Ref: 'AWS::URLSuffix' }, '/v1']],
        },
      });
    });
  });

  describe('sending frames', () => {
    const manageConnections = () =>
      Object.values(resources)
        .filter((r) => r.Type === 'AWS::IAM::Policy')
        .flatMap((policy) => {
          const statements = (policy.Properties.PolicyDocument as { Statement: Record<string, unknown>[] })
            .Statement;
          return statements
            .filter((s) =>
              ([] as unknown[]).concat(s.Action).some((a) => String(a).startsWith('execute-api:')),
            )
            .map((statement) => ({ roles: policy.Properties.Roles as { Ref: string }[], statement }));
        });

    it('only ManageConnections, on POST to any connection of this API’s v1 stage', () => {
      const grants = manageConnections();
      expect(grants.length).toBeGreaterThan(0);
      for (const { statement } of grants) {
        expect(statement).toEqual({
          Effect: 'Allow',
          Action: 'execute-api:ManageConnections',
          Resource: {
            'Fn::Join': [
              '',
              ['arn:aws:execute-api:eu-west-1:123456789012:', apiRef(), '/v1/POST/@connections/*'],
            ],
          },
        });
      }
    });

    it('is granted to the functions that send, and to no other role (not the authorizers)', () => {
      const roles = manageConnections()
        .flatMap(({ roles }) => roles.map((r) => r.Ref))
        .sort();
      const senders = SENDERS.map((name) => {
        const role = stack.scheduler.functions[name].role;
        if (!role) throw new Error(`${name} has no role`);
        return id(role);
      }).sort();
      expect(roles).toEqual(senders);
    });
  });

  describe('connections table', () => {
    it('keys pk and sk, expires items through purgeAt, with PITR, deletion protection, KMS encryption, retained', () => {
      const table = resources[id(stack.scheduler.tables.connections)];
      expect(table?.Type).toBe('AWS::DynamoDB::GlobalTable');
      expect(table?.DeletionPolicy).toBe('Retain');
      expect(table?.Properties).toMatchObject({
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        TimeToLiveSpecification: { AttributeName: 'purgeAt', Enabled: true },
        SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
        Replicas: [
          {
            DeletionProtectionEnabled: true,
            PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
          },
        ],
      });
      expect(table?.Properties.GlobalSecondaryIndexes).toBeUndefined();
    });
  });

  describe('environment', () => {
    it.each(PUSHING)(
      '%s has the channel on: the connections table, the URL to open and the stage endpoint',
      (name) => {
        expect(variablesOf(name)).toMatchObject({
          CONNECTIONS_TABLE_NAME: { Ref: id(stack.scheduler.tables.connections) },
          PUSH_URL: {
            'Fn::Join': [
              '',
              ['wss://', apiRef(), '.execute-api.eu-west-1.', { Ref: 'AWS::URLSuffix' }, '/v1'],
            ],
          },
          PUSH_CALLBACK_URL: {
            'Fn::Join': [
              '',
              ['https://', apiRef(), '.execute-api.eu-west-1.', { Ref: 'AWS::URLSuffix' }, '/v1'],
            ],
          },
        });
      },
    );

    it('the HTTP API authorizer is not told of the channel', () => {
      const variables = variablesOf('authorizer');
      for (const name of ['CONNECTIONS_TABLE_NAME', 'PUSH_URL', 'PUSH_CALLBACK_URL'])
        expect(variables[name], name).toBeUndefined();
    });

    it.each(['pushAuthorizer', 'pushApi'] as const)(
      '%s can build its scheduler (tables, queue directory) and is not told of the bus or the bucket it may not use',
      (name) => {
        const variables = variablesOf(name);
        for (const required of [
          'TASKS_TABLE_NAME',
          'AGENTS_TABLE_NAME',
          'LEASES_TABLE_NAME',
          'QUEUE_DIRECTORY',
        ])
          expect(variables[required], required).toBeDefined();
        expect(variables.EVENT_BUS_NAME).toBeUndefined();
        expect(variables.PAYLOAD_BUCKET_NAME).toBeUndefined();
      },
    );
  });

  describe('alarms', () => {
    /** The alarms on a function's Lambda errors, summed over 5 minutes. */
    const errorAlarmsOf = (name: FunctionName) =>
      Object.values(
        template.findResources('AWS::CloudWatch::Alarm', {
          Properties: {
            Namespace: 'AWS/Lambda',
            MetricName: 'Errors',
            Statistic: 'Sum',
            Period: 300,
            Dimensions: [{ Name: 'FunctionName', Value: { Ref: id(stack.scheduler.functions[name]) } }],
          },
        }),
      ) as Resource[];

    it('the push function raises an alarm at its first error', () => {
      const alarms = errorAlarmsOf('pushApi');
      expect(alarms).toHaveLength(1);
      expect(alarms[0]?.Properties).toMatchObject({
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
    });

    it('the ticket authorizer raises an alarm at 5 errors in 5 minutes (a refused ticket is an error to Lambda)', () => {
      const alarms = errorAlarmsOf('pushAuthorizer');
      expect(alarms).toHaveLength(1);
      expect(alarms[0]?.Properties).toMatchObject({
        Threshold: 5,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
    });

    it('integration failures of the v1 stage of this API raise an alarm', () => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/ApiGateway',
        MetricName: 'ExecutionError',
        Statistic: 'Sum',
        Period: 300,
        Threshold: 5,
        Dimensions: [
          { Name: 'ApiId', Value: apiRef() },
          { Name: 'Stage', Value: 'v1' },
        ],
      });
    });

    it('the dashboard graphs the channel’s connects, frames and errors', () => {
      const [dashboard] = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
      const body = JSON.stringify(Stack.of(stack).resolve(dashboard?.Properties.DashboardBody));
      expect(body).toContain('Push channel connects, frames and errors');
      for (const metric of ['ConnectCount', 'MessageCount', 'ClientError', 'ExecutionError'])
        expect(body, metric).toContain(metric);
    });
  });
});
