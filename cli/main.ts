/**
 * `agent-scheduler`: the command line for operators, and a ready-made agent (`worker`).
 *
 *   agent-scheduler submit --queue research --payload '{"topic":"tides"}'
 *   agent-scheduler worker --queue research -- ./answer.sh
 *
 * Endpoint and token come from --endpoint/--token, AGENT_SCHEDULER_ENDPOINT/AGENT_SCHEDULER_TOKEN, or
 * .agent-scheduler/local.json. Human tables by default; --json for scripts.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { AgentSchedulerClient } from '#sdk/client';
import { AgentSchedulerError } from '#sdk/errors';
import type { Priority, SubmitTaskInput, TaskStatus } from '#sdk/types';
import { Worker } from '#sdk/worker';
import { iamSigner } from './aws-signer';
import { commandHandler } from './command-handler';
import { resolveConnection } from './config';
import { printable, record, table } from './format';

const USAGE = `usage: agent-scheduler <command> [options]

tasks      submit --queue Q --payload JSON|@file|- [--priority P] [--max-attempts N] [--timeout S] [--delay S] [--key K]
           submit --batch JSON|@file|-   (an array of up to 25 task specifications)
           get TASK_ID | list [--queue Q] [--status S] [--limit N] [--cursor C] | cancel TASK_ID | redrive TASK_ID
queues     queues | pause QUEUE | resume QUEUE
           limits QUEUE [--max-concurrency N] [--rate PER_SECOND] [--burst N]   (no option: remove the limits)
agents     agents create --name NAME --queue Q [--queue Q2] [--max-concurrency N] [--non-interactive]
           agents list | agents revoke AGENT_ID
roles      roles list
schedules  schedules list | schedules create --name N --expression E --queue Q [--time-zone TZ] [--payload JSON]
           schedules get NAME | schedules delete NAME | schedules occurrences NAME
worker     worker --queue Q [--concurrency N] [--token AGENT_TOKEN] -- COMMAND [ARGS...]
           (payload on stdin, result from stdout; without an agent token, registers an agent with the operator token)

global     --endpoint URL  --token TOKEN  --auth iam|token  --region REGION  --json  --help
           (--auth: how operator requests prove who sends them; iam signs them with AWS credentials from the
           standard chain, and is the default for an execute-api endpoint)`;

const OPTIONS = {
  endpoint: { type: 'string' },
  token: { type: 'string' },
  auth: { type: 'string' },
  region: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
  queue: { type: 'string', multiple: true },
  payload: { type: 'string' },
  batch: { type: 'string' },
  priority: { type: 'string' },
  'max-attempts': { type: 'string' },
  timeout: { type: 'string' },
  delay: { type: 'string' },
  key: { type: 'string' },
  status: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  name: { type: 'string' },
  'max-concurrency': { type: 'string' },
  'non-interactive': { type: 'boolean', default: false },
  expression: { type: 'string' },
  'time-zone': { type: 'string' },
  concurrency: { type: 'string' },
  rate: { type: 'string' },
  burst: { type: 'string' },
} as const;

class UsageError extends Error {}

function integer(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n)) throw new UsageError(`--${flag} must be a whole number`);
  return n;
}

function payloadOf(value: string | undefined): unknown {
  if (value === undefined) return {};
  const text =
    value === '-'
      ? readFileSync(0, 'utf8')
      : value.startsWith('@')
        ? readFileSync(value.slice(1), 'utf8')
        : value;
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError('--payload must be JSON (or @file, or - for standard input)');
  }
}

const defined = <T extends Record<string, unknown>>(value: T): T =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;

export async function main(
  argv: readonly string[],
  write: (text: string) => void = console.log,
): Promise<number> {
  // Every line goes out through here: names, messages and results come from the server and from other agents.
  const out = (text: string) => write(printable(text));
  const dash = argv.indexOf('--');
  const command = dash >= 0 ? argv.slice(dash + 1) : [];
  const { values, positionals } = parseArgs({
    args: dash >= 0 ? argv.slice(0, dash) : [...argv],
    options: OPTIONS,
    allowPositionals: true,
    strict: true,
  });
  const [verb, sub, arg] = positionals;
  if (values.help || !verb) {
    out(USAGE);
    return verb ? 0 : 2;
  }
  const connection = resolveConnection(
    defined({ endpoint: values.endpoint, token: values.token, auth: values.auth, region: values.region }),
  );
  const client = new AgentSchedulerClient({
    endpoint: connection.endpoint,
    ...(connection.auth === 'iam'
      ? { signer: iamSigner(connection.region ?? '') }
      : connection.token
        ? { token: connection.token }
        : {}),
  });
  const print = (value: unknown, human: () => string) =>
    out(values.json ? JSON.stringify(value, null, 2) : human());
  const taskColumns = [
    'taskId',
    'queue',
    'priority',
    'status',
    'attempt',
    'leaseEpoch',
    'owner',
    'updatedAt',
  ];
  const queue = values.queue?.[0];

  switch (verb) {
    case 'submit': {
      if (values.batch !== undefined) {
        const specs = payloadOf(values.batch);
        if (!Array.isArray(specs))
          throw new UsageError('--batch must be a JSON array of task specifications');
        const results = await client.submitTasks(specs as SubmitTaskInput[]);
        print(results, () =>
          results
            .map((r, i) =>
              r.ok
                ? `${i}  ${r.created ? 'submitted' : 'already submitted'} ${r.task.taskId}`
                : `${i}  ${r.status} ${r.error.code}: ${r.error.message}`,
            )
            .join('\n'),
        );
        return results.every((r) => r.ok) ? 0 : 1;
      }
      if (!queue) throw new UsageError('submit needs --queue');
      const result = await client.submitTask(
        defined({
          queue,
          payload: payloadOf(values.payload),
          priority: values.priority as Priority | undefined,
          maxAttempts: integer(values['max-attempts'], 'max-attempts'),
          timeoutSeconds: integer(values.timeout, 'timeout'),
          delaySeconds: integer(values.delay, 'delay'),
          idempotencyKey: values.key,
        }),
      );
      print(result, () => `${result.created ? 'submitted' : 'already submitted'} ${result.task.taskId}`);
      return 0;
    }
    case 'get': {
      if (!sub) throw new UsageError('get needs a task id');
      const task = await client.getTask(sub);
      print(task, () => record(task as unknown as Record<string, unknown>));
      return 0;
    }
    case 'list': {
      const page = await client.listTasks(
        defined({
          queue,
          status: values.status as TaskStatus | undefined,
          limit: integer(values.limit, 'limit'),
          cursor: values.cursor,
        }),
      );
      print(page, () => {
        const rows = table(page.tasks as unknown as Record<string, unknown>[], taskColumns);
        return page.nextCursor ? `${rows}\nmore: --cursor ${page.nextCursor}` : rows;
      });
      return 0;
    }
    case 'cancel':
    case 'redrive': {
      if (!sub) throw new UsageError(`${verb} needs a task id`);
      const task = verb === 'cancel' ? await client.cancelTask(sub) : await client.redriveTask(sub);
      print(task, () => `${task.taskId} is ${task.status}`);
      return 0;
    }
    case 'queues': {
      const queues = await client.listQueues();
      print(queues, () =>
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
      );
      return 0;
    }
    case 'pause':
    case 'resume': {
      if (!sub) throw new UsageError(`${verb} needs a queue name`);
      const control = verb === 'pause' ? await client.pauseQueue(sub) : await client.resumeQueue(sub);
      print(control, () => `${control.name} is ${control.paused ? 'paused' : 'running'}`);
      return 0;
    }
    case 'limits': {
      if (!sub) throw new UsageError('limits needs a queue name');
      const rate = values.rate === undefined ? undefined : Number(values.rate);
      if (rate !== undefined && !(rate > 0)) throw new UsageError('--rate must be a positive number');
      const control = await client.setQueueLimits(
        sub,
        defined({
          maxConcurrency: integer(values['max-concurrency'], 'max-concurrency'),
          ratePerSecond: rate,
          burst: integer(values.burst, 'burst'),
        }),
      );
      print(control, () => `${control.name} limits: ${JSON.stringify(control.limits ?? {})}`);
      return 0;
    }
    case 'agents': {
      if (sub === 'create') {
        if (!values.name || !values.queue?.length)
          throw new UsageError('agents create needs --name and --queue');
        const created = await client.createAgent(
          defined({
            name: values.name,
            queues: values.queue,
            maxConcurrency: integer(values['max-concurrency'], 'max-concurrency'),
            interactive: values['non-interactive'] ? false : undefined,
          }),
        );
        print(
          created,
          () =>
            `${record(created.agent as unknown as Record<string, unknown>)}\ntoken        ${created.token}\n(the token is shown once)`,
        );
        return 0;
      }
      if (sub === 'list') {
        const agents = await client.listAgents();
        print(agents, () =>
          table(agents as unknown as Record<string, unknown>[], [
            'agentId',
            'name',
            'queues',
            'maxConcurrency',
            'revokedAt',
          ]),
        );
        return 0;
      }
      if (sub === 'revoke' && arg) {
        await client.revokeAgent(arg);
        print({ revoked: arg }, () => `revoked ${arg}`);
        return 0;
      }
      throw new UsageError('agents create | list | revoke AGENT_ID');
    }
    case 'roles': {
      if (sub === 'list') {
        const roles = await client.listRoles();
        print(roles, () =>
          table(roles as unknown as Record<string, unknown>[], [
            'role',
            'holder',
            'leaseEpoch',
            'since',
            'volunteers',
          ]),
        );
        return 0;
      }
      throw new UsageError('roles list');
    }
    case 'schedules': {
      if (sub === 'list') {
        const schedules = await client.listSchedules();
        print(schedules, () =>
          table(schedules as unknown as Record<string, unknown>[], [
            'name',
            'expression',
            'timeZone',
            'source',
            'enabled',
            'task',
          ]),
        );
        return 0;
      }
      if (sub === 'create') {
        if (!values.name || !values.expression || !queue) {
          throw new UsageError('schedules create needs --name, --expression and --queue');
        }
        const schedule = await client.createSchedule(
          defined({
            name: values.name,
            expression: values.expression,
            timeZone: values['time-zone'],
            task: defined({
              queue,
              payload: payloadOf(values.payload),
              priority: values.priority as Priority | undefined,
            }),
          }),
        );
        print(
          schedule,
          () => `created schedule ${schedule.name} (${schedule.expression}, ${schedule.timeZone})`,
        );
        return 0;
      }
      if (sub === 'get' && arg) {
        const schedule = await client.getSchedule(arg);
        print(schedule, () => record(schedule as unknown as Record<string, unknown>));
        return 0;
      }
      if (sub === 'occurrences' && arg) {
        const occurrences = await client.listOccurrences(arg);
        print(occurrences, () =>
          table(occurrences as unknown as Record<string, unknown>[], [
            'scheduledTime',
            'status',
            'taskId',
            'reason',
          ]),
        );
        return 0;
      }
      if (sub === 'delete' && arg) {
        await client.deleteSchedule(arg);
        print({ deleted: arg }, () => `deleted schedule ${arg}`);
        return 0;
      }
      throw new UsageError('schedules list | get NAME | create | delete NAME | occurrences NAME');
    }
    case 'worker':
      return runWorker(client, connection, values, command, out);
    default:
      throw new UsageError(`unknown command ${verb}`);
  }
}

async function runWorker(
  operatorClient: AgentSchedulerClient,
  connection: ReturnType<typeof resolveConnection>,
  values: { queue?: string[]; concurrency?: string; token?: string },
  command: readonly string[],
  out: (text: string) => void,
): Promise<number> {
  if (!values.queue?.length) throw new UsageError('worker needs --queue');
  if (command.length === 0) throw new UsageError('worker needs the command to run after --');
  const concurrency = integer(values.concurrency, 'concurrency') ?? 1;
  let token = connection.token;
  if (!token?.startsWith('a_')) {
    // No agent token: register an agent as the operator, as a convenience.
    const created = await operatorClient.createAgent({
      name: `worker-${hostname()}-${process.pid}`,
      queues: values.queue,
      maxConcurrency: concurrency,
    });
    token = created.token;
    out(`registered agent ${created.agent.agentId}`);
  }
  const worker = new Worker({
    client: new AgentSchedulerClient({ endpoint: connection.endpoint, token }),
    handler: commandHandler(command),
    concurrency,
    queues: values.queue,
  });
  worker.on('picked', (task) => out(`picked    ${task.taskId} (attempt ${task.attempt})`));
  worker.on('completed', (task) => out(`completed ${task.taskId}`));
  worker.on('failed', (task, error) =>
    out(`failed    ${task.taskId}: ${error instanceof Error ? error.message : String(error)}`),
  );
  worker.on('lost', (task, reason) => out(`lost      ${task.taskId} (${reason})`));
  worker.on('error', (error) => out(`error     ${error instanceof Error ? error.message : String(error)}`));
  await worker.start();
  out(
    `worker running on ${values.queue.join(', ')} with concurrency ${concurrency}; Ctrl-C drains and stops`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => {
      out('draining: waiting for running tasks, then stopping');
      worker.stop({ drain: true }).then(resolve, resolve);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return 0;
}

export async function run(argv: readonly string[]): Promise<number> {
  try {
    return await main(argv);
  } catch (error) {
    if (error instanceof AgentSchedulerError) {
      console.error(printable(`error: ${error.status} ${error.code}: ${error.message}`));
      return 1;
    }
    if (error instanceof UsageError || (error instanceof TypeError && 'code' in error)) {
      console.error(printable(`error: ${error.message}\n\n${USAGE}`));
      return 2;
    }
    console.error(printable(`error: ${error instanceof Error ? error.message : String(error)}`));
    return 1;
  }
}
