/**
 * `worker`: a ready-made agent that runs a command for each task (payload on stdin, result from stdout).
 *
 * Which agent it runs as:
 * - an agent token (`--token a_...`): that agent;
 * - `--name NAME`: the agent saved for this endpoint and name in the user's configuration folder, registered (as
 *   the operator) on the first start; a saved token the server refuses (the agent was revoked) is said so and
 *   replaced by a new registration;
 * - neither: an agent registered for this run, named `worker-<host>`, revoked when the worker stops (its token is
 *   never shown, so no one could use the agent afterwards).
 */
import { hostname } from 'node:os';
import type { Command } from 'commander';
import type { AgentSchedulerClient } from '#sdk/client';
import { AgentSchedulerError, isAgentSchedulerError } from '#sdk/errors';
import type { PushOptions } from '#sdk/push-channel';
import { Worker } from '#sdk/worker';
import { commandHandler } from '../command-handler';
import { userConfigDir } from '../config';
import type { Cli } from '../context';
import { UsageError } from '../errors';
import { collect, labelsOf, wholeNumber } from '../input';
import { SavedAgents } from '../saved-agents';
import { examples } from './shared';

interface WorkerOptions {
  readonly queue?: string[];
  readonly name?: string;
  readonly concurrency?: number;
  readonly label?: string[];
}

export function workerCommand(program: Command, cli: Cli): void {
  program
    .command('worker')
    .summary('run a command for each task of a queue, as an agent')
    .description(
      'Claims tasks of the queues and runs COMMAND for each: the payload on its standard input, its standard ' +
        'output the result (JSON, or { "output": text }). Exit code 0 succeeds, 64 fails for good, 75 snoozes the ' +
        "task (no attempt used) for the seconds its output names (60 if none: a provider's Retry-After), any " +
        'other fails and may be retried. A line "progress 40 reading" (or "progress {JSON}") on its standard error ' +
        'reports progress. Ctrl-C drains: running tasks finish, no new ones are claimed.\n\n' +
        'With --name, the agent and its token are kept in the user’s configuration folder ' +
        '($XDG_CONFIG_HOME/agent-scheduler or ~/.config/agent-scheduler), so every start with that name is the ' +
        'same agent. Without it, an agent named worker-<host> is registered for the run and revoked when it stops.',
    )
    .requiredOption('--queue <queue>', 'a queue to serve (repeat for more)', collect)
    .option('--name <name>', 'run as the agent saved under this name, registered on the first start')
    .option('--concurrency <n>', 'tasks run at once (default 1)', wholeNumber)
    .option(
      '--label <name=value>',
      'a label the agent offers (repeat for more): given tasks that require it. A saved agent narrows its own to these',
      collect,
    )
    .argument('<command...>', 'the command to run for each task, after --')
    .addHelpText(
      'after',
      examples([
        'agent-scheduler worker --queue research -- ./examples/answer.sh',
        'agent-scheduler worker --name researcher --queue research --concurrency 4 -- python3 answer.py',
        'AGENT_SCHEDULER_TOKEN=a_... agent-scheduler worker --queue research -- ./answer.sh',
      ]),
    )
    .action(async (command: string[], options: WorkerOptions) => {
      cli.exitCode = await runWorker(cli, options, command);
    });
}

/** The agent the worker runs as, and what to do with it when the worker stops. */
interface WorkerAgent {
  readonly agentId?: string;
  readonly token: string;
  /** Registered for this run only: revoked at the end. */
  readonly throwaway: boolean;
}

async function runWorker(cli: Cli, options: WorkerOptions, command: readonly string[]): Promise<number> {
  const queues = options.queue ?? [];
  const labels = labelsOf(options.label);
  const concurrency = options.concurrency ?? 1;
  if (concurrency < 1) throw new UsageError('--concurrency must be 1 or more');
  const connection = cli.connect();
  const given = connection.token?.startsWith('a_') ? connection.token : undefined;
  if (given && options.name) {
    throw new UsageError(
      '--name runs as a saved agent, and the token given (--token or AGENT_SCHEDULER_TOKEN) is an agent’s: give one of them',
    );
  }
  const saved = options.name ? new SavedAgents(userConfigDir(cli.io.env)) : undefined;
  const register = async (name: string, throwaway: boolean): Promise<WorkerAgent> => {
    const created = await cli.operator().createAgent({
      name,
      queues,
      maxConcurrency: concurrency,
      ...(labels ? { labels } : {}),
    });
    const agent = { agentId: created.agent.agentId, token: created.token, throwaway };
    if (saved) {
      saved.put({
        endpoint: connection.endpoint,
        name,
        agentId: agent.agentId,
        token: agent.token,
        queues,
        maxConcurrency: concurrency,
        savedAt: new Date().toISOString(),
      });
      cli.say(`registered agent ${agent.agentId} as ${name}; its token is saved in ${saved.file}`);
    } else {
      cli.say(
        `registered agent ${agent.agentId} as ${name} for this run (--name NAME keeps one agent across runs)`,
      );
    }
    return agent;
  };

  let agent: WorkerAgent;
  if (given) {
    agent = { token: given, throwaway: false };
  } else if (saved && options.name) {
    const found = saved.get(connection.endpoint, options.name);
    if (found) {
      const missing = queues.filter((q) => !found.queues.includes(q));
      if (missing.length > 0) {
        throw new UsageError(
          `the agent saved as ${options.name} (${found.agentId}) serves ${found.queues.join(', ')}, not ${missing.join(', ')}: ` +
            `use another --name, or revoke it (agent-scheduler agents revoke ${found.agentId}) and start again`,
        );
      }
      agent = { agentId: found.agentId, token: found.token, throwaway: false };
      cli.say(`running as agent ${found.agentId} (${options.name}), saved in ${saved.file}`);
    } else {
      agent = await register(options.name, false);
    }
  } else {
    agent = await register(`worker-${hostname()}`, true);
  }

  // Woken by pushes where the deployment has a push channel; polling otherwise.
  const push = await cli.pushOptions();
  let worker = newWorker(cli, cli.agent(agent.token), command, concurrency, queues, push, labels);
  try {
    await worker.start();
  } catch (error) {
    const refused = error instanceof AgentSchedulerError && (error.status === 401 || error.status === 403);
    if (!(refused && saved && options.name && agent.agentId && !given)) throw error;
    cli.say(
      `the server refused the saved agent ${agent.agentId} (${options.name}): ${error.code}, ${error.message}; registering a new one`,
    );
    agent = await register(options.name, false);
    worker = newWorker(cli, cli.agent(agent.token), command, concurrency, queues, push, labels);
    await worker.start();
  }
  const running = worker;
  const stopped = new Promise<number>((resolve) => {
    const stop = () => {
      cli.say('draining: waiting for running tasks, then stopping');
      running.stop({ drain: true }).then(
        () => resolve(0),
        () => resolve(0),
      );
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    // A revoked agent's Worker stops by itself: so does the command, and says why.
    running.on('error', (error) => {
      if (!isAgentSchedulerError(error, 'AgentRevoked')) return;
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      cli.say('the agent was revoked: stopping');
      running.stop({ drain: false }).then(
        () => resolve(1),
        () => resolve(1),
      );
    });
  });
  // Said once Ctrl-C is handled, not before: whoever reads it may stop the worker at once.
  cli.say(`worker running on ${queues.join(', ')} with concurrency ${concurrency}; Ctrl-C drains and stops`);
  const code = await stopped;
  if (code === 0 && agent.throwaway && agent.agentId) {
    await cli.operator().revokeAgent(agent.agentId);
    cli.say(`revoked agent ${agent.agentId}, registered for this run`);
  }
  return code;
}

function newWorker(
  cli: Cli,
  client: AgentSchedulerClient,
  command: readonly string[],
  concurrency: number,
  queues: readonly string[],
  push: PushOptions,
  labels: Record<string, string[]> | undefined,
): Worker {
  const worker = new Worker({
    client,
    handler: commandHandler(command),
    concurrency,
    queues: [...queues],
    push,
    ...(labels ? { labels } : {}),
  });
  const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));
  worker.on('picked', (task) => cli.say(`picked    ${task.taskId} (attempt ${task.attempt})`));
  worker.on('completed', (task) => cli.say(`completed ${task.taskId}`));
  worker.on('failed', (task, error) => cli.say(`failed    ${task.taskId}: ${reason(error)}`));
  worker.on('lost', (task, why) => cli.say(`lost      ${task.taskId} (${why})`));
  worker.on('error', (error) => cli.say(`error     ${reason(error)}`));
  return worker;
}
