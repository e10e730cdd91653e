/**
 * The CLI as people use it: the real binary against a local server, from a folder of its own, with a home and a
 * configuration folder of its own. The binary is the repository's `bin/agent-scheduler.mjs` in the first test; the
 * rest run the CLI as the package ships it, bundled from these sources by esbuild once for the file and run by plain
 * `node` (each run from the TypeScript sources spends 0.5 s of CPU compiling them: 20 s over this file). Help and version, usage errors that point to the
 * command's help, a server out of reach, local.json found from a folder below, tasks newest first, agents with
 * their presence, schedule policies and errors that name the field, colour only where asked for.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import type { TaskLinks } from '#sdk/types';
import { createTestStack, serveStack, type TestStack, waitFor } from '#test/stack';
import { cliOptions } from '../../scripts/library-bundles';

const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin/agent-scheduler.mjs');
const OPERATOR = 'op_cli-operator-token';
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const ESC = '\u001b';

interface Outcome {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

describe('the agent-scheduler command', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;
  const home = mkdtempSync(join(tmpdir(), 'cli-home-'));
  const work = mkdtempSync(join(tmpdir(), 'cli-work-'));
  const config = join(home, 'xdg');
  const baseEnv = {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: config,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };

  // The CLI bundled as `npm run build` bundles it (scripts/build-package.ts), beside a copy of the package's
  // manifest, where it reads its version.
  const bundled = mkdtempSync(join(tmpdir(), 'cli-bundle-'));
  const bundledBin = join(bundled, 'dist', 'agent-scheduler.mjs');

  /** Runs the binary (the bundled one unless told); resolves with its exit code and output whatever the code. */
  const cli = (args: string[], options: { env?: Record<string, string>; cwd?: string; bin?: string } = {}) =>
    new Promise<Outcome>((done) => {
      execFile(
        process.execPath,
        [options.bin ?? bundledBin, ...args],
        { cwd: options.cwd ?? work, env: { ...baseEnv, ...options.env } },
        (error, stdout, stderr) => {
          const code = error ? Number((error as { code?: unknown }).code ?? 1) : 0;
          done({ code, stdout, stderr });
        },
      );
    });
  const at = () => ['--endpoint', server.url, '--token', OPERATOR];

  beforeAll(async () => {
    copyFileSync(join(ROOT, 'package.json'), join(bundled, 'package.json'));
    // As the package builds it (`scripts/build-package.ts`), its dependencies bundled in.
    await build(cliOptions(ROOT, join(bundled, 'dist')));
    writeFileSync(
      bundledBin,
      "import { run } from './cli.js';\nprocess.exitCode = await run(process.argv.slice(2));\n",
    );
    stack = await createTestStack({
      queues: ['work', 'other', 'tree'],
      settings: { agentSubmitQueues: ['tree'] },
      scheduleBackend: { put: async () => undefined, remove: async () => undefined },
    });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
  });
  afterAll(async () => {
    await server?.close();
    await stack?.destroy();
    rmSync(bundled, { recursive: true, force: true });
  });

  describe('help, version and usage errors', () => {
    it('--help and --version exit 0; each command has its own help with examples', async () => {
      // The repository's own binary, from the sources.
      const [help, version, submit, worker] = await Promise.all([
        cli(['--help'], { bin: BIN }),
        cli(['--version'], { bin: BIN }),
        cli(['submit', '--help']),
        cli(['help', 'worker']),
      ]);
      expect(help).toMatchObject({ code: 0, stderr: '' });
      expect(help.stdout).toMatch(/^Usage: agent-scheduler <command> \[options\]/);
      for (const verb of ['submit', 'list', 'agents', 'worker', 'schedules', 'limits']) {
        expect(help.stdout).toContain(`  ${verb}`);
      }
      expect(version).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
      expect(submit.code).toBe(0);
      expect(submit.stdout).toMatch(/^Usage: agent-scheduler submit \[options\]/);
      expect(submit.stdout).toContain('--priority <priority>');
      expect(submit.stdout).toContain('Examples:\n  $ agent-scheduler submit --queue research');
      expect(worker.code).toBe(0);
      expect(worker.stdout).toContain('--name <name>');
    });

    it.each([
      [
        ['frob'],
        "error: unknown command 'frob'",
        'agent-scheduler <command> [options]',
        'agent-scheduler --help',
      ],
      [
        ['submit', '--queue', 'work', '--bogus'],
        "error: unknown option '--bogus'",
        'agent-scheduler submit [options]',
        'agent-scheduler submit --help',
      ],
      [
        ['list', '--limit', 'many'],
        "error: option '--limit <n>' argument 'many' is invalid. Expected a whole number.",
        'agent-scheduler list [options]',
        'agent-scheduler list --help',
      ],
      [
        ['agents', 'create', '--name', 'x'],
        "error: required option '--queue <queue>' not specified",
        'agent-scheduler agents create [options]',
        'agent-scheduler agents create --help',
      ],
      [
        [
          'schedules',
          'create',
          '--name',
          'n',
          '--expression',
          'rate(1 hour)',
          '--queue',
          'work',
          '--overlap',
          'sometimes',
        ],
        "error: option '--overlap <policy>' argument 'sometimes' is invalid.",
        'agent-scheduler schedules create [options]',
        'agent-scheduler schedules create --help',
      ],
    ])(
      '%j exits 2 with a usage line and where to read more, not the manual',
      async (args, message, usage, see) => {
        const outcome = await cli(args);
        expect(outcome.code).toBe(2);
        expect(outcome.stdout).toBe('');
        const lines = outcome.stderr.trimEnd().split('\n');
        expect(lines[0]).toContain(message);
        expect(lines).toContain(`usage: ${usage}`);
        expect(lines.at(-1)).toBe(`see \`${see}\``);
        expect(lines.length).toBeLessThanOrEqual(4);
      },
    );
  });

  it('dev refuses a wrong command line with its usage line, before any emulator starts', async () => {
    const [port, queue, lease] = await Promise.all([
      cli(['dev', '--port', '70000']),
      cli(['dev', '--queue', 'no spaces']),
      cli(['dev', '--lease-ttl-seconds', '0']),
    ]);
    expect(port).toMatchObject({ code: 2, stdout: '' });
    expect(port.stderr.trim()).toBe(
      [
        'error: the port must be a number from 0 to 65535 (got "70000")',
        'usage: agent-scheduler dev [options]',
        'see `agent-scheduler dev --help`',
      ].join('\n'),
    );
    expect(queue).toMatchObject({ code: 2, stdout: '' });
    expect(queue.stderr).toMatch(/^error: queue "no spaces": a queue name is 1 to 48 letters/);
    expect(lease).toMatchObject({ code: 2, stdout: '' });
    expect(lease.stderr).toMatch(/^error: --lease-ttl-seconds must be/);
    // Nothing was started, so nothing was written.
    expect(existsSync(join(work, '.agent-scheduler', 'local.json'))).toBe(false);
  });

  describe('the endpoint', () => {
    let silent: Server;
    let silentPort = 0;
    const sockets = new Set<Socket>();
    beforeAll(async () => {
      // Accepts connections, reads what comes and never answers.
      silent = createServer((socket) => {
        sockets.add(socket);
        socket.resume();
      });
      await new Promise<void>((ready) => silent.listen(0, '127.0.0.1', ready));
      silentPort = (silent.address() as { port: number }).port;
    });
    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((closed) => silent.close(() => closed()));
    });

    /** A port nothing listens on: taken, then let go. */
    const closedPort = async () => {
      const probe = createServer();
      await new Promise<void>((ready) => probe.listen(0, '127.0.0.1', ready));
      const { port } = probe.address() as { port: number };
      await new Promise<void>((closed) => probe.close(() => closed()));
      return port;
    };

    it('a server that is down: names the endpoint, why, and where it came from; exit 1', async () => {
      const port = await closedPort();
      const flagged = await cli(['queues', '--endpoint', `http://127.0.0.1:${port}`, '--token', OPERATOR]);
      expect(flagged.code).toBe(1);
      expect(flagged.stderr).toBe(
        `error: cannot reach http://127.0.0.1:${port} (connection refused). Is \`agent-scheduler dev\` (or \`npm start\`) running?\n` +
          'the endpoint comes from --endpoint\n',
      );

      const project = mkdtempSync(join(tmpdir(), 'cli-project-'));
      mkdirSync(join(project, '.agent-scheduler'));
      writeFileSync(
        join(project, '.agent-scheduler', 'local.json'),
        JSON.stringify({ endpoint: `http://127.0.0.1:${port}`, operatorToken: OPERATOR }),
      );
      const below = join(project, 'src', 'deep');
      mkdirSync(below, { recursive: true });
      const fromFile = await cli(['list'], { cwd: below });
      expect(fromFile.code).toBe(1);
      expect(fromFile.stderr).toContain(`error: cannot reach http://127.0.0.1:${port} (connection refused)`);
      expect(fromFile.stderr).toContain(
        `the endpoint comes from ${join(project, '.agent-scheduler', 'local.json')}`,
      );

      const fromEnv = await cli(['list'], { env: { AGENT_SCHEDULER_ENDPOINT: `http://127.0.0.1:${port}` } });
      expect(fromEnv.stderr).toContain('the endpoint comes from AGENT_SCHEDULER_ENDPOINT');
    });

    it('a server that does not answer: says it timed out', async () => {
      const outcome = await cli([
        'queues',
        '--endpoint',
        `http://127.0.0.1:${silentPort}`,
        '--token',
        OPERATOR,
        '--request-timeout',
        '0.3',
      ]);
      expect(outcome.code).toBe(1);
      expect(outcome.stderr).toContain(
        `error: cannot reach http://127.0.0.1:${silentPort} (timed out: no answer within 0.3 s)`,
      );
    });

    it('finds local.json in a folder above the current one, and uses its endpoint and token', async () => {
      const project = mkdtempSync(join(tmpdir(), 'cli-project-'));
      mkdirSync(join(project, '.agent-scheduler'));
      writeFileSync(
        join(project, '.agent-scheduler', 'local.json'),
        JSON.stringify({ endpoint: server.url, operatorToken: OPERATOR }),
      );
      const below = join(project, 'a', 'b', 'c');
      mkdirSync(below, { recursive: true });

      const outcome = await cli(['queues', '--json'], { cwd: below });

      expect(outcome.code).toBe(0);
      expect((JSON.parse(outcome.stdout) as { name: string }[]).map((q) => q.name).sort()).toEqual([
        'other',
        'tree',
        'work',
      ]);
    });
  });

  describe('commands', () => {
    it('lists tasks newest first, in the JSON shape of the API, with the cursor of the next page', async () => {
      const ids: string[] = [];
      for (const n of [1, 2, 3]) {
        stack.clock.advance(1_000);
        const submitted = await cli([
          'submit',
          '--queue',
          n === 2 ? 'other' : 'work',
          '--payload',
          `{"n":${n}}`,
          '--json',
          ...at(),
        ]);
        expect(submitted.code).toBe(0);
        ids.push((JSON.parse(submitted.stdout) as { task: { taskId: string } }).task.taskId);
      }

      const json = await cli(['list', '--limit', '2', '--json', ...at()]);
      const page = JSON.parse(json.stdout) as { tasks: { taskId: string }[]; nextCursor: string };
      expect(Object.keys(page).sort()).toEqual(['nextCursor', 'tasks']);
      expect(page.tasks.map((t) => t.taskId)).toEqual([ids[2], ids[1]]);
      const next = JSON.parse(
        (await cli(['list', '--limit', '2', '--cursor', page.nextCursor, '--json', ...at()])).stdout,
      ) as {
        tasks: { taskId: string }[];
      };
      expect(next.tasks[0]?.taskId).toBe(ids[0]);
      // A time window: before the second task was created, only the first; get --payload shows its payload.
      const second = await operator.getTask(ids[1] ?? '');
      const windowed = JSON.parse(
        (await cli(['list', '--created-before', second.createdAt, '--json', ...at()])).stdout,
      ) as { tasks: { taskId: string }[] };
      expect(windowed.tasks.map((t) => t.taskId)).toContain(ids[0]);
      expect(windowed.tasks.map((t) => t.taskId)).not.toContain(ids[1]);
      expect(windowed.tasks.map((t) => t.taskId)).not.toContain(ids[2]);
      const withPayload = JSON.parse(
        (await cli(['get', ids[0] ?? '', '--payload', '--json', ...at()])).stdout,
      ) as {
        payload: unknown;
      };
      expect(withPayload.payload).toEqual({ n: 1 });

      const human = await cli(['list', '--limit', '2', ...at()]);
      const lines = human.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(
        /^taskId\s+queue\s+priority\s+status\s+attempt\s+leaseEpoch\s+owner\s+createdAt\s+updatedAt$/,
      );
      expect(lines[2]).toContain(ids[2]);
      expect(lines.at(-1)).toBe(`older: --cursor ${page.nextCursor}`);
      expect(human.stdout).not.toContain(ESC);
    });

    it('agents list shows who is online, idle or offline, the last heartbeat and the tasks held', async () => {
      const created = await operator.createAgent({ name: 'cli-listed', queues: ['work'] });
      await new AgentSchedulerClient({ endpoint: server.url, token: created.token }).openSession();

      const human = await cli(['agents', 'list', ...at()]);
      const json = JSON.parse((await cli(['agents', 'list', '--json', ...at()])).stdout) as {
        name: string;
        online: boolean;
        state: string;
        tasksHeld: number;
        lastHeartbeatAt: string;
      }[];

      expect(human.stdout.split('\n')[0]).toMatch(
        /^agentId\s+name\s+queues\s+labels\s+maxConcurrency\s+state\s+lastHeartbeat\s+tasks\s+revokedAt$/,
      );
      expect(human.stdout).toMatch(
        new RegExp(`${created.agent.agentId}\\s+cli-listed\\s+work\\s+1\\s+online\\s+\\d+s ago\\s+0`),
      );
      expect(json.find((a) => a.name === 'cli-listed')).toMatchObject({
        online: true,
        state: 'online',
        tasksHeld: 0,
        lastHeartbeatAt: expect.any(String),
      });
    });

    it('agents create --label gives an agent labels, submit --require a task requirements (and --traceparent its trace context), and list shows them', async () => {
      const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const created = JSON.parse(
        (
          await cli([
            'agents',
            'create',
            '--name',
            'cli-gpu',
            '--queue',
            'work',
            '--label',
            'gpu=a100',
            '--label',
            'gpu=h100',
            '--label',
            'model=claude',
            '--json',
            ...at(),
          ])
        ).stdout,
      ) as { agent: { agentId: string; labels: Record<string, string[]> } };
      expect(created.agent.labels).toEqual({ gpu: ['a100', 'h100'], model: ['claude'] });
      const human = await cli(['agents', 'list', ...at()]);
      expect(human.stdout).toMatch(
        new RegExp(`${created.agent.agentId}\\s+cli-gpu\\s+work\\s+gpu=a100\\|h100 model=claude`),
      );
      const submitted = JSON.parse(
        (
          await cli([
            'submit',
            '--queue',
            'work',
            '--require',
            'gpu=h100',
            '--require',
            'model',
            '--traceparent',
            TRACEPARENT,
            '--tracestate',
            'rojo=00f067aa0ba902b7',
            '--delay',
            '600',
            '--json',
            ...at(),
          ])
        ).stdout,
      ) as { task: { require: Record<string, string> } };
      expect(submitted.task.require).toEqual({ gpu: 'h100', model: '*' });
      // (The trace context rides along: one process fewer than a test of its own.)
      expect(submitted.task).toMatchObject({ traceparent: TRACEPARENT, tracestate: 'rojo=00f067aa0ba902b7' });
      const refused = await cli(['submit', '--queue', 'work', '--require', '=x', ...at()]);
      expect(refused.code).not.toBe(0);
    });

    it('waitpoints list shows the open ones; complete and reject answer them, and their tasks resume', async () => {
      const created = await operator.createAgent({
        name: 'cli-waiter',
        queues: ['other'],
        maxConcurrency: 2,
      });
      const agent = new AgentSchedulerClient({ endpoint: server.url, token: created.token });
      const session = await agent.openSession();
      for (const n of [1, 2]) await operator.submitTask({ queue: 'other', payload: { wait: n } });
      const held = [];
      for (let i = 0; i < 40 && held.length < 2; i++) {
        held.push(...(await agent.claim({ sessionId: session.sessionId, max: 2 })).tasks);
        if (held.length < 2) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const ids = [];
      for (const task of held) {
        const { waitpoint } = await agent.wait(task.taskId, {
          leaseEpoch: task.leaseEpoch,
          timeoutSeconds: 600,
        });
        ids.push(waitpoint.waitpointId);
      }

      const listed = await cli(['waitpoints', 'list', ...at()]);
      const completed = await cli([
        'waitpoints',
        'complete',
        ids[0] ?? '',
        '--data',
        '{"ok":true}',
        '--json',
        ...at(),
      ]);
      const rejected = await cli(['waitpoints', 'reject', ids[1] ?? '', '--reason', 'no', ...at()]);
      const again = await cli(['waitpoints', 'reject', ids[0] ?? '', '--reason', 'late', ...at()]);
      const read = await cli(['waitpoints', 'get', ids[1] ?? '', ...at()]);

      expect(listed.stdout.split('\n')[0]).toMatch(
        /^waitpointId\s+taskId\s+createdAt\s+timeoutAt\s+onTimeout$/,
      );
      for (const id of ids) expect(listed.stdout).toContain(id);
      expect(JSON.parse(completed.stdout)).toMatchObject({ waitpointId: ids[0], status: 'completed' });
      expect(rejected.stdout).toContain(`${ids[1]} rejected`);
      expect(again.code).not.toBe(0);
      expect(again.stderr).toMatch(/WaitpointResolved|ended already/);
      expect((await operator.getTask(held[1]?.taskId ?? '')).status).toBe('queued');
      expect(read.stdout).toMatch(new RegExp(`^${ids[1]}\\s+${held[1]?.taskId}\\s+rejected\\s`, 'm'));
    });

    it('links shows a tree; cancel --cascade cancels the task and its open descendants, and says how many', async () => {
      const created = await operator.createAgent({ name: 'cli-tree', queues: ['tree'], maxConcurrency: 1 });
      const agent = new AgentSchedulerClient({ endpoint: server.url, token: created.token });
      const session = await agent.openSession();
      const { task: root } = await operator.submitTask({ queue: 'tree', payload: { root: true } });
      let held: Awaited<ReturnType<typeof agent.claim>>['tasks'] = [];
      for (let i = 0; i < 40 && held.length === 0; i++) {
        held = (await agent.claim({ sessionId: session.sessionId, max: 1 })).tasks;
        if (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const children = await agent.submitChildren(root.taskId, {
        leaseEpoch: held[0]?.leaseEpoch ?? 0,
        tasks: [1, 2, 3].map((n) => ({ key: `step-${n}`, queue: 'tree', payload: { n } })),
      });
      const childIds = children.map((child) => (child.ok ? child.task.taskId : ''));

      // The tree as `links` shows it: the root's children in JSON, a child's parent in a row.
      const links = await cli(['links', root.taskId, '--json', ...at()]);
      expect(links.code).toBe(0);
      // Children of one batch share their creation time: listed oldest first, in either order among themselves.
      const listed = (JSON.parse(links.stdout) as TaskLinks).children.map((child) => child.taskId);
      expect(listed.sort()).toEqual([...childIds].sort());
      const up = await cli(['links', childIds[0] ?? '', ...at()]);
      expect(up.code).toBe(0);
      expect(up.stdout).toMatch(new RegExp(`^parent\\s+${root.taskId}\\s+leased\\s+tree\\s*$`, 'm'));

      const outcome = await cli(['cancel', root.taskId, '--cascade', ...at()]);

      expect(outcome.code).toBe(0);
      expect(outcome.stdout.trim()).toBe(`${root.taskId} is cancelled; 3 descendants cancelled, done`);
      for (const child of children) {
        expect(child.ok && (await operator.getTask(child.task.taskId)).status).toBe('cancelled');
      }
    });

    it('list --attention shows the tasks the ladder marked; clear-attention clears one', async () => {
      const { task: marked } = await operator.submitTask({ queue: 'other', payload: { waited: true } });
      const { task: plain } = await operator.submitTask({ queue: 'other', payload: { waited: false } });
      // The ladder's last step, as a supervisor pass writes it.
      const read = await stack.ctx.tasks.get(marked.taskId);
      if (!read) throw new Error('the task was read back');
      await stack.ctx.tasks.climbLadder(read, { fromLevel: 0, toLevel: 3, needsAttention: true });
      const listed = (args: string[]) =>
        cli(['list', '--attention', '--json', ...args, ...at()]).then(
          (outcome) => (JSON.parse(outcome.stdout) as { tasks: { taskId: string }[] }).tasks,
        );

      expect((await listed(['--queue', 'other'])).map((t) => t.taskId)).toEqual([marked.taskId]);
      const shown = await cli(['get', marked.taskId, ...at()]);
      expect(shown.stdout).toMatch(/^needsAttention\s+true$/m);
      const cleared = await cli(['clear-attention', marked.taskId, ...at()]);
      const again = await cli(['clear-attention', marked.taskId, '--json', ...at()]);
      const absent = await cli(['clear-attention', `t_${'q'.repeat(26)}`, ...at()]);

      expect(cleared).toMatchObject({ code: 0, stdout: `${marked.taskId} is queued; attention cleared\n` });
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout)).not.toHaveProperty('needsAttention');
      expect(absent.code).toBe(1);
      expect(absent.stderr).toMatch(/TaskNotFound|does not exist/);
      expect(await listed(['--queue', 'other'])).toEqual([]);
      expect((await operator.getTask(plain.taskId)).needsAttention).toBeUndefined();
      for (const id of [marked.taskId, plain.taskId]) await operator.cancelTask(id);
    });

    it('schedules create passes the overlap and missed-run policies', async () => {
      const outcome = await cli([
        'schedules',
        'create',
        '--name',
        'cli-policies',
        '--expression',
        'rate(1 hour)',
        '--queue',
        'work',
        '--overlap',
        'bufferOne',
        '--missed-runs',
        'runOnce',
        '--json',
        ...at(),
      ]);
      expect(outcome.code).toBe(0);
      expect(JSON.parse(outcome.stdout)).toMatchObject({ overlap: 'bufferOne', missedRuns: 'runOnce' });
      expect(await operator.getSchedule('cli-policies')).toMatchObject({
        overlap: 'bufferOne',
        missedRuns: 'runOnce',
      });
    });

    it('names the wrong field: an unknown time zone, a payload file that is not there', async () => {
      const base = [
        'schedules',
        'create',
        '--name',
        'cli-bad',
        '--expression',
        'cron(0 2 * * ? *)',
        '--queue',
        'work',
      ];

      const zone = await cli([...base, '--time-zone', 'Mars/Olympus', ...at()]);
      const file = await cli([...base, '--payload', '@missing.json', ...at()]);

      expect(zone.code).toBe(1);
      expect(zone.stderr).toBe(
        'error: 400 ValidationError: timeZone: unknown time zone "Mars/Olympus" (expected an IANA name such as Europe/Paris)\n',
      );
      expect(file).toEqual({
        code: 2,
        stdout: '',
        stderr: [
          'error: cannot read --payload file missing.json: no such file',
          'usage: agent-scheduler schedules create [options]',
          'see `agent-scheduler schedules create --help`',
          '',
        ].join('\n'),
      });
      await expect(operator.getSchedule('cli-bad')).rejects.toMatchObject({ status: 404 });
    });

    it('submit --debounce-key collapses submissions of a key into one task, and says which it joined', async () => {
      // An hour's window, cancelled at the end: nothing here is left for the workers below to claim.
      const debounce = ['--debounce-key', 'issue-42', '--debounce-window', '3600'];
      const first = await cli(['submit', '--queue', 'other', '--payload', '{"v":1}', ...debounce, ...at()]);
      expect(first.code, first.stderr).toBe(0);
      const taskId = /^submitted (t_\w+)$/.exec(first.stdout.trim())?.[1];
      expect(taskId).toEqual(expect.any(String));
      const second = await cli(['submit', '--queue', 'other', '--payload', '{"v":2}', ...debounce, ...at()]);
      expect(second.stdout.trim()).toBe(`debounced into ${taskId}`);
      const json = await cli([
        'submit',
        '--queue',
        'other',
        '--payload',
        '{"v":3}',
        ...debounce,
        '--debounce-max-wait',
        '7200',
        '--json',
        ...at(),
      ]);
      // Another longest wait is another specification: a window of its own.
      const third = JSON.parse(json.stdout) as {
        task: { taskId: string };
        created: boolean;
        debounced: boolean;
      };
      expect(third).toMatchObject({ created: true, debounced: false });
      expect(third.task.taskId).not.toBe(taskId);
      const task = await operator.getTask(taskId ?? '', { includePayload: true });
      expect(task).toMatchObject({ payload: { v: 2 }, debounce: { key: 'issue-42', submissions: 2 } });
      for (const id of [taskId ?? '', third.task.taskId]) await operator.cancelTask(id);

      const alone = await cli(['submit', '--queue', 'other', '--debounce-key', 'issue-42', ...at()]);
      expect(alone.code).toBe(2);
      expect(alone.stderr).toContain('--debounce-key and --debounce-window go together');
      const out = await cli([
        'submit',
        '--queue',
        'other',
        ...debounce.slice(0, 2),
        '--debounce-window',
        '0',
        ...at(),
      ]);
      expect(out.code).toBe(1);
      expect(out.stderr).toMatch(/debounce\.windowSeconds/);
    });

    it('colours only when asked for: a terminal or FORCE_COLOR, never NO_COLOR, never --json', async () => {
      const { task } = await operator.submitTask({ queue: 'work', payload: { colour: 'yellow' } });
      await operator.cancelTask(task.taskId);
      const forced = { FORCE_COLOR: '1' };
      const [painted, refused, json, error] = await Promise.all([
        cli(['list', ...at()], { env: forced }),
        cli(['list', ...at()], { env: { ...forced, NO_COLOR: '1' } }),
        cli(['list', '--json', ...at()], { env: forced }),
        cli(['get', 't_nosuchtask', ...at()], { env: forced }),
      ]);
      expect(painted.stdout).toContain(`${ESC}[33mcancelled${ESC}[39m`);
      expect(refused.stdout).not.toContain(ESC);
      expect(json.stdout).not.toContain(ESC);
      expect(error.stderr.startsWith(`${ESC}[31merror:${ESC}[39m`)).toBe(true);
    });
  });

  describe('worker', () => {
    const answer = [
      'node',
      '-e',
      'process.stdin.resume();process.stdin.on("end",()=>console.log("{\\"ok\\":true}"))',
    ];

    /** Starts a worker, waits until it runs, lets it pick and finish what `untilLine` waits for, stops it. */
    async function runWorker(args: string[], untilLine?: RegExp): Promise<Outcome> {
      const child: ChildProcess = spawn(
        process.execPath,
        [bundledBin, 'worker', ...args, ...at(), '--', ...answer],
        {
          cwd: work,
          env: baseEnv,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const exited = new Promise<number>((done) => child.on('exit', (code) => done(code ?? 1)));
      await Promise.race([
        waitFor(() => stdout.includes('worker running') && (!untilLine || untilLine.test(stdout)), 30_000),
        exited,
      ]);
      child.kill('SIGINT');
      return { code: await exited, stdout, stderr };
    }

    const named = async (name: string) => (await operator.listAgents()).filter((a) => a.name === name);

    it('--name registers one agent on the first start, reuses it after, and registers anew once it is revoked', async () => {
      const { task } = await operator.submitTask({ queue: 'work', payload: { for: 'named' } });

      const first = await runWorker(
        ['--name', 'cli-named', '--queue', 'work'],
        new RegExp(`completed ${task.taskId}`),
      );
      const second = await runWorker(['--name', 'cli-named', '--queue', 'work']);

      expect(first.code, first.stdout + first.stderr).toBe(0);
      expect(first.stdout).toMatch(/registered agent a_\w+ as cli-named; its token is saved in /);
      expect(second.code, second.stdout + second.stderr).toBe(0);
      expect(second.stdout).toMatch(/running as agent a_\w+ \(cli-named\)/);
      const agents = await named('cli-named');
      expect(agents).toHaveLength(1);
      expect(agents[0]?.revokedAt).toBeUndefined();
      expect((await operator.getTask(task.taskId)).status).toBe('succeeded');
      const file = join(config, 'agent-scheduler', 'agents.json');
      expect(statSync(join(config, 'agent-scheduler')).mode & 0o777).toBe(0o700);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const saved = JSON.parse(readFileSync(file, 'utf8')) as {
        agents: { name: string; agentId: string; endpoint: string }[];
      };
      expect(saved.agents).toEqual([
        expect.objectContaining({ name: 'cli-named', agentId: agents[0]?.agentId, endpoint: server.url }),
      ]);

      await operator.revokeAgent(agents[0]?.agentId ?? '');
      const third = await runWorker(['--name', 'cli-named', '--queue', 'work']);

      expect(third.code, third.stdout + third.stderr).toBe(0);
      expect(third.stdout).toContain(`the server refused the saved agent ${agents[0]?.agentId} (cli-named)`);
      const after = await named('cli-named');
      expect(after).toHaveLength(2);
      const fresh = after.find((a) => a.revokedAt === undefined);
      expect(fresh?.agentId).not.toBe(agents[0]?.agentId);
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
        agents: [expect.objectContaining({ name: 'cli-named', agentId: fresh?.agentId })],
      });
    });

    it('a saved agent is not used for queues it does not serve', async () => {
      const outcome = await cli(['worker', '--name', 'cli-named', '--queue', 'other', ...at(), '--', 'true']);
      expect(outcome.code).toBe(2);
      expect(outcome.stderr).toMatch(/the agent saved as cli-named \(a_\w+\) serves work, not other/);
    });

    it('without --name, registers worker-<host> for the run and revokes it when it stops', async () => {
      const outcome = await runWorker(['--queue', 'other']);

      expect(outcome.code, outcome.stdout + outcome.stderr).toBe(0);
      const agents = await named(`worker-${hostname()}`);
      expect(agents).toHaveLength(1);
      expect(agents[0]?.revokedAt).toEqual(expect.any(String));
      expect(outcome.stdout).toContain(`revoked agent ${agents[0]?.agentId}, registered for this run`);
    });
  });
});
