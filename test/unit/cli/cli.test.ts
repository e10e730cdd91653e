import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CommandFailed,
  commandHandler,
  NOT_RETRYABLE_EXIT_CODE,
  progressOfLine,
  SNOOZE_EXIT_CODE,
} from '../../../cli/command-handler';
import { findLocalFile, resolveConnection } from '../../../cli/config';
import { UsageError } from '../../../cli/errors';
import { record, table } from '../../../cli/format';

const task = {
  taskId: 't_x',
  queue: 'q',
  priority: 'normal',
  payload: { n: 2 },
  attempt: 1,
  leaseEpoch: 1,
  leaseDeadline: '',
} as never;

describe('connection', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cli-'));
  mkdirSync(join(dir, '.agent-scheduler'));
  writeFileSync(
    join(dir, '.agent-scheduler', 'local.json'),
    JSON.stringify({ endpoint: 'http://127.0.0.1:3000', operatorToken: 'op_local' }),
  );

  it.each([
    [
      'flags win',
      { endpoint: 'http://f', token: 't_f' },
      { AGENT_SCHEDULER_ENDPOINT: 'http://e' },
      { endpoint: 'http://f', auth: 'token', token: 't_f', source: 'flags' },
    ],
    [
      'then the environment',
      {},
      { AGENT_SCHEDULER_ENDPOINT: 'http://e', AGENT_SCHEDULER_TOKEN: 't_e' },
      { endpoint: 'http://e', auth: 'token', token: 't_e', source: 'environment' },
    ],
    [
      'then local.json',
      {},
      {},
      {
        endpoint: 'http://127.0.0.1:3000',
        auth: 'token',
        token: 'op_local',
        source: 'local.json',
        localFile: join(dir, '.agent-scheduler', 'local.json'),
      },
    ],
  ])('%s', (_, flags, env, expected) => {
    expect(resolveConnection(flags, env, dir)).toEqual(expected);
  });

  it('signs for an execute-api endpoint by default, in its region, and never sends the local operator token there', () => {
    const endpoint = 'https://abc123xyz.execute-api.eu-central-1.amazonaws.com';
    expect(resolveConnection({ endpoint }, { AWS_REGION: 'us-east-1' }, dir)).toEqual({
      endpoint,
      auth: 'iam',
      region: 'eu-central-1',
      source: 'flags',
    });
    expect(resolveConnection({ endpoint, auth: 'token', token: 'op_x' }, {}, dir)).toMatchObject({
      auth: 'token',
    });
  });

  it('a custom domain takes the token unless --auth iam, which then needs a region', () => {
    const endpoint = 'https://scheduler.example.com';
    expect(resolveConnection({ endpoint }, {}, dir)).toMatchObject({ auth: 'token' });
    expect(() => resolveConnection({ endpoint, auth: 'iam' }, {}, dir)).toThrow(/--region or set AWS_REGION/);
    expect(
      resolveConnection({ endpoint }, { AGENT_SCHEDULER_AUTH: 'iam', AWS_REGION: 'us-west-2' }, dir),
    ).toEqual({
      endpoint,
      auth: 'iam',
      region: 'us-west-2',
      source: 'flags',
    });
    expect(() => resolveConnection({ endpoint, auth: 'sigv4' }, {}, dir)).toThrow(
      /--auth must be iam or token/,
    );
  });

  it('a local stack started with --iam says so in local.json', () => {
    const iamDir = mkdtempSync(join(tmpdir(), 'cli-'));
    mkdirSync(join(iamDir, '.agent-scheduler'));
    writeFileSync(
      join(iamDir, '.agent-scheduler', 'local.json'),
      JSON.stringify({ endpoint: 'http://127.0.0.1:3000', auth: 'iam', region: 'eu-west-3' }),
    );
    expect(resolveConnection({}, {}, iamDir)).toEqual({
      endpoint: 'http://127.0.0.1:3000',
      auth: 'iam',
      region: 'eu-west-3',
      source: 'local.json',
      localFile: join(iamDir, '.agent-scheduler', 'local.json'),
    });
  });

  it('finds local.json in a folder above, the nearest first', () => {
    // Prepare: local.json at the top and one level down; the command runs three levels below that
    const top = mkdtempSync(join(tmpdir(), 'cli-walk-'));
    const nearer = join(top, 'project');
    const deep = join(nearer, 'src', 'lib', 'deep');
    mkdirSync(deep, { recursive: true });
    for (const [folder, port] of [
      [top, 4001],
      [nearer, 4002],
    ] as const) {
      mkdirSync(join(folder, '.agent-scheduler'));
      writeFileSync(
        join(folder, '.agent-scheduler', 'local.json'),
        JSON.stringify({ endpoint: `http://127.0.0.1:${port}`, operatorToken: `op_${port}` }),
      );
    }

    // Act
    const found = resolveConnection({}, {}, deep);

    // Assess
    expect(found).toMatchObject({
      endpoint: 'http://127.0.0.1:4002',
      token: 'op_4002',
      localFile: join(nearer, '.agent-scheduler', 'local.json'),
    });
    expect(findLocalFile(join(top, 'elsewhere'))).toBe(join(top, '.agent-scheduler', 'local.json'));
  });

  it('sends the operator token of local.json to its own endpoint only', () => {
    expect(resolveConnection({ endpoint: 'http://127.0.0.1:3000/' }, {}, dir)).toMatchObject({
      token: 'op_local',
      source: 'flags',
    });
    expect(resolveConnection({ endpoint: 'http://other.example:3000' }, {}, dir)).not.toHaveProperty('token');
  });

  it('says which local.json cannot be read, and is not stopped by it when it is not needed', () => {
    const broken = mkdtempSync(join(tmpdir(), 'cli-broken-'));
    mkdirSync(join(broken, '.agent-scheduler'));
    writeFileSync(join(broken, '.agent-scheduler', 'local.json'), '{"endpoint": ');
    expect(() => resolveConnection({}, {}, broken)).toThrow(
      `cannot read ${join(broken, '.agent-scheduler', 'local.json')}: it is not JSON`,
    );
    expect(resolveConnection({ endpoint: 'http://f', token: 'op_f' }, {}, broken)).toMatchObject({
      token: 'op_f',
    });
  });

  it('says how to get an endpoint when there is none', () => {
    const empty = mkdtempSync(join(tmpdir(), 'cli-none-'));
    expect(() => resolveConnection({}, {}, empty)).toThrow(UsageError);
    expect(() => resolveConnection({}, {}, empty)).toThrow(/npm start/);
  });
});

describe('output', () => {
  it('aligns a table and cuts long cells', () => {
    const text = table(
      [
        { a: 'x', b: 'y'.repeat(80) },
        { a: 'longer', b: 1 },
      ],
      ['a', 'b'],
    );
    const lines = text.split('\n');
    expect(lines[0]).toBe(`a       b`);
    expect(lines[2]).toMatch(/^x {7}y{57}\.\.\.$/);
    expect(lines[3]).toBe('longer  1');
    expect(table([], ['a'])).toBe('(none)');
  });

  it('prints a record as aligned key/value lines, skipping undefined', () => {
    expect(record({ id: 't_1', status: 'queued', owner: undefined })).toBe('id      t_1\nstatus  queued');
  });
});

describe('command handler', () => {
  const signal = () => new AbortController().signal;

  it('passes the payload on stdin and parses JSON from stdout', async () => {
    const run = commandHandler([
      'node',
      '-e',
      'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.stringify({twice:JSON.parse(s).n*2})))',
    ]);
    expect(await run(task, { signal: signal() })).toEqual({ twice: 4 });
  });

  it('wraps text output', async () => {
    expect(await commandHandler(['node', '-e', 'console.log("plain")'])(task, { signal: signal() })).toEqual({
      output: 'plain',
    });
  });

  it.each([
    [1, true],
    [NOT_RETRYABLE_EXIT_CODE, false],
  ])('exit code %i fails, retryable %s, with stderr in the message', async (code, retryable) => {
    const run = commandHandler(['node', '-e', `console.error("bad input");process.exit(${code})`]);
    const failure = await run(task, { signal: signal() }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(CommandFailed);
    expect(failure).toMatchObject({ retryable, message: expect.stringMatching(/bad input/) });
  });

  it.each([
    ['console.log(30)', 30],
    ['console.log(JSON.stringify({retryAfterSeconds:2.5}))', 2.5],
    ['console.log("busy")', 60],
  ])('exit code 75 after %s asks for a snooze of %s s', async (output, seconds) => {
    const run = commandHandler(['node', '-e', `${output};process.exit(${SNOOZE_EXIT_CODE})`]);
    const failure = await run(task, { signal: signal() }).catch((e: unknown) => e);
    expect(failure).toMatchObject({ retryable: true, retryAfterSeconds: seconds });
  });

  it('reports the progress lines the command writes to its standard error, and only those', async () => {
    const reports: unknown[] = [];
    const script = [
      'process.stderr.write("progress 25 reading the sources\\n")',
      'process.stderr.write("a warning\\nprogress 60%\\n")',
      'process.stderr.write("progress {\\"percent\\":90,\\"data\\":{\\"pages\\":3}}\\n")',
      'process.stderr.write("progress 200 too far\\nprogress writing")',
      'setTimeout(() => { process.stderr.write(" up\\n"); console.log("{}"); }, 50)',
    ].join(';');
    const run = commandHandler(['node', '-e', script]);
    const result = await run(task, {
      signal: signal(),
      progress: (update) => {
        if (update.percent !== undefined && update.percent > 100) throw new RangeError('percent');
        reports.push(update);
      },
    });
    expect(result).toEqual({});
    expect(reports).toEqual([
      { percent: 25, message: 'reading the sources' },
      { percent: 60 },
      { percent: 90, data: { pages: 3 } },
      { message: 'writing up' },
    ]);
    expect(progressOfLine('progressive')).toBeUndefined();
    expect(progressOfLine('progress {not json')).toBeUndefined();
  });

  it('stops the command when the lease is lost', async () => {
    const controller = new AbortController();
    const run = commandHandler(['node', '-e', 'setTimeout(()=>{},60000)'])(task, {
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 100);
    await expect(run).rejects.toThrow(/SIGTERM/);
  });
});
