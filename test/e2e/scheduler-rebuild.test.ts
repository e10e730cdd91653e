/**
 * A rebuild through the local HTTP server on the emulators, as operators meet it: the SDK's `rebuildScheduler` (one
 * call, its cursor) and `rebuildSchedulerFully` (every call, the counts summed), the CLI's `scheduler rebuild`, and an
 * agent's claim over HTTP of a task whose hint was purged before the rebuild; an agent's token refused.
 */
import { PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueAgentToken } from '#domain/agent-token';
import { PRIORITIES } from '#domain/priority';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { isAgentSchedulerError } from '#sdk/errors';
import { createTestStack, serveStack, type TestStack } from '#test/stack';
import { main } from '../../cli/main';

const OPERATOR = 'op_scheduler-rebuild-token';

describe('a rebuild over HTTP', () => {
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

  const cli = async (...args: string[]) => {
    const lines: string[] = [];
    const code = await main([...args, '--endpoint', server.url, '--token', OPERATOR], (text) =>
      lines.push(text),
    );
    return { code, out: lines.join('\n') };
  };
  const purge = async () => {
    for (const priority of PRIORITIES)
      await stack.sqs.send(
        new PurgeQueueCommand({ QueueUrl: stack.ctx.queues.directory.urlFor('work', priority) }),
      );
  };

  it('brings purged hints back through the SDK and the CLI, and refuses an agent', async () => {
    // Prepare: three tasks, their hints purged; an agent that claims over HTTP.
    for (let n = 0; n < 3; n++) await operator.submitTask({ queue: 'work', payload: { n } });
    await purge();
    const { token } = await stack.scheduler.registerAgent(
      { name: 'rebuilt', queues: ['work'], maxConcurrency: 10 },
      issueAgentToken,
    );
    const worker = new AgentSchedulerClient({ endpoint: server.url, token: token ?? '' });
    const { sessionId } = await worker.openSession();
    expect((await worker.claim({ sessionId, max: 10 })).tasks).toEqual([]);

    // Act and assess: one call of one entry answers a cursor; the SDK's helper goes through every call.
    const first = await operator.rebuildScheduler({ limit: 1 });
    expect(first).toMatchObject({ sessionsScanned: 1, cursor: expect.any(String) });
    const calls: number[] = [];
    const totals = await operator.rebuildSchedulerFully({ limit: 1, onCall: (r) => calls.push(r.hintsSent) });
    expect(totals).toEqual({
      calls: calls.length,
      pendingRuns: 3,
      activeRuns: 0,
      sessionsScanned: 1,
      wakeKeysCleared: 0,
      hintsSent: 3,
      turnsReplaced: 0,
    });
    expect(calls.length).toBeGreaterThanOrEqual(3);
    const claimed = await worker.claim({ sessionId, max: 10 });
    expect(claimed.tasks).toHaveLength(3);

    // The CLI: the three are leased now, so nothing is sent and three runs are counted.
    const printed = await cli('scheduler', 'rebuild');
    expect(printed.code).toBe(0);
    expect(printed.out).toMatch(
      /^rebuilt in \d+ calls?: 0 queued \(0 hints sent, 0 lane turns put in line\), 3 running, 1 live sessions, 0 wake marks cleared$/,
    );
    const json = await cli('scheduler', 'rebuild', '--json', '--limit', '2');
    expect(JSON.parse(json.out)).toMatchObject({ pendingRuns: 0, activeRuns: 3, calls: expect.any(Number) });
    expect((await cli('scheduler', 'rebuild', '--limit', '0')).code).not.toBe(0);

    // An agent may not rebuild.
    const refused = await worker.rebuildScheduler().catch((error: unknown) => error);
    expect(isAgentSchedulerError(refused) && refused.status).toBe(403);
  });
});
