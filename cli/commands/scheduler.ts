/**
 * The whole scheduler: pause it (no grants and no wakes in any queue), resume it, read whether it is paused; rebuild
 * its hints from the task records.
 */
import type { Command } from 'commander';
import type { SchedulerControl } from '#sdk/types';
import type { Cli } from '../context';
import { wholeNumber } from '../input';
import { examples } from './shared';

/** `the scheduler is paused (since 2026-…)`. */
const stateOf = (control: SchedulerControl) =>
  `the scheduler is ${control.paused ? 'paused' : 'running'}${control.updatedAt ? ` (since ${control.updatedAt})` : ''}`;

export function schedulerCommands(program: Command, cli: Cli): void {
  const scheduler = program
    .command('scheduler')
    .summary('the whole scheduler: pause it (no grants, no wakes in any queue), resume it, read its state');

  scheduler
    .command('pause')
    .summary(
      'no grants and no wakes in any queue within 2 s; sweeps and schedule fires go on, their tasks queue',
    )
    .addHelpText('after', examples(['agent-scheduler scheduler pause']))
    .action(async () => {
      const control = await cli.operator().pauseScheduler();
      cli.print(control, () => stateOf(control));
    });

  scheduler
    .command('resume')
    .summary('give tasks to claims again, and wake the idle agents of every queue not paused on its own')
    .addHelpText('after', examples(['agent-scheduler scheduler resume']))
    .action(async () => {
      const control = await cli.operator().resumeScheduler();
      cli.print(control, () => stateOf(control));
    });

  scheduler
    .command('rebuild')
    .summary(
      'send every queued task’s hint again from the task records: after purging queues, after a restore from backup',
    )
    .option('--limit <n>', 'open tasks each call reads at most (1 to 5000; default 2000)', wholeNumber)
    .addHelpText(
      'after',
      examples(['agent-scheduler scheduler rebuild', 'agent-scheduler scheduler rebuild --json']),
    )
    .action(async (options: { limit?: number }) => {
      const totals = await cli
        .operator()
        .rebuildSchedulerFully(options.limit === undefined ? {} : { limit: options.limit });
      cli.print(
        totals,
        () =>
          `rebuilt in ${totals.calls} call${totals.calls === 1 ? '' : 's'}: ${totals.pendingRuns} queued (${totals.hintsSent} hints sent, ${totals.turnsReplaced} lane turns put in line), ` +
          `${totals.activeRuns} running, ${totals.sessionsScanned} live sessions, ${totals.wakeKeysCleared} wake marks cleared`,
      );
    });

  scheduler
    .command('status')
    .summary('whether the scheduler is paused, and since when')
    .addHelpText(
      'after',
      examples(['agent-scheduler scheduler status', 'agent-scheduler scheduler status --json']),
    )
    .action(async () => {
      const control = await cli.operator().getSchedulerControl();
      cli.print(control, () => stateOf(control));
    });
}
