/**
 * Schedules created at run time: list, get, create, delete, and the occurrences of one.
 */
import { type Command, Option } from 'commander';
import type { MissedRunPolicy, OverlapPolicy, Priority } from '#sdk/types';
import { PRIORITIES } from '#sdk/vocabulary';
import type { Cli } from '../context';
import { record } from '../format';
import { jsonArgument } from '../input';
import { defined, examples } from './shared';

/** What the server accepts (`scheduleSpecSchema` in `functions/domain/schedule.ts`). */
const OVERLAP_POLICIES: readonly OverlapPolicy[] = ['skip', 'bufferOne', 'allowAll', 'cancelOther'];
const MISSED_RUN_POLICIES: readonly MissedRunPolicy[] = ['skip', 'runOnce', 'runAll'];

interface CreateOptions {
  readonly name: string;
  readonly expression: string;
  readonly queue: string;
  readonly timeZone?: string;
  readonly payload?: string;
  readonly priority?: Priority;
  readonly overlap?: OverlapPolicy;
  readonly missedRuns?: MissedRunPolicy;
}

export function scheduleCommands(program: Command, cli: Cli): void {
  const schedules = program
    .command('schedules')
    .summary('create, list and delete schedules that submit tasks')
    .addHelpText(
      'after',
      examples([
        `agent-scheduler schedules create --name nightly --expression 'cron(0 2 * * ? *)' --queue research`,
        'agent-scheduler schedules list',
        'agent-scheduler schedules occurrences nightly',
      ]),
    );

  schedules
    .command('list')
    .summary('list schedules, declared and created at run time')
    .action(async () => {
      const list = await cli.operator().listSchedules();
      cli.printTable(list, ['name', 'expression', 'timeZone', 'source', 'enabled', 'task']);
    });

  schedules
    .command('get')
    .summary('show a schedule with its whole task template')
    .argument('<name>', 'the schedule name')
    .action(async (name: string) => {
      const schedule = await cli.operator().getSchedule(name);
      cli.print(schedule, () => record(schedule as unknown as Record<string, unknown>));
    });

  schedules
    .command('create')
    .summary('create a schedule that submits a task at each occurrence')
    .requiredOption('--name <name>', 'the schedule name: 1 to 64 letters, digits, - or _')
    .requiredOption(
      '--expression <expression>',
      'cron(...), rate(...) or at(...), EventBridge Scheduler syntax',
    )
    .requiredOption('--queue <queue>', 'the queue of the tasks it submits')
    .option('--time-zone <zone>', 'the IANA time zone the expression is read in (server default UTC)')
    .option('--payload <json>', 'the payload of each task: JSON, @file or -')
    .addOption(new Option('--priority <priority>', 'the priority of each task').choices(PRIORITIES))
    .addOption(
      new Option(
        '--overlap <policy>',
        'when the previous occurrence’s task is still open (server default skip)',
      ).choices(OVERLAP_POLICIES),
    )
    .addOption(
      new Option(
        '--missed-runs <policy>',
        'occurrences missed while nothing could fire them (server default skip)',
      ).choices(MISSED_RUN_POLICIES),
    )
    .addHelpText(
      'after',
      examples([
        `agent-scheduler schedules create --name nightly --expression 'cron(0 2 * * ? *)' --time-zone Europe/Paris --queue research --payload '{"kind":"digest"}'`,
        `agent-scheduler schedules create --name poll --expression 'rate(5 minutes)' --queue research --overlap bufferOne --missed-runs runOnce`,
      ]),
    )
    .action(async (options: CreateOptions) => {
      const payload =
        options.payload === undefined
          ? undefined
          : jsonArgument('payload', options.payload, cli.io.readStdin);
      const schedule = await cli.operator().createSchedule(
        defined({
          name: options.name,
          expression: options.expression,
          timeZone: options.timeZone,
          task: defined({ queue: options.queue, payload: payload ?? {}, priority: options.priority }),
          overlap: options.overlap,
          missedRuns: options.missedRuns,
        }),
      );
      cli.print(
        schedule,
        () =>
          `created schedule ${schedule.name} (${schedule.expression}, ${schedule.timeZone}; overlap ${schedule.overlap ?? 'skip'}, missed runs ${schedule.missedRuns ?? 'skip'})`,
      );
    });

  schedules
    .command('delete')
    .summary('delete a schedule created at run time')
    .argument('<name>', 'the schedule name')
    .action(async (name: string) => {
      await cli.operator().deleteSchedule(name);
      cli.print({ deleted: name }, () => `deleted schedule ${name}`);
    });

  schedules
    .command('occurrences')
    .summary('the recent occurrences of a schedule, newest first')
    .argument('<name>', 'the schedule name')
    .action(async (name: string) => {
      const occurrences = await cli.operator().listOccurrences(name);
      cli.printTable(occurrences, ['scheduledTime', 'status', 'taskId', 'reason']);
    });
}
