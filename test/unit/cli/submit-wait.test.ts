/**
 * `submit --wait`: prints the task as it ended and exits by how it ended (0 succeeded, 3 dead or cancelled, 4 not
 * ended within --wait-timeout), against a small fake API: with a push channel (a `ws` server that answers the
 * subscription and pushes the end) and without one (the CLI reads the task until it ends).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { EXIT_TASK_FAILED, EXIT_WAIT_TIMEOUT } from '../../../cli/commands/tasks';
import { main } from '../../../cli/main';

const TASK_ID = `t_${'w'.repeat(26)}`;

interface Scenario {
  /** The task's status for each read, the last one repeated. */
  statuses: string[];
  /** With a push channel: pushed this long after the subscription, as the task's end. */
  pushEndAfterMs?: number;
  error?: { message: string };
}

const taskRecord = (status: string, scenario: Scenario) => ({
  taskId: TASK_ID,
  queue: 'q',
  priority: 'normal',
  status,
  attempt: 1,
  maxAttempts: 3,
  timeoutSeconds: 900,
  leaseEpoch: 1,
  payloadBytes: 2,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  ...(status === 'succeeded' ? { result: { answer: 42 } } : {}),
  ...(scenario.error && status !== 'succeeded' ? { error: scenario.error } : {}),
});

describe('submit --wait', () => {
  let server: Server;
  let sockets: WebSocketServer;
  let endpoint = '';
  let push = false;
  let scenario: Scenario = { statuses: ['queued'] };
  let reads: number[] = [];
  let endedAt = 0;

  beforeAll(async () => {
    sockets = new WebSocketServer({ noServer: true });
    server = createServer((request, response) => {
      response.setHeader('content-type', 'application/json');
      const answer = (status: number, body: unknown) => {
        response.statusCode = status;
        response.end(JSON.stringify(body));
      };
      if (request.method === 'POST' && request.url === '/v1/tasks') {
        request.resume();
        answer(201, { task: taskRecord('queued', scenario) });
      } else if (request.method === 'POST' && request.url === '/v1/push-ticket') {
        if (!push) answer(404, { error: { code: 'PushUnavailable', message: 'poll instead' } });
        else
          answer(201, {
            ticket: 'pt_x',
            url: `${endpoint.replace('http', 'ws')}/v1/push?ticket=pt_x`,
            expiresAt: '',
          });
      } else if (request.method === 'GET' && request.url === `/v1/tasks/${TASK_ID}`) {
        reads.push(Date.now());
        const status = scenario.statuses[reads.length - 1] ?? scenario.statuses.at(-1) ?? 'queued';
        answer(200, { task: taskRecord(status, scenario) });
      } else answer(404, { error: { code: 'RouteNotFound', message: request.url ?? '' } });
    });
    server.on('upgrade', (request, socket, head) => {
      sockets.handleUpgrade(request, socket, head, (ws) => {
        ws.on('message', (data) => {
          const frame = JSON.parse(String(data)) as { type: string; id?: string; taskIds?: string[] };
          if (frame.type !== 'subscribe') return;
          ws.send(
            JSON.stringify({
              type: 'subscribed',
              version: 1,
              id: frame.id,
              tasks: [{ taskId: TASK_ID, status: 'leased' }],
            }),
          );
          setTimeout(() => {
            const status = scenario.statuses.at(-1) ?? 'succeeded';
            endedAt = Date.now();
            ws.send(JSON.stringify({ type: 'task', version: 1, taskId: TASK_ID, status }));
          }, scenario.pushEndAfterMs ?? 0);
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const client of sockets.clients) client.terminate();
    sockets.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(() => {
    push = false;
    reads = [];
    endedAt = 0;
  });

  async function submit(...flags: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(
      ['submit', '--queue', 'q', '--endpoint', endpoint, '--token', 'op_x', ...flags],
      (text) => out.push(text),
      { writeErr: (text) => err.push(text), env: {} },
    );
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  it('on the push channel: hears the end, reads the task once, prints it as JSON and exits 0', async () => {
    push = true;
    scenario = { statuses: ['succeeded'], pushEndAfterMs: 300 };
    const { code, out, err } = await submit('--wait', '--json');
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ taskId: TASK_ID, status: 'succeeded', result: { answer: 42 } });
    expect(reads).toHaveLength(1);
    expect(reads[0]).toBeGreaterThanOrEqual(endedAt);
  });

  it('without a push channel: reads the task until it ends, and prints the record', async () => {
    scenario = { statuses: ['queued', 'leased', 'succeeded'] };
    const { code, out } = await submit('--wait');
    expect(code).toBe(0);
    expect(out).toContain(`submitted ${TASK_ID}, waiting`);
    expect(out).toMatch(/^status\s+succeeded$/m);
    expect(reads).toHaveLength(3);
  });

  it.each([
    ['dead', 'boom'],
    ['cancelled', undefined],
  ])('a task that ended %s exits %s with a message', async (status, message) => {
    push = true;
    scenario = { statuses: [status], ...(message ? { error: { message } } : {}) };
    const { code, out, err } = await submit('--wait', '--json');
    expect(code).toBe(EXIT_TASK_FAILED);
    expect(JSON.parse(out)).toMatchObject({ status });
    expect(err).toBe(`error: task ${TASK_ID} ended ${status}${message ? `: ${message}` : ''}`);
  });

  it('exits 4 when --wait-timeout runs out, saying what the task was', async () => {
    scenario = { statuses: ['queued'] };
    const { code, err } = await submit('--wait', '--wait-timeout', '0.6');
    expect(code).toBe(EXIT_WAIT_TIMEOUT);
    expect(err).toBe(
      `error: task ${TASK_ID} did not end within 0.6 s; it was queued. It may still end: agent-scheduler get ${TASK_ID}`,
    );
  });

  it.each([
    [['--wait', '--batch', '[]'], /--wait waits for one task/],
    [['--wait-timeout', '5'], /--wait-timeout goes with --wait/],
    [['--wait', '--wait-timeout', '0'], /Expected a number above 0/],
  ])('refuses %j as a usage error', async (flags, message) => {
    const { code, err } = await submit(...flags);
    expect(code).toBe(2);
    expect(err).toMatch(message);
  });
});
