/**
 * The pure parts of the CLI: reading JSON arguments, numbers, colour decisions, messages for a server out of
 * reach, and the saved agents of `worker --name`.
 */
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { NetworkError } from '#sdk/errors';
import { colours, colourWanted, paintStatus } from '../../../cli/colour';
import { userConfigDir } from '../../../cli/config';
import { networkCode, UsageError, unreachableMessage } from '../../../cli/errors';
import { ago, table } from '../../../cli/format';
import { jsonArgument, positiveNumber, wholeNumber } from '../../../cli/input';
import { SavedAgents } from '../../../cli/saved-agents';

const ESC = String.fromCharCode(0x1b);

const noStdin = () => {
  throw new Error('standard input was not expected');
};

describe('JSON arguments', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cli-json-'));
  writeFileSync(join(dir, 'task.json'), '{"topic":"tides"}');
  writeFileSync(join(dir, 'broken.json'), '{"topic":');

  it('reads JSON inline, from @file and from standard input', () => {
    expect(jsonArgument('payload', '{"n":1}', noStdin)).toEqual({ n: 1 });
    expect(jsonArgument('payload', `@${join(dir, 'task.json')}`, noStdin)).toEqual({ topic: 'tides' });
    expect(jsonArgument('batch', '-', () => '[{"queue":"q"}]')).toEqual([{ queue: 'q' }]);
  });

  it.each([
    ['a missing file', '@missing.json', 'cannot read --payload file missing.json: no such file'],
    ['a folder', `@${dir}`, `cannot read --payload file ${dir}: it is a folder`],
    ['no file name', '@', '--payload @ needs a file name: @payload.json'],
  ])('names the flag and the file for %s, as a usage error', (_, value, message) => {
    const act = () => jsonArgument('payload', value, noStdin);
    expect(act).toThrow(UsageError);
    expect(act).toThrow(message);
  });

  it('says which input is not JSON', () => {
    expect(() => jsonArgument('payload', '{bad', noStdin)).toThrow(/^--payload is not JSON: /);
    expect(() => jsonArgument('payload', `@${join(dir, 'broken.json')}`, noStdin)).toThrow(
      new RegExp(`^--payload file ${join(dir, 'broken.json')} is not JSON`),
    );
    expect(() => jsonArgument('batch', '-', () => 'nope')).toThrow(
      /^--batch from standard input is not JSON/,
    );
  });
});

describe('numbers', () => {
  it.each(['1', '0', '-3', ' 42 '])('takes the whole number %j', (value) => {
    expect(wholeNumber(value)).toBe(Number(value));
  });

  it.each(['', 'x', '1.5', '1e3', '0x10', '99999999999999999999'])(
    'refuses %j as a whole number',
    (value) => {
      expect(() => wholeNumber(value)).toThrow(InvalidArgumentError);
    },
  );

  it('takes rates above 0 only', () => {
    expect(positiveNumber('0.5')).toBe(0.5);
    for (const bad of ['0', '-1', '', 'fast', 'Infinity'])
      expect(() => positiveNumber(bad)).toThrow(/above 0/);
  });
});

describe('colour', () => {
  it.each([
    ['a terminal', { isTTY: true, env: {} }, true],
    ['a pipe', { isTTY: false, env: {} }, false],
    ['--json on a terminal', { isTTY: true, env: {}, json: true }, false],
    ['NO_COLOR on a terminal', { isTTY: true, env: { NO_COLOR: '1' } }, false],
    ['an empty NO_COLOR', { isTTY: true, env: { NO_COLOR: '' } }, true],
    ['FORCE_COLOR on a pipe', { isTTY: false, env: { FORCE_COLOR: '1' } }, true],
    ['FORCE_COLOR and NO_COLOR', { isTTY: false, env: { FORCE_COLOR: '1', NO_COLOR: '1' } }, false],
    ['FORCE_COLOR with --json', { isTTY: true, env: { FORCE_COLOR: '1' }, json: true }, false],
    ['a dumb terminal', { isTTY: true, env: { TERM: 'dumb' } }, false],
  ])('%s: %s', (_, options, wanted) => {
    expect(colourWanted(options)).toBe(wanted);
  });

  it('paints statuses only when enabled', () => {
    expect(paintStatus(colours(true), 'dead')).toBe('\u001b[31mdead\u001b[39m');
    expect(paintStatus(colours(true), 'queued')).toBe('queued');
    expect(paintStatus(colours(false), 'dead')).toBe('dead');
  });

  it('keeps a painted table aligned: colour is added after the columns are measured', () => {
    const rows = [
      { id: 'a', status: 'dead', n: 1 },
      { id: 'bb', status: 'succeeded', n: 22 },
    ];
    const painted = table(rows, ['id', 'status', 'n'], (column, text) =>
      column === 'status' ? paintStatus(colours(true), text) : text,
    );
    const plain = table(rows, ['id', 'status', 'n']);
    expect(painted.replace(new RegExp(`${ESC}\\[\\d+m`, 'g'), '')).toBe(plain);
    expect(painted).toContain('\u001b[31mdead\u001b[39m');
  });
});

describe('times', () => {
  const now = Date.parse('2026-05-01T12:00:00Z');
  it.each([
    ['2026-05-01T11:59:55Z', '5s ago'],
    ['2026-05-01T11:50:00Z', '10m ago'],
    ['2026-05-01T09:00:00Z', '3h ago'],
    ['2026-04-28T12:00:00Z', '3d ago'],
    [undefined, ''],
  ])('%s is %j', (iso, text) => {
    expect(ago(iso, now)).toBe(text);
  });
});

describe('a server out of reach', () => {
  const refused = () => {
    const socket = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3000'), { code: 'ECONNREFUSED' });
    const fetchFailed = new TypeError('fetch failed', { cause: socket });
    return new NetworkError({
      status: 0,
      code: 'NetworkError',
      message: 'the request failed: fetch failed',
      cause: fetchFailed,
    });
  };
  const local = {
    endpoint: 'http://127.0.0.1:3000',
    source: 'local.json' as const,
    localFile: '/p/.agent-scheduler/local.json',
  };

  it('names the endpoint, the reason, where the endpoint came from, and what to try', () => {
    expect(unreachableMessage(refused(), local, 30)).toBe(
      'cannot reach http://127.0.0.1:3000 (connection refused). Is `agent-scheduler dev` (or `npm start`) running?\n' +
        'the endpoint comes from /p/.agent-scheduler/local.json',
    );
  });

  it('says a request timed out, and how long it waited', () => {
    const timeout = new NetworkError({ status: 0, code: 'Timeout', message: 'the request timed out' });
    expect(
      unreachableMessage(timeout, { endpoint: 'https://api.example.com', source: 'environment' }, 5),
    ).toBe(
      'cannot reach https://api.example.com (timed out: no answer within 5 s). Is the endpoint right, and the ' +
        'network up? --request-timeout waits longer.\nthe endpoint comes from AGENT_SCHEDULER_ENDPOINT',
    );
  });

  it('finds the reason inside an AggregateError (a host with several addresses)', () => {
    const both = new AggregateError([
      Object.assign(new Error('connect ECONNREFUSED ::1:3000'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3000'), { code: 'ECONNREFUSED' }),
    ]);
    expect(networkCode(new TypeError('fetch failed', { cause: both }))).toBe('ECONNREFUSED');
  });

  it('leaves answers from the server to their own message', () => {
    expect(unreachableMessage(new Error('boom'), local, 30)).toBeUndefined();
  });
});

describe('saved agents', () => {
  const agent = (name: string, endpoint = 'http://127.0.0.1:3000') => ({
    endpoint,
    name,
    agentId: `a_${name}`,
    token: `a_${name}.secret`,
    queues: ['work'],
    maxConcurrency: 1,
    savedAt: '2026-05-01T00:00:00.000Z',
  });

  it('lives in the user configuration folder, XDG first', () => {
    expect(userConfigDir({ XDG_CONFIG_HOME: '/x/config', HOME: '/home/u' })).toBe(
      '/x/config/agent-scheduler',
    );
    expect(userConfigDir({ HOME: '/home/u' })).toBe('/home/u/.config/agent-scheduler');
    expect(userConfigDir({ XDG_CONFIG_HOME: 'relative', HOME: '/home/u' })).toBe(
      '/home/u/.config/agent-scheduler',
    );
  });

  it('keeps one agent per endpoint and name, readable by the user only', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'cli-saved-')), 'agent-scheduler');
    const saved = new SavedAgents(dir);
    saved.put(agent('one'));
    saved.put(agent('one', 'https://elsewhere.example'));
    saved.put({ ...agent('one'), agentId: 'a_replaced' });

    expect(saved.get('http://127.0.0.1:3000/', 'one')?.agentId).toBe('a_replaced');
    expect(saved.get('https://elsewhere.example', 'one')?.agentId).toBe('a_one');
    expect(saved.get('http://127.0.0.1:3000', 'two')).toBeUndefined();
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(saved.file).mode & 0o777).toBe(0o600);
  });

  it('tightens a folder made too open, and never overwrites a file it cannot read', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'cli-saved-')), 'agent-scheduler');
    mkdirSync(dir, { mode: 0o755 });
    const saved = new SavedAgents(dir);
    saved.put(agent('one'));
    expect(statSync(dir).mode & 0o777).toBe(0o700);

    writeFileSync(saved.file, 'not json');
    expect(() => saved.put(agent('two'))).toThrow(UsageError);
    expect(readFileSync(saved.file, 'utf8')).toBe('not json');
  });
});
