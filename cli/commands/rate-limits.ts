/**
 * Named rate limits: those in force with their use now, one with its keys' use, new terms for one; and the
 * `--rate-limit` a submission names them with.
 */
import { type Command, Option } from 'commander';
import type { RateLimit, RateLimitTerms, TaskRateLimit } from '#sdk/types';
import type { Cli } from '../context';
import { UsageError } from '../errors';
import { table } from '../format';
import { positiveNumber } from '../input';
import { examples } from './shared';

const PERIODS = ['second', 'minute', 'hour', 'day'] as const;

/** `NAME[=UNITS][@KEY]`: a limit a task takes (its units 1 unless given), and the key of a per-key limit. */
const RATE_LIMIT_ARGUMENT = /^([A-Za-z0-9][A-Za-z0-9._:-]{0,63})(?:=([0-9]+(?:\.[0-9]+)?))?(?:@(.+))?$/;

/** One `--rate-limit` of a submission, read. */
export function taskRateLimitOf(argument: string): TaskRateLimit {
  const match = RATE_LIMIT_ARGUMENT.exec(argument);
  if (!match?.[1]) {
    throw new UsageError(`--rate-limit ${argument}: NAME, NAME=UNITS, NAME@KEY or NAME=UNITS@KEY`);
  }
  const [, name, units, key] = match;
  return {
    name,
    ...(units === undefined ? {} : { units: Number(units) }),
    ...(key === undefined ? {} : { key }),
  };
}

/** A limit's row: its terms, and the use of its window open now. */
const rowOf = (limit: RateLimit) => ({
  name: limit.name,
  limit: `${limit.limit} per ${limit.per}`,
  burst: limit.burst ?? '',
  perKey: limit.perKey ? 'yes' : '',
  window: `${limit.window.start.slice(11, 19)}-${limit.window.end.slice(11, 19)}`,
  used: limit.window.used === undefined ? 'by key' : `${limit.window.used} of ${limit.window.capacity}`,
  source: limit.source,
});

const COLUMNS = ['name', 'limit', 'burst', 'perKey', 'window', 'used', 'source'];

export function rateLimitCommands(program: Command, cli: Cli): void {
  const limits = program
    .command('rate-limits')
    .summary('named rate limits a fleet shares: list them, read one, set one');

  limits
    .command('list')
    .summary('the limits in force, with the use of the window open now')
    .addHelpText(
      'after',
      examples(['agent-scheduler rate-limits list', 'agent-scheduler rate-limits list --json']),
    )
    .action(async () => {
      const all = await cli.operator().listRateLimits();
      cli.print(all, () => (all.length === 0 ? 'no rate limits' : table(all.map(rowOf), COLUMNS)));
    });

  limits
    .command('get')
    .summary('a limit, its window open now and, per key, the keys that used it most')
    .argument('<name>', 'the limit')
    .addHelpText('after', examples(['agent-scheduler rate-limits get openai.tpm']))
    .action(async (name: string) => {
      const limit = await cli.operator().getRateLimit(name);
      cli.print(limit, () =>
        [
          table([rowOf(limit)], COLUMNS),
          ...(limit.keys?.length
            ? [
                '',
                table(
                  limit.keys.map((k) => ({ key: k.key, used: k.used })),
                  ['key', 'used'],
                ),
              ]
            : []),
        ].join('\n'),
      );
    });

  limits
    .command('set')
    .summary('set a limit’s terms: a new limit, or new terms for one in force')
    .argument('<name>', 'the limit: 1 to 64 letters, digits, ".", "_", "-" or ":"')
    .requiredOption(
      '--limit <units>',
      'units a period: a rate’s average, a budget’s whole window',
      positiveNumber,
    )
    .addOption(
      new Option('--per <period>', 'second or minute (a rate), hour or day (a budget, in UTC)')
        .choices(PERIODS)
        .makeOptionMandatory(),
    )
    .option('--burst <units>', 'a rate’s units at once (default: the limit)', positiveNumber)
    .option('--per-key', 'each key a task names has windows of its own')
    .addHelpText(
      'after',
      examples([
        'agent-scheduler rate-limits set openai.tpm --limit 90000 --per minute --burst 30000',
        'agent-scheduler rate-limits set tenant.usd --limit 25 --per day --per-key',
      ]),
    )
    .action(
      async (
        name: string,
        options: { limit: number; per: RateLimitTerms['per']; burst?: number; perKey?: boolean },
      ) => {
        const terms: RateLimitTerms = {
          limit: options.limit,
          per: options.per,
          ...(options.burst === undefined ? {} : { burst: options.burst }),
          ...(options.perKey ? { perKey: true } : {}),
        };
        const limit = await cli.operator().setRateLimit(name, terms);
        cli.print(limit, () => table([rowOf(limit)], COLUMNS));
      },
    );
}
