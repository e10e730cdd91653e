/**
 * The supervisor's figures through the local HTTP server on the emulators: `GET /v1/scheduler/stats` before any pass
 * (zeros, no last pass) and after two, through the SDK's `getSchedulerStats` and the CLI's `scheduler stats` (a table,
 * and `--json`); and hostile requests to the route (a body, wrong methods, the wrong caller), each a 4xx.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CYCLE_FIGURES } from '#core/cycle-figures';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { createTestStack, serveStack, type TestStack } from '#test/stack';
import { main } from '../../cli/main';

const OPERATOR = 'op_scheduler-stats-token';

describe('the supervisor’s figures over HTTP', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;

  beforeAll(async () => {
    stack = await createTestStack({ queues: ['work', 'idle'], settings: { reconcileAfterSeconds: 5 } });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
  });
  afterAll(async () => {
    await server?.close();
    await stack?.destroy();
  });

  const cli = async (...args: string[]) => {
    const lines: string[] = [];
    const code = await main([...args, '--endpoint', server.url, '--token', OPERATOR], (text) =>
      lines.push(text),
    );
    return { code, out: lines.join('\n') };
  };
  const send = (method: string, path: string, init: { body?: string; token?: string } = {}) =>
    new Promise<{ status: number; body: { error?: { code?: string } } }>((resolve, reject) => {
      const sent = request(
        `${server.url}${path}`,
        {
          method,
          headers: {
            ...(init.token === '' ? {} : { authorization: `Bearer ${init.token ?? OPERATOR}` }),
            ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
          },
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            text += chunk;
          });
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
        },
      );
      sent.on('error', reject);
      sent.end(init.body);
    });

  it('answers zeros before the first pass, then every pass added up and the last one with its tasks', async () => {
    const zeros = Object.fromEntries(CYCLE_FIGURES.map((name) => [name, 0]));
    expect(await operator.getSchedulerStats()).toEqual({
      cumulative: { passes: 0, ...zeros },
      lastErrors: [],
    });
    expect(await cli('scheduler', 'stats')).toMatchObject({
      code: 0,
      out: expect.stringMatching(/^0 passes: no pass recorded yet/),
    });

    // A task in a paused queue: unclaimable at each pass that looks at it.
    const { task } = await operator.submitTask({ queue: 'idle', payload: {} });
    await operator.pauseQueue('idle');
    stack.clock.advance(6_000);
    const first = await stack.scheduler.supervise();
    stack.clock.advance(60_000);
    const second = await stack.scheduler.supervise();

    const stats = await operator.getSchedulerStats();
    expect(stats.cumulative.passes).toBe(2);
    expect(stats.cumulative.pendingRuns).toBe(first.pendingRuns + second.pendingRuns);
    expect(stats.cumulative.unclaimable).toBe(first.unclaimable + second.unclaimable);
    expect(stats.cumulative.unclaimable).toBeGreaterThanOrEqual(1);
    expect(stats.lastPass).toMatchObject({
      at: new Date(second.at).toISOString(),
      durationMs: second.durationMs,
      pendingRuns: second.pendingRuns,
      ids: { unclaimable: second.ids.unclaimable },
    });
    expect(stats.lastErrors).toEqual([]);

    const json = await cli('scheduler', 'stats', '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toEqual(stats);
    const text = await cli('scheduler', 'stats');
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/^2 passes; the last at \S+Z \(\d+s ago\), \d+ ms/);
    expect(text.out).toMatch(/^figure\s+total\s+lastPass\s+tasks$/m);
    if (second.ids.unclaimable.length > 0)
      expect(text.out).toMatch(new RegExp(`^unclaimable\\s+\\d+\\s+\\d+\\s+${task.taskId}`, 'm'));
  });

  it('refuses hostile requests to the route with a 4xx', async () => {
    const { token: agentToken } = await operator.createAgent({ name: 'intruder', queues: ['work'] });
    const hostile: [string, string, { body?: string; token?: string }, number][] = [
      ['GET', '/v1/scheduler/stats', { body: '{"passes":0}' }, 400],
      ['POST', '/v1/scheduler/stats', { body: '{}' }, 405],
      ['DELETE', '/v1/scheduler/stats', {}, 405],
      ['GET', '/v1/scheduler/Stats', {}, 404],
      ['GET', '/v1/scheduler/stats', { token: agentToken }, 403],
      ['GET', '/v1/scheduler/stats', { token: '' }, 401],
    ];
    for (const [method, path, init, status] of hostile) {
      const response = await send(method, path, init);
      expect(`${method} ${path} → ${response.status}`).toBe(`${method} ${path} → ${status}`);
      expect(response.body.error?.code).toEqual(expect.any(String));
    }
  });
});
