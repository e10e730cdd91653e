/**
 * The keep-alive through the local server, as API Gateway's `ping` route answers it: a pong, and no function runs
 * (no AWS request is made). A client whose ping goes unanswered knows its socket is dead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { LocalPushSender } from '#local/push-server';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { createTestStack, serveStack, type TestStack } from '#test/stack';

const OPERATOR = 'op_e2e-ping-operator';

describe('push keep-alive', () => {
  const sender = new LocalPushSender();
  let stack: TestStack;
  let server: LocalServer;

  beforeAll(async () => {
    let serverUrl = '';
    stack = await createTestStack({
      push: { sender, url: () => `${serverUrl.replace(/^http/, 'ws')}/v1/push` },
    });
    server = await serveStack(stack, OPERATOR, { push: sender });
    serverUrl = server.url;
  });
  afterAll(async () => {
    sender.dropAll();
    await server?.close();
    await stack?.destroy();
  });

  it('a ping is answered with {"type":"pong","version":1}, and invokes nothing', async () => {
    const operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
    const { url } = await operator.pushTicket();
    const socket = new WebSocket(url);
    const received: string[] = [];
    socket.on('message', (data) => received.push(String(data)));
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    try {
      const requestsBefore = stack.meter.requests.length;
      socket.send(JSON.stringify({ type: 'ping' }));
      const deadline = Date.now() + 5_000;
      while (received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(received.map((text) => JSON.parse(text))).toEqual([{ type: 'pong', version: 1 }]);
      expect(stack.meter.requests.length).toBe(requestsBefore);
    } finally {
      socket.close();
    }
  });
});
