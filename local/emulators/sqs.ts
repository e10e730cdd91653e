/**
 * In-process SQS emulator backed by fauxqs.
 *
 * Binding: `startFauxqs()` always listens on 0.0.0.0 (its `host` option only changes the host written into
 * queue URLs), so this module builds the same Fastify app with fauxqs's `buildApp()` and listens on
 * 127.0.0.1 itself. The emulator is therefore reachable from this machine only.
 *
 * Queue URLs: fauxqs names queues `http://sqs.<region>.localhost:<port>/000000000000/<name>`. No `host`
 * setting makes those URLs resolvable here (the URL host is always `sqs.<region>.<host>`), and
 * `*.localhost` does not resolve through the system resolver on every machine. Every SQS client must
 * therefore be created with an explicit `endpoint` (see `localSqsClient`); the queue URL is then only
 * used as an identifier and never dialled.
 */
import type { AddressInfo } from 'node:net';
import { buildApp } from 'fauxqs';

export interface SqsEmulatorOptions {
  /** TCP port to listen on; 0 or undefined picks a free port. */
  port?: number;
}

export interface SqsEmulator {
  /** e.g. `http://127.0.0.1:41234`; pass it as `endpoint` to every SQS client. */
  endpoint: string;
  port: number;
  stop(): Promise<void>;
}

export async function startSqsEmulator(opts: SqsEmulatorOptions = {}): Promise<SqsEmulator> {
  const app = buildApp({ logger: false, defaultRegion: 'us-east-1' });
  await app.listen({ host: '127.0.0.1', port: opts.port ?? 0 });
  const port = (app.server.address() as AddressInfo).port;

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    const pending = stopping ?? app.close().then(() => undefined);
    stopping = pending;
    return pending;
  };
  return { endpoint: `http://127.0.0.1:${port}`, port, stop };
}
