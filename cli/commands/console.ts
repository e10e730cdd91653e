/**
 * `console`: the web console for the stack the CLI is pointed at, on this machine's loopback. It acts as the
 * operator: every request the page makes goes to the API's operator routes with the CLI's own credentials (signed
 * with AWS Signature Version 4 for a deployed stack), and a browser gets in only with the code printed here.
 */
import type { Command } from 'commander';
import { DEFAULT_METRICS_NAMESPACE } from '#console/cloudwatch';
import type { Cli } from '../context';
import { isLoopbackEndpoint, UsageError } from '../errors';
import { wholeNumber } from '../input';
import { examples } from './shared';

/** Where the console listens when no port is given: beside `agent-scheduler dev`'s 3000. */
export const CONSOLE_DEFAULT_PORT = 3100;

export function consoleCommand(program: Command, cli: Cli): void {
  program
    .command('console')
    .usage('[options]')
    .summary('open the web console for the stack this CLI is pointed at (local or deployed)')
    .description(
      'Serves the web console on http://127.0.0.1 (loopback only) for the endpoint the other commands use ' +
        '(--endpoint, AGENT_SCHEDULER_ENDPOINT or local.json). The page acts as you: its requests go to the ' +
        'API’s operator routes with your credentials, signed with AWS Signature Version 4 for a deployed stack ' +
        '(the standard credential chain: environment, profiles, SSO). A browser signs in with the single-use ' +
        'code printed here; a new one is printed once it is used. Ctrl-C stops it. (`agent-scheduler dev` ' +
        'serves the same console at its own address.)',
    )
    .option(
      '--port <port>',
      `the port to listen on (default ${CONSOLE_DEFAULT_PORT}; 0 picks a free one)`,
      wholeNumber,
    )
    .option(
      '--refresh-seconds <seconds>',
      'how often a shown view reads again, 1 to 3600 (default 2 for a local stack, 10 for a deployed one, where each read is billed)',
      wholeNumber,
    )
    .option(
      '--metrics-namespace <namespace>',
      `the CloudWatch namespace the stack's functions publish to, read (with --auth iam) for the Queues view's last hour (default ${DEFAULT_METRICS_NAMESPACE})`,
    )
    .addHelpText(
      'after',
      examples([
        'agent-scheduler console --endpoint https://abc123.execute-api.eu-west-1.amazonaws.com',
        'AWS_PROFILE=ops agent-scheduler console --endpoint https://api.example.com --auth iam --region eu-west-1',
        'agent-scheduler console --port 0',
      ]),
    )
    .action(
      async ({
        port,
        refreshSeconds,
        metricsNamespace,
      }: {
        port?: number;
        refreshSeconds?: number;
        metricsNamespace?: string;
      }) => {
        if (port !== undefined && (port < 0 || port > 65_535))
          throw new UsageError('--port must be from 0 to 65535');
        if (refreshSeconds !== undefined && (refreshSeconds < 1 || refreshSeconds > 3_600))
          throw new UsageError('--refresh-seconds must be from 1 to 3600');
        const connection = cli.connect();
        // The first request proves the endpoint and the credentials before anyone opens a page.
        await cli.operator().listQueues();
        const [
          { startOperatorConsole },
          { bearerUpstream, signedUpstream },
          { iamSigner, monitoringSigner },
        ] = await Promise.all([
          import('#console/operator-console'),
          import('#console/upstream'),
          // AWS's signer only here, not at the CLI's start: commands that sign nothing skip its imports.
          import('#console/aws-signer'),
        ]);
        const region = connection.region ?? '';
        // With AWS credentials, the Queues view's last hour is read from CloudWatch with them.
        const metrics =
          connection.auth === 'iam' && region !== ''
            ? {
                endpoint: `https://monitoring.${region}.amazonaws.com`,
                namespace: metricsNamespace ?? DEFAULT_METRICS_NAMESPACE,
                send: signedUpstream(monitoringSigner(region)),
              }
            : undefined;
        const running = await startOperatorConsole({
          endpoint: connection.endpoint,
          mode:
            connection.source === 'local.json' || isLoopbackEndpoint(connection.endpoint)
              ? 'local'
              : 'deployed',
          upstream:
            connection.auth === 'iam'
              ? signedUpstream(iamSigner(connection.region ?? ''))
              : bearerUpstream(connection.token ?? ''),
          port: port ?? CONSOLE_DEFAULT_PORT,
          say: (line) => cli.say(line),
          ...(refreshSeconds === undefined ? {} : { refreshSeconds }),
          ...(metrics ? { metrics } : {}),
        }).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'EADDRINUSE') throw error;
          throw new UsageError(
            `port ${port ?? CONSOLE_DEFAULT_PORT} is in use: pick another with --port, or --port 0 for a free one`,
          );
        });
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await running.close();
      },
    );
}
