/**
 * Waitpoints: the tasks suspended until someone answers them, and the answers (complete with data, reject with a
 * reason).
 */
import type { Command } from 'commander';
import type { Cli } from '../context';
import { table } from '../format';
import { jsonArgument, wholeNumber } from '../input';
import { examples } from './shared';

export function waitpointCommands(program: Command, cli: Cli): void {
  const waitpoints = program
    .command('waitpoints')
    .summary('list the open waitpoints, read one, and complete or reject them');

  waitpoints
    .command('list')
    .summary('the open waitpoints, oldest first')
    .option('--limit <n>', 'waitpoints on the page (1 to 100, default 50)', wholeNumber)
    .option('--cursor <cursor>', 'the page after the one that gave this cursor')
    .addHelpText(
      'after',
      examples(['agent-scheduler waitpoints list', 'agent-scheduler waitpoints list --json']),
    )
    .action(async (options: { limit?: number; cursor?: string }) => {
      const page = await cli.operator().listWaitpoints({
        ...(options.limit === undefined ? {} : { limit: options.limit }),
        ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
      });
      cli.print(page, () =>
        [
          table(
            page.waitpoints.map((w) => ({
              waitpointId: w.waitpointId,
              taskId: w.taskId,
              createdAt: w.createdAt,
              timeoutAt: w.timeoutAt,
              onTimeout: w.onTimeout,
            })),
            ['waitpointId', 'taskId', 'createdAt', 'timeoutAt', 'onTimeout'],
          ),
          ...(page.nextCursor ? [`more: --cursor ${page.nextCursor}`] : []),
        ].join('\n'),
      );
    });

  waitpoints
    .command('get')
    .summary('a waitpoint: open, or how it ended')
    .argument('<waitpointId>', 'the waitpoint (a suspended task names it as waitpointId)')
    .addHelpText('after', examples(['agent-scheduler waitpoints get w_abc...']))
    .action(async (waitpointId: string) => {
      const waitpoint = await cli.operator().getWaitpoint(waitpointId);
      cli.print(waitpoint, () =>
        table(
          [
            {
              waitpointId: waitpoint.waitpointId,
              taskId: waitpoint.taskId,
              status: waitpoint.status,
              timeoutAt: waitpoint.timeoutAt,
              onTimeout: waitpoint.onTimeout,
              resolvedAt: waitpoint.resolvedAt ?? '',
            },
          ],
          ['waitpointId', 'taskId', 'status', 'timeoutAt', 'onTimeout', 'resolvedAt'],
        ),
      );
    });

  waitpoints
    .command('complete')
    .summary('complete a waitpoint: its task resumes with the data')
    .argument('<waitpointId>', 'the waitpoint')
    .option('--data <json>', 'what the resumed task gets: JSON, @file or - (up to 64 KB)')
    .addHelpText(
      'after',
      examples([
        `agent-scheduler waitpoints complete w_abc... --data '{"approved":true}'`,
        'agent-scheduler waitpoints complete w_abc... --data @answer.json',
      ]),
    )
    .action(async (waitpointId: string, options: { data?: string }) => {
      const data =
        options.data === undefined ? undefined : jsonArgument('data', options.data, cli.io.readStdin);
      const waitpoint = await cli
        .operator()
        .completeWaitpoint(waitpointId, data === undefined ? {} : { data });
      cli.print(
        waitpoint,
        () => `${waitpoint.waitpointId} ${waitpoint.status}; task ${waitpoint.taskId} resumes`,
      );
    });

  waitpoints
    .command('reject')
    .summary('reject a waitpoint: its task resumes with the reason')
    .argument('<waitpointId>', 'the waitpoint')
    .requiredOption('--reason <text>', 'why (1 to 2,048 characters)')
    .addHelpText('after', examples([`agent-scheduler waitpoints reject w_abc... --reason 'not this week'`]))
    .action(async (waitpointId: string, options: { reason: string }) => {
      const waitpoint = await cli.operator().rejectWaitpoint(waitpointId, { reason: options.reason });
      cli.print(
        waitpoint,
        () => `${waitpoint.waitpointId} ${waitpoint.status}; task ${waitpoint.taskId} resumes`,
      );
    });
}
