/**
 * Batch submits whose items together pass the server's body limit: sent in as many calls as they need, and a call
 * refused whole never taken for a refusal of each of its items.
 */
import { describe, expect, it } from 'vitest';
import { AgentSchedulerClient } from '#sdk/client';
import { MAX_BODY_BYTES } from '../../../functions/http/http-api';

/** A batch route that refuses a body over the limit whole, as the server does, and creates each item it reads. */
function batchServer() {
  const bodies: { path: string; bytes: number; items: number }[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = input instanceof Request ? input : new Request(input, init);
    const text = await request.text();
    const bytes = Buffer.byteLength(text, 'utf8');
    const path = new URL(request.url).pathname;
    const reply = (status: number, body: unknown) =>
      new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
    if (bytes > MAX_BODY_BYTES) {
      bodies.push({ path, bytes, items: -1 });
      return reply(413, { error: { code: 'PayloadTooLarge', message: 'the request body is too large' } });
    }
    const tasks = (JSON.parse(text) as { tasks: { payload: unknown }[] }).tasks;
    bodies.push({ path, bytes, items: tasks.length });
    return reply(200, {
      results: tasks.map((task) => ({
        ok: true,
        task: { taskId: `t_${JSON.stringify(task.payload).length}` },
      })),
    });
  };
  const client = new AgentSchedulerClient({
    endpoint: 'http://fake',
    token: 'tok',
    fetch,
    retries: { maxAttempts: 1 },
  });
  return { client, bodies };
}

describe('batch submits within the body limit', () => {
  it('submitTasks: 25 payloads of 100 KB go in calls the server takes, every outcome in order', async () => {
    const { client, bodies } = batchServer();
    const inputs = Array.from({ length: 25 }, (_, i) => ({
      queue: 'q',
      payload: 'p'.repeat(100 * 1024 + i),
    }));

    const results = await client.submitTasks(inputs);

    expect(results.map((r) => r.ok && r.task.taskId)).toEqual(inputs.map((i) => `t_${i.payload.length + 2}`));
    expect(bodies.every((b) => b.bytes <= MAX_BODY_BYTES)).toBe(true);
    expect(bodies.map((b) => b.items).reduce((a, b) => a + b)).toBe(25);
  });

  it('submitChildren: a child too large for any body is refused alone; its siblings are created', async () => {
    const { client, bodies } = batchServer();
    const children = [
      { key: 'a', queue: 'q', payload: 'small' },
      { key: 'huge', queue: 'q', payload: 'h'.repeat(MAX_BODY_BYTES) },
      { key: 'b', queue: 'q', payload: 'p'.repeat(200 * 1024) },
    ];

    const results = await client.submitChildren('t_parent', { leaseEpoch: 1, tasks: children });

    expect(results.map((r) => r.ok)).toEqual([true, false, true]);
    expect(results[1]).toMatchObject({ ok: false, status: 413, error: { code: 'PayloadTooLarge' } });
    expect(bodies.filter((b) => b.items > 0).reduce((n, b) => n + b.items, 0)).toBe(2);
    expect(bodies.every((b) => b.path === '/v1/agent/tasks/batch')).toBe(true);
  });
});
