/**
 * End to end over HTTP: a completion that carries the agent's next claim (`claimNext`). The claim is made once the
 * completion is answered and answered with it; it is one claim by its id however often the call is sent; a refusal
 * of the claim leaves the completion standing; a bad claim changes nothing. A busy Worker finishes a task and takes
 * its next in one call, and against a server older than carried claims it completes and claims apart, as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { AgentSchedulerError } from '#sdk/errors';
import { newClaimId } from '#sdk/request-ids';
import type { ClaimedTask } from '#sdk/types';
import { Worker } from '#sdk/worker';
import { createTestStack, serveStack, type TestStack, waitFor } from '#test/stack';

const OPERATOR = 'op_carried-claims-operator';

type Fetch = typeof fetch;

describe('a claim carried by a completion', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;

  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['carry', 'full', 'refused', 'bad', 'old', 'worker', 'lost', 'once'],
    });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
  });
  afterAll(async () => {
    await server.close();
    await stack.destroy();
  });

  /** A client for a new agent on `queue`, its requests seen by `through` (which gets the real fetch). */
  async function agentClient(
    queue: string,
    through: (request: Request, real: Fetch) => Promise<Response> = (request, real) => real(request),
    maxConcurrency = 4,
  ) {
    const { token } = await operator.createAgent({
      name: `carry-${queue}`,
      queues: [queue],
      maxConcurrency,
    });
    return new AgentSchedulerClient({
      endpoint: server.url,
      token,
      retries: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 100 },
      fetch: (input, init) => through(new Request(input, init), fetch),
    });
  }

  /** Runs a Worker of one slot until every task of `ids` succeeded: the ids of the tasks its handler ran. */
  async function runAll(client: AgentSchedulerClient, ids: readonly string[]): Promise<string[]> {
    const runs: string[] = [];
    const worker = new Worker({
      client,
      concurrency: 1,
      handler: async (task) => {
        runs.push(task.taskId);
        return { ok: true };
      },
      pollIntervalMs: { min: 20, max: 200 },
    });
    await worker.start();
    try {
      await waitFor(async () => {
        const tasks = await Promise.all(ids.map((id) => operator.getTask(id)));
        return tasks.every((t) => t.status === 'succeeded');
      }, 20_000);
    } finally {
      await worker.stop();
    }
    return runs;
  }

  const submit = async (queue: string, count: number) => {
    const ids: string[] = [];
    for (let i = 0; i < count; i++)
      ids.push((await operator.submitTask({ queue, payload: { i } })).task.taskId);
    return ids;
  };

  it('answers the next tasks with the completion, and the same tasks to the same claim sent again', async () => {
    const client = await agentClient('carry');
    const ids = await submit('carry', 3);
    const { sessionId } = await client.openSession();
    const [first] = (await client.claim({ sessionId, max: 1 })).tasks as ClaimedTask[];
    expect(first).toBeDefined();
    const claimId = newClaimId();
    const carried = { sessionId, max: 2, claimId, claimSeq: 2 };

    const answer = await client.completeAndClaim(
      first?.taskId ?? '',
      { leaseEpoch: first?.leaseEpoch ?? 0, result: { n: 1 } },
      carried,
    );

    expect(answer.task).toMatchObject({ taskId: first?.taskId, status: 'succeeded', result: { n: 1 } });
    expect(answer.nextError).toBeUndefined();
    const next = answer.next?.tasks.map((t) => t.taskId) ?? [];
    expect(next).toHaveLength(2);
    expect(new Set([first?.taskId, ...next])).toEqual(new Set(ids));
    // The call sent again (its answer lost, say): the same completion, the same grants, nothing more leased.
    const again = await client.completeAndClaim(
      first?.taskId ?? '',
      { leaseEpoch: first?.leaseEpoch ?? 0, result: { n: 1 } },
      carried,
    );
    expect(again.task.status).toBe('succeeded');
    // The same tasks (a replay answers them in the order it reads them).
    expect(again.next?.tasks.map((t) => t.taskId).sort()).toEqual([...next].sort());
    for (const id of next) expect((await operator.getTask(id)).leaseEpoch).toBe(1);
  });

  it('a full session’s carried claim takes the slot its completion freed without reading that task again', async () => {
    // Prepare: an agent of one slot holding a task, and one more task queued.
    const client = await agentClient('full', undefined, 1);
    const ids = await submit('full', 2);
    const { sessionId } = await client.openSession();
    const [first] = (await client.claim({ sessionId, max: 1 })).tasks as ClaimedTask[];
    stack.meter.reset();

    // Act
    const answer = await client.completeAndClaim(
      first?.taskId ?? '',
      { leaseEpoch: first?.leaseEpoch ?? 0 },
      { sessionId, max: 1, claimId: newClaimId(), claimSeq: 2 },
    );

    // Assess: the next task is granted into the freed slot with no batch read at all: the session's entry for the
    // completed task is known stale from the completion, not read as a task, and the payload rode on the hint.
    expect(answer.next?.tasks.map((t) => t.taskId)).toEqual(ids.filter((id) => id !== first?.taskId));
    expect(stack.meter.byOperation()['dynamodb:BatchGetItemCommand'] ?? 0).toBe(0);
  });

  it('a completion and the claim it carries read the agent’s session once, single or in a batch', async () => {
    const client = await agentClient('once', undefined, 4);
    await submit('once', 4);
    const { sessionId } = await client.openSession();
    const held = (await client.claim({ sessionId, max: 2 })).tasks as ClaimedTask[];
    const sessionReads: string[] = [];
    const name = 'countSessionReads';
    stack.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        const key = (args.input as { Key?: { leaseId?: { S?: string } | string } }).Key?.leaseId;
        const leaseId = typeof key === 'string' ? key : key?.S;
        if (context.commandName === 'GetItemCommand' && leaseId?.startsWith('session#'))
          sessionReads.push(leaseId);
        return next(args);
      },
      { step: 'initialize', name },
    );
    try {
      const [one, two] = held;
      const single = await client.completeAndClaim(
        one?.taskId ?? '',
        { leaseEpoch: one?.leaseEpoch ?? 0 },
        { sessionId, max: 1, claimId: newClaimId(), claimSeq: 2 },
      );
      expect(single.next?.tasks).toHaveLength(1);
      expect(sessionReads).toHaveLength(1);
      const batch = await client.completeTasksAndClaim(
        [two, ...(single.next?.tasks ?? [])].map((t) => ({
          taskId: t?.taskId ?? '',
          leaseEpoch: t?.leaseEpoch ?? 0,
        })),
        { sessionId, max: 2, claimId: newClaimId(), claimSeq: 3 },
      );
      expect(batch.next?.tasks).toHaveLength(1);
      expect(sessionReads).toHaveLength(2);
    } finally {
      stack.dynamodb.middlewareStack.remove(name);
    }
  });

  it('a carried claim the claim route would refuse is answered as nextError, and the completion stands', async () => {
    const client = await agentClient('refused');
    const [id] = await submit('refused', 1);
    const { sessionId } = await client.openSession();
    const [task] = (await client.claim({ sessionId })).tasks;
    expect(task?.taskId).toBe(id);

    const answer = await client.completeAndClaim(
      id ?? '',
      { leaseEpoch: task?.leaseEpoch ?? 0 },
      // Another session than the agent's live one: the claim route answers SessionLost.
      { sessionId: 's_aaaaaaaaaaaaaaaaaaaaaaaaaa' },
    );

    expect(answer.next).toBeUndefined();
    expect(answer.nextError?.code).toBe('SessionLost');
    expect((await operator.getTask(id ?? '')).status).toBe('succeeded');
  });

  it('a carried claim that is not one is a 400, and the completion is not recorded', async () => {
    const client = await agentClient('bad');
    const [id] = await submit('bad', 1);
    const { sessionId } = await client.openSession();
    const [task] = (await client.claim({ sessionId })).tasks;
    for (const claimNext of [
      { sessionId, max: 11 },
      { sessionId: 'nope' },
      { sessionId, extra: 1 },
      'claim',
    ]) {
      const refused = await client
        .completeAndClaim(id ?? '', { leaseEpoch: task?.leaseEpoch ?? 0 }, claimNext as never)
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(AgentSchedulerError);
      expect(refused).toMatchObject({ status: 400, code: 'ValidationError' });
    }
    expect((await operator.getTask(id ?? '')).status).toBe('leased');
  });

  it('against a server older than carried claims, the client completes alone and says so', async () => {
    const sent: string[] = [];
    // The older server's strict body: a field it does not know is refused before anything is done.
    const client = await agentClient('old', async (request, real) => {
      const body = request.method === 'POST' ? await request.clone().text() : '';
      if (request.url.includes('/complete')) sent.push(body);
      if (body.includes('"claimNext"')) {
        return Response.json(
          {
            error: { code: 'ValidationError', message: 'body: Unrecognized key: "claimNext"' },
            requestId: 'r',
          },
          { status: 400 },
        );
      }
      return real(request);
    });
    const ids = await submit('old', 2);
    const { sessionId } = await client.openSession();
    const tasks = (await client.claim({ sessionId, max: 2 })).tasks;
    expect(tasks).toHaveLength(2);

    for (const task of tasks) {
      const answer = await client.completeAndClaim(
        task.taskId,
        { leaseEpoch: task.leaseEpoch },
        { sessionId },
      );
      expect(answer.task.status).toBe('succeeded');
      expect(answer.nextError?.code).toBe('ClaimNotCarried');
    }

    for (const id of ids) expect((await operator.getTask(id)).status).toBe('succeeded');
    // Refused once; after that the client no longer carries claims to that server.
    expect(sent.map((body) => body.includes('"claimNext"'))).toEqual([true, false, false]);
  });

  it('a busy Worker takes its next task with each completion: one claim call for a backlog, each task run once', async () => {
    const paths: string[] = [];
    let claimsThatGranted = 0;
    const client = await agentClient('worker', async (request, real) => {
      paths.push(new URL(request.url).pathname);
      const response = await real(request);
      if (request.url.endsWith('/v1/agent/claim')) {
        const body = (await response.clone().json()) as { tasks?: unknown[] };
        if ((body.tasks?.length ?? 0) > 0) claimsThatGranted++;
      }
      return response;
    });
    const ids = await submit('worker', 8);
    const runs = await runAll(client, ids);

    expect([...runs].sort()).toEqual([...ids].sort());
    const completions = paths.filter((p) => p.endsWith('/complete')).length;
    console.log(
      `[carried claims] 8 tasks, concurrency 1: ${claimsThatGranted} claim call granted any, ${completions} completion calls`,
    );
    expect(completions).toBe(8);
    // The first task came by the claim route; the seven others with the completions before them.
    expect(claimsThatGranted).toBe(1);
  });

  it('a carried claim whose answer was lost is answered again by the completion’s retry: each task runs once', async () => {
    let dropped = 0;
    const client = await agentClient('lost', async (request, real) => {
      const response = await real(request);
      if (dropped === 0 && request.url.endsWith('/complete')) {
        const body = (await response.clone().json()) as { next?: { tasks: unknown[] } };
        if ((body.next?.tasks.length ?? 0) > 0) {
          dropped++;
          throw new TypeError('answer lost');
        }
      }
      return response;
    });
    const ids = await submit('lost', 4);
    const runs = await runAll(client, ids);

    expect(dropped).toBe(1);
    expect([...runs].sort()).toEqual([...ids].sort());
    for (const id of ids) expect(await operator.getTask(id)).toMatchObject({ attempt: 1, leaseEpoch: 1 });
  });
});
