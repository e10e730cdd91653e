/**
 * `GET /v1/agents` says of each agent whether it is online, when it last heartbeated and how many tasks it holds,
 * from the page's session items read in one `BatchGetItem`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import type { Agent } from '#sdk/types';
import { createTestStack, serveStack, type TestStack, waitFor } from '#test/stack';

const OPERATOR = 'op_agent-presence';

describe('agent presence', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;

  beforeAll(async () => {
    stack = await createTestStack();
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
  });
  afterAll(async () => {
    await server?.close();
    await stack?.destroy();
  });

  const agentClient = (token: string) => new AgentSchedulerClient({ endpoint: server.url, token });

  it('shows who is online, its last heartbeat and the tasks it holds; revoked and silent agents are offline', async () => {
    // Prepare: a busy agent holding two tasks, one that never connected, one revoked after connecting
    const busy = await operator.createAgent({ name: 'busy', queues: ['work'], maxConcurrency: 3 });
    const never = await operator.createAgent({ name: 'never', queues: ['work'] });
    const gone = await operator.createAgent({ name: 'gone', queues: ['work'] });
    for (const n of [1, 2]) await operator.submitTask({ queue: 'work', payload: { n } });
    const busyClient = agentClient(busy.token);
    const session = await busyClient.openSession();
    const held: string[] = [];
    await waitFor(async () => {
      const claim = await busyClient.claim({ sessionId: session.sessionId, max: 2 - held.length });
      held.push(...claim.tasks.map((t) => t.taskId));
      return held.length === 2;
    });
    await agentClient(gone.token).openSession();
    await operator.revokeAgent(gone.agent.agentId);
    stack.meter.reset();

    // Act
    const agents = await operator.listAgents();

    // Assess
    const byName = Object.fromEntries(agents.map((a) => [a.name, a])) as Record<string, Agent>;
    expect(byName.busy).toMatchObject({ online: true, state: 'online', tasksHeld: 2 });
    expect(Date.parse(byName.busy?.lastHeartbeatAt ?? '')).toBeGreaterThan(Date.now() - 60_000);
    expect(byName.never).toMatchObject({ online: false, state: 'offline', tasksHeld: 0 });
    expect(byName.never).not.toHaveProperty('lastHeartbeatAt');
    expect(byName.gone).toMatchObject({
      online: false,
      state: 'offline',
      tasksHeld: 0,
      revokedAt: expect.any(String),
    });
    expect(byName.gone?.lastHeartbeatAt).toEqual(expect.any(String));
    // Nothing was taken away: the fields an agent had are all there.
    expect(Object.keys(byName.busy ?? {}).sort()).toEqual(
      [
        'agentId',
        'name',
        'queues',
        'maxConcurrency',
        'interactive',
        'labels',
        'createdAt',
        'online',
        'state',
        'lastHeartbeatAt',
        'tasksHeld',
      ].sort(),
    );
    expect(stack.meter.byOperation()['dynamodb:BatchGetItemCommand']).toBe(1);
    expect(never.agent.agentId).toMatch(/^a_/);
  });

  it('an agent whose session lapsed holding nothing is idle; one whose session lapsed holding a task is offline', async () => {
    // Prepare: two agents online, one of them holding a task.
    const late = await operator.createAgent({ name: 'late', queues: ['work'] });
    const holder = await operator.createAgent({ name: 'holder', queues: ['work'] });
    const lateClient = agentClient(late.token);
    const lateSession = await lateClient.openSession();
    const holderClient = agentClient(holder.token);
    const { sessionId } = await holderClient.openSession();
    await operator.submitTask({ queue: 'work', payload: {} });
    await waitFor(async () => (await holderClient.claim({ sessionId, max: 1 })).tasks.length === 1);
    const named = async (name: string) => (await operator.listAgents()).find((a) => a.name === name);
    expect(await named('late')).toMatchObject({ online: true, state: 'online' });

    // Act: both sessions run out.
    stack.clock.advance(stack.ctx.settings.leaseTtlSeconds * 1_000 + 1);

    // Assess: the Worker's way between polls is idle; a lease left to lapse is not.
    expect(await named('late')).toMatchObject({ online: false, state: 'idle', tasksHeld: 0 });
    expect(await named('holder')).toMatchObject({ online: false, state: 'offline', tasksHeld: 0 });
    // Idle, it claims again under the same session, and is online once that claim takes a task.
    await operator.submitTask({ queue: 'work', payload: {} });
    await waitFor(
      async () => (await lateClient.claim({ sessionId: lateSession.sessionId, max: 1 })).tasks.length === 1,
    );
    expect(await named('late')).toMatchObject({ online: true, state: 'online', tasksHeld: 1 });
  });

  it('reads the sessions of each page of agents in one request', async () => {
    stack.meter.reset();
    const pages: unknown[] = [];
    let cursor: string | undefined;
    do {
      const response = await fetch(
        `${server.url}/v1/agents?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { headers: { authorization: `Bearer ${OPERATOR}` } },
      );
      const page = (await response.json()) as { agents: Agent[]; nextCursor?: string };
      pages.push(page);
      cursor = page.nextCursor;
    } while (cursor);
    const gets = stack.meter.byOperation()['dynamodb:BatchGetItemCommand'] ?? 0;
    // A page that ends the table may come back empty: it reads no session.
    expect(gets).toBeGreaterThanOrEqual(pages.length - 1);
    expect(gets).toBeLessThanOrEqual(pages.length);
  });
});
