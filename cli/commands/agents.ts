/**
 * Agents (create, list, revoke) and roles.
 */
import type { Command } from 'commander';
import type { Cli } from '../context';
import { SafeText } from '../context';
import { ago, record, table } from '../format';
import { collect, labelsOf, wholeNumber } from '../input';
import { defined, examples } from './shared';

/** An agent's labels in a table cell: `gpu=a100|h100 model=claude`; empty for none (or a server before labels). */
const labelsText = (labels: Readonly<Record<string, readonly string[]>> | undefined): string =>
  Object.entries(labels ?? {})
    .map(([name, values]) => `${name}=${values.join('|')}`)
    .join(' ');

export function agentCommands(program: Command, cli: Cli): void {
  const agents = program
    .command('agents')
    .summary('register, list and revoke agents')
    .addHelpText(
      'after',
      examples([
        'agent-scheduler agents create --name researcher-1 --queue research --max-concurrency 4',
        'agent-scheduler agents list',
        'agent-scheduler agents revoke a_abc...',
      ]),
    );

  agents
    .command('create')
    .summary('register an agent and print its token (shown once)')
    .requiredOption('--name <name>', 'a name for people')
    .requiredOption('--queue <queue>', 'a queue the agent serves (repeat for more)', collect)
    .option('--max-concurrency <n>', 'tasks it may hold at once (server default 1)', wholeNumber)
    .option('--non-interactive', 'a batch agent: runs tasks, never holds roles')
    .option(
      '--label <name=value>',
      'a label it offers (repeat for more; a name again adds a value): given tasks that require it',
      collect,
    )
    .addHelpText(
      'after',
      examples([
        'agent-scheduler agents create --name researcher-1 --queue research --queue emails',
        'agent-scheduler agents create --name gpu-1 --queue render --label gpu=a100 --label gpu=h100 --label model=claude',
      ]),
    )
    .action(
      async (options: {
        name: string;
        queue: string[];
        maxConcurrency?: number;
        nonInteractive?: boolean;
        label?: string[];
      }) => {
        const created = await cli.operator().createAgent(
          defined({
            name: options.name,
            queues: options.queue,
            maxConcurrency: options.maxConcurrency,
            interactive: options.nonInteractive ? false : undefined,
            labels: labelsOf(options.label),
          }),
        );
        cli.print(
          created,
          () =>
            `${record(created.agent as unknown as Record<string, unknown>)}\ntoken        ${created.token}\n(the token is shown once)`,
        );
      },
    );

  agents
    .command('list')
    .summary('list agents: online, idle or offline, last heartbeat, tasks held')
    .addHelpText('after', examples(['agent-scheduler agents list', 'agent-scheduler agents list --json']))
    .action(async () => {
      const list = await cli.operator().listAgents();
      cli.print(list, () => {
        const c = cli.colours;
        const now = Date.now();
        const rows = list.map((agent) => ({
          agentId: agent.agentId,
          name: agent.name,
          queues: agent.queues.join(','),
          labels: labelsText(agent.labels),
          maxConcurrency: agent.maxConcurrency,
          // A server older than states says online or not.
          state: agent.state ?? (agent.online === undefined ? '' : agent.online ? 'online' : 'offline'),
          lastHeartbeat: ago(agent.lastHeartbeatAt, now),
          tasks: agent.tasksHeld,
          revokedAt: agent.revokedAt,
        }));
        return new SafeText(
          table(
            rows,
            [
              'agentId',
              'name',
              'queues',
              'labels',
              'maxConcurrency',
              'state',
              'lastHeartbeat',
              'tasks',
              'revokedAt',
            ],
            (column, text) =>
              column === 'state'
                ? text === 'online'
                  ? c.green(text)
                  : text === 'idle'
                    ? text
                    : c.dim(text)
                : text,
          ),
        );
      });
    });

  agents
    .command('revoke')
    .summary('revoke an agent: its token stops working, its tasks and roles are taken back now')
    .argument('<agent-id>', 'the agent id (a_...)')
    .addHelpText('after', examples(['agent-scheduler agents revoke a_abc...']))
    .action(async (agentId: string) => {
      await cli.operator().revokeAgent(agentId);
      cli.print({ revoked: agentId }, () => `revoked ${agentId}`);
    });

  program
    .command('roles')
    .summary('list roles: holder, epoch, volunteers')
    .addHelpText('after', examples(['agent-scheduler roles list']))
    .command('list')
    .summary('list roles: holder, epoch, since, volunteers')
    .action(async () => {
      const roles = await cli.operator().listRoles();
      cli.printTable(roles, ['role', 'holder', 'leaseEpoch', 'since', 'volunteers']);
    });
}
