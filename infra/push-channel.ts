/**
 * The push channel: a WebSocket API over which the scheduler wakes idle agents, tells an agent a role is now its,
 * and tells operators that tasks they watch have ended. A caller connects with a single-use ticket it got over the
 * HTTP API as itself (`?ticket=`), checked by a Lambda authorizer on `$connect` (API Gateway authorizes nothing
 * else on a WebSocket); the push-api function records the connection, forgets it on `$disconnect` and answers
 * client frames on `$default`. Keep-alive frames (`{"type":"ping"}`) go to a route of their own with a mock
 * integration whose route response answers `{"type":"pong","version":1}`: they keep the connection open, tell the
 * client its socket is alive, and invoke nothing. Frames are sent back
 * through the stage's management endpoint (`PostToConnection`), which only the functions that send may call.
 *
 * JSON access logs and default throttling on the stage, as on the HTTP API. API Gateway writes a WebSocket
 * stage's access logs with the account's API Gateway CloudWatch role (one per account and region, in API
 * Gateway's settings); without it the stage cannot be created, so by default the channel sets that role, as
 * `RestApi`'s `cloudWatchRole` does. An account that already has one can say so (`accountLogRole: false`).
 */
import { RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { CfnAccount } from 'aws-cdk-lib/aws-apigateway';
import {
  CfnIntegrationResponse,
  WebSocketApi,
  type WebSocketIntegration,
  type WebSocketRoute,
  WebSocketStage,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import {
  WebSocketLambdaIntegration,
  WebSocketMockIntegration,
} from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { type IGrantable, ManagedPolicy, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { PONG_FRAME } from '#domain/push';
import { accessLogsOf } from './access-logs';
import type { Throttle } from './scheduler-api';

export interface PushChannelProps {
  /** Serves `$connect`, `$disconnect` and `$default`. */
  readonly pushApi: IFunction;
  /** Checks the connect ticket on `$connect`, and names the caller. */
  readonly authorizer: IFunction;
  /** The stage's default limits, on connects and client frames alike. */
  readonly throttle: Throttle;
  readonly logRetention: RetentionDays;
  /**
   * Sets the account's API Gateway CloudWatch role, which a WebSocket stage's access logs need. The role is kept
   * when the stack is deleted, so the account setting never names a role that is gone.
   * @default true
   */
  readonly accountLogRole?: boolean;
}

export class PushChannel extends Construct {
  /** The stage's name: the last segment of the URL clients open. */
  static readonly STAGE_NAME = 'v1';

  readonly webSocketApi: WebSocketApi;
  readonly stage: WebSocketStage;
  readonly accessLogs: LogGroup;
  /** The routes, by route key: `$connect`, `$disconnect`, `$default` and `ping`. */
  readonly routes: ReadonlyMap<string, WebSocketRoute>;
  /** What `PostToConnection` is authorized on: any connection of this API's stage, with POST only. */
  readonly connectionsArn: string;

  constructor(scope: Construct, id: string, props: PushChannelProps) {
    super(scope, id);
    this.webSocketApi = new WebSocketApi(this, 'Api', {
      description: 'agent-scheduler push channel',
      // Client frames are JSON objects with a `type`: `ping` has a route of its own, everything else `$default`.
      routeSelectionExpression: '$request.body.type',
    });
    // Besides the fields every stage logs (see `accessLogsOf`):
    const accessLogs = accessLogsOf(this, props.logRetention, {
      eventType: '$context.eventType',
      connectionId: '$context.connectionId',
      authorizeStatus: '$context.authorize.status',
      principal: '$context.authorizer.principal',
    });
    this.accessLogs = accessLogs.logGroup;
    this.stage = new WebSocketStage(this, 'Stage', {
      webSocketApi: this.webSocketApi,
      stageName: PushChannel.STAGE_NAME,
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: accessLogs.settings,
    });

    if (props.accountLogRole ?? true) {
      const role = new Role(this, 'ApiGatewayLogRole', {
        assumedBy: new ServicePrincipal('apigateway.amazonaws.com'),
        description: 'Lets API Gateway write access logs of this account to CloudWatch Logs.',
        managedPolicies: [
          ManagedPolicy.fromAwsManagedPolicyName('service-role/AmazonAPIGatewayPushToCloudWatchLogs'),
        ],
      });
      role.applyRemovalPolicy(RemovalPolicy.RETAIN);
      const account = new CfnAccount(this, 'ApiGatewayAccount', { cloudWatchRoleArn: role.roleArn });
      this.stage.node.addDependency(account);
      Validations.of(role).acknowledge({
        id: 'AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        reason:
          'API Gateway’s own policy for writing access logs, the one its documentation names for the account’s CloudWatch role.',
      });
    }

    // No result cache: WebSocket authorizers have none, and a ticket is good for one connect anyway. A connect
    // without `ticket` is refused by API Gateway without invoking the function.
    const authorizer = new WebSocketLambdaAuthorizer('Ticket', props.authorizer, {
      identitySource: ['route.request.querystring.ticket'],
    });
    const integration = new WebSocketLambdaIntegration('PushApi', props.pushApi);
    const routes = new Map<string, WebSocketRoute>();
    routes.set('$connect', this.webSocketApi.addRoute('$connect', { integration, authorizer }));
    routes.set('$disconnect', this.webSocketApi.addRoute('$disconnect', { integration }));
    routes.set('$default', this.webSocketApi.addRoute('$default', { integration }));
    // A keep-alive is answered by API Gateway itself: a mock integration whose response is the pong frame. A socket
    // that dies without a close reaching its client (a NAT forgetting it, a half-open TCP connection) is then
    // noticed by the client at its next ping, rather than at its next safety poll.
    const ping = this.webSocketApi.addRoute('ping', {
      integration: new WebSocketMockIntegration('Ping', {
        requestTemplates: { $default: '{"statusCode": 200}' },
        templateSelectionExpression: '\\$default',
      }),
      returnResponse: true,
    });
    const pingIntegration = ping.node.findChild('Ping') as WebSocketIntegration;
    new CfnIntegrationResponse(this, 'PingResponse', {
      apiId: this.webSocketApi.apiId,
      integrationId: pingIntegration.integrationId,
      integrationResponseKey: '$default',
      templateSelectionExpression: '\\$default',
      responseTemplates: { $default: JSON.stringify(PONG_FRAME) },
    });
    routes.set('ping', ping);
    this.routes = routes;

    this.connectionsArn = Stack.of(this).formatArn({
      service: 'execute-api',
      resource: this.webSocketApi.apiId,
      resourceName: `${PushChannel.STAGE_NAME}/POST/@connections/*`,
    });
  }

  /** The URL clients open (`wss://…/v1`), with a ticket. */
  get url(): string {
    return this.stage.url;
  }

  /** The stage's management endpoint, where frames are posted to connections. */
  get callbackUrl(): string {
    return this.stage.callbackUrl;
  }

  /** Lets a function send frames to connections (`PostToConnection`), and nothing else of the management API. */
  grantSend(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['execute-api:ManageConnections'], resources: [this.connectionsArn] }),
    );
  }
}
