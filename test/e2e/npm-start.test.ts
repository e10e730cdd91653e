/**
 * `npm start` as a person runs it: ready quickly, serves health, writes local.json, serves the console at `/` to a
 * browser that types the printed code, and Ctrl-C stops every child.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findFreePort } from '#local/emulators/dynamodb-local';
import { isRunning } from '#local/processes';

describe('npm start', () => {
  it('serves GET /v1/health within 15 s and stops everything on Ctrl-C', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'agent-scheduler-start-'));
    const port = await findFreePort();
    const started = Date.now();
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'local/start.ts', '--in-memory', '--port', String(port), '--data-dir', dataDir],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CI: 'true' } },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

    let healthyAt = 0;
    while (Date.now() - started < 15_000 && healthyAt === 0) {
      const ok = await fetch(`http://127.0.0.1:${port}/v1/health`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) healthyAt = Date.now();
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const readyMs = healthyAt - started;
    // The banner follows the first answers by a moment; wait for it before stopping.
    while (!output.includes('Ctrl-C stops everything') && Date.now() - started < 20_000) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    console.log(`[start] npm start served /v1/health ${readyMs} ms after launch`);
    const local = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8')) as {
      endpoint: string;
      operatorToken: string;
    };
    const javaPid = Number(/pid (\d+)/.exec(output)?.[1] ?? 0);
    // The console: the page at /, and the API through it once the printed code is typed.
    const base = `http://127.0.0.1:${port}`;
    const page = await fetch(`${base}/`);
    const loginCode = /login code (\S+)/.exec(output)?.[1] ?? '';
    const signedIn = await fetch(`${base}/console/login`, {
      method: 'POST',
      headers: { origin: base, 'content-type': 'application/json' },
      body: JSON.stringify({ code: loginCode }),
    });
    const { key } = (await signedIn.json()) as { key: string };
    const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const queues = await fetch(`${base}/console/api/v1/queues`, {
      headers: { cookie, 'x-console-key': key },
    });

    child.kill('SIGINT');
    const code = await exited;

    expect(healthyAt, output).toBeGreaterThan(0);
    expect(readyMs).toBeLessThan(15_000);
    expect(local).toEqual({
      endpoint: `http://127.0.0.1:${port}`,
      operatorToken: expect.stringMatching(/^op_/),
    });
    expect(output).toContain('operator token');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(signedIn.status).toBe(200);
    expect(queues.status).toBe(200);
    expect(((await queues.json()) as { queues: { name: string }[] }).queues.length).toBeGreaterThan(0);
    expect(output).toMatch(/login code for the next one is \S+/);
    expect(code).toBe(0);
    expect(
      await fetch(`http://127.0.0.1:${port}/v1/health`).then(
        () => 'up',
        () => 'down',
      ),
    ).toBe('down');
    if (javaPid) expect(isRunning(javaPid)).toBe(false);
    expect(existsSync(join(dataDir, 'dynamodb'))).toBe(true);
  });
});
