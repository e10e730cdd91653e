/**
 * The whole scheduler: pause it (no grants and no wakes in any queue), resume it, read whether it is paused.
 */
import type { Command } from 'commander';
import type { SchedulerControl } from '#sdk/types';
import type { Cli } from '../context';
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
