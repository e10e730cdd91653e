/**
 * Hostile inputs found from outside the project, one test per finding: each is answered with a 4xx and the
 * JSON error body, or kept intact, and never alters data silently.
 */
import { STATUS_CODES } from 'node:http';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { issueAgentToken } from '#domain/agent-token';
import { type LocalRequest, type LocalServer, localRequestHandler, startLocalServer } from '#local/server';
import { createTestStack, type TestStack } from '#test/stack';

const OPERATOR = 'op_hostile-operator-token';
const quiet = { info() {}, warn() {}, error() {} };

describe('hostile input', () => {
  let stack: TestStack;
  let answer: ReturnType<typeof localRequestHandler>;
  const agents: { agentId: string; token: string; sessionId: string }[] = [];

  const call = async (
    method: string,
    url: string,
    body?: string,
    token = OPERATOR,
    headers: Record<string, string> = {},
  ) => {
    const request: LocalRequest = {
      method,
      url,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      body: body ?? '',
    };
    const result = await answer(request);
    return {
      status: result.statusCode,
      text: result.body,
      // biome-ignore lint/suspicious/noExplicitAny: answers are read field by field, each assertion checks its part
      json: JSON.parse(result.body) as Record<string, any>,
    };
  };

  const claimOne = async (agent: { token: string; sessionId: string }) => {
    const claimed = await call(
      'POST',
      '/v1/agent/claim',
      JSON.stringify({ sessionId: agent.sessionId }),
      agent.token,
    );
    expect(claimed.status).toBe(200);
    return claimed;
  };

  /**
   * An agent's follow-up task of `child`'s fields, sent under the lease of a parent it claims for the purpose (the
   * parent then completes, so the next such claim finds the next parent): the answer to the follow-up.
   */
  const followUpUnderLease = async (agent: { token: string; sessionId: string }, child: object) => {
    await call('POST', '/v1/tasks', '{"queue":"work","payload":{"parent":true}}');
    const parent = (await claimOne(agent)).json.tasks[0];
    const answered = await call(
      'POST',
      '/v1/agent/tasks',
      JSON.stringify({ parentTaskId: parent.taskId, leaseEpoch: parent.leaseEpoch, ...child }),
      agent.token,
    );
    const done = JSON.stringify({ leaseEpoch: parent.leaseEpoch });
    expect((await call('POST', `/v1/agent/tasks/${parent.taskId}/complete`, done, agent.token)).status).toBe(
      200,
    );
    return answered;
  };

  beforeAll(async () => {
    // Schedules are armed nowhere: what is stored is what is checked.
    stack = await createTestStack({
      queues: ['work', 'bodiless', 'debounced', 'traced'],
      scheduleBackend: { put: async () => undefined, remove: async () => undefined },
    });
    for (const name of ['first', 'second']) {
      const registered = await stack.scheduler.registerAgent(
        { name, queues: ['work'], maxConcurrency: 10 },
        issueAgentToken,
      );
      const session = await stack.scheduler.openSession(registered.agent.agentId);
      agents.push({
        agentId: registered.agent.agentId,
        token: registered.token ?? '',
        sessionId: session.sessionId,
      });
    }
    // These tests send many requests as one agent; the per-agent rate bound has a test of its own below.
    answer = localRequestHandler({
      scheduler: stack.scheduler,
      agents: stack.ctx.agents,
      operatorToken: OPERATOR,
      log: quiet,
      agentRateLimit: false,
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  describe('1. deep nesting', () => {
    const objects = `${'{"a":'.repeat(2_000)}1${'}'.repeat(2_000)}`;
    const arrays = `${'['.repeat(3_000)}${']'.repeat(3_000)}`;
    const absentTask = `t_${'q'.repeat(26)}`;

    it.each([
      ['objects', objects],
      ['arrays', arrays],
    ])('a payload of nested %s is refused with 400', async (_, deep) => {
      const answered = await call('POST', '/v1/tasks', `{"queue":"work","payload":${deep}}`);
      expect(answered.status).toBe(400);
      expect(answered.json.error.code).toBe('ValidationError');
    });

    it.each([
      ['objects', objects],
      ['arrays', arrays],
    ])('a result or a checkpoint of nested %s is refused with 400', async (_, deep) => {
      const [agent] = agents;
      const completed = await call(
        'POST',
        `/v1/agent/tasks/${absentTask}/complete`,
        `{"leaseEpoch":1,"result":${deep}}`,
        agent?.token,
      );
      expect(completed.status).toBe(400);
      const beat = await call(
        'POST',
        '/v1/agent/heartbeat',
        `{"sessionId":"${agent?.sessionId}","checkpoints":[{"taskId":"${absentTask}","leaseEpoch":1,"checkpoint":${deep}}]}`,
        agent?.token,
      );
      expect(beat.status).toBe(400);
    });
  });

  it('2. limits of null are refused and clear nothing', async () => {
    const set = await call('POST', '/v1/queues/work/limits', JSON.stringify({ maxConcurrency: 3 }));
    expect(set.status).toBe(200);
    const cleared = await call('POST', '/v1/queues/work/limits', 'null');
    expect(cleared.status).toBe(400);
    expect((await call('POST', '/v1/queues/work/limits')).status).toBe(400);
    // Above what one control item holds: refused with the bound named.
    for (const field of ['maxConcurrency', 'perKeyConcurrency']) {
      const over = await call('POST', '/v1/queues/work/limits', JSON.stringify({ [field]: 20_000 }));
      expect(over.status).toBe(400);
      expect(over.json.error).toEqual({
        code: 'ValidationError',
        message: `${field}: at most 5,000 (the slots one queue control holds)`,
      });
    }
    const queues = await call('GET', '/v1/queues');
    expect(queues.json.queues.find((q: { name: string }) => q.name === 'work').limits).toEqual({
      maxConcurrency: 3,
    });
    await call('POST', '/v1/queues/work/limits', '{}');
  });

  describe('3. keys DynamoDB cannot take', () => {
    it('an agent id over 2 KB is not found', async () => {
      const revoked = await call('DELETE', `/v1/agents/a_${'x'.repeat(3_000)}`);
      expect(revoked.status).toBe(404);
      expect(revoked.json.error.code).toBe('AgentNotFound');
    });

    it.each([
      { taskId: '', part: 'state' },
      { taskId: 't_x', part: '' },
      { taskId: 'x'.repeat(3_000), part: 'state' },
      { taskId: `t_${'q'.repeat(26)}`, part: 'payload' },
    ])('a forged cursor %# is refused with 400', async (key) => {
      const cursor = Buffer.from(JSON.stringify(key)).toString('base64url');
      const listed = await call('GET', `/v1/tasks?cursor=${cursor}`);
      expect(listed.status).toBe(400);
      expect(listed.json.error.code).toBe('ValidationError');
    });
  });

  it.each(['%20%205', '0x10', '1e1'])('3. a limit of %s is refused, not read leniently', async (limit) => {
    expect((await call('GET', `/v1/tasks?limit=${limit}`)).status).toBe(400);
    expect((await call('GET', `/v1/agents?limit=${limit}`)).status).toBe(400);
  });

  it('3. a cursor with characters outside base64url is refused, though it decodes', async () => {
    const cursor = Buffer.from(JSON.stringify({ createdAt: 1, taskId: `t_${'q'.repeat(26)}` })).toString(
      'base64url',
    );
    expect((await call('GET', `/v1/tasks?cursor=${cursor}`)).status).toBe(200);
    expect((await call('GET', `/v1/tasks?cursor=${cursor}%1B`)).status).toBe(400);
  });

  describe('a body sent to a route that takes none', () => {
    it.each(['null', '[]', '"x"', '{"__proto__":{"a":1}}', '{"reason":"x"}'])(
      'is refused with 400 on routes of a real task, queue and agent, and changes nothing (%s)',
      async (body) => {
        // A queue of its own: the tasks left here must not be claimed by the tests on `work`.
        const { task } = await stack.scheduler.submit({ queue: 'bodiless', payload: {} });
        const { agent } = await stack.scheduler.registerAgent({ name: 'bodiless', queues: ['bodiless'] });
        for (const [method, url] of [
          ['POST', `/v1/tasks/${task.taskId}/cancel`],
          ['POST', `/v1/tasks/${task.taskId}/redrive`],
          ['POST', '/v1/queues/bodiless/pause'],
          ['POST', '/v1/queues/bodiless/resume'],
          ['DELETE', `/v1/agents/${agent.agentId}`],
        ] as const) {
          const answered = await call(method, url, body);
          expect(answered.status, `${method} ${url}`).toBe(400);
          expect(answered.json.error.code).toBe('ValidationError');
        }
        expect((await stack.scheduler.getTask(task.taskId)).status).toBe('queued');
        expect((await stack.ctx.agents.get(agent.agentId))?.revokedAt).toBeUndefined();
        // With no body, or an empty object, the same routes work.
        expect((await call('POST', `/v1/tasks/${task.taskId}/cancel`, '{}')).status).toBe(200);
        expect((await call('DELETE', `/v1/agents/${agent.agentId}`)).status).toBe(200);
      },
    );

    it('a cancel’s cascade that is not a boolean is refused, and cancels nothing', async () => {
      const { task } = await stack.scheduler.submit({ queue: 'bodiless', payload: {} });
      for (const body of [
        '{"cascade":"yes"}',
        '{"cascade":1}',
        '{"cascade":null}',
        '{"cascade":true,"depth":2}',
      ]) {
        const answered = await call('POST', `/v1/tasks/${task.taskId}/cancel`, body);
        expect(answered.status, body).toBe(400);
        expect(answered.json.error.code).toBe('ValidationError');
      }
      expect((await stack.scheduler.getTask(task.taskId)).status).toBe('queued');
      const cascaded = await call('POST', `/v1/tasks/${task.taskId}/cancel`, '{"cascade":true}');
      expect(cascaded.status).toBe(200);
      expect(cascaded.json.task).toMatchObject({
        status: 'cancelled',
        cascade: { cancelled: 0, pending: 0, done: true },
      });
    });
  });

  describe('a rebuild’s cursor and limit', () => {
    const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    it.each([
      ['a cursor that is not base64url', '{"cursor":"not a cursor!"}'],
      ['a cursor of other JSON', `{"cursor":"${cursorOf({ v: 1 })}"}`],
      [
        'a cursor of a shard that does not exist',
        `{"cursor":"${cursorOf({ v: 1, since: 1, shard: 'due#99' })}"}`,
      ],
      [
        'a cursor whose key belongs to another shard',
        `{"cursor":"${cursorOf({ v: 1, since: 1, shard: 'due#01', key: { dueShard: 'due#02', dueAt: 1, taskId: 't', part: 'state' } })}"}`,
      ],
      [
        'a cursor with a field of its own',
        `{"cursor":"${cursorOf({ v: 1, since: 1, shard: 'due#01', extra: true })}"}`,
      ],
      ['an empty cursor', '{"cursor":""}'],
      ['an over-long cursor', `{"cursor":"${'A'.repeat(3_000)}"}`],
      ['a limit of 0', '{"limit":0}'],
      ['a limit above 5,000', '{"limit":5001}'],
      ['a limit as text', '{"limit":"10"}'],
      ['a limit not whole', '{"limit":1.5}'],
      ['a field it does not take', '{"limit":10,"queue":"work"}'],
      ['a __proto__ key', '{"__proto__":{"limit":10}}'],
      ['null', 'null'],
      ['an array', '[]'],
    ])('%s: 400, and nothing read or written', async (_, body) => {
      stack.meter.reset();
      const answered = await call('POST', '/v1/scheduler/rebuild', body);
      expect(answered.status).toBe(400);
      expect(answered.json.error).toMatchObject({ code: 'ValidationError', message: expect.any(String) });
      expect(stack.meter.totals().requests).toBe(0);
    });
  });

  describe('4. __proto__ keys', () => {
    it('a payload keeps them through submit and claim, byte for byte', async () => {
      const payload = '{"__proto__":{"admin":true},"nested":[{"__proto__":null}],"n":1}';
      const submitted = await call('POST', '/v1/tasks', `{"queue":"work","payload":${payload}}`);
      expect(submitted.status).toBe(201);
      const [agent] = agents;
      if (!agent) throw new Error('no agent');
      const claimed = await claimOne(agent);
      const task = claimed.json.tasks[0];
      expect(JSON.stringify(task.payload)).toBe(payload);

      const result = '{"__proto__":{"polluted":1},"ok":true}';
      const done = await call(
        'POST',
        `/v1/agent/tasks/${task.taskId}/complete`,
        `{"leaseEpoch":${task.leaseEpoch},"result":${result}}`,
        agent.token,
      );
      expect(done.status).toBe(200);
      const read = await call('GET', `/v1/tasks/${task.taskId}`);
      expect(JSON.stringify(read.json.task.result)).toBe(result);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });

    it('a schedule’s task keeps them in the stored record, byte for byte', async () => {
      const payload = '{"__proto__":{"admin":true},"list":[{"__proto__":null}],"n":2}';
      const created = await call(
        'POST',
        '/v1/schedules',
        `{"name":"proto-keys","expression":"rate(1 hour)","task":{"queue":"work","payload":${payload}}}`,
      );
      expect(created.status).toBe(201);
      const read = await call('GET', '/v1/schedules/proto-keys');
      expect(JSON.stringify(read.json.schedule.task.payload)).toBe(payload);
      expect((await call('DELETE', '/v1/schedules/proto-keys')).status).toBeLessThan(300);
    });

    it('as a key of a child’s specification, refused as the operator routes refuse it, nothing written', async () => {
      const spec = '"queue":"work","payload":{}';
      // The operator routes refuse them, at the top and in an item.
      expect((await call('POST', '/v1/tasks', `{"__proto__":{"x":1},${spec}}`)).status).toBe(400);
      const operatorBatch = await call('POST', '/v1/tasks/batch', `{"tasks":[{"__proto__":{},${spec}}]}`);
      expect(operatorBatch.json.results[0]).toMatchObject({ ok: false, status: 400 });

      const [agent] = agents;
      if (!agent) throw new Error('no agent');
      await call('POST', '/v1/tasks', '{"queue":"work","payload":{"parent":true}}');
      const parent = (await claimOne(agent)).json.tasks[0];
      const fence = `"parentTaskId":"${parent.taskId}","leaseEpoch":${parent.leaseEpoch}`;
      const before = (await stack.scheduler.listTasks({ queue: 'work', limit: 100 })).tasks.length;
      const single = await call(
        'POST',
        '/v1/agent/tasks',
        `{"__proto__":{"x":1},${fence},"key":"top",${spec}}`,
        agent.token,
      );
      expect(single.status).toBe(400);
      expect(single.json.error.code).toBe('ValidationError');
      const batchTop = await call(
        'POST',
        '/v1/agent/tasks/batch',
        `{"__proto__":{},${fence},"tasks":[{"key":"batch-top",${spec}}]}`,
        agent.token,
      );
      expect(batchTop.status).toBe(400);
      const batchItem = await call(
        'POST',
        '/v1/agent/tasks/batch',
        `{${fence},"tasks":[{"__proto__":{"x":1},"key":"batch-item",${spec}}]}`,
        agent.token,
      );
      expect(batchItem.status).toBe(200);
      expect(batchItem.json.results[0]).toMatchObject({ ok: false, status: 400 });
      const after = await stack.scheduler.listTasks({ queue: 'work', limit: 100 });
      expect(after.tasks.length).toBe(before);
      expect(after.tasks.filter((t) => t.parentTaskId === parent.taskId)).toEqual([]);
      const done = `{"leaseEpoch":${parent.leaseEpoch}}`;
      expect(
        (await call('POST', `/v1/agent/tasks/${parent.taskId}/complete`, done, agent.token)).status,
      ).toBe(200);
    });
  });

  it.each([
    '{"queue":"work","payload":{"a":1,"a":2}}',
    '{"queue":"work","queue":"work","payload":{}}',
    '{"queue":"work","payload":{"k":[{"\\u0061":1,"a":2}]}}',
  ])('4. a key repeated in one object (%s) is refused, not half dropped', async (body) => {
    const submitted = await call('POST', '/v1/tasks', body);
    expect(submitted.status).toBe(400);
    expect(submitted.json.error.message).toMatch(/appears twice/);
  });

  it('5. a task that is not the caller’s is answered as one that does not exist', async () => {
    const [holder, other] = agents;
    if (!holder || !other) throw new Error('no agents');
    await call('POST', '/v1/tasks', '{"queue":"work","payload":{"five":true}}');
    const claimed = await claimOne(holder);
    const task = claimed.json.tasks[0];
    const absent = `t_${'q'.repeat(26)}`;
    for (const verb of ['complete', 'fail', 'release']) {
      const body = verb === 'fail' ? '{"leaseEpoch":1,"error":{"message":"x"}}' : '{"leaseEpoch":1}';
      const foreign = await call('POST', `/v1/agent/tasks/${task.taskId}/${verb}`, body, other.token);
      const missing = await call('POST', `/v1/agent/tasks/${absent}/${verb}`, body, other.token);
      expect(foreign.status).toBe(missing.status);
      expect(foreign.json.error.code).toBe(missing.json.error.code);
      expect(foreign.json.error.message.replace(task.taskId, 'ID')).toBe(
        missing.json.error.message.replace(absent, 'ID'),
      );
    }
    // The holder still learns why its own stale call is refused.
    const stale = await call(
      'POST',
      `/v1/agent/tasks/${task.taskId}/release`,
      `{"leaseEpoch":${task.leaseEpoch + 1}}`,
      holder.token,
    );
    expect(stale.status).toBe(409);
    expect(stale.json.error.code).toBe('LeaseLost');
    const released = `{"leaseEpoch":${task.leaseEpoch}}`;
    expect(
      (await call('POST', `/v1/agent/tasks/${task.taskId}/release`, released, holder.token)).status,
    ).toBe(200);
    // A retried call replays.
    expect(
      (await call('POST', `/v1/agent/tasks/${task.taskId}/release`, released, holder.token)).status,
    ).toBe(200);
  });

  it.each(['\u001b[2J', '\u0007', '\u202e', '\u0000', '\u009b'])(
    '6. a control character (%j) in an agent name is refused',
    async (control) => {
      const registered = await call(
        'POST',
        '/v1/agents',
        JSON.stringify({ name: `evil${control}`, queues: ['work'] }),
      );
      expect(registered.status).toBe(400);
    },
  );

  describe('7. list views', () => {
    it('tasks carry no payload, result or checkpoint', async () => {
      const [agent] = agents;
      if (!agent) throw new Error('no agent');
      await call('POST', '/v1/tasks', '{"queue":"work","payload":{"seven":true}}');
      const task = (await claimOne(agent)).json.tasks[0];
      const result = JSON.stringify({ leaseEpoch: task.leaseEpoch, result: { big: 'r'.repeat(1_000) } });
      expect(
        (await call('POST', `/v1/agent/tasks/${task.taskId}/complete`, result, agent.token)).status,
      ).toBe(200);
      const listed = await call('GET', '/v1/tasks?limit=100');
      expect(listed.status).toBe(200);
      expect(listed.json.tasks.length).toBeGreaterThan(0);
      for (const task of listed.json.tasks) {
        expect(task).not.toHaveProperty('result');
        expect(task).not.toHaveProperty('payload');
        expect(task).not.toHaveProperty('checkpoint');
      }
    });

    it('agents are listed a page at a time with a cursor', async () => {
      const first = await call('GET', '/v1/agents?limit=1');
      expect(first.status).toBe(200);
      expect(first.json.agents).toHaveLength(1);
      expect(typeof first.json.nextCursor).toBe('string');
      const second = await call('GET', `/v1/agents?limit=1&cursor=${first.json.nextCursor}`);
      expect(second.json.agents).toHaveLength(1);
      expect(second.json.agents[0].agentId).not.toBe(first.json.agents[0].agentId);
      expect((await call('GET', '/v1/agents?limit=0')).status).toBe(400);
      expect((await call('GET', '/v1/agents?cursor=abc')).status).toBe(400);
    });

    it('schedules are listed a page at a time, without their payloads, which reading one by name gives', async () => {
      const payload = { big: 's'.repeat(100_000) };
      for (const name of ['list-a', 'list-b', 'list-c']) {
        const body = JSON.stringify({ name, expression: 'rate(1 day)', task: { queue: 'work', payload } });
        expect((await call('POST', '/v1/schedules', body)).status).toBe(201);
      }
      const names: string[] = [];
      let cursor = '';
      do {
        const page = await call('GET', `/v1/schedules?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.status).toBe(200);
        expect(page.json.schedules.length).toBeLessThanOrEqual(2);
        expect(page.text.length).toBeLessThan(2_000);
        for (const schedule of page.json.schedules) {
          expect(schedule.task).not.toHaveProperty('payload');
          expect(schedule.task.queue).toBe('work');
          names.push(schedule.name);
        }
        cursor = page.json.nextCursor ?? '';
      } while (cursor);
      expect(names.filter((n) => n.startsWith('list-'))).toEqual(['list-a', 'list-b', 'list-c']);
      expect(names).toEqual([...names].sort());
      const one = await call('GET', '/v1/schedules/list-b');
      expect(one.json.schedule).toMatchObject({ name: 'list-b', task: { queue: 'work', payload } });
      expect((await call('GET', '/v1/schedules/list-none')).json.error.code).toBe('ScheduleNotFound');
      expect((await call('GET', '/v1/schedules?limit=101')).status).toBe(400);
      expect((await call('GET', '/v1/schedules?cursor=abc')).status).toBe(400);
      for (const name of ['list-a', 'list-b', 'list-c']) await call('DELETE', `/v1/schedules/${name}`);
    });
  });

  describe('9 and 10. the local server', () => {
    let server: LocalServer;
    beforeAll(async () => {
      server = await startLocalServer({
        scheduler: stack.scheduler,
        agents: stack.ctx.agents,
        operatorToken: OPERATOR,
        port: 0,
        log: quiet,
      });
    });
    afterAll(async () => {
      await server.close();
    });

    it('9. listens on the loopback interface only', () => {
      const address = server.server.address();
      expect(typeof address === 'object' && address?.address).toBe('127.0.0.1');
    });

    it('9. the local server and both emulators refuse connections on the machine’s other addresses', async () => {
      const outside = Object.values(networkInterfaces())
        .flat()
        .find((address) => address && !address.internal && address.family === 'IPv4')?.address;
      // A machine with only a loopback interface has nothing to be exposed on.
      if (outside === undefined) return;
      const ports = [server.url, inject('dynamodbEndpoint'), inject('sqsEndpoint')].map((url) =>
        Number(new URL(url).port),
      );
      const reach = (port: number) =>
        new Promise<string>((resolve) => {
          const socket = connect(port, outside, () => {
            socket.destroy();
            resolve('connected');
          });
          socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
        });
      expect(await Promise.all(ports.map(reach))).toEqual(['ECONNREFUSED', 'ECONNREFUSED', 'ECONNREFUSED']);
    });

    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const port = Number(new URL(server.url).port);
        const socket = connect(port, '127.0.0.1', () => socket.end(request));
        let text = '';
        socket.on('data', (chunk) => {
          text += chunk.toString('utf8');
        });
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });

    it.each([
      [
        'an over-long header',
        `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Long: ${'a'.repeat(20_000)}\r\n\r\n`,
        431,
      ],
      ['a malformed request line', 'NOT A REQUEST\r\n\r\n', 400],
      ['a bad header', 'GET /v1/health HTTP/1.1\r\nHo st: x\r\n\r\n', 400],
      ['a target that is not a URL', 'GET http://[ HTTP/1.0\r\nHost: x\r\n\r\n', 400],
      [
        'an expectation the server cannot meet',
        'GET /v1/health HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n',
        417,
      ],
    ])('10. %s is answered with the JSON error body', async (_, request, status) => {
      const response = await raw(request);
      expect(response.split('\r\n')[0]).toBe(`HTTP/1.1 ${status} ${STATUS_CODES[status]}`);
      expect(response).toMatch(/content-type: application\/json/i);
      const body = JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as {
        error: { code: string; message: string };
      };
      expect(typeof body.error.code).toBe('string');
      expect(typeof body.error.message).toBe('string');
    });
  });

  it('a debounce out of bounds, or with what it cannot go with, is a 400 that writes nothing', async () => {
    const debounce = (over: Record<string, unknown>) => ({ key: 'doc-1', windowSeconds: 5, ...over });
    const refused: Record<string, unknown>[] = [
      { debounce: debounce({ windowSeconds: 0 }) },
      { debounce: debounce({ windowSeconds: 3_601 }) },
      { debounce: debounce({ windowSeconds: 1.5 }) },
      { debounce: debounce({ maxWaitSeconds: 4 }) },
      { debounce: debounce({ windowSeconds: 60, maxWaitSeconds: 86_401 }) },
      { debounce: debounce({ key: '' }) },
      { debounce: debounce({ key: 'k'.repeat(129) }) },
      { debounce: debounce({ key: 'a#b' }) },
      { debounce: debounce({ key: 'a b' }) },
      { debounce: debounce({ key: 'é' }) },
      { debounce: debounce({ key: 7 }) },
      { debounce: debounce({ extra: true }) },
      { debounce: { windowSeconds: 5 } },
      { debounce: null },
      { debounce: 'doc-1' },
      { debounce: debounce({}), delaySeconds: 10 },
      { debounce: debounce({}), expiresAt: new Date(Date.now() + 3_600_000).toISOString() },
      { debounce: debounce({}), dependsOn: [`t_${'q'.repeat(26)}`] },
    ];
    for (const body of refused) {
      const answered = await call(
        'POST',
        '/v1/tasks',
        JSON.stringify({ queue: 'debounced', payload: {}, ...body }),
      );
      expect(answered.status, JSON.stringify(body)).toBe(400);
      expect(answered.json.error.code).toBe('ValidationError');
      expect(answered.json.error.message).toMatch(/debounce/);
      const batch = await call(
        'POST',
        '/v1/tasks/batch',
        JSON.stringify({ tasks: [{ queue: 'debounced', payload: {}, ...body }] }),
      );
      expect(batch.status).toBe(200);
      expect(batch.json.results).toMatchObject([
        { ok: false, status: 400, error: { code: 'ValidationError' } },
      ]);
    }
    // Not in an agent's follow-up task either, under a lease it holds.
    const [agent] = agents;
    if (!agent) throw new Error('no agent');
    const child = await followUpUnderLease(agent, {
      key: 'child',
      queue: 'debounced',
      payload: {},
      debounce: debounce({}),
    });
    expect(child.status).toBe(400);
    expect(child.json.error.message).toMatch(/debounce/);
    const listed = await call('GET', '/v1/tasks?queue=debounced');
    expect(listed.json.tasks).toEqual([]);
    const records = await DynamoDBDocumentClient.from(stack.dynamodb).send(
      new ScanCommand({
        TableName: stack.ctx.tasks.tableName,
        FilterExpression: 'begins_with(taskId, :debounce) OR #q = :queue',
        ExpressionAttributeNames: { '#q': 'queue' },
        ExpressionAttributeValues: { ':debounce': 'debounce#', ':queue': 'debounced' },
        ConsistentRead: true,
      }),
    );
    expect(records.Items).toEqual([]);

    // A key reused for another submission of a window: 409, and the window's task keeps its payload.
    const first = await call(
      'POST',
      '/v1/tasks',
      JSON.stringify({
        queue: 'debounced',
        payload: { n: 1 },
        debounce: debounce({}),
        idempotencyKey: 'sub-1',
      }),
    );
    expect(first.status).toBe(201);
    expect(first.json.debounced).toBe(false);
    const reused = await call(
      'POST',
      '/v1/tasks',
      JSON.stringify({
        queue: 'debounced',
        payload: { n: 2 },
        debounce: debounce({}),
        idempotencyKey: 'sub-1',
      }),
    );
    expect(reused.status).toBe(409);
    const task = await call('GET', `/v1/tasks/${first.json.task.taskId}?include=payload`);
    expect(task.json.task).toMatchObject({ payload: { n: 1 }, debounce: { key: 'doc-1', submissions: 1 } });
    expect((await call('POST', `/v1/tasks/${first.json.task.taskId}/cancel`, '{}')).status).toBe(200);
  });

  it('a trace context out of form, in the body or the headers, is a 400 that writes nothing', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const spanId = '00f067aa0ba902b7';
    const refused: [string, Record<string, unknown>][] = [
      ['traceparent', { traceparent: 'not-a-traceparent' }],
      ['traceparent', { traceparent: `00-${traceId.toUpperCase()}-${spanId}-01` }],
      ['traceparent', { traceparent: `00-${'0'.repeat(32)}-${spanId}-01` }],
      ['traceparent', { traceparent: `00-${traceId}-${'0'.repeat(16)}-01` }],
      ['traceparent', { traceparent: `ff-${traceId}-${spanId}-01` }],
      ['traceparent', { traceparent: `00-${traceId}-${spanId}-01-extra` }],
      ['traceparent', { traceparent: `00-${traceId}-${spanId}-01\n` }],
      ['traceparent', { traceparent: 7 }],
      ['traceparent', { traceparent: null }],
      ['tracestate', { traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'k=v,'.repeat(129) }],
      ['tracestate', { traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'k=\u0007' }],
      ['tracestate', { tracestate: 'k=v' }],
    ];
    for (const [field, body] of refused) {
      const spec = { queue: 'traced', payload: {}, ...body };
      const answered = await call('POST', '/v1/tasks', JSON.stringify(spec));
      expect(answered.status, JSON.stringify(body)).toBe(400);
      expect(answered.json.error).toMatchObject({ code: 'ValidationError' });
      expect(answered.json.error.message).toMatch(new RegExp(`^${field}: `));
      const batch = await call('POST', '/v1/tasks/batch', JSON.stringify({ tasks: [spec] }));
      expect(batch.json.results).toMatchObject([
        { ok: false, status: 400, error: { code: 'ValidationError' } },
      ]);
    }
    // The same, sent as the headers of a body that has none.
    for (const headers of <Record<string, string>[]>[
      { traceparent: `00-${'0'.repeat(32)}-${spanId}-01` },
      { traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'x'.repeat(513) },
    ]) {
      const answered = await call('POST', '/v1/tasks', '{"queue":"traced","payload":{}}', OPERATOR, headers);
      expect(answered.status).toBe(400);
      expect(answered.json.error.message).toMatch(/^trace(parent|state): /);
    }
    // And in an agent's follow-up task, under a lease it holds.
    const [agent] = agents;
    if (!agent) throw new Error('no agent');
    const child = await followUpUnderLease(agent, {
      key: 'traced-child',
      queue: 'traced',
      payload: {},
      traceparent: `00-${traceId}-${spanId}`,
    });
    expect(child.status).toBe(400);
    expect(child.json.error.message).toMatch(/^traceparent: /);
    expect((await stack.scheduler.listTasks({ queue: 'traced' })).tasks).toEqual([]);
  });

  it('a trace context is kept as sent, shown, and handed to the agent; the body’s wins over the headers’', async () => {
    const fromBody = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const fromHeader = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';
    const [agent] = agents;
    if (!agent) throw new Error('no agent');
    const headers = { traceparent: fromHeader, tracestate: 'vendor=header' };
    const byBody = await call(
      'POST',
      '/v1/tasks',
      JSON.stringify({
        queue: 'work',
        payload: {},
        traceparent: fromBody,
        tracestate: 'rojo=00f067aa0ba902b7',
      }),
      OPERATOR,
      headers,
    );
    const byHeader = await call('POST', '/v1/tasks', '{"queue":"work","payload":{}}', OPERATOR, headers);
    const plain = await call('POST', '/v1/tasks', '{"queue":"work","payload":{}}');
    expect(byBody.json.task).toMatchObject({ traceparent: fromBody, tracestate: 'rojo=00f067aa0ba902b7' });
    expect(byHeader.json.task).toMatchObject({ traceparent: fromHeader, tracestate: 'vendor=header' });
    expect(plain.json.task).not.toHaveProperty('traceparent');
    const read = await call('GET', `/v1/tasks/${byHeader.json.task.taskId}`);
    expect(read.json.task).toMatchObject({ traceparent: fromHeader, tracestate: 'vendor=header' });

    const byId = new Map<string, Record<string, unknown>>();
    // A hint may come a moment after its task: claims until all three are held, for up to about 4 s (an earlier
    // test's task of the queue may come too, and is finished with them).
    const wanted = [byBody, byHeader, plain].map((answered) => answered.json.task.taskId as string);
    for (let claims = 0; !wanted.every((id) => byId.has(id)) && claims < 40; claims++) {
      if (claims > 0) await new Promise((resolve) => setTimeout(resolve, 100));
      const claimed = await call(
        'POST',
        '/v1/agent/claim',
        JSON.stringify({ sessionId: agent.sessionId, max: 5 }),
        agent.token,
      );
      for (const task of claimed.json.tasks) byId.set(task.taskId, task);
    }
    expect(byId.get(byBody.json.task.taskId)).toMatchObject({ traceparent: fromBody });
    expect(byId.get(byHeader.json.task.taskId)).toMatchObject({ traceparent: fromHeader });
    expect(byId.get(plain.json.task.taskId)).toBeDefined();
    expect(byId.get(plain.json.task.taskId)).not.toHaveProperty('traceparent');
    for (const task of byId.values()) {
      const done = JSON.stringify({ leaseEpoch: task.leaseEpoch });
      expect((await call('POST', `/v1/agent/tasks/${task.taskId}/complete`, done, agent.token)).status).toBe(
        200,
      );
    }
  });

  it('a snooze or a retry delay out of bounds is a 400 that leaves the lease as it was', async () => {
    const [holder] = agents;
    if (!holder) throw new Error('no agents');
    await call('POST', '/v1/tasks', '{"queue":"work","payload":{"snooze":true}}');
    const task = (await claimOne(holder)).json.tasks[0];
    const epoch = task.leaseEpoch;
    const bodies: [string, string][] = [
      ['release', `{"leaseEpoch":${epoch},"delaySeconds":43201}`],
      ['release', `{"leaseEpoch":${epoch},"delaySeconds":-1}`],
      ['release', `{"leaseEpoch":${epoch},"delaySeconds":1.5}`],
      ['release', `{"leaseEpoch":${epoch},"delaySeconds":"60"}`],
      ['release', `{"leaseEpoch":${epoch},"delaySeconds":null}`],
      ['fail', `{"leaseEpoch":${epoch},"error":{"message":"x"},"retryAfterSeconds":1e9}`],
      ['fail', `{"leaseEpoch":${epoch},"error":{"message":"x"},"retryAfterSeconds":-5}`],
      ['fail', `{"leaseEpoch":${epoch},"error":{"message":"x","retryAfterSeconds":5}}`],
    ];
    for (const [verb, body] of bodies) {
      const answer = await call('POST', `/v1/agent/tasks/${task.taskId}/${verb}`, body, holder.token);
      expect(answer.status, body).toBe(400);
      expect(answer.json.error.code).toBe('ValidationError');
    }
    const after = await call('GET', `/v1/tasks/${task.taskId}`);
    expect(after.json.task).toMatchObject({ status: 'leased', leaseEpoch: epoch, attempt: 1 });
    expect(after.json.task.snoozes).toBeUndefined();
  });

  it('an extension out of bounds, or a longest attempt shorter than the first, is a 400 that changes nothing', async () => {
    const [holder] = agents;
    if (!holder) throw new Error('no agents');
    const shorter = await call(
      'POST',
      '/v1/tasks',
      '{"queue":"work","payload":{},"timeoutSeconds":60,"maxTimeoutSeconds":30}',
    );
    expect(shorter.status).toBe(400);
    expect(shorter.json.error.message).toMatch(/maxTimeoutSeconds: must be at least timeoutSeconds/);
    await call('POST', '/v1/tasks', '{"queue":"work","payload":{"extend":true},"maxTimeoutSeconds":3600}');
    const task = (await claimOne(holder)).json.tasks[0];
    const before = (await call('GET', `/v1/tasks/${task.taskId}`)).json.task;
    const one = (seconds: unknown) => ({ taskId: task.taskId, leaseEpoch: task.leaseEpoch, seconds });
    const many = Array.from({ length: 101 }, (_, i) => ({
      ...one(60),
      taskId: `t_${String(i).padStart(26, 'a')}`,
    }));
    for (const extend of [[one(0)], [one(43_201)], [one(1.5)], [one('60')], [one(60), one(90)], many]) {
      const answer = await call(
        'POST',
        '/v1/agent/heartbeat',
        JSON.stringify({ sessionId: holder.sessionId, extend }),
        holder.token,
      );
      expect(answer.status, JSON.stringify(extend).slice(0, 80)).toBe(400);
      expect(answer.json.error.code).toBe('ValidationError');
    }
    expect((await call('GET', `/v1/tasks/${task.taskId}`)).json.task).toEqual(before);
  });

  it('progress reports out of bounds, or not the caller’s, are 4xx that keep nothing', async () => {
    const [holder, other] = agents;
    if (!holder || !other) throw new Error('no agents');
    await call('POST', '/v1/tasks', '{"queue":"work","payload":{"progress":true}}');
    const task = (await claimOne(holder)).json.tasks[0];
    const e = task.leaseEpoch;
    const report = (body: string, token = holder.token) =>
      call('POST', `/v1/agent/tasks/${task.taskId}/progress`, body, token);
    for (const body of [
      `{"leaseEpoch":${e}}`,
      `{"leaseEpoch":${e},"percent":-1}`,
      `{"leaseEpoch":${e},"percent":101}`,
      `{"leaseEpoch":${e},"percent":"50"}`,
      `{"leaseEpoch":${e},"message":""}`,
      `{"leaseEpoch":${e},"message":"${'m'.repeat(1_025)}"}`,
      `{"leaseEpoch":${e},"data":"${'x'.repeat(17_000)}"}`,
      `{"leaseEpoch":${e},"percent":5,"extra":1}`,
      `{"percent":5}`,
      `[]`,
    ]) {
      const answer = await report(body);
      expect([400, 413], body.slice(0, 60)).toContain(answer.status);
      expect(answer.json.error.code, body.slice(0, 60)).toMatch(/Validation|TooLarge/);
    }
    expect((await report(`{"leaseEpoch":${e + 1},"percent":5}`)).status).toBe(409);
    expect((await report(`{"leaseEpoch":${e},"percent":5}`, other.token)).status).toBe(404);
    const batch = (body: string) => call('POST', '/v1/agent/tasks/progress', body, holder.token);
    const item = (extra = '') => `{"taskId":"${task.taskId}","leaseEpoch":${e},"percent":5${extra}}`;
    for (const body of [
      '{"tasks":[]}',
      `{"tasks":[${Array.from({ length: 101 }, () => item()).join(',')}]}`,
      `{"tasks":[${item(',"percent":200')}]}`,
      `{"tasks":[{"taskId":"nope","leaseEpoch":1,"percent":5}]}`,
      '{"tasks":{}}',
    ]) {
      expect((await batch(body)).status, body.slice(0, 60)).toBe(400);
    }
    expect((await call('GET', `/v1/tasks/${task.taskId}`)).json.task.progress).toBeUndefined();
  });

  it('waits and waitpoint answers out of bounds are 4xx that change nothing; a forged callback is not found', async () => {
    const [holder] = agents;
    if (!holder) throw new Error('no agents');
    await call('POST', '/v1/tasks', '{"queue":"work","payload":{"wait":true}}');
    const task = (await claimOne(holder)).json.tasks[0];
    const wait = (body: string) => call('POST', `/v1/agent/tasks/${task.taskId}/wait`, body, holder.token);
    const e = task.leaseEpoch;
    for (const body of [
      `{"leaseEpoch":${e}}`,
      `{"leaseEpoch":${e},"timeoutSeconds":0}`,
      `{"leaseEpoch":${e},"timeoutSeconds":2592001}`,
      `{"leaseEpoch":${e},"timeoutSeconds":60,"onTimeout":"retry"}`,
      `{"leaseEpoch":${e},"timeoutSeconds":60,"checkpoint":"${'x'.repeat(17_000)}"}`,
      `{"leaseEpoch":${e},"timeoutSeconds":60,"extra":1}`,
    ]) {
      const answer = await wait(body);
      expect([400, 413], body.slice(0, 60)).toContain(answer.status);
    }
    expect((await call('GET', `/v1/tasks/${task.taskId}`)).json.task).toMatchObject({ status: 'leased' });

    const suspended = await wait(`{"leaseEpoch":${e},"timeoutSeconds":60}`);
    expect(suspended.status).toBe(200);
    const id = suspended.json.waitpoint.waitpointId;
    const big = JSON.stringify({ data: { text: 'x'.repeat(70_000) } });
    expect((await call('POST', `/v1/waitpoints/${id}/complete`, big)).status).toBe(413);
    for (const body of ['{"reason":""}', `{"reason":"${'r'.repeat(2_049)}"}`, '{}', '{"reason":5}']) {
      expect((await call('POST', `/v1/waitpoints/${id}/reject`, body)).status, body.slice(0, 40)).toBe(400);
    }
    expect((await call('POST', '/v1/waitpoints/w_nope/complete', '{}')).status).toBe(404);
    for (const unknown of ['w_nope', `w_${'a'.repeat(26)}`, `${id}x`, '%00']) {
      const read = await call('GET', `/v1/waitpoints/${unknown}`);
      expect(read.status, unknown).toBe(404);
      expect(read.json.error.code, unknown).toBe('WaitpointNotFound');
    }
    for (const query of ['status=completed', 'limit=0', 'limit=101', 'cursor=forged']) {
      expect((await call('GET', `/v1/waitpoints?${query}`)).status, query).toBe(400);
    }
    const token = String(new URL(suspended.json.callbackUrl, 'http://x').pathname.split('/').pop());
    const otherLast = token.endsWith('A') ? 'B' : 'A';
    for (const forged of [`${token.slice(0, -1)}${otherLast}`, 'w_abc.def', token.replace('.', '')]) {
      const answer = await call(
        'POST',
        `/v1/callbacks/${encodeURIComponent(forged)}`,
        '{"approved":true}',
        '',
      );
      expect(answer.status, forged).toBe(404);
      expect(answer.json.error.code).toBe('WaitpointNotFound');
    }
    expect((await call('GET', `/v1/tasks/${task.taskId}`)).json.task).toMatchObject({ status: 'suspended' });
  });

  it('the local server bounds each agent’s request rate as the agent function does, one agent apart from another', async () => {
    const limited = localRequestHandler({
      scheduler: stack.scheduler,
      agents: stack.ctx.agents,
      operatorToken: OPERATOR,
      log: quiet,
      agentRateLimit: { ratePerSecond: 1, burst: 3 },
    });
    const [first, second] = agents;
    const session = (agent: (typeof agents)[number]) =>
      limited({
        method: 'GET',
        url: '/v1/agent/session',
        headers: { authorization: `Bearer ${agent.token}` },
        body: '',
      });
    if (!first || !second) throw new Error('no agents');
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await session(first));
    const other = await session(second);

    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 429, 429]);
    expect(JSON.parse(answers[3]?.body ?? '{}')).toMatchObject({ error: { code: 'TooManyRequests' } });
    expect(Number(answers[3]?.headers?.['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(other.statusCode).toBe(200);
  });
});
