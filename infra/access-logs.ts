import { RemovalPolicy } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { type IAccessLogSettings, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/** An API stage's access logs: a log group of their own (`AccessLogs`), and the settings that fill it. */
export interface AccessLogs {
  readonly logGroup: LogGroup;
  readonly settings: IAccessLogSettings;
}

/** What every stage's access log line says of a request (name → `$context` variable). */
const COMMON_FIELDS = {
  requestId: '$context.requestId',
  ip: '$context.identity.sourceIp',
  requestTime: '$context.requestTime',
  routeKey: '$context.routeKey',
  status: '$context.status',
  integrationLatency: '$context.integrationLatency',
  agentId: '$context.authorizer.agentId',
  error: '$context.error.message',
} as const;

/**
 * The access logs of an API Gateway stage, one JSON line a request: the common fields and the stage's own. The log
 * group goes with the stack: it holds no data the scheduler needs.
 */
export function accessLogsOf(
  scope: Construct,
  retention: RetentionDays,
  fields: Readonly<Record<string, string>>,
): AccessLogs {
  const logGroup = new LogGroup(scope, 'AccessLogs', { retention, removalPolicy: RemovalPolicy.DESTROY });
  return {
    logGroup,
    settings: {
      destination: new LogGroupLogDestination(logGroup),
      format: AccessLogFormat.custom(JSON.stringify({ ...COMMON_FIELDS, ...fields })),
    },
  };
}
