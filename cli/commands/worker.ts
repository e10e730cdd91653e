/**
 * `worker`: a ready-made agent that runs a command for each task (payload on stdin, result from stdout).
 *
 * Which agent it runs as:
 * - an agent token (`--token a_...`): that agent;
 * - otherwise: an agent registered (as the operator) for this run, named `worker-<host>`, revoked when the worker
 *   stops (its token is never shown, so no one could use the agent afterwards).
 */
import { hostname } from 'node:os';
import type { Command } from 'commander';
import type { AgentSchedulerClient } from '#sdk/client';
import { isAgentSchedulerError } from '#sdk/errors';
import { Worker } from '#sdk/worker';
import { commandHandler } from '../command-handler';
import type { Cli } from '../context';
import { UsageError } from '../errors';
import { collect, wholeNumber } from '../input';
import { examples } from './shared';

interface WorkerOptions {
  readonly queue?: string[];
  readonly concurrency?: number;
}

export function workerCommand(program: Command, cli: Cli): void {
  program
    .command('worker')
    .summary('run a command for each task of a queue, as an agent')
    .description(
      'Claims tasks of the queues and runs COMMAND for each: the payload on its standard input, its standard ' +
        'output the result (JSON, or { "output": text }). Exit code 0 succeeds, 64 fails for good, any other ' +
        'fails and may be retried. Ctrl-C drains: running tasks finish, no new ones are claimed.\n\n' +
        'Without an agent token, an agent named worker-<host> is registered for the run and revoked when it stops.',
    )
    .requiredOption('--queue <queue>', 'a queue to serve (repeat for more)', collect)
    .option('--concurrency <n>', 'tasks run at once (default 1)', wholeNumber)
    .argument('<command...>', 'the command to run for each task, after --')
    .addHelpText(
      'after',
      examples([
        'agent-scheduler worker --queue research -- ./examples/answer.sh',
        'AGENT_SCHEDULER_TOKEN=a_... agent-scheduler worker --queue research -- ./answer.sh',
      ]),
    )
    .action(async (command: string[], options: WorkerOptions) => {
      cli.exitCode = await runWorker(cli, options, command);
    });
}

async function runWorker(cli: Cli, options: WorkerOptions, command: readonly string[]): Promise<number> {
  const queues = options.queue ?? [];
  const concurrency = options.concurrency ?? 1;
  if (concurrency < 1) throw new UsageError('--concurrency must be 1 or more');
  const connection = cli.connect();
  let token = connection.token?.startsWith('a_') ? connection.token : undefined;
  let throwaway: string | undefined;
  if (!token) {
    const name = `worker-${hostname()}`;
    const created = await cli.operator().createAgent({ name, queues, maxConcurrency: concurrency });
    token = created.token;
    throwaway = created.agent.agentId;
    cli.say(`registered agent ${throwaway} as ${name} for this run`);
  }
  const worker = newWorker(cli, cli.agent(token), command, concurrency, queues);
  await worker.start();
  cli.say(`worker running on ${queues.join(', ')} with concurrency ${concurrency}; Ctrl-C drains and stops`);
  const code = await new Promise<number>((resolve) => {
    const stop = () => {
      cli.say('draining: waiting for running tasks, then stopping');
      worker.stop({ drain: true }).then(
        () => resolve(0),
        () => resolve(0),
      );
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    // A revoked agent's Worker stops by itself: so does the command, and says why.
    worker.on('error', (error) => {
      if (!isAgentSchedulerError(error, 'AgentRevoked')) return;
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      cli.say('the agent was revoked: stopping');
      worker.stop({ drain: false }).then(
        () => resolve(1),
        () => resolve(1),
      );
    });
  });
  if (code === 0 && throwaway) {
    await cli.operator().revokeAgent(throwaway);
    cli.say(`revoked agent ${throwaway}, registered for this run`);
  }
  return code;
}

function newWorker(
  cli: Cli,
  client: AgentSchedulerClient,
  command: readonly string[],
  concurrency: number,
  queues: readonly string[],
): Worker {
  const worker = new Worker({ client, handler: commandHandler(command), concurrency, queues: [...queues] });
  const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));
  worker.on('picked', (task) => cli.say(`picked    ${task.taskId} (attempt ${task.attempt})`));
  worker.on('completed', (task) => cli.say(`completed ${task.taskId}`));
  worker.on('failed', (task, error) => cli.say(`failed    ${task.taskId}: ${reason(error)}`));
  worker.on('lost', (task, why) => cli.say(`lost      ${task.taskId} (${why})`));
  worker.on('error', (error) => cli.say(`error     ${reason(error)}`));
  return worker;
}
