/**
 * Local mode as a person meets it: a port in use is one line at once, the emulators never outlive `npm start`
 * (kill -9 included), log lines are JSON with timestamps, one per task transition, and `GET /v1/events` is served.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findFreePort } from '#local/emulators/dynamodb-local';
import { isRunning } from '#local/processes';
import { waitFor } from '#test/stack';

function start(
  port: number,
  dataDir: string,
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'local/start.ts', '--in-memory', '--port', String(port), '--data-dir', dataDir],
    { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CI: 'true' } },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

describe('local mode', () => {
  it('a port in use is refused in one line naming PORT=, before any emulator starts', async () => {
    const blocker = createServer();
    const port = await findFreePort();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    try {
      const started = Date.now();
      const { output, exited } = start(port, mkdtempSync(join(tmpdir(), 'agent-scheduler-port-')));
      const code = await exited;
      const lines = output()
        .split('\n')
        .filter((line) => line.trim() !== '' && !line.startsWith('npm warn'));
      expect(code).toBe(2);
      expect(lines).toEqual([
        `port ${port} is in use: stop what listens there, or pick another, e.g. PORT=${port + 1} npm start`,
      ]);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(output()).not.toContain('dynamodb local');
    } finally {
      blocker.close();
    }
  }, 30_000);

  it('serves events, logs each transition as a JSON line, and kill -9 takes the emulator with it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'agent-scheduler-kill-'));
    const port = await findFreePort();
    const { child, output, exited } = start(port, dataDir);
    try {
      await waitFor(() => output().includes('Ctrl-C stops everything'), 30_000);
      const { operatorToken } = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8')) as {
        operatorToken: string;
      };
      const headers = { authorization: `Bearer ${operatorToken}`, 'content-type': 'application/json' };
      const submitted = (await (
        await fetch(`http://127.0.0.1:${port}/v1/tasks`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ queue: 'research', payload: { n: 1 } }),
        })
      ).json()) as { task: { taskId: string } };

      const feed = await fetch(`http://127.0.0.1:${port}/v1/events?since=0&limit=10`, { headers });
      expect(feed.status).toBe(200);
      expect(await feed.json()).toMatchObject({
        events: [{ sequence: 1, type: 'task.submitted', taskId: submitted.task.taskId, queue: 'research' }],
        next: 1,
      });
      const bad = await fetch(`http://127.0.0.1:${port}/v1/events?limit=0`, { headers });
      expect(bad.status).toBe(400);

      await waitFor(() => output().includes('"message":"task.submitted"'));
      const line = output()
        .split('\n')
        .find((l) => l.includes('"message":"task.submitted"'));
      expect(JSON.parse(line ?? '{}')).toMatchObject({
        level: 'INFO',
        message: 'task.submitted',
        timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        taskId: submitted.task.taskId,
      });

      const javaPid = Number(/pid (\d+)/.exec(output())?.[1] ?? 0);
      expect(isRunning(javaPid)).toBe(true);
      child.kill('SIGKILL');
      await exited;
      await waitFor(() => !isRunning(javaPid), 10_000);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 60_000);
});
