/**
 * What every command shares: the global options, the connection (resolved when a command first needs it, so help
 * and usage errors need no endpoint), and output that is escaped, coloured only for people, and JSON with --json.
 */

import { AgentSchedulerClient, type AgentSchedulerClientOptions } from '#sdk/client';
import type { PushOptions, WebSocketConstructor } from '#sdk/push-channel';
import { type Colours, colours, colourWanted } from './colour';
import { type CliConnection, resolveConnection } from './config';
import { printable, type Row, table } from './format';

/**
 * Signs with AWS credentials, loading AWS's signer and credential chain at the first request it signs: about 0.2 s
 * of imports, half the CLI's start, that commands signing nothing (a local stack's token, --help, --version) skip.
 */
function iamSignerOnFirstUse(region: string): (request: Request) => Promise<Request> {
  let signer: Promise<(request: Request) => Promise<Request>> | undefined;
  return async (request) => {
    signer ??= import('#console/aws-signer').then(({ iamSigner }) => iamSigner(region));
    return (await signer)(request);
  };
}

export interface CliIo {
  /** Writes a line to standard output. */
  readonly write: (text: string) => void;
  /** Writes a line to standard error. */
  readonly writeErr: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  readonly stdoutIsTTY: boolean;
  readonly stderrIsTTY: boolean;
  readonly readStdin: () => string;
}

export interface GlobalOptions {
  readonly endpoint?: string;
  readonly token?: string;
  readonly auth?: 'iam' | 'token';
  readonly region?: string;
  readonly json?: boolean;
  /** Seconds one attempt of a request may take. */
  readonly requestTimeout?: number;
}

/** Text the CLI made safe itself: escaped where it came from elsewhere, coloured by the CLI. */
export class SafeText {
  constructor(readonly text: string) {}
}

export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 30;

export class Cli {
  globals: GlobalOptions = {};
  /** The command running, as its usage line names it: for the hint a usage error ends with. */
  running: { readonly path: string; readonly usage: string } | undefined;
  /** What the process exits with when the command ends without an error (a batch with refused items: 1). */
  exitCode = 0;
  private resolved: CliConnection | undefined;

  constructor(readonly io: CliIo) {}

  /** The connection, once a command has resolved it (for error messages). */
  get connection(): CliConnection | undefined {
    return this.resolved;
  }

  get timeoutSeconds(): number {
    return this.globals.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_SECONDS;
  }

  /** Where to send requests and how to sign them, from the flags, the environment or local.json. */
  connect(): CliConnection {
    const { endpoint, token, auth, region } = this.globals;
    this.resolved ??= resolveConnection(
      {
        ...(endpoint !== undefined ? { endpoint } : {}),
        ...(token !== undefined ? { token } : {}),
        ...(auth !== undefined ? { auth } : {}),
        ...(region !== undefined ? { region } : {}),
      },
      this.io.env,
      this.io.cwd,
    );
    return this.resolved;
  }

  /** A client for operator requests (or, with an agent token, for that agent). */
  operator(extra: Pick<AgentSchedulerClientOptions, 'push'> = {}): AgentSchedulerClient {
    const connection = this.connect();
    return new AgentSchedulerClient({
      ...extra,
      endpoint: connection.endpoint,
      timeoutMs: this.timeoutSeconds * 1_000,
      ...(connection.auth === 'iam'
        ? { signer: iamSignerOnFirstUse(connection.region ?? '') }
        : connection.token
          ? { token: connection.token }
          : {}),
    });
  }

  /** A client that acts as the agent whose token it is given. */
  agent(token: string): AgentSchedulerClient {
    return new AgentSchedulerClient({
      endpoint: this.connect().endpoint,
      token,
      timeoutMs: this.timeoutSeconds * 1_000,
    });
  }

  /**
   * The push channel for waits: the global WebSocket where there is one (Node.js 22), else `ws`, which the CLI
   * ships with (the SDK alone would look for it among the user's packages). None at all: the waits poll.
   */
  async pushOptions(): Promise<PushOptions> {
    if (typeof (globalThis as { WebSocket?: unknown }).WebSocket === 'function') return {};
    try {
      const { WebSocket } = await import('ws');
      return { WebSocket: WebSocket as WebSocketConstructor };
    } catch {
      return {};
    }
  }

  /** An error line to standard error, escaped, as the CLI's own errors are. */
  complain(message: string): void {
    this.io.writeErr(`${this.errorColours.red('error:')} ${printable(message)}`);
  }

  /** Colours for standard output: only on a terminal, never with --json or NO_COLOR. */
  get colours(): Colours {
    return colours(
      colourWanted({ isTTY: this.io.stdoutIsTTY, env: this.io.env, json: this.globals.json === true }),
    );
  }

  /** Colours for standard error, on the same terms. */
  get errorColours(): Colours {
    return colours(
      colourWanted({ isTTY: this.io.stderrIsTTY, env: this.io.env, json: this.globals.json === true }),
    );
  }

  /** A line to standard output, escaped: names, messages and results come from the server and other agents. */
  say(text: string | SafeText): void {
    this.io.write(text instanceof SafeText ? text.text : printable(text));
  }

  /** A result: its JSON with --json, else what `human` makes of it. */
  print(value: unknown, human: () => string | SafeText): void {
    // JSON stays valid: control characters only occur inside its strings, where the escape means the same.
    if (this.globals.json) this.io.write(printable(JSON.stringify(value, null, 2)));
    else this.say(human());
  }

  /** A list of records: its JSON with --json, else a table of `columns`. */
  printTable(rows: readonly object[], columns: readonly string[]): void {
    this.print(rows, () => table(rows as readonly Row[], columns));
  }
}
