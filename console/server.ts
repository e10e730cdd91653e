/**
 * The console on its own server, for a stack that runs elsewhere (`agent-scheduler console --endpoint ...`): the
 * gateway alone, on this machine's loopback only.
 */
import { createServer, type Server } from 'node:http';
import type { SchedulerLog } from '#core/context';
import { type ConsoleGatewayOptions, consoleGateway, isLoopbackAddress } from './gateway';
import { answerConsole, listenOn } from './serve';

export interface ConsoleServerOptions extends ConsoleGatewayOptions {
  /** 0 picks a free port. */
  readonly port: number;
  /** A loopback address: the console acts as the operator, so it is never reachable from the network. */
  readonly host?: string;
  readonly log: SchedulerLog;
}

export interface ConsoleServer {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopbackAddress(host))
    throw new Error(`the console listens on a loopback address only, not ${host}`);
  const gateway = consoleGateway(options);
  const server = createServer((request, response) => answerConsole(gateway, request, response, options.log));
  return { ...(await listenOn(server, options.port, host)), server };
}
