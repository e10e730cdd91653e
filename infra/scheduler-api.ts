/**
 * The HTTP API: agent routes behind a Lambda authorizer over per-agent bearer tokens, operator routes behind
 * AWS IAM, health open. JSON access logs, default throttling on the stage and limits of their own on agent and
 * operator routes, so a flood on one kind of route leaves the other's alone.
 */
import type { Duration } from 'aws-cdk-lib';
import {
  type CfnStage,
  HttpApi,
  HttpMethod,
  HttpRoute,
  HttpRouteKey,
  HttpStage,
  type IHttpRouteAuthorizer,
} from 'aws-cdk-lib/aws-apigatewayv2';
import {
  HttpIamAuthorizer,
  HttpLambdaAuthorizer,
  HttpLambdaResponseType,
} from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { Grant } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { DEPLOYED_ROUTES, type RouteDefinition } from '../functions/http/routes';
import { accessLogsOf } from './access-logs';

export interface SchedulerApiProps {
  readonly agentApi: IFunction;
  readonly operatorApi: IFunction;
  readonly authorizer: IFunction;
  readonly throttle: Throttle;
  /** Limits of each agent route and of each operator route, overriding the stage's default. */
  readonly routeThrottle: {
    readonly agent: Throttle;
    readonly operator: Throttle;
    /** The public route of waitpoint callbacks. */
    readonly callback: Throttle;
  };
  readonly logRetention: RetentionDays;
  /** How long API Gateway caches an authorizer's answer for one token. */
  readonly authorizerCacheTtl: Duration;
}

export interface Throttle {
  readonly rateLimit: number;
  readonly burstLimit: number;
}

const METHODS: Record<RouteDefinition['method'], HttpMethod> = {
  GET: HttpMethod.GET,
  POST: HttpMethod.POST,
  DELETE: HttpMethod.DELETE,
};

export class SchedulerApi extends Construct {
  readonly httpApi: HttpApi;
  readonly stage: HttpStage;
  readonly accessLogs: LogGroup;
  readonly routes: ReadonlyMap<string, HttpRoute>;
  /** `$default`: requests that match no route, answered with a JSON 404 or 405. */
  readonly catchAll: HttpRoute;

  constructor(scope: Construct, id: string, props: SchedulerApiProps) {
    super(scope, id);
    this.httpApi = new HttpApi(this, 'Api', {
      description: 'agent-scheduler API',
      createDefaultStage: false,
    });
    // Besides the fields every stage logs (see `accessLogsOf`):
    const accessLogs = accessLogsOf(this, props.logRetention, {
      httpMethod: '$context.httpMethod',
      responseLength: '$context.responseLength',
      latency: '$context.responseLatency',
      caller: '$context.identity.caller',
    });
    this.accessLogs = accessLogs.logGroup;
    this.stage = new HttpStage(this, 'DefaultStage', {
      httpApi: this.httpApi,
      stageName: '$default',
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: accessLogs.settings,
    });

    const agentAuthorizer = new HttpLambdaAuthorizer('AgentToken', props.authorizer, {
      responseTypes: [HttpLambdaResponseType.SIMPLE],
      identitySource: ['$request.header.Authorization'],
      resultsCacheTtl: props.authorizerCacheTtl,
    });
    const operatorAuthorizer = new HttpIamAuthorizer();
    const agentIntegration = new HttpLambdaIntegration('AgentApi', props.agentApi);
    const operatorIntegration = new HttpLambdaIntegration('OperatorApi', props.operatorApi);

    const routes = new Map<string, HttpRoute>();
    for (const route of DEPLOYED_ROUTES) {
      const authorizer: IHttpRouteAuthorizer | undefined =
        route.access === 'agent'
          ? agentAuthorizer
          : route.access === 'operator'
            ? operatorAuthorizer
            : undefined;
      routes.set(
        `${route.method} ${route.path}`,
        new HttpRoute(this, `Route${route.operation[0]?.toUpperCase()}${route.operation.slice(1)}`, {
          httpApi: this.httpApi,
          routeKey: HttpRouteKey.with(route.path, METHODS[route.method]),
          integration: route.access === 'agent' ? agentIntegration : operatorIntegration,
          ...(authorizer ? { authorizer } : {}),
        }),
      );
    }
    this.routes = routes;
    // What matches no route reaches the operator function too, which answers it with the JSON 404 (or 405) every
    // other error has, where API Gateway's own answer would be {"message":"Not Found"}. It runs no operation for
    // such a request, so it needs no authorizer.
    this.catchAll = new HttpRoute(this, 'RouteCatchAll', {
      httpApi: this.httpApi,
      routeKey: HttpRouteKey.DEFAULT,
      integration: operatorIntegration,
    });

    // HTTP APIs have no usage plans: route settings are the way to give routes limits of their own. The stage
    // can only name routes that exist, so it is deployed after them.
    const cfnStage = this.stage.node.defaultChild as CfnStage;
    const routeSettings: Record<string, object> = {};
    for (const route of DEPLOYED_ROUTES) {
      const limits =
        route.operation === 'answerCallback'
          ? props.routeThrottle.callback
          : route.access === 'public'
            ? undefined
            : props.routeThrottle[route.access];
      if (!limits) continue;
      routeSettings[`${route.method} ${route.path}`] = {
        ThrottlingRateLimit: limits.rateLimit,
        ThrottlingBurstLimit: limits.burstLimit,
      };
      const created = routes.get(`${route.method} ${route.path}`);
      if (created) cfnStage.node.addDependency(created);
    }
    cfnStage.routeSettings = routeSettings;
  }

  /** The API's base URL. */
  get url(): string {
    return this.stage.url;
  }

  /** Lets an IAM principal call the operator routes that match `filter` (all of them by default). */
  grantInvoke(grantee: IGrantable, filter: (route: RouteDefinition) => boolean = () => true): Grant {
    return Grant.addToPrincipal({
      grantee,
      actions: ['execute-api:Invoke'],
      resourceArns: DEPLOYED_ROUTES.filter((r) => r.access === 'operator' && filter(r)).map((r) =>
        this.httpApi.arnForExecuteApi(r.method, r.path.replace(/\{[^}]+\}/g, '*'), '$default'),
      ),
    });
  }
}
