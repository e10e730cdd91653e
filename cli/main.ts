/**
 * `agent-scheduler`: the command line for operators, and a ready-made agent (`worker`).
 *
 *   agent-scheduler submit --queue research --payload '{"topic":"tides"}'
 *   agent-scheduler worker --queue research -- ./answer.sh
 *
 * One subcommand per verb, each with its own help (`agent-scheduler submit --help`). Endpoint and token come from
 * --endpoint/--token, AGENT_SCHEDULER_ENDPOINT/AGENT_SCHEDULER_TOKEN, or the nearest .agent-scheduler/local.json
 * (see `config.ts`). Tables for people, --json for scripts.
 *
 * Exit codes: 0 done; 1 the server refused or could not be reached; 2 the command line is wrong (the message
 * comes with the command's usage line, not the whole manual). `submit --wait` also exits 3 when the task ended
 * dead or cancelled, 4 when --wait-timeout ran out first.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { AgentSchedulerError } from '#sdk/errors';
import { agentCommands } from './commands/agents';
import { consoleCommand } from './commands/console';
import { devCommand } from './commands/dev';
import { queueCommands } from './commands/queues';
import { rateLimitCommands } from './commands/rate-limits';
import { schedulerCommands } from './commands/scheduler';
import { scheduleCommands } from './commands/schedules';
import { taskCommands } from './commands/tasks';
import { waitpointCommands } from './commands/waitpoints';
import { workerCommand } from './commands/worker';
import { Cli, type CliIo, DEFAULT_REQUEST_TIMEOUT_SECONDS, type GlobalOptions } from './context';
import { UsageError, unreachableMessage } from './errors';
import { printable } from './format';
import { positiveNumber } from './input';

const NAME = 'agent-scheduler';

/** The version of the package the CLI belongs to. */
export const VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** `agent-scheduler agents create`, for messages. */
function pathOf(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

function allCommands(command: Command): Command[] {
  return [command, ...command.commands.flatMap(allCommands)];
}

export function buildProgram(cli: Cli): Command {
  const program = new Command(NAME)
    .description(
      'Serverless task scheduling for worker agents: submit and inspect tasks, run agents, manage queues and ' +
        'schedules.\n\nEndpoint and token come from --endpoint/--token, AGENT_SCHEDULER_ENDPOINT/AGENT_SCHEDULER_TOKEN, ' +
        'or the nearest .agent-scheduler/local.json (written by `agent-scheduler dev` and `npm start`). Exit codes: 0 done, 1 refused or ' +
        'unreachable, 2 a wrong command line; submit --wait: 3 the task ended dead or cancelled, 4 it had not ended in time.',
    )
    .usage('<command> [options]')
    .version(VERSION, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .optionsGroup('Global Options:')
    .option('--endpoint <url>', 'the API endpoint')
    .option('--token <token>', 'the operator token, or an agent’s for worker')
    .addOption(
      new Option(
        '--auth <how>',
        'how operator requests prove who sends them: iam signs them with AWS credentials from the standard ' +
          'chain (the default for an execute-api endpoint), token sends the token',
      ).choices(['iam', 'token']),
    )
    .option('--region <region>', 'the AWS region requests are signed for, with --auth iam')
    .option('--json', 'print JSON, for scripts')
    .option(
      '--request-timeout <seconds>',
      `give up an attempt of a request after this long (default ${DEFAULT_REQUEST_TIMEOUT_SECONDS})`,
      positiveNumber,
    )
    .configureHelp({ showGlobalOptions: true })
    .showSuggestionAfterError(true)
    .exitOverride();

  program.commandsGroup('Tasks:');
  taskCommands(program, cli);
  program.commandsGroup('Queues:');
  queueCommands(program, cli);
  schedulerCommands(program, cli);
  program.commandsGroup('Agents:');
  agentCommands(program, cli);
  workerCommand(program, cli);
  program.commandsGroup('Waitpoints:');
  waitpointCommands(program, cli);
  rateLimitCommands(program, cli);
  program.commandsGroup('Schedules:');
  scheduleCommands(program, cli);
  program.commandsGroup('Local:');
  devCommand(program, cli);
  consoleCommand(program, cli);
  program.commandsGroup('Help:');
  program.helpCommand('help [command]', 'show the help of a command');

  program.hook('preAction', (_program, action) => {
    cli.globals = action.optsWithGlobals<GlobalOptions>();
    cli.running = { path: pathOf(action), usage: action.usage() };
  });

  // Help to standard output, errors to standard error; a usage error gets the command's usage line and where to
  // read more, not the whole manual.
  for (const command of allCommands(program)) {
    command.exitOverride();
    command.configureOutput({
      writeOut: (text) => cli.io.write(text.replace(/\n$/, '')),
      writeErr: (text) => cli.io.writeErr(text.replace(/\n$/, '')),
      outputError: (text, write) => {
        const c = cli.errorColours;
        const message = printable(text.replace(/\n$/, '')).replace(/^error:/, c.red('error:'));
        const path = pathOf(command);
        write(`${message}\nusage: ${path} ${command.usage()}\nsee \`${path} --help\`\n`);
      },
    });
  }
  return program;
}

const defaultIo = (): CliIo => ({
  write: (text) => console.log(text),
  writeErr: (text) => console.error(text),
  env: process.env,
  cwd: process.cwd(),
  stdoutIsTTY: process.stdout.isTTY === true,
  stderrIsTTY: process.stderr.isTTY === true,
  readStdin: () => readFileSync(0, 'utf8'),
});

/**
 * Runs one command line; returns the exit code. `write` receives each line meant for standard output; `io`
 * replaces the rest of the process's surroundings (environment, folder, terminal) in tests.
 */
export async function main(
  argv: readonly string[],
  write?: (text: string) => void,
  io: Partial<CliIo> = {},
): Promise<number> {
  const cli = new Cli({ ...defaultIo(), ...(write ? { write } : {}), ...io });
  const program = buildProgram(cli);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return cli.exitCode;
  } catch (error) {
    return reportError(cli, error);
  }
}

function reportError(cli: Cli, error: unknown): number {
  // Commander has printed its own message (or the help, or the version) already.
  if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
  const c = cli.errorColours;
  const say = (message: string) => cli.io.writeErr(`${c.red('error:')} ${printable(message)}`);
  if (error instanceof UsageError) {
    say(error.message);
    // The same hint Commander's own usage errors end with.
    const running = cli.running;
    if (running) cli.io.writeErr(`usage: ${running.path} ${running.usage}\nsee \`${running.path} --help\``);
    return 2;
  }
  const connection = cli.connection;
  const unreachable = connection && unreachableMessage(error, connection, cli.timeoutSeconds);
  if (unreachable) {
    say(unreachable);
    return 1;
  }
  if (error instanceof AgentSchedulerError) {
    say(`${error.status} ${error.code}: ${error.message}`);
    return 1;
  }
  say(error instanceof Error ? error.message : String(error));
  return 1;
}

/** The entry of `bin/agent-scheduler.mjs`. */
export function run(argv: readonly string[]): Promise<number> {
  return main(argv);
}
