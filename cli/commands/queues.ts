/**
 * Queues: their figures, pause and resume, limits.
 */
import type { Command } from 'commander';
import type { Cli } from '../context';
import { table } from '../format';
import { positiveNumber, wholeNumber } from '../input';
import { defined, examples } from './shared';

export function queueCommands(program: Command, cli: Cli): void {
  program
    .command('queues')
    .summary('show each queue: paused, waiting tasks by priority, running, oldest age')
    .addHelpText('after', examples(['agent-scheduler queues', 'agent-scheduler queues --json']))
    .action(async () => {
      const queues = await cli.operator().listQueues();
      cli.print(queues, () =>
        [
          table(
            queues.map((q) => ({
              name: q.name,
              paused: q.paused,
              critical: q.depth.critical,
              high: q.depth.high,
              normal: q.depth.normal,
              low: q.depth.low,
              running: q.running,
              oldestAgeSeconds: q.oldestAgeSeconds,
            })),
            ['name', 'paused', 'critical', 'high', 'normal', 'low', 'running', 'oldestAgeSeconds'],
          ),
          // A limit set before the bound: kept, and enforced at the bound.
          ...queues
            .filter((q) => q.enforcedLimits)
            .map(
              (q) =>
                `${q.name}: limits ${JSON.stringify(q.limits)} are above the bound; enforced as ${JSON.stringify(q.enforcedLimits)}`,
            ),
        ].join('\n'),
      );
    });

  for (const [verb, summary] of [
    ['pause', 'stop giving the queue’s tasks to claims (sweeps and retries go on)'],
    ['resume', 'give the queue’s tasks to claims again'],
  ] as const) {
    program
      .command(verb)
      .summary(summary)
      .argument('<queue>', 'the queue name')
      .addHelpText('after', examples([`agent-scheduler ${verb} research`]))
      .action(async (queue: string) => {
        const client = cli.operator();
        const control = verb === 'pause' ? await client.pauseQueue(queue) : await client.resumeQueue(queue);
        cli.print(control, () => `${control.name} is ${control.paused ? 'paused' : 'running'}`);
      });
  }

  program
    .command('limits')
    .summary('limit a queue across all agents (no option: remove its limits)')
    .argument('<queue>', 'the queue name')
    .option('--max-concurrency <n>', 'tasks of the queue leased at once (1 to 5,000)', wholeNumber)
    .option('--rate <per-second>', 'claims a second (a token bucket)', positiveNumber)
    .option('--burst <n>', 'claims the bucket takes at once (default: the rate, at least 1)', wholeNumber)
    .option(
      '--per-key-concurrency <n>',
      'tasks of one concurrency key leased at once (1 to 5,000)',
      wholeNumber,
    )
    .addHelpText(
      'after',
      examples([
        'agent-scheduler limits research --max-concurrency 10 --rate 5 --burst 10',
        'agent-scheduler limits research --per-key-concurrency 2',
        'agent-scheduler limits research   # removes the limits',
      ]),
    )
    .action(
      async (
        queue: string,
        options: { maxConcurrency?: number; rate?: number; burst?: number; perKeyConcurrency?: number },
      ) => {
        const control = await cli.operator().setQueueLimits(
          queue,
          defined({
            maxConcurrency: options.maxConcurrency,
            ratePerSecond: options.rate,
            burst: options.burst,
            perKeyConcurrency: options.perKeyConcurrency,
          }),
        );
        cli.print(control, () => `${control.name} limits: ${JSON.stringify(control.limits ?? {})}`);
      },
    );
}
