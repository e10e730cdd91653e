/**
 * What the CLI prints comes from the server and from other agents; control characters in it must reach the
 * terminal escaped, in tables, records, `--json` and error messages alike. A usage error, whoever finds it, ends with
 * the command's usage line.
 */
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { printable } from '../../../cli/format';
import { main, run } from '../../../cli/main';

const HOSTILE = 'evil\u001b[2J\u001b]0;owned\u0007\u202egnp.exe\u009b31m\u2028';
const RAW = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const raw = (text: string) => RAW.test(text.replaceAll('\n', ''));

describe('CLI output', () => {
  let server: Server;
  let endpoint = '';
  beforeAll(async () => {
    server = createServer((request, response) => {
      response.setHeader('content-type', 'application/json');
      if (request.url?.startsWith('/v1/agents')) {
        response.end(
          JSON.stringify({
            agents: [
              {
                agentId: `a_${'q'.repeat(26)}`,
                name: HOSTILE,
                queues: [HOSTILE],
                maxConcurrency: 1,
                interactive: true,
                createdAt: '2026-01-01T00:00:00.000Z',
                online: true,
                lastHeartbeatAt: '2026-01-01T00:00:00.000Z',
                tasksHeld: 2,
              },
            ],
          }),
        );
        return;
      }
      response.statusCode = 400;
      response.end(JSON.stringify({ error: { code: 'ValidationError', message: HOSTILE } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('escapes control and format characters, and keeps newlines', () => {
    expect(printable('a\u001bb\u202ec\nd')).toBe('a\\u001bb\\u202ec\nd');
  });

  it.each([[[]], [['--json']]])('prints agents %j without raw control characters', async (flags) => {
    const lines: string[] = [];
    const code = await main(['agents', 'list', '--endpoint', endpoint, '--token', 'op_x', ...flags], (text) =>
      lines.push(text),
    );
    expect(code).toBe(0);
    const printed = lines.join('\n');
    expect(printed).toContain('evil\\u001b[2J');
    expect(raw(printed)).toBe(false);
    if (flags.length > 0) {
      const [agent] = JSON.parse(printed) as { name: string }[];
      expect(agent?.name).toBe(HOSTILE);
    }
  });

  it('colours a terminal’s table with its own codes only, and keeps what the server sent escaped', async () => {
    const lines: string[] = [];
    const code = await main(
      ['agents', 'list', '--endpoint', endpoint, '--token', 'op_x'],
      (text) => lines.push(text),
      { stdoutIsTTY: true, env: {} },
    );
    expect(code).toBe(0);
    const printed = lines.join('\n');
    expect(printed).toContain('\u001b[32monline\u001b[39m');
    expect(printed).toContain('evil\\u001b[2J');
    // The only raw escapes are the colour codes the CLI added.
    expect(raw(printed.replaceAll('\u001b[32m', '').replaceAll('\u001b[39m', ''))).toBe(false);
  });

  it('prints an error message from the server escaped', async () => {
    const errors: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((text: string) => {
      errors.push(text);
    });
    try {
      const code = await run(['get', `t_${'q'.repeat(26)}`, '--endpoint', endpoint, '--token', 'op_x']);
      expect(code).toBe(1);
    } finally {
      spy.mockRestore();
    }
    expect(errors.join('\n')).toContain('evil\\u001b');
    expect(raw(errors.join('\n'))).toBe(false);
  });
});

describe('usage errors', () => {
  const runCli = async (argv: string[]) => {
    const errors: string[] = [];
    const code = await main(argv, () => undefined, {
      writeErr: (text) => errors.push(text),
      env: {},
      cwd: mkdtempSync(join(tmpdir(), 'cli-usage-')),
      stderrIsTTY: false,
    });
    return { code, stderr: errors.join('\n') };
  };

  it.each([
    [
      'a payload that is not JSON',
      ['submit', '--queue', 'q', '--payload', '{bad', '--endpoint', 'http://x', '--token', 't'],
    ],
    ['no endpoint', ['submit', '--queue', 'q']],
  ])(
    '%s, found by the CLI itself, ends with the command’s usage line as Commander’s errors do',
    async (_, argv) => {
      const { code, stderr } = await runCli(argv);
      expect(code).toBe(2);
      expect(stderr).toMatch(
        /^error: .+\nusage: agent-scheduler submit \[options\]\nsee `agent-scheduler submit --help`$/,
      );
    },
  );

  it('an argument Commander finds missing says the same', async () => {
    const { code, stderr } = await runCli(['get']);
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /\nusage: agent-scheduler get \[options\] <task-id>\nsee `agent-scheduler get --help`$/,
    );
  });
});
