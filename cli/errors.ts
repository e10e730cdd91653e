/**
 * What goes wrong in the CLI, said so a person can act on it: bad input exits 2 with the command's usage line, a
 * refusal from the server or a server out of reach exits 1 and says which endpoint and where it came from.
 */
import { AgentSchedulerError } from '#sdk/errors';

/** Where a connection's endpoint came from, for the messages that name it (a `CliConnection` is one). */
export interface EndpointOrigin {
  readonly endpoint: string;
  /** Where the endpoint came from. */
  readonly source: 'flags' | 'environment' | 'local.json';
  /** The local.json the endpoint came from, with `source: 'local.json'`. */
  readonly localFile?: string;
}

/** The command line itself is wrong (a flag, a value, a file it names): exit 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Why a connection failed, from the `code` of the error or of one of its causes. */
const REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  UND_ERR_SOCKET: 'connection closed',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  CERT_HAS_EXPIRED: 'its TLS certificate has expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'its TLS certificate is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'its TLS certificate chain is self-signed',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'its TLS certificate cannot be verified',
  ERR_TLS_CERT_ALTNAME_INVALID: 'its TLS certificate is for another host',
  EPROTO: 'TLS handshake failed (is it http, not https?)',
};

/** The first `code` along an error's causes (and an AggregateError's errors), breadth first. */
export function networkCode(error: unknown): string | undefined {
  const queue: unknown[] = [error];
  for (let seen = 0; queue.length > 0 && seen < 20; seen++) {
    const next = queue.shift();
    if (typeof next !== 'object' || next === null) continue;
    const { code, cause, errors } = next as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === 'string' && code in REASONS) return code;
    if (cause !== undefined) queue.push(cause);
    if (Array.isArray(errors)) queue.push(...errors);
  }
  return undefined;
}

/** Where the endpoint came from, as a person would look for it. */
export function describeSource(connection: Pick<EndpointOrigin, 'source' | 'localFile'>): string {
  if (connection.source === 'flags') return '--endpoint';
  if (connection.source === 'environment') return 'AGENT_SCHEDULER_ENDPOINT';
  return connection.localFile ?? 'local.json';
}

export const isLoopbackEndpoint = (endpoint: string) => {
  const host = URL.canParse(endpoint) ? new URL(endpoint).hostname : '';
  return host === 'localhost' || host === '[::1]' || host.startsWith('127.');
};

/**
 * The message for a request that got no answer: which endpoint, why, where the endpoint came from, and what to
 * try. Undefined for any other error.
 */
export function unreachableMessage(
  error: unknown,
  connection: EndpointOrigin,
  timeoutSeconds: number,
): string | undefined {
  if (!(error instanceof AgentSchedulerError) || error.status !== 0) return undefined;
  if (error.code !== 'NetworkError' && error.code !== 'Timeout') return undefined;
  const code = networkCode(error.cause);
  const reason =
    error.code === 'Timeout'
      ? `timed out: no answer within ${timeoutSeconds} s`
      : code
        ? REASONS[code]
        : (error.cause instanceof Error && (error.cause.cause as Error | undefined)?.message) ||
          error.message;
  const local = connection.source === 'local.json' || isLoopbackEndpoint(connection.endpoint);
  const hint = local
    ? 'Is `agent-scheduler dev` (or `npm start`) running?'
    : error.code === 'Timeout'
      ? 'Is the endpoint right, and the network up? --request-timeout waits longer.'
      : 'Is the endpoint right, and the network up?';
  return `cannot reach ${connection.endpoint} (${reason}). ${hint}\nthe endpoint comes from ${describeSource(connection)}`;
}
