/**
 * Frames to WebSocket connections through API Gateway's management API (`PostToConnection`). A connection that
 * is gone answers 410 (`GoneException`): said as `gone`, so the caller forgets it.
 */
import {
  type ApiGatewayManagementApiClient,
  GoneException,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import type { PushSender } from '#core/ports/push-channel';
import type { PushFrame } from '#domain/push';

export class ApiGatewayPushSender implements PushSender {
  constructor(private readonly client: ApiGatewayManagementApiClient) {}

  async send(connectionId: string, frame: PushFrame): Promise<'sent' | 'gone'> {
    try {
      await this.client.send(
        new PostToConnectionCommand({
          ConnectionId: connectionId,
          Data: new TextEncoder().encode(JSON.stringify(frame)),
        }),
      );
      return 'sent';
    } catch (error) {
      if (error instanceof GoneException) return 'gone';
      throw error;
    }
  }
}
