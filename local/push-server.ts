/**
 * The push channel on the local server, at `/v1/push`: what API Gateway's WebSocket API does in AWS. A connect
 * presents a ticket (`?ticket=`), used up at once; frames are answered by the same core as the `$default` route;
 * a closed socket is forgotten as `$disconnect` does. The connection records live in the same table as in AWS.
 */
import { randomBytes } from 'node:crypto';
import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { SchedulerLog } from '#core/context';
import type { PushSender } from '#core/ports/push-channel';
import type { Scheduler } from '#core/scheduler';
import { errorName } from '#domain/errors';
import { PONG_FRAME, type PushFrame } from '#domain/push';

export const LOCAL_PUSH_PATH = '/v1/push';

/** API Gateway's largest frame. */
const MAX_FRAME_BYTES = 128 * 1024;

/** Whether API Gateway would route the frame to `ping` (its route selection is `$request.body.type`). */
function isPing(raw: string): boolean {
  try {
    const body = JSON.parse(raw) as unknown;
    return typeof body === 'object' && body !== null && (body as { type?: unknown }).type === 'ping';
  } catch {
    return false;
  }
}

/** Frames to the sockets this server holds, by connection id; a socket not held is gone. */
export class LocalPushSender implements PushSender {
  readonly sockets = new Map<string, WebSocket>();
  /** Frames sent, for the benchmarks' message counts. */
  sent = 0;

  async send(connectionId: string, frame: PushFrame): Promise<'sent' | 'gone'> {
    const socket = this.sockets.get(connectionId);
    if (!socket || socket.readyState !== socket.OPEN) return 'gone';
    this.sent++;
    await new Promise<void>((resolve) => socket.send(JSON.stringify(frame), () => resolve()));
    return 'sent';
  }

  /** Closes every socket, as a deployment's restart would; clients reconnect. */
  dropAll(): void {
    for (const socket of this.sockets.values()) socket.terminate();
  }
}

const refuseUpgrade = (socket: Duplex, status: number, code: string, message: string) => {
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
};

/** Serves the push channel on `server`'s upgrades. */
export function attachPushChannel(
  server: Server,
  options: { readonly scheduler: Scheduler; readonly sender: LocalPushSender; readonly log: SchedulerLog },
): void {
  const { scheduler, sender, log } = options;
  const sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = URL.canParse(request.url ?? '/', 'http://localhost')
      ? new URL(request.url ?? '/', 'http://localhost')
      : undefined;
    if (url?.pathname !== LOCAL_PUSH_PATH) {
      refuseUpgrade(socket, 404, 'NotFound', `WebSockets are served at ${LOCAL_PUSH_PATH} only`);
      return;
    }
    scheduler
      .redeemPushTicket(url.searchParams.get('ticket') ?? undefined)
      .then(async (principal) => {
        if (!principal) {
          refuseUpgrade(socket, 401, 'Unauthorized', 'a valid, unused connect ticket is required');
          return;
        }
        const connectionId = randomBytes(12).toString('base64url');
        await scheduler.openPushConnection(connectionId, principal);
        sockets.handleUpgrade(request, socket, head, (ws) => {
          sender.sockets.set(connectionId, ws);
          ws.on('message', (data, isBinary) => {
            const raw = isBinary ? '' : data.toString();
            // As API Gateway's `ping` route: answered with a pong, and no function runs.
            if (isPing(raw)) {
              ws.send(JSON.stringify(PONG_FRAME));
              return;
            }
            scheduler
              .answerPushFrame(connectionId, raw)
              .catch((error: unknown) => log.warn('a push frame failed', { error: errorName(error) }));
          });
          ws.on('close', () => {
            sender.sockets.delete(connectionId);
            scheduler
              .closePushConnection(connectionId)
              .catch((error: unknown) =>
                log.warn('forgetting a closed connection failed', { error: errorName(error) }),
              );
          });
        });
      })
      .catch((error: unknown) => {
        log.error('a push connect failed', { error: errorName(error) });
        refuseUpgrade(socket, 503, 'ServiceUnavailable', 'the connection could not be opened; try again');
      });
  });
}
