/**
 * The push channel: where its records are kept, how a frame reaches a connection (API Gateway's management API
 * in AWS, the local server's socket here), and the URL clients connect to.
 */
import type { PushFrame } from '#domain/push';
import type { ConnectionStore } from './connection-store';

export interface PushSender {
  /** Sends a frame; `gone` when the connection no longer exists (the caller forgets it). */
  send(connectionId: string, frame: PushFrame): Promise<'sent' | 'gone'>;
}

export interface PushChannel {
  readonly connections: ConnectionStore;
  readonly sender: PushSender;
  /** The WebSocket URL clients connect to; the ticket goes in its `ticket` query parameter. */
  readonly url: string;
}
