/**
 * The scheduler-wide pause through the local HTTP server on the emulators, as operators and agents meet it: the
 * SDK's `getSchedulerControl`, `pauseScheduler` and `resumeScheduler`, the CLI's `scheduler status|pause|resume`, an
 * agent's claim over HTTP while paused (nothing, and when to come back) and after; and hostile requests to the three
 * routes (a body where none is taken, wrong methods, the wrong caller), each a 4xx that changes nothing.
 */
import { request } from 'node:http';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { createTestStack, serveStack, type TestStack } from '#test/stack';
import { main } from '../../cli/main';

const OPERATOR = 'op_scheduler-pause-token';

describe('the scheduler-wide pause over HTTP', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;

  beforeAll(async () => {
    stack = await createTestStack({ queues: ['work'] });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
  });
  afterAll(async () => {
    await server?.close();
    await stack?.destroy();
  });

  /** The CLI in this process: its exit code and what it printed. */
  const cli = async (...args: string[]) => {
    const lines: string[] = [];
    const code = await main([...args, '--endpoint', server.url, '--token', OPERATOR], (text) =>
      lines.push(text),
    );
    return { code, out: lines.join('\n') };
  };
  /** The control's item as stored, byte for byte: what a refused request must leave as it was. */
  const stored = async () =>
    JSON.stringify(
      (
        await stack.ctx.sessions.doc.send(
          new GetCommand({
            TableName: stack.ctx.sessions.tableName,
            Key: { leaseId: 'scheduler' },
            ConsistentRead: true,
          }),
        )
      ).Item ?? null,
    );
  /** One raw request (node's own client: `fetch` sends no body with a GET); its status and JSON body. */
  const send = (method: string, path: string, init: { body?: string; token?: string; type?: string } = {}) =>
    new Promise<{ status: number; body: { error?: { code?: string } } }>((resolve, reject) => {
      const sent = request(
        `${server.url}${path}`,
        {
          method,
          headers: {
            ...(init.token === '' ? {} : { authorization: `Bearer ${init.token ?? OPERATOR}` }),
            ...(init.body === undefined ? {} : { 'content-type': init.type ?? 'application/json' }),
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

  it('refuses hostile requests to the scheduler’s routes with a 4xx, and changes nothing, paused or not', async () => {
    const { token: agentToken } = await operator.createAgent({ name: 'intruder', queues: ['work'] });
    const hostile: [string, string, { body?: string; token?: string; type?: string }, number][] = [
      // A body where none is taken.
      ['POST', '/v1/scheduler/pause', { body: '{"paused":false}' }, 400],
      ['POST', '/v1/scheduler/resume', { body: '{"paused":true}' }, 400],
      ['POST', '/v1/scheduler/pause', { body: 'null' }, 400],
      ['POST', '/v1/scheduler/pause', { body: '[]' }, 400],
      ['POST', '/v1/scheduler/resume', { body: '"resume"' }, 400],
      ['POST', '/v1/scheduler/pause', { body: '{"__proto__":{"paused":true}}' }, 400],
      ['POST', '/v1/scheduler/resume', { body: '{"a":1,"a":1}' }, 400],
      ['POST', '/v1/scheduler/pause', { body: '{"paused":' }, 400],
      ['POST', '/v1/scheduler/resume', { body: 'pause', type: 'text/plain' }, 415],
      ['GET', '/v1/scheduler', { body: '{"paused":true}' }, 400],
      // Wrong methods, and paths that are not the routes.
      ['GET', '/v1/scheduler/pause', {}, 405],
      ['GET', '/v1/scheduler/resume', {}, 405],
      ['DELETE', '/v1/scheduler', {}, 405],
      ['POST', '/v1/scheduler', { body: '{"paused":true}' }, 405],
      ['DELETE', '/v1/scheduler/pause', {}, 405],
      ['PUT', '/v1/scheduler', { body: '{"paused":true}' }, 405],
      ['POST', '/v1/scheduler/Pause', {}, 404],
      ['POST', '/v1/scheduler/pause/now', {}, 404],
      ['POST', '/v1/queues/scheduler/pause', {}, 400],
      // The wrong caller.
      ['POST', '/v1/scheduler/pause', { token: agentToken }, 403],
      ['POST', '/v1/scheduler/resume', { token: '' }, 401],
      ['GET', '/v1/scheduler', { token: 'op_wrong' }, 401],
    ];
    for (const paused of [false, true]) {
      const before = await stored();
      for (const [method, path, init, status] of hostile) {
        const response = await send(method, path, init);
        const body = response.body;
        expect(`${method} ${path} ${init.body ?? ''} → ${response.status}`).toBe(
          `${method} ${path} ${init.body ?? ''} → ${status}`,
        );
        expect(body.error?.code, `${method} ${path}`).toEqual(expect.any(String));
      }
      expect(await stored()).toBe(before);
      expect((await operator.getSchedulerControl()).paused).toBe(paused);
      // Then the same again with the scheduler paused, where a stray resume would show.
      if (!paused) {
        expect(before).toBe('null');
        await operator.pauseScheduler();
      }
    }
    await operator.resumeScheduler();
  });

  it('the SDK and the CLI read, pause and resume it; an agent’s claim gets nothing while paused, and is told when to come back', async () => {
    const { task } = await operator.submitTask({ queue: 'work', payload: { n: 1 } });
    const { token } = await operator.createAgent({ name: 'claimer', queues: ['work'] });
    const agent = new AgentSchedulerClient({ endpoint: server.url, token });
    const { sessionId } = await agent.openSession();

    expect(await cli('scheduler', 'status')).toMatchObject({
      code: 0,
      out: expect.stringMatching(/^the scheduler is running/),
    });
    const paused = await cli('scheduler', 'pause');
    expect(paused.code).toBe(0);
    expect(paused.out).toMatch(/^the scheduler is paused \(since \d{4}-\d\d-\d\dT[\d:.]+Z\)$/);
    const status = await cli('scheduler', 'status', '--json');
    expect(JSON.parse(status.out)).toEqual({ paused: true, updatedAt: expect.any(String) });
    const control = await operator.getSchedulerControl();
    expect(control).toEqual({ paused: true, updatedAt: expect.stringMatching(/Z$/) });

    // Paused: the task waits; the claim is empty and says when to look again, as an empty claim does.
    for (let i = 0; i < 3; i++) {
      const answer = await agent.claim({ sessionId, max: 1 });
      expect(answer.tasks).toEqual([]);
      expect(answer.retryAfterMs).toEqual(expect.any(Number));
    }
    expect((await operator.getTask(task.taskId)).status).toBe('queued');
    // Pausing again keeps it paused.
    expect(await operator.pauseScheduler()).toMatchObject({ paused: true });

    const resumed = await operator.resumeScheduler();
    expect(resumed).toMatchObject({ paused: false, updatedAt: expect.any(String) });
    expect(Date.parse(resumed.updatedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(control.updatedAt ?? ''));
    const claimed: string[] = [];
    for (let i = 0; i < 100 && claimed.length === 0; i++) {
      const answer = await agent.claim({ sessionId, max: 1 });
      claimed.push(...answer.tasks.map((t) => t.taskId));
      if (claimed.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(claimed).toEqual([task.taskId]);

    // The CLI's resume, and its pause's help.
    expect(await cli('scheduler', 'resume')).toMatchObject({
      code: 0,
      out: expect.stringMatching(/^the scheduler is running/),
    });
    const help = await cli('scheduler', 'pause', '--help');
    expect(help.code).toBe(0);
    expect(help.out).toContain('$ agent-scheduler scheduler pause');
  });
});
