/**
 * Where the CLI sends its requests, and how it proves who it is: flags first, then the environment
 * (`AGENT_SCHEDULER_ENDPOINT`, `AGENT_SCHEDULER_TOKEN`, `AGENT_SCHEDULER_AUTH`), then `.agent-scheduler/local.json`,
 * written by `npm start`.
 *
 * Operator requests to a deployed stack are signed with AWS Signature Version 4 (`iam`); to the local stack they
 * carry the operator token (`token`). The default follows the endpoint: `iam` for an API Gateway host
 * (`*.execute-api.<region>.amazonaws.com`), `token` for anything else, so a custom domain needs `--auth iam`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export type OperatorAuth = 'iam' | 'token';

export interface CliConnection {
  readonly endpoint: string;
  readonly auth: OperatorAuth;
  /** The bearer token: the operator's with `token`, or an agent's. */
  readonly token?: string;
  /** The region requests are signed for, with `iam`. */
  readonly region?: string;
  /** Where the endpoint came from, for error messages. */
  readonly source: 'flags' | 'environment' | 'local.json';
}

/** The region of an API Gateway endpoint (`abc123.execute-api.eu-west-1.amazonaws.com`), if it is one. */
export function executeApiRegion(endpoint: string): string | undefined {
  const host = URL.canParse(endpoint) ? new URL(endpoint).hostname : '';
  return /^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$/.exec(host)?.[1];
}

export function resolveConnection(
  flags: { endpoint?: string; token?: string; auth?: string; region?: string },
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): CliConnection {
  const localFile = join(cwd, '.agent-scheduler', 'local.json');
  const local = existsSync(localFile)
    ? (JSON.parse(readFileSync(localFile, 'utf8')) as {
        endpoint?: string;
        operatorToken?: string;
        auth?: string;
        region?: string;
      })
    : {};
  const endpoint = flags.endpoint ?? env.AGENT_SCHEDULER_ENDPOINT ?? local.endpoint;
  if (!endpoint) {
    throw new Error(
      'no endpoint: pass --endpoint, set AGENT_SCHEDULER_ENDPOINT, or run `npm start` in this folder',
    );
  }
  const source = flags.endpoint ? 'flags' : env.AGENT_SCHEDULER_ENDPOINT ? 'environment' : 'local.json';
  const apiRegion = executeApiRegion(endpoint);
  const fromLocal = source === 'local.json';
  const auth =
    flags.auth ??
    env.AGENT_SCHEDULER_AUTH ??
    (fromLocal ? local.auth : undefined) ??
    (apiRegion ? 'iam' : 'token');
  if (auth !== 'iam' && auth !== 'token') throw new Error(`--auth must be iam or token, not ${auth}`);
  // The operator token of local.json belongs to the local stack; it is never sent to a signed endpoint.
  const token =
    flags.token ?? env.AGENT_SCHEDULER_TOKEN ?? (auth === 'token' ? local.operatorToken : undefined);
  const region =
    flags.region ??
    apiRegion ??
    (fromLocal ? local.region : undefined) ??
    env.AWS_REGION ??
    env.AWS_DEFAULT_REGION;
  if (auth === 'iam' && !region) {
    throw new Error('--auth iam signs for a region: pass --region or set AWS_REGION');
  }
  return { endpoint, auth, ...(token ? { token } : {}), ...(region ? { region } : {}), source };
}
