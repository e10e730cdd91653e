/**
 * Lambda entry: the HTTP API's authorizer for agent routes (simple responses). A valid bearer token yields the
 * agent's id in the authorizer context; the handlers take the caller's identity only from there.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import { AgentTable } from '#adapters/agent-table';
import { requiredEnv } from '#adapters/environment';
import { withoutSdkLogging } from '#adapters/sdk-clients';
import { authenticateAgent } from '#core/auth';
import { RESOURCE_ENV } from '#domain/settings';

interface AuthorizerEvent {
  readonly headers?: Readonly<Record<string, string | undefined>>;
}

interface AuthorizerResult {
  readonly isAuthorized: boolean;
  readonly context?: { readonly agentId: string };
}

const logger = new Logger();
const agents = new AgentTable(
  DynamoDBDocumentClient.from(withoutSdkLogging(new DynamoDBClient({}))),
  requiredEnv(RESOURCE_ENV.agentsTable),
);

export const handler = middy<AuthorizerEvent, AuthorizerResult>()
  .use(injectLambdaContext(logger))
  .handler(async (event) => {
    const agentId = await authenticateAgent(agents, event.headers?.authorization);
    return agentId ? { isAuthorized: true, context: { agentId } } : { isAuthorized: false };
  });
