/**
 * Where the CLI sends its requests, and with which token: flags first, then the environment
 * (`AGENT_SCHEDULER_ENDPOINT`, `AGENT_SCHEDULER_TOKEN`), then `.agent-scheduler/local.json`, written by `npm start`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CliConnection {
  readonly endpoint: string;
  readonly token?: string;
  /** Where the values came from, for error messages. */
  readonly source: 'flags' | 'environment' | 'local.json';
}

export function resolveConnection(
  flags: { endpoint?: string; token?: string },
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): CliConnection {
  const localFile = join(cwd, '.agent-scheduler', 'local.json');
  const local = existsSync(localFile)
    ? (JSON.parse(readFileSync(localFile, 'utf8')) as { endpoint?: string; operatorToken?: string })
    : {};
  const endpoint = flags.endpoint ?? env.AGENT_SCHEDULER_ENDPOINT ?? local.endpoint;
  const token = flags.token ?? env.AGENT_SCHEDULER_TOKEN ?? local.operatorToken;
  if (!endpoint) {
    throw new Error(
      'no endpoint: pass --endpoint, set AGENT_SCHEDULER_ENDPOINT, or run `npm start` in this folder',
    );
  }
  const source = flags.endpoint ? 'flags' : env.AGENT_SCHEDULER_ENDPOINT ? 'environment' : 'local.json';
  return { endpoint, ...(token ? { token } : {}), source };
}
