/**
 * The console for a stack elsewhere, as `agent-scheduler console` runs it: the files, the gateway on loopback, the
 * lines that tell the operator where to go and which code to type.
 */
import { loadConsoleAssets } from './assets';
import type { QueueMetricsSource } from './cloudwatch';
import { type ConsoleSessionInfo, loginCodeLine } from './gateway';
import { type ConsoleServer, startConsoleServer } from './server';

export interface OperatorConsoleOptions {
  /** The API, as the CLI reaches it. */
  readonly endpoint: string;
  readonly mode: ConsoleSessionInfo['mode'];
  /** Sends a request to the API with the operator's credentials. */
  readonly upstream: (request: Request) => Promise<Response>;
  readonly port: number;
  /** How often a shown view reads again. @default DEFAULT_REFRESH_SECONDS of the mode */
  readonly refreshSeconds?: number;
  /** Prints a line on the operator's terminal. */
  readonly say: (line: string) => void;
  /** Where a deployed stack's metrics are read, for the Queues view's last hour. @default none */
  readonly metrics?: QueueMetricsSource;
}

/** Whether the API serves the local event feed (`GET /v1/events`): the local stack does, AWS does not. */
async function servesEvents(options: OperatorConsoleOptions): Promise<boolean> {
  try {
    const answer = await options.upstream(
      new Request(`${options.endpoint.replace(/\/+$/, '')}/v1/events?since=0&limit=1`, {
        signal: AbortSignal.timeout(10_000),
      }),
    );
    await answer.body?.cancel();
    return answer.status === 200;
  } catch {
    return false;
  }
}

export async function startOperatorConsole(options: OperatorConsoleOptions): Promise<ConsoleServer> {
  const [assets, events] = await Promise.all([loadConsoleAssets(), servesEvents(options)]);
  let firstCode = '';
  const server = await startConsoleServer({
    mode: options.mode,
    endpoint: options.endpoint,
    events: events ? 'poll' : 'none',
    assets,
    upstream: options.upstream,
    port: options.port,
    ...(options.refreshSeconds === undefined ? {} : { refreshSeconds: options.refreshSeconds }),
    ...(options.metrics ? { metrics: options.metrics } : {}),
    log: {
      info() {},
      warn() {},
      error: (message, fields) => options.say(`console: ${message} ${JSON.stringify(fields ?? {})}`),
    },
    onUpstreamError: (error) =>
      options.say(
        `console: a request to the API failed: ${error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)}`,
      ),
    onCode: (code, why) => {
      if (why === 'start') firstCode = code;
      else options.say(loginCodeLine(code, why));
    },
  });
  options.say(`console for ${options.endpoint} at ${server.url}/`);
  options.say(`login code: ${firstCode} (single use; a new one is printed once it is used)`);
  options.say('Ctrl-C stops it.');
  return server;
}
