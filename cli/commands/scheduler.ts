/**
 * The whole scheduler: pause it (no grants and no wakes in any queue), resume it, read whether it is paused, read
 * the supervisor's figures; rebuild its hints from the task records.
 */
import type { Command } from 'commander';
import type { CycleFigures, CycleIds, SchedulerControl, SchedulerStats } from '#sdk/types';
import type { Cli } from '../context';
import { ago, table } from '../format';
import { wholeNumber } from '../input';
import { examples } from './shared';

/** `the scheduler is paused (since 2026-…)`. */
const stateOf = (control: SchedulerControl) =>
  `the scheduler is ${control.paused ? 'paused' : 'running'}${control.updatedAt ? ` (since ${control.updatedAt})` : ''}`;

/** One row a figure: its total over every pass, the last pass's, and the first tasks the last pass counted in it. */
function statsText(stats: SchedulerStats): string {
  const { passes, ...totals } = stats.cumulative;
  const last = stats.lastPass;
  const rows = (Object.keys(totals) as (keyof CycleFigures)[]).map((figure) => {
    const ids = last?.ids[figure as keyof CycleIds];
    return {
      figure,
      total: totals[figure],
      lastPass: last?.[figure],
      tasks:
        ids && ids.length > 0
          ? `${ids.slice(0, 3).join(' ')}${ids.length > 3 ? ` +${ids.length - 3}` : ''}`
          : '',
    };
  });
  return [
    last
      ? `${passes} passes; the last at ${last.at} (${ago(last.at)}), ${last.durationMs} ms`
      : `${passes} passes: no pass recorded yet`,
    '',
    table(rows, ['figure', 'total', 'lastPass', 'tasks']),
    ...(stats.lastErrors.length === 0
      ? []
      : [
          '',
          `last errors (the pass at ${stats.lastErrors[0]?.at}):`,
          ...stats.lastErrors.map((e) => `  ${e.step}: ${e.name}: ${e.message}`),
        ]),
  ].join('\n');
}

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
    .command('stats')
    .summary(
      'the supervisor’s figures: totals over every pass, the last pass’s with its tasks, the last errors',
    )
    .addHelpText(
      'after',
      examples(['agent-scheduler scheduler stats', 'agent-scheduler scheduler stats --json']),
    )
    .action(async () => {
      const stats = await cli.operator().getSchedulerStats();
      cli.print(stats, () => statsText(stats));
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
