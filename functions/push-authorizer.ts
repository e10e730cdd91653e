/**
 * Lambda entry: the WebSocket API's authorizer, on `$connect` only (API Gateway authorizes nothing else on a
 * WebSocket). The caller presents a ticket it got over HTTP as itself; the ticket is used up here, and the caller
 * it names goes on in the authorizer context. Any other ticket is refused with 401.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { schedulerFromEnvironment } from '#wiring/runtime';

interface ConnectAuthorizerEvent {
  readonly methodArn: string;
  readonly queryStringParameters?: Readonly<Record<string, string | undefined>> | null;
}

interface PolicyResult {
  readonly principalId: string;
  readonly policyDocument: {
    readonly Version: '2012-10-17';
    readonly Statement: readonly { Action: string; Effect: 'Allow'; Resource: string }[];
  };
  readonly context: { readonly principal: 'agent' | 'operator'; readonly agentId?: string };
}

const logger = new Logger();
const scheduler = schedulerFromEnvironment(logger);

export const handler = middy<ConnectAuthorizerEvent, PolicyResult>()
  .use(injectLambdaContext(logger))
  .handler(async (event) => {
    const principal = await scheduler.redeemPushTicket(event.queryStringParameters?.ticket ?? undefined);
    // API Gateway answers this error with 401 and nothing of ours.
    if (!principal) throw new Error('Unauthorized');
    return {
      principalId: principal.kind === 'agent' ? principal.agentId : 'operator',
      policyDocument: {
        Version: '2012-10-17',
        Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: event.methodArn }],
      },
      context:
        principal.kind === 'agent'
          ? { principal: 'agent', agentId: principal.agentId }
          : { principal: 'operator' },
    };
  });
