/**
 * `dev`: the whole stack on this machine, from a user's project: what `npm start` runs in this repository.
 */
import type { Command } from 'commander';
import type { DevStackArguments } from '#local/dev-stack';
import type { Cli } from '../context';
import { UsageError } from '../errors';
import { collect } from '../input';
import { examples } from './shared';

interface DevOptions extends DevStackArguments {
  readonly queue?: string[];
}

/** The queue served when none is named. */
export const DEV_DEFAULT_QUEUE = 'default';

export function devCommand(program: Command, cli: Cli): void {
  program
    .command('dev')
    .summary('run the whole stack on this machine: emulators, API, supervisor, schedules')
    .description(
      'Runs agent-scheduler on this machine, as it runs in AWS: DynamoDB Local (Java 17+, fetched once into ' +
        '~/.cache/agent-scheduler, or AGENT_SCHEDULER_CACHE_DIR) and an SQS emulator, the same HTTP API on ' +
        'http://127.0.0.1:3000, the supervisor and the schedules. Data is kept in ./.agent-scheduler, where the ' +
        'endpoint and operator token are written (local.json): the other commands and the SDK find them from ' +
        'this folder and the folders below it. Ctrl-C stops everything.',
    )
    .option(
      '--queue <queue>',
      `a task queue to serve (repeat for more; default "${DEV_DEFAULT_QUEUE}")`,
      collect,
    )
    .option('--port <port>', 'the port to listen on (default PORT, or 3000; 0 picks a free one)')
    .option('--data-dir <dir>', 'where data is kept (default .agent-scheduler)')
    .option('--in-memory', 'keep nothing when stopped')
    .option('--lease-ttl-seconds <seconds>', 'how long a lease lives after its last heartbeat')
    .option('--heartbeat-seconds <seconds>', 'how often agents are told to send a heartbeat')
    .option('--supervisor-seconds <seconds>', 'how often the supervisor runs (default 5)')
    .option(
      '--clock-offset-seconds <seconds>',
      'seconds added to the scheduler’s clock (up to a year either way): restart on the same data to see a window roll',
    )
    .option(
      '--otlp-endpoint <url>',
      'send the API’s OpenTelemetry spans to this OTLP/HTTP collector (default TRACING_OTLP_ENDPOINT, or none)',
    )
    .option(
      '--iam',
      'operator routes take AWS Signature V4, as in AWS: signed with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY',
    )
    .addHelpText(
      'after',
      examples([
        'agent-scheduler dev',
        'agent-scheduler dev --queue research --queue emails --port 4000',
        'agent-scheduler dev --in-memory --lease-ttl-seconds 10 --heartbeat-seconds 3',
      ]),
    )
    .action(async ({ queue, ...args }: DevOptions) => {
      // Loaded only here: the emulators and their clients are most of the package, and no other command needs them.
      const { DevStackUsageError, runDevStack } = await import('#local/run-dev-stack');
      await runDevStack(args, {
        command: 'agent-scheduler dev',
        queues: queue ?? [DEV_DEFAULT_QUEUE],
        env: cli.io.env,
      }).catch((error: unknown) => {
        throw error instanceof DevStackUsageError ? new UsageError(error.message) : error;
      });
    });
}
