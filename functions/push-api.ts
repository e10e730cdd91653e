/**
 * Lambda entry: the WebSocket API's `$connect`, `$disconnect` and `$default` routes. `$connect` records the
 * connection of the caller the authorizer named; `$disconnect` forgets it (best effort: records also expire);
 * `$default` answers a client's frame (a bad one gets an error frame). Keep-alive frames (`{"type":"ping"}`) go to
 * a route of their own that invokes no function.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { PushPrincipal } from '#domain/push';
import { schedulerFromEnvironment } from '#wiring/runtime';

interface WebSocketEvent {
  readonly body?: string | null;
  readonly isBase64Encoded?: boolean;
  readonly requestContext: {
    readonly routeKey: string;
    readonly connectionId: string;
    readonly authorizer?: Readonly<Record<string, unknown>> | null;
  };
}

interface WebSocketResult {
  readonly statusCode: number;
}

const logger = new Logger();
const scheduler = schedulerFromEnvironment(logger);

function principalOf(
  authorizer: Readonly<Record<string, unknown>> | null | undefined,
): PushPrincipal | undefined {
  if (authorizer?.principal === 'operator') return { kind: 'operator' };
  if (authorizer?.principal === 'agent' && typeof authorizer.agentId === 'string')
    return { kind: 'agent', agentId: authorizer.agentId };
  return undefined;
}

export const handler = middy<WebSocketEvent, WebSocketResult>()
  .use(injectLambdaContext(logger))
  .handler(async (event) => {
    const { routeKey, connectionId, authorizer } = event.requestContext;
    if (routeKey === '$connect') {
      const principal = principalOf(authorizer);
      if (!principal) return { statusCode: 401 };
      await scheduler.openPushConnection(connectionId, principal);
      return { statusCode: 200 };
    }
    if (routeKey === '$disconnect') {
      await scheduler.closePushConnection(connectionId);
      return { statusCode: 200 };
    }
    const raw = event.isBase64Encoded ? '' : (event.body ?? '');
    await scheduler.answerPushFrame(connectionId, raw);
    return { statusCode: 200 };
  });
