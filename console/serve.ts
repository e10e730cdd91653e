/**
 * Serving over Node's HTTP server, for the console's own server and the local stack's: a request's body read to a
 * limit, its headers, the console's gateway answered on a socket, and a server listening on a loopback port.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { SchedulerLog } from '#core/context';
import { MAX_BODY_BYTES } from '../functions/http/http-api';
import type { ConsoleGateway } from './gateway';

/** Past this, a request is cut off rather than read to its end. */
const DRAIN_LIMIT_BYTES = 16 * 1024 * 1024;

/**
 * Reads the body, keeping nothing past the limit. The rest is still read (and dropped), up to a bound, so the
 * client gets its 413 instead of a reset connection.
 */
export async function readBody(request: IncomingMessage): Promise<{ body: string; tooLarge: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > DRAIN_LIMIT_BYTES) {
      request.destroy();
      break;
    }
    if (size <= MAX_BODY_BYTES + 1024) chunks.push(chunk as Buffer);
  }
  return size > MAX_BODY_BYTES + 1024
    ? { body: '', tooLarge: true }
    : { body: Buffer.concat(chunks).toString('utf8'), tooLarge: false };
}

/** A request's headers by lower-case name, repeated ones joined as HTTP joins them. */
export const headersOf = (request: IncomingMessage): Record<string, string | undefined> =>
  Object.fromEntries(
    Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(',') : v]),
  );

/** Listens on `host:port` (0: a free port); the URL it serves and how to stop it, open connections included. */
export async function listenOn(
  server: Server,
  port: number,
  host: string,
): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** One request to the console's gateway, answered on its socket. */
export function answerConsole(
  gateway: ConsoleGateway,
  request: IncomingMessage,
  response: ServerResponse,
  log: SchedulerLog,
): void {
  readBody(request)
    .then(({ body, tooLarge }) => {
      if (tooLarge) {
        response.writeHead(413, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            error: {
              code: 'PayloadTooLarge',
              message: `the request body is larger than ${MAX_BODY_BYTES} bytes`,
            },
          }),
        );
        return;
      }
      return gateway
        .answer({
          method: request.method ?? 'GET',
          url: request.url ?? '/',
          headers: headersOf(request),
          body,
          remoteAddress: request.socket.remoteAddress,
          localAddress: request.socket.localAddress,
          localPort: request.socket.localPort ?? 0,
        })
        .then((answer) => {
          response.writeHead(answer.statusCode, answer.headers);
          response.end(answer.body);
        });
    })
    .catch((error: unknown) => {
      log.error('console request failed', { error: error instanceof Error ? error.message : String(error) });
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ error: { code: 'InternalError', message: 'the request could not be completed' } }),
      );
    });
}
