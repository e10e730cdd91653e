/**
 * Tasks: submit, get, list, cancel, redrive, clear-attention.
 */
import { type Command, Option } from 'commander';
import { TaskWaitTimeoutError } from '#sdk/task-waiter';
import type {
  FollowUpTaskInput,
  LinkedTask,
  Priority,
  SubmitTaskInput,
  Task,
  TaskLinks,
  TaskProgress,
  TaskStatus,
} from '#sdk/types';
import { PRIORITIES, TASK_STATUSES } from '#sdk/vocabulary';
import { paintStatus } from '../colour';
import { type Cli, SafeText } from '../context';
import { UsageError } from '../errors';
import { record, table } from '../format';
import { collect, jsonArgument, positiveNumber, requirementsOf, wholeNumber } from '../input';
import { taskRateLimitOf } from './rate-limits';
import { defined, examples } from './shared';

/** `submit --wait`: the task ended, but not in success (dead or cancelled). */
export const EXIT_TASK_FAILED = 3;
/** `submit --wait`: the task had not ended when --wait-timeout ran out (it may still end). */
export const EXIT_WAIT_TIMEOUT = 4;

const TASK_COLUMNS = [
  'taskId',
  'queue',
  'priority',
  'status',
  'attempt',
  'leaseEpoch',
  'owner',
  'createdAt',
  'updatedAt',
];

export function taskCommands(program: Command, cli: Cli): void {
  submitCommand(program, cli);
  getCommand(program, cli);
  linksCommand(program, cli);
  listCommand(program, cli);
  endCommands(program, cli);
}

function submitCommand(program: Command, cli: Cli): void {
  program
    .command('submit')
    .summary('submit a task (or a batch of up to 25)')
    .description(
      'Submits a task to a queue. The payload is JSON: inline, @file, or - for standard input. A key names the ' +
        'task: submitting the same key again returns the same task.',
    )
    .option('--queue <queue>', 'the queue the task goes to')
    .option('--payload <json>', 'the task payload: JSON, @file or - (default: {})')
    .addOption(new Option('--priority <priority>', 'the task priority').choices(PRIORITIES))
    .option('--max-attempts <n>', 'attempts before the task is dead (server default 3)', wholeNumber)
    .option('--timeout <seconds>', 'how long one attempt may run (server default 900)', wholeNumber)
    .option('--delay <seconds>', 'wait this long before the task can be claimed', wholeNumber)
    .option('--key <key>', 'an idempotency key (default: a new one)')
    .option('--concurrency-key <key>', 'whose task it is: keys of a queue take turns, and share no limit')
    .option(
      '--require <name=value>',
      'a label the agent that runs it must have: NAME=VALUE, or NAME (any value); repeatable, up to 8',
      collect,
    )
    .option(
      '--rate-limit <limit>',
      'a named rate limit its attempts take units of: NAME, NAME=UNITS, NAME@KEY (per-key) or NAME=UNITS@KEY; repeatable, up to 4',
      collect,
    )
    .option('--ttl <seconds>', 'expire if not started this long after it may first be claimed', wholeNumber)
    .option('--expires-at <time>', 'expire if not started by this time (ISO 8601 with offset)')
    .option('--depends-on <ids>', 'task ids (comma-separated) that must all succeed before this one runs')
    .addOption(
      new Option(
        '--on-dependency-failure <policy>',
        'when a dependency fails: cancel this task, or run it anyway',
      )
        .choices(['cancel', 'run'])
        .default(undefined),
    )
    .option(
      '--on-failure <json>',
      'a task specification to submit once if this task ends dead: JSON, @file or -',
    )
    .option(
      '--debounce-key <key>',
      'collapse submissions of this key: those within the window become one task, with the latest payload',
    )
    .option(
      '--debounce-window <seconds>',
      'with --debounce-key: the task is claimable once no submission of the key came for this long (1 to 3600)',
      wholeNumber,
    )
    .option(
      '--debounce-max-wait <seconds>',
      'with --debounce-key: claimable this long after the window’s first submission at the latest (default 86400)',
      wholeNumber,
    )
    .option(
      '--traceparent <traceparent>',
      'the W3C trace context the task joins (00-<trace id>-<span id>-<flags>): its agent’s work is in that trace',
    )
    .option('--tracestate <tracestate>', 'with --traceparent: the W3C tracestate beside it')
    .option('--batch <json>', 'an array of up to 25 task specifications: JSON, @file or -')
    .option(
      '--wait',
      `wait for the task to end and print it: exit 0 if it succeeded, ${EXIT_TASK_FAILED} if it ended dead, ` +
        `cancelled or expired, ${EXIT_WAIT_TIMEOUT} if --wait-timeout ran out first`,
    )
    .option(
      '--wait-timeout <seconds>',
      'with --wait: stop waiting after this long (default: no limit)',
      positiveNumber,
    )
    .addHelpText(
      'after',
      examples([
        `agent-scheduler submit --queue research --payload '{"topic":"tides"}'`,
        'agent-scheduler submit --queue research --payload @task.json --priority high --key tides-2026',
        'agent-scheduler submit --batch @tasks.json --json',
        `agent-scheduler submit --queue triage --payload @event.json --debounce-key issue-42 --debounce-window 30`,
        'agent-scheduler submit --queue research --payload @task.json --rate-limit openai.tpm=2000 --rate-limit tenant.usd=0.4@acme',
        'agent-scheduler submit --queue research --payload @task.json --wait --wait-timeout 600 --json',
      ]),
    )
    .action(async (options: SubmitOptions) => {
      cli.exitCode = await submit(cli, options);
    });
}

function getCommand(program: Command, cli: Cli): void {
  program
    .command('get')
    .summary('show a task, with its payload size, result and error')
    .argument('<task-id>', 'the task id (t_...)')
    .option('--payload', 'with the payload as submitted (read from S3 for a large one)')
    .option(
      '--follow',
      `print its progress as it is reported until it ends, then the task: exit 0 if it succeeded, ${EXIT_TASK_FAILED} ` +
        `if it ended otherwise, ${EXIT_WAIT_TIMEOUT} if --follow-timeout ran out first`,
    )
    .option(
      '--follow-timeout <seconds>',
      'with --follow: stop after this long (default: no limit)',
      positiveNumber,
    )
    .addHelpText(
      'after',
      examples([
        'agent-scheduler get t_abc...',
        'agent-scheduler get t_abc... --json',
        'agent-scheduler get t_abc... --payload',
        'agent-scheduler get t_abc... --follow',
      ]),
    )
    .action(
      async (taskId: string, options: { payload?: boolean; follow?: boolean; followTimeout?: number }) => {
        if (options.followTimeout !== undefined && !options.follow)
          throw new UsageError('--follow-timeout goes with --follow');
        if (options.follow && options.payload)
          throw new UsageError('--follow prints the task without its payload');
        if (options.follow) {
          const client = cli.operator({ push: await cli.pushOptions() });
          cli.exitCode = await follow(cli, client, taskId, options.followTimeout);
          return;
        }
        printTask(cli, await cli.operator().getTask(taskId, { includePayload: options.payload === true }));
      },
    );
}

/** The tasks linked to a task, a row each: how it is linked, its id, status and queue. */
function linksCommand(program: Command, cli: Cli): void {
  program
    .command('links')
    .summary(
      "show a task's parent, root, children, dependencies, dependents and failure hook, with their statuses",
    )
    .argument('<task-id>', 'the task id (t_...)')
    .addHelpText(
      'after',
      examples(['agent-scheduler links t_abc...', 'agent-scheduler links t_abc... --json']),
    )
    .action(async (taskId: string) => {
      const links = await cli.operator().getTaskLinks(taskId);
      cli.print(links, () => {
        const rows = linkRows(links);
        if (rows.length === 0) return `${links.taskId} has no linked task`;
        const more = [
          links.childrenTruncated ? 'more children than listed' : '',
          links.dependentsTruncated ? 'more dependents than listed' : '',
        ].filter(Boolean);
        const c = cli.colours;
        const text = table(rows, ['link', 'taskId', 'status', 'queue'], (column, cell) =>
          column === 'status' ? paintStatus(c, cell.trim(), cell) : cell,
        );
        return new SafeText(more.length === 0 ? text : `${text}\n(${more.join('; ')})`);
      });
    });
}

/** One row per linked task, in the order a reader follows a tree: up, down, before, after, on failure. */
function linkRows(links: TaskLinks): Record<string, unknown>[] {
  const row = (link: string, task: LinkedTask | undefined) =>
    task
      ? [{ link, taskId: task.taskId, status: task.status ?? '(not there)', queue: task.queue ?? '' }]
      : [];
  return [
    ...row('parent', links.parent),
    ...(links.root && links.root.taskId !== links.parent?.taskId ? row('root', links.root) : []),
    ...links.children.flatMap((task) => row('child', task)),
    ...links.dependencies.flatMap((task) => row('dependency', task)),
    ...links.dependents.flatMap((task) => row('dependent', task)),
    ...row('failure of', links.failureOf),
    ...row('on failure', links.onFailure),
  ];
}

function listCommand(program: Command, cli: Cli): void {
  program
    .command('list')
    .summary('list tasks, newest first, a page at a time')
    .option('--queue <queue>', 'only this queue')
    .addOption(new Option('--status <status>', 'only tasks with this status').choices(TASK_STATUSES))
    .option('--limit <n>', 'tasks on the page, 1 to 100 (server default 50)', wholeNumber)
    .option('--cursor <cursor>', 'the page after the one that printed this cursor')
    .option('--key <key>', 'only tasks of this concurrency key')
    .option('--created-after <time>', 'only tasks created at or after this ISO 8601 time (with its offset)')
    .option('--created-before <time>', 'only tasks created before this ISO 8601 time (with its offset)')
    .option(
      '--attention',
      'only tasks the starvation ladder marked as needing attention (a filter on the tasks read, as --status is)',
    )
    .addHelpText(
      'after',
      examples([
        'agent-scheduler list',
        'agent-scheduler list --queue research --status dead --limit 20',
        'agent-scheduler list --attention',
        'agent-scheduler list --created-after 2026-11-25T09:00:00Z --created-before 2026-11-25T10:00:00Z',
        'agent-scheduler list --cursor <the cursor printed under the previous page>',
      ]),
    )
    .action(
      async (options: {
        queue?: string;
        status?: TaskStatus;
        limit?: number;
        cursor?: string;
        createdAfter?: string;
        createdBefore?: string;
        key?: string;
        attention?: boolean;
      }) => {
        const { key, ...filter } = options;
        const page = await cli.operator().listTasks(defined({ ...filter, concurrencyKey: key }));
        cli.print(page, () => {
          const c = cli.colours;
          const rows = table(
            page.tasks as unknown as Record<string, unknown>[],
            TASK_COLUMNS,
            (column, text) => (column === 'status' ? paintStatus(c, text) : text),
          );
          return new SafeText(
            page.nextCursor ? `${rows}\n${c.dim(`older: --cursor ${page.nextCursor}`)}` : rows,
          );
        });
      },
    );
}

/** Cancel and redrive: a task sent to an end, or back from one; and the attention mark cleared. */
function endCommands(program: Command, cli: Cli): void {
  program
    .command('cancel')
    .summary('cancel an open task (with --cascade, its open descendants too)')
    .argument('<task-id>', 'the task id (t_...)')
    .option(
      '--cascade',
      'cancel every open descendant too (children, theirs, …); the supervisor finishes a large tree',
    )
    .addHelpText(
      'after',
      examples(['agent-scheduler cancel t_abc...', 'agent-scheduler cancel t_abc... --cascade']),
    )
    .action(async (taskId: string, options: { cascade?: boolean }) => {
      const task = await cli.operator().cancelTask(taskId, options.cascade ? { cascade: true } : {});
      cli.print(task, () => {
        const tree = task.cascade;
        if (!tree) return `${task.taskId} is ${task.status}`;
        const left = tree.done ? 'done' : `${tree.pending} to look at still; the supervisor finishes them`;
        return `${task.taskId} is ${task.status}; ${tree.cancelled} descendants cancelled, ${left}`;
      });
    });
  program
    .command('redrive')
    .summary('send a dead task back to its queue, with fresh attempts')
    .argument('<task-id>', 'the task id (t_...)')
    .addHelpText('after', examples(['agent-scheduler redrive t_abc...']))
    .action(async (taskId: string) => {
      const task = await cli.operator().redriveTask(taskId);
      cli.print(task, () => `${task.taskId} is ${task.status}`);
    });
  program
    .command('clear-attention')
    .summary('clear the mark the starvation ladder left on a task that waited too long')
    .description(
      'Clears needsAttention on a task (list --attention lists the marked ones); nothing else of the task ' +
        'changes. A task not marked is printed as it is.',
    )
    .argument('<task-id>', 'the task id (t_...)')
    .addHelpText(
      'after',
      examples(['agent-scheduler list --attention', 'agent-scheduler clear-attention t_abc...']),
    )
    .action(async (taskId: string) => {
      const task = await cli.operator().clearAttention(taskId);
      cli.print(task, () => `${task.taskId} is ${task.status}; attention cleared`);
    });
}

interface SubmitOptions {
  readonly queue?: string;
  readonly payload?: string;
  readonly priority?: Priority;
  readonly maxAttempts?: number;
  readonly timeout?: number;
  readonly delay?: number;
  readonly key?: string;
  readonly concurrencyKey?: string;
  readonly rateLimit?: string[];
  readonly require?: string[];
  readonly ttl?: number;
  readonly expiresAt?: string;
  readonly onFailure?: string;
  readonly dependsOn?: string;
  readonly onDependencyFailure?: 'cancel' | 'run';
  readonly debounceKey?: string;
  readonly debounceWindow?: number;
  readonly debounceMaxWait?: number;
  readonly traceparent?: string;
  readonly tracestate?: string;
  readonly batch?: string;
  readonly wait?: boolean;
  readonly waitTimeout?: number;
}

/** A task as a record, its status coloured; its JSON with --json. */
function printTask(cli: Cli, task: Task): void {
  cli.print(task, () => {
    const c = cli.colours;
    const text = record(task as unknown as Record<string, unknown>);
    return new SafeText(
      text.replace(
        /^(status\s+)(\S+)$/m,
        (_, label: string, status: string) => label + paintStatus(c, status),
      ),
    );
  });
}

/** How a submission went, in words: a new task, one its key named already, or a debounce window joined. */
const submitted = (result: { readonly created?: boolean; readonly debounced?: boolean }): string =>
  result.debounced ? 'debounced into' : result.created ? 'submitted' : 'already submitted';

/** `debounce` from its three flags: the key and the window go together, the longest wait only with them. */
function debounceOf(options: SubmitOptions): SubmitTaskInput['debounce'] {
  const { debounceKey: key, debounceWindow: windowSeconds, debounceMaxWait: maxWaitSeconds } = options;
  if (key === undefined && windowSeconds === undefined && maxWaitSeconds === undefined) return undefined;
  if (key === undefined || windowSeconds === undefined)
    throw new UsageError('--debounce-key and --debounce-window go together (--debounce-max-wait with them)');
  return { key, windowSeconds, ...(maxWaitSeconds === undefined ? {} : { maxWaitSeconds }) };
}

async function submit(cli: Cli, options: SubmitOptions): Promise<number> {
  if (options.waitTimeout !== undefined && !options.wait)
    throw new UsageError('--wait-timeout goes with --wait');
  if (options.batch !== undefined && options.wait)
    throw new UsageError('--wait waits for one task; submit a batch without it');
  if (options.batch !== undefined) {
    const specs = jsonArgument('batch', options.batch, cli.io.readStdin);
    if (!Array.isArray(specs)) throw new UsageError('--batch must be a JSON array of task specifications');
    const results = await cli.operator().submitTasks(specs as SubmitTaskInput[]);
    cli.print(results, () =>
      results
        .map((r, i) =>
          r.ok
            ? `${i}  ${submitted(r)} ${r.task.taskId}`
            : `${i}  ${r.status} ${r.error.code}: ${r.error.message}`,
        )
        .join('\n'),
    );
    return results.every((r) => r.ok) ? 0 : 1;
  }
  if (!options.queue) throw new UsageError('submit needs --queue (or --batch)');
  const debounce = debounceOf(options);
  const payload =
    options.payload === undefined ? {} : jsonArgument('payload', options.payload, cli.io.readStdin);
  const client = options.wait ? cli.operator({ push: await cli.pushOptions() }) : cli.operator();
  const result = await client.submitTask(
    defined({
      queue: options.queue,
      payload,
      priority: options.priority,
      maxAttempts: options.maxAttempts,
      timeoutSeconds: options.timeout,
      delaySeconds: options.delay,
      idempotencyKey: options.key,
      concurrencyKey: options.concurrencyKey,
      rateLimits: options.rateLimit?.map(taskRateLimitOf),
      require: requirementsOf(options.require),
      ttlSeconds: options.ttl,
      dependsOn: options.dependsOn
        ?.split(',')
        .map((id) => id.trim())
        .filter((id) => id !== ''),
      onDependencyFailure: options.onDependencyFailure,
      expiresAt: options.expiresAt,
      debounce,
      traceparent: options.traceparent,
      tracestate: options.tracestate,
      onFailure:
        options.onFailure === undefined
          ? undefined
          : (jsonArgument('on-failure', options.onFailure, cli.io.readStdin) as FollowUpTaskInput),
    }),
  );
  if (!options.wait) {
    cli.print(result, () => `${submitted(result)} ${result.task.taskId}`);
    return 0;
  }
  // With --json, the one document printed is the task as it ended.
  if (!cli.globals.json) cli.say(`${submitted(result)} ${result.task.taskId}, waiting`);
  return follow(cli, client, result.task.taskId, options.waitTimeout);
}

/**
 * Follows a task to its end: its progress reports printed as they come (not with --json, whose one document is the
 * task as it ended), then the task; the exit code says how it ended.
 */
async function follow(
  cli: Cli,
  client: ReturnType<Cli['operator']>,
  taskId: string,
  timeoutSeconds: number | undefined,
): Promise<number> {
  let task: Task;
  try {
    task = await client.watchTask(taskId, {
      ...(timeoutSeconds === undefined ? {} : { timeoutMs: timeoutSeconds * 1_000 }),
      onProgress: (progress) => {
        if (!cli.globals.json) cli.say(progressLine(progress));
      },
    });
  } catch (error) {
    if (!(error instanceof TaskWaitTimeoutError)) throw error;
    const last = error.lastStatus ? `; it was ${error.lastStatus}` : '';
    cli.complain(
      `task ${taskId} did not end within ${timeoutSeconds} s${last}. It may still end: agent-scheduler get ${taskId}`,
    );
    return EXIT_WAIT_TIMEOUT;
  }
  printTask(cli, task);
  if (task.status === 'succeeded') return 0;
  cli.complain(`task ${taskId} ended ${task.status}${task.error ? `: ${task.error.message}` : ''}`);
  return EXIT_TASK_FAILED;
}

/** `progress  40%  planning  {"step":2}`: what the report says, as one line. */
export const progressLine = (progress: TaskProgress): string =>
  [
    'progress',
    progress.percent === undefined ? undefined : `${Math.round(progress.percent * 10) / 10}%`,
    progress.message,
    progress.data === undefined ? undefined : JSON.stringify(progress.data),
  ]
    .filter((part) => part !== undefined)
    .join('  ');
