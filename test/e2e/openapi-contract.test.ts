/**
 * The OpenAPI document against the server: every route of the table is described (or, if it is served nowhere,
 * left out and not served), and every operation, driven once through the local HTTP server on the emulators,
 * answers what the document says, for its success statuses and for a sample of refusals.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEventFeed } from '#adapters/event-publishers';
import { LOCAL_PUSH_PATH, LocalPushSender } from '#local/push-server';
import type { LocalServer } from '#local/server';
import { type CheckedResponse, type OpenApiDocument, responseChecker } from '#test/openapi-contract';
import { createTestStack, fireAsFunction, serveStack, type TestStack } from '#test/stack';
import { openApiDocument } from '../../functions/http/openapi';
import { ROUTES } from '../../functions/http/routes';

const OPERATOR = 'op_contract-operator-token';
const feed = new LocalEventFeed();
const QUEUE = 'contract';
const SCHEDULE_QUEUE = 'scheduled';
const IDLE_QUEUE = 'idle';

type Body = Record<string, unknown>;

describe('the OpenAPI document matches what the server answers', () => {
  const push = new LocalPushSender();
  let stack: TestStack;
  let server: LocalServer;
  let doc: OpenApiDocument;
  let check: ReturnType<typeof responseChecker>;
  const checked: CheckedResponse[] = [];

  /** One request; its answer is checked against the document and must have the expected status. */
  const call = async (
    method: string,
    url: string,
    options: { token?: string; body?: unknown; contentType?: string; expect?: number } = {},
  ): Promise<Body> => {
    const response = await fetch(`${server.url}${url}`, {
      method,
      headers: {
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...(options.body === undefined ? {} : { 'content-type': options.contentType ?? 'application/json' }),
      },
      ...(options.body === undefined
        ? {}
        : { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) }),
    });
    const body = (await response.json()) as Body;
    if (options.expect !== undefined)
      expect(response.status, `${method} ${url}: ${JSON.stringify(body)}`).toBe(options.expect);
    const result = check(method, url, response.status, body);
    checked.push(result);
    expect(result.problems, `${method} ${url} → ${response.status}: ${JSON.stringify(body)}`).toEqual([]);
    return body;
  };
  const operator = (method: string, url: string, body?: unknown, expectStatus = 200) =>
    call(method, url, { token: OPERATOR, body, expect: expectStatus });

  let agentA: { token: string; agentId: string; sessionId: string };
  let agentB: { token: string; agentId: string; sessionId: string };

  const registerAgent = async (name: string, queues: string[]) => {
    const created = await operator('POST', '/v1/agents', { name, queues, maxConcurrency: 4 }, 201);
    const token = String(created.token);
    const session = await call('POST', '/v1/agent/session', { token, expect: 200 });
    return {
      token,
      agentId: String((created.agent as Body).agentId),
      sessionId: String(session.sessionId),
    };
  };
  const claim = async (
    agent: { token: string; sessionId: string },
    count: number,
  ): Promise<{ taskId: string; leaseEpoch: number }[]> => {
    const tasks: { taskId: string; leaseEpoch: number }[] = [];
    for (let i = 0; i < 100 && tasks.length < count; i++) {
      const answer = await call('POST', '/v1/agent/claim', {
        token: agent.token,
        body: { sessionId: agent.sessionId, max: count - tasks.length },
        expect: 200,
      });
      tasks.push(...(answer.tasks as { taskId: string; leaseEpoch: number }[]));
      if (tasks.length < count) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(tasks).toHaveLength(count);
    return tasks;
  };
  const submit = async (body: Body = {}) =>
    (await operator('POST', '/v1/tasks', { queue: QUEUE, payload: { n: 1 }, ...body }, 201)).task as {
      taskId: string;
    };

  beforeAll(async () => {
    stack = await createTestStack({
      events: feed,
      queues: [QUEUE, SCHEDULE_QUEUE, IDLE_QUEUE],
      // Sessions outlive the test however slow the machine: nothing here waits for a lease to end.
      settings: { leaseTtlSeconds: 600 },
      scheduleBackend: { put: async () => undefined, remove: async () => undefined },
      declaredSchedules: [
        { name: 'declared-daily', expression: 'rate(1 day)', task: { queue: SCHEDULE_QUEUE, payload: {} } },
      ],
      push: { sender: push, url: () => `${server.url.replace(/^http/, 'ws')}${LOCAL_PUSH_PATH}` },
    });
    // The local server as `npm start` runs it: with the event feed, so GET /v1/events is served and documented,
    // and the push channel, whose tickets are.
    server = await serveStack(stack, OPERATOR, { events: feed, push });
    // The document under test is the one the server serves.
    const served = await fetch(`${server.url}/v1/openapi.json`, {
      headers: { authorization: `Bearer ${OPERATOR}` },
    });
    doc = (await served.json()) as OpenApiDocument;
    check = responseChecker(doc);
  });
  afterAll(async () => {
    await server?.close();
    await stack?.destroy();
  });

  it('describes every route of the table, the local-only one in the local server’s document only', async () => {
    const documented = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => `${method.toUpperCase()} ${path} ${op.operationId}`),
    );
    expect(documented.sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path} ${r.operation}`).sort());
    expect(openApiDocument().paths).not.toHaveProperty(['/v1/events']);
  });

  it('operator and agent operations answer what the document says', async () => {
    await operator('GET', '/v1/health');
    await call('GET', '/v1/health', { expect: 200 });
    await operator('GET', '/v1/openapi.json');

    // Agents, a page at a time.
    agentA = await registerAgent('contract-a', [QUEUE]);
    agentB = await registerAgent('contract-b', [IDLE_QUEUE]);
    const firstAgents = await operator('GET', '/v1/agents?limit=1');
    expect(firstAgents.nextCursor).toEqual(expect.any(String));
    await operator('GET', `/v1/agents?cursor=${encodeURIComponent(String(firstAgents.nextCursor))}`);

    // Labels: an agent registered with some, a session narrowing them (and one refused for adding), a task that
    // requires them, in its queue's listing and on its own.
    const labelled = await operator(
      'POST',
      '/v1/agents',
      { name: 'contract-gpu', queues: [IDLE_QUEUE], labels: { gpu: ['a100', 'h100'], model: 'claude' } },
      201,
    );
    expect((labelled.agent as Body).labels).toEqual({ gpu: ['a100', 'h100'], model: ['claude'] });
    const gpuToken = String(labelled.token);
    await call('POST', '/v1/agent/session', {
      token: gpuToken,
      body: { labels: { gpu: 'tpu' } },
      expect: 403,
    });
    await call('POST', '/v1/agent/session', {
      token: gpuToken,
      body: { labels: { gpu: 'a100' } },
      expect: 200,
    });
    await call('POST', '/v1/agent/session', { token: gpuToken, body: { labels: { gpu: 5 } }, expect: 400 });
    const required = (
      await operator(
        'POST',
        '/v1/tasks',
        { queue: IDLE_QUEUE, payload: {}, require: { gpu: 'h100' }, delaySeconds: 600 },
        201,
      )
    ).task as Body;
    expect(required.require).toEqual({ gpu: 'h100' });
    await operator('POST', '/v1/tasks', { queue: IDLE_QUEUE, payload: {}, require: {} }, 400);
    expect(((await operator('GET', `/v1/tasks/${String(required.taskId)}`)).task as Body).require).toEqual({
      gpu: 'h100',
    });
    await operator('POST', `/v1/tasks/${String(required.taskId)}/cancel`);

    // Tasks: created, found again by key, in a batch with a refused item, listed, read.
    const keyed = await submit({ idempotencyKey: 'contract-key', priority: 'high' });
    await operator(
      'POST',
      '/v1/tasks',
      { queue: QUEUE, payload: { n: 1 }, idempotencyKey: 'contract-key', priority: 'high' },
      200,
    );
    const batch = await operator('POST', '/v1/tasks/batch', {
      tasks: [
        { queue: QUEUE, payload: { n: 2 } },
        { queue: 'nope', payload: {} },
      ],
    });
    expect((batch.results as { ok: boolean }[]).map((r) => r.ok)).toEqual([true, false]);
    // Debounced: a window opened, joined, the same submission again, one more in a batch; then cancelled.
    const debounce = { key: 'contract', windowSeconds: 3_600 };
    const opened = await operator('POST', '/v1/tasks', { queue: QUEUE, payload: { v: 1 }, debounce }, 201);
    expect(opened.debounced).toBe(false);
    const joining = { queue: QUEUE, payload: { v: 2 }, debounce, idempotencyKey: 'contract-debounced' };
    const joined = await operator('POST', '/v1/tasks', joining, 200);
    const debouncedId = (opened.task as { taskId: string }).taskId;
    expect(joined).toMatchObject({
      debounced: true,
      task: { taskId: debouncedId, debounce: { key: 'contract', submissions: 2 } },
    });
    expect(await operator('POST', '/v1/tasks', joining, 200)).toMatchObject({ debounced: true });
    const debouncedBatch = await operator('POST', '/v1/tasks/batch', {
      tasks: [{ queue: QUEUE, payload: { v: 3 }, debounce }],
    });
    expect(debouncedBatch.results).toMatchObject([{ ok: true, created: false, debounced: true }]);
    await operator('POST', `/v1/tasks/${debouncedId}/cancel`);
    const page = await operator('GET', '/v1/tasks?limit=1');
    expect(page.nextCursor).toEqual(expect.any(String));
    await operator(
      'GET',
      `/v1/tasks?queue=${QUEUE}&status=queued&cursor=${encodeURIComponent(String(page.nextCursor))}`,
    );
    await operator('GET', `/v1/tasks/${keyed.taskId}`);
    // Marked by the ladder's last step (its own write, as a pass makes it): listed by the filter, shown, cleared,
    // and cleared again as it is.
    const waited = await stack.ctx.tasks.get(keyed.taskId);
    if (!waited) throw new Error('the task was read back');
    await stack.ctx.tasks.climbLadder(waited, { fromLevel: 0, toLevel: 3, needsAttention: true });
    const marked = await operator('GET', `/v1/tasks?queue=${QUEUE}&attention=true`);
    expect(marked.tasks).toEqual([expect.objectContaining({ taskId: keyed.taskId, needsAttention: true })]);
    const cleared = await operator('POST', `/v1/tasks/${keyed.taskId}/attention`, { needsAttention: false });
    expect(cleared.task).not.toHaveProperty('needsAttention');
    await operator('POST', `/v1/tasks/${keyed.taskId}/attention`, { needsAttention: false });
    await call('POST', `/v1/tasks/${keyed.taskId}/attention`, {
      token: OPERATOR,
      body: { needsAttention: true },
      expect: 400,
    });

    // Claims: an empty one is told to wait; then both tasks, with a checkpoint saved by a heartbeat.
    const empty = await call('POST', '/v1/agent/claim', {
      token: agentB.token,
      body: { sessionId: agentB.sessionId, idleClaims: 2 },
      expect: 200,
    });
    expect(empty).toMatchObject({ tasks: [], retryAfterMs: expect.any(Number) });
    const [first, second] = await claim(agentA, 2);
    if (!first || !second) throw new Error('two tasks were claimed');
    await call('POST', '/v1/agent/heartbeat', {
      token: agentA.token,
      body: {
        sessionId: agentA.sessionId,
        checkpoints: [{ taskId: first.taskId, leaseEpoch: first.leaseEpoch, checkpoint: { step: 1 } }],
      },
      expect: 200,
    });
    const held = await call('GET', '/v1/agent/session', { token: agentA.token, expect: 200 });
    expect((held.session as { tasks: unknown[] }).tasks).toHaveLength(2);
    await call('POST', `/v1/agent/tasks/${first.taskId}/complete`, {
      token: agentA.token,
      body: { leaseEpoch: first.leaseEpoch, result: { done: true } },
      expect: 200,
    });
    await call('POST', `/v1/agent/tasks/${second.taskId}/release`, {
      token: agentA.token,
      body: { leaseEpoch: second.leaseEpoch },
      expect: 200,
    });

    // A batch completion with one stale epoch; a failure with no attempts left, redriven; a cancellation.
    const [third] = await claim(agentA, 1);
    if (!third) throw new Error('a task was claimed');
    // Follow-up tasks under its lease (delayed, so later claims here do not take them): created, found again.
    const child = { queue: QUEUE, payload: {}, delaySeconds: 600 };
    const fence = { parentTaskId: third.taskId, leaseEpoch: third.leaseEpoch };
    await call('POST', '/v1/agent/tasks', {
      token: agentA.token,
      body: { ...fence, key: 'c1', ...child },
      expect: 201,
    });
    await call('POST', '/v1/agent/tasks', {
      token: agentA.token,
      body: { ...fence, key: 'c1', ...child },
      expect: 200,
    });
    const children = await call('POST', '/v1/agent/tasks/batch', {
      token: agentA.token,
      body: {
        ...fence,
        tasks: [
          { key: 'c2', ...child },
          { key: 'c3', ...child, queue: 'nope' },
        ],
      },
      expect: 200,
    });
    expect((children.results as { ok: boolean }[]).map((r) => r.ok)).toEqual([true, false]);
    // The parent's links name its two children; a child's, its parent and root.
    const { links } = await operator('GET', `/v1/tasks/${third.taskId}/links`);
    expect((links as { children: Body[] }).children).toEqual([
      expect.objectContaining({ status: 'queued', queue: QUEUE }),
      expect.objectContaining({ status: 'queued', queue: QUEUE }),
    ]);
    const childId = String((links as { children: Body[] }).children[0]?.taskId);
    expect((await operator('GET', `/v1/tasks/${childId}/links`)).links).toMatchObject({
      parent: { taskId: third.taskId, status: 'leased' },
      root: { taskId: third.taskId },
      children: [],
    });
    await operator('GET', '/v1/tasks/t_aaaaaaaaaaaaaaaaaaaaaaaaaa/links', undefined, 404);
    const completions = await call('POST', '/v1/agent/tasks/complete', {
      token: agentA.token,
      body: {
        tasks: [
          { taskId: third.taskId, leaseEpoch: third.leaseEpoch },
          { taskId: first.taskId, leaseEpoch: first.leaseEpoch + 5 },
        ],
      },
      expect: 200,
    });
    expect((completions.results as { ok: boolean }[]).map((r) => r.ok)).toEqual([true, false]);
    await submit({ maxAttempts: 1 });
    const [doomed] = await claim(agentA, 1);
    if (!doomed) throw new Error('a task was claimed');
    const failed = await call('POST', `/v1/agent/tasks/${doomed.taskId}/fail`, {
      token: agentA.token,
      body: { leaseEpoch: doomed.leaseEpoch, error: { message: 'broken', retryable: false } },
      expect: 200,
    });
    expect(failed).toMatchObject({ task: { status: 'dead', error: { message: 'broken' } } });
    await operator('POST', `/v1/tasks/${doomed.taskId}/redrive`);
    await operator('POST', `/v1/tasks/${doomed.taskId}/cancel`, { cascade: true });

    // Waitpoints: three tasks suspended; one completed by an operator, one rejected, one through its callback;
    // the resumed claim carries the outcome; deadlines pushed forward on a heartbeat.
    const suspendedUrls: string[] = [];
    const waitpointIds: string[] = [];
    for (let i = 0; i < 3; i++) await submit({ maxTimeoutSeconds: 3_600 });
    const waiting = await claim(agentA, 3);
    await call('POST', '/v1/agent/heartbeat', {
      token: agentA.token,
      body: {
        sessionId: agentA.sessionId,
        extend: waiting.map((t) => ({ taskId: t.taskId, leaseEpoch: t.leaseEpoch, seconds: 1_800 })),
      },
      expect: 200,
    });
    // Progress, one report and a batch, shown on the task.
    const [reported] = waiting;
    await call('POST', `/v1/agent/tasks/${reported?.taskId}/progress`, {
      token: agentA.token,
      body: { leaseEpoch: reported?.leaseEpoch, percent: 10, message: 'asking', data: { step: 1 } },
      expect: 200,
    });
    await call('POST', '/v1/agent/tasks/progress', {
      token: agentA.token,
      body: { tasks: waiting.map((t) => ({ taskId: t.taskId, leaseEpoch: t.leaseEpoch, percent: 20 })) },
      expect: 200,
    });
    const shown = await operator('GET', `/v1/tasks/${reported?.taskId}`);
    expect((shown.task as Body).progress).toMatchObject({ percent: 20, attempt: 1 });
    for (const task of waiting) {
      const suspended = await call('POST', `/v1/agent/tasks/${task.taskId}/wait`, {
        token: agentA.token,
        body: { leaseEpoch: task.leaseEpoch, timeoutSeconds: 600, checkpoint: { asked: true } },
        expect: 200,
      });
      suspendedUrls.push(String(suspended.callbackUrl));
      waitpointIds.push(String((suspended.waitpoint as Body).waitpointId));
    }
    const open = await operator('GET', '/v1/waitpoints?limit=1');
    expect(open.nextCursor).toEqual(expect.any(String));
    await operator('GET', `/v1/waitpoints?status=open&cursor=${encodeURIComponent(String(open.nextCursor))}`);
    await operator('POST', `/v1/waitpoints/${waitpointIds[0]}/complete`, { data: { approved: true } });
    const read = await operator('GET', `/v1/waitpoints/${waitpointIds[0]}`);
    expect(read.waitpoint).toMatchObject({ waitpointId: waitpointIds[0], status: 'completed' });
    await operator('POST', `/v1/waitpoints/${waitpointIds[1]}/reject`, { reason: 'not now' });
    const callbackPath = new URL(suspendedUrls[2] ?? '').pathname;
    await call('POST', callbackPath, { body: { from: 'webhook' }, expect: 200 });
    const resumed = await call('POST', '/v1/agent/claim', {
      token: agentA.token,
      body: { sessionId: agentA.sessionId, max: 3 },
      expect: 200,
    });
    expect((resumed.tasks as { waitpoint?: unknown }[]).map((t) => t.waitpoint)).toEqual(
      expect.arrayContaining([expect.objectContaining({ outcome: 'rejected', reason: 'not now' })]),
    );

    // Queues.
    await operator('GET', '/v1/queues');
    await operator('POST', `/v1/queues/${IDLE_QUEUE}/pause`);
    await operator('POST', `/v1/queues/${IDLE_QUEUE}/resume`);
    await operator('POST', `/v1/queues/${IDLE_QUEUE}/limits`, { maxConcurrency: 4, ratePerSecond: 2 });

    // The whole scheduler: read, paused, read paused, resumed before the claims below.
    expect((await operator('GET', '/v1/scheduler')).scheduler).toEqual({ paused: false });
    expect((await operator('POST', '/v1/scheduler/pause')).scheduler).toMatchObject({ paused: true });
    expect((await operator('GET', '/v1/scheduler')).scheduler).toMatchObject({
      paused: true,
      updatedAt: expect.any(String),
    });
    expect((await operator('POST', '/v1/scheduler/resume')).scheduler).toMatchObject({ paused: false });
    // A rebuild, call after call from each answer's cursor.
    let rebuilt = await operator('POST', '/v1/scheduler/rebuild', { limit: 5_000 });
    while (typeof rebuilt.cursor === 'string')
      rebuilt = await operator('POST', '/v1/scheduler/rebuild', { cursor: rebuilt.cursor, limit: 5_000 });
    expect(rebuilt).toMatchObject({ pendingRuns: expect.any(Number), activeRuns: expect.any(Number) });

    // The supervisor's figures: the answer of a stack with no pass yet, then after one (its last pass, with ids).
    expect(await operator('GET', '/v1/scheduler/stats')).toMatchObject({
      cumulative: { passes: 0, pendingRuns: 0, wakeAttempts: 0, errors: 0 },
      lastErrors: [],
    });
    await stack.scheduler.supervise();
    expect(await operator('GET', '/v1/scheduler/stats')).toMatchObject({
      cumulative: { passes: 1 },
      lastPass: { at: expect.any(String), durationMs: expect.any(Number), ids: { starved: [] } },
    });

    // Named rate limits: one set, a task naming it granted with its units, the limit listed and read by key.
    await operator('POST', '/v1/rate-limits/contract.tenant', { limit: 5, per: 'day', perKey: true });
    const limited = await operator(
      'POST',
      '/v1/tasks',
      { queue: IDLE_QUEUE, payload: {}, rateLimits: [{ name: 'contract.tenant', units: 2, key: 'acme' }] },
      201,
    );
    expect(limited.task).toMatchObject({ rateLimits: [{ name: 'contract.tenant', units: 2, key: 'acme' }] });
    expect((await operator('GET', '/v1/rate-limits')).rateLimits).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'contract.tenant', perKey: true })]),
    );
    await operator('GET', '/v1/rate-limits/contract.tenant');
    await call('GET', '/v1/rate-limits/nobody', { token: OPERATOR, expect: 404 });
    await call('POST', '/v1/rate-limits/contract.tenant', {
      token: OPERATOR,
      body: { limit: 5, per: 'fortnight' },
      expect: 400,
    });

    // Schedules: one created beside a declared one, fired once, listed a page at a time, deleted.
    await operator(
      'POST',
      '/v1/schedules',
      {
        name: 'contract-hourly',
        expression: 'rate(1 hour)',
        task: { queue: SCHEDULE_QUEUE, payload: { s: 1 } },
      },
      201,
    );
    await fireAsFunction(stack.ctx, {
      schedule: 'contract-hourly',
      scheduledTime: '2026-01-01T10:00:00.000Z',
      task: { queue: SCHEDULE_QUEUE, payload: { s: 1 } },
    });
    const schedules = await operator('GET', '/v1/schedules?limit=1');
    expect(schedules.nextCursor).toEqual(expect.any(String));
    await operator('GET', `/v1/schedules?cursor=${encodeURIComponent(String(schedules.nextCursor))}`);
    await operator('GET', '/v1/schedules/contract-hourly');
    await operator('GET', '/v1/schedules/declared-daily');
    const occurrences = await operator('GET', '/v1/schedules/contract-hourly/occurrences');
    expect(occurrences.occurrences).toHaveLength(1);
    await operator('DELETE', '/v1/schedules/contract-hourly');

    // Roles: registered only (no holder), held by A with B in line, handed over, given up.
    const agentRole = (agent: { token: string }, role: string, action: string, body?: unknown) =>
      call('POST', `/v1/agent/roles/${role}/${action}`, { token: agent.token, body, expect: 200 });
    await agentRole(agentA, 'standby', 'register');
    const picked = await agentRole(agentA, 'leader', 'volunteer', { sessionId: agentA.sessionId });
    expect(picked).toMatchObject({ picked: true, leaseEpoch: expect.any(Number) });
    await agentRole(agentB, 'leader', 'volunteer', { sessionId: agentB.sessionId });
    await call('POST', '/v1/agent/heartbeat', {
      token: agentA.token,
      body: { sessionId: agentA.sessionId },
      expect: 200,
    });
    const roles = await operator('GET', '/v1/roles');
    expect(roles.roles).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ role: 'standby', holder: null, since: null }),
        expect.objectContaining({ role: 'leader', holder: agentA.agentId }),
      ]),
    );
    const released = await agentRole(agentA, 'leader', 'release', { leaseEpoch: picked.leaseEpoch });
    expect(released).toMatchObject({ released: true, nextHolder: agentB.agentId });
    const withdrawn = await agentRole(agentB, 'leader', 'withdraw', {
      sessionId: agentB.sessionId,
      leaseEpoch: (released as { role: { leaseEpoch: number } }).role.leaseEpoch,
    });
    expect(withdrawn).toMatchObject({ withdrawn: true, released: true });

    await operator('DELETE', `/v1/agents/${agentB.agentId}`);
  });

  it('refusals answer the error bodies the document says', async () => {
    const unknownTask = `t_${'a'.repeat(26)}`;
    await call('GET', `/v1/tasks/${unknownTask}`, { token: OPERATOR, expect: 404 });
    await call('POST', '/v1/tasks', { token: OPERATOR, body: { queue: QUEUE }, expect: 400 });
    await call('POST', '/v1/tasks', {
      token: OPERATOR,
      body: 'queue=x',
      contentType: 'text/plain',
      expect: 415,
    });
    await call('GET', '/v1/tasks', { expect: 401 });
    await call('GET', '/v1/tasks', { token: agentA.token, expect: 403 });
    await call('POST', '/v1/agent/heartbeat', { body: { sessionId: agentA.sessionId }, expect: 401 });
    await call('POST', '/v1/tasks', {
      token: OPERATOR,
      body: { queue: QUEUE, payload: 'x'.repeat(262_200) },
      expect: 413,
    });
    // A session that is not the agent's own: lost.
    await call('POST', '/v1/agent/heartbeat', {
      token: agentA.token,
      body: { sessionId: `s_${'a'.repeat(26)}` },
      expect: 409,
    });
  });

  it('push tickets are answered as documented, for agents and operators', async () => {
    const forAgent = await call('POST', '/v1/agent/push-ticket', { token: agentA.token, expect: 201 });
    expect(String(forAgent.url)).toContain('ticket=');
    const forOperator = await operator('POST', '/v1/push-ticket', undefined, 201);
    expect(forOperator.ticket).not.toBe(forAgent.ticket);
    await call('POST', '/v1/push-ticket', { token: agentA.token, expect: 403 });
  });

  it('the local event feed answers what the document says, after the tasks above moved', async () => {
    const page = await operator('GET', '/v1/events?since=0&limit=1000');
    expect((page.events as unknown[]).length).toBeGreaterThan(0);
    await call('GET', '/v1/events?limit=0', { token: OPERATOR, expect: 400 });
  });

  it('every success status of every documented operation was checked, and some refusals', () => {
    const documented = Object.values(doc.paths).flatMap((methods) =>
      Object.values(methods).flatMap((op) =>
        Object.keys(op.responses)
          .filter((status) => status.startsWith('2'))
          .map((status) => `${op.operationId} ${status}`),
      ),
    );
    const seen = new Set(checked.map((c) => `${c.operation} ${c.status}`));
    expect(documented.filter((d) => !seen.has(d))).toEqual([]);
    const refusals = new Set(checked.filter((c) => c.status >= 400).map((c) => c.status));
    expect([...refusals].sort()).toEqual([400, 401, 403, 404, 409, 413, 415]);
    console.log(
      `[openapi] ${documented.length} success responses of ${Object.values(doc.paths).flatMap(Object.keys).length} operations and ${checked.filter((c) => c.status >= 400).length} refusals checked (${checked.length} answers in all)`,
    );
  });
});
