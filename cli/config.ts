/**
 * Where the CLI sends its requests, and how it proves who it is: flags first, then the environment
 * (`AGENT_SCHEDULER_ENDPOINT`, `AGENT_SCHEDULER_TOKEN`, `AGENT_SCHEDULER_AUTH`), then the first
 * `.agent-scheduler/local.json` found from the current folder up to the filesystem root, written by
 * `agent-scheduler dev` (and `npm start` in this repository).
 *
 * Operator requests to a deployed stack are signed with AWS Signature Version 4 (`iam`); to the local stack they
 * carry the operator token (`token`). The default follows the endpoint: `iam` for an API Gateway host
 * (`*.execute-api.<region>.amazonaws.com`), `token` for anything else, so a custom domain needs `--auth iam`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { type EndpointOrigin, UsageError } from './errors';

export type OperatorAuth = 'iam' | 'token';

export interface CliConnection extends EndpointOrigin {
  readonly auth: OperatorAuth;
  /** The bearer token: the operator's with `token`, or an agent's. */
  readonly token?: string;
  /** The region requests are signed for, with `iam`. */
  readonly region?: string;
}

interface LocalJson {
  endpoint?: string;
  operatorToken?: string;
  auth?: string;
  region?: string;
}

/** The region of an API Gateway endpoint (`abc123.execute-api.eu-west-1.amazonaws.com`), if it is one. */
export function executeApiRegion(endpoint: string): string | undefined {
  const host = URL.canParse(endpoint) ? new URL(endpoint).hostname : '';
  return /^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$/.exec(host)?.[1];
}

/** The first `.agent-scheduler/local.json` in `from` or a folder above it, up to the root. */
export function findLocalFile(from: string): string | undefined {
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    const file = join(dir, '.agent-scheduler', 'local.json');
    if (existsSync(file)) return file;
    if (dirname(dir) === dir) return undefined;
  }
}

function readLocalFile(file: string): LocalJson {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    const why = error instanceof SyntaxError ? 'it is not JSON' : (error as Error).message;
    throw new UsageError(`cannot read ${file}: ${why} (agent-scheduler dev writes it again)`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(
      `cannot read ${file}: it is not a JSON object (agent-scheduler dev writes it again)`,
    );
  }
  return value as LocalJson;
}

export function resolveConnection(
  flags: { endpoint?: string; token?: string; auth?: string; region?: string },
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): CliConnection {
  const given = flags.endpoint ?? env.AGENT_SCHEDULER_ENDPOINT;
  const localFile = findLocalFile(cwd);
  // Read only when needed: a broken local.json does not stop commands that name their endpoint and token.
  let read: LocalJson | undefined;
  const local = (): LocalJson => {
    read ??= localFile ? readLocalFile(localFile) : {};
    return read;
  };
  const endpoint = given ?? local().endpoint;
  if (!endpoint) {
    throw new UsageError(
      localFile
        ? `no endpoint in ${localFile}: pass --endpoint, set AGENT_SCHEDULER_ENDPOINT, or run \`agent-scheduler dev\` again`
        : 'no endpoint: pass --endpoint, set AGENT_SCHEDULER_ENDPOINT, or run `agent-scheduler dev` (`npm start` in its repository) in this folder or one above',
    );
  }
  const source = flags.endpoint ? 'flags' : env.AGENT_SCHEDULER_ENDPOINT ? 'environment' : 'local.json';
  if (!/^https?:\/\/[^/]/.test(endpoint) || !URL.canParse(endpoint)) {
    const from = { flags: '--endpoint', environment: 'AGENT_SCHEDULER_ENDPOINT', 'local.json': localFile }[
      source
    ];
    throw new UsageError(`the endpoint must be an http(s) URL, not ${endpoint} (from ${from})`);
  }
  const apiRegion = executeApiRegion(endpoint);
  const fromLocal = source === 'local.json';
  const auth =
    flags.auth ??
    env.AGENT_SCHEDULER_AUTH ??
    (fromLocal ? local().auth : undefined) ??
    (apiRegion ? 'iam' : 'token');
  if (auth !== 'iam' && auth !== 'token') throw new UsageError(`--auth must be iam or token, not ${auth}`);
  // The operator token of local.json belongs to its local stack: it goes to that endpoint only, never to another
  // one or to a signed endpoint.
  const sameStack = () => fromLocal || (localFile !== undefined && sameEndpoint(endpoint, local().endpoint));
  const token =
    flags.token ??
    env.AGENT_SCHEDULER_TOKEN ??
    (auth === 'token' && sameStack() ? local().operatorToken : undefined);
  const region =
    flags.region ??
    apiRegion ??
    (fromLocal ? local().region : undefined) ??
    env.AWS_REGION ??
    env.AWS_DEFAULT_REGION;
  if (auth === 'iam' && !region) {
    throw new UsageError('--auth iam signs for a region: pass --region or set AWS_REGION');
  }
  return {
    endpoint,
    auth,
    ...(token ? { token } : {}),
    ...(region ? { region } : {}),
    source,
    ...(fromLocal && localFile ? { localFile } : {}),
  };
}

/** Whether two endpoints are the same API, a trailing slash aside. */
export const sameEndpoint = (a: string, b: string | undefined): boolean =>
  b !== undefined && a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

/**
 * The user's configuration folder for the CLI: `$XDG_CONFIG_HOME/agent-scheduler`, or
 * `~/.config/agent-scheduler` (an `XDG_CONFIG_HOME` that is not absolute is ignored, as the XDG spec says).
 */
export function userConfigDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg && isAbsolute(xdg) ? xdg : join(env.HOME || homedir(), '.config');
  return join(base, 'agent-scheduler');
}
