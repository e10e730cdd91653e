/**
 * Opening a session on DynamoDB Local when requests arrive late, twice, or beside a revocation: an open sent again
 * with its id answers the session it made, a copy of an older open cannot end a later session, what a replaced
 * session held is never erased before it is taken back, and no open lands after its agent was revoked.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionLeaseId } from '#adapters/session-table';
import { dueShardOf } from '#adapters/task-items';
import { AgentRevokedError, ServiceUnavailableError, SessionLostError } from '#domain/errors';
import { isSessionLive } from '#domain/task';
import { runApart } from '#local/function-scope';
import type { LocalServer } from '#local/server';
import { loadReleasedSdk } from '#test/released-sdk';
import { claimUntil, createTestStack, serveStack, type TestStack, waitFor } from '#test/stack';

const OPERATOR = 'op_test-operator-token';

const rejection = (call: Promise<unknown>): Promise<unknown> =>
  call.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('opening a session', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // random 0: backoff draws are zero, so a task taken back is claimable at once.
    stack = await createTestStack({
      random: () => 0,
      queues: [
        'opens',
        'again',
        'older',
        'noid',
        'failed',
        'release',
        'given-up',
        'skewed',
        'swept-old',
        'swept-new',
      ],
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  const register = async (queue = 'opens') =>
    (await stack.scheduler.registerAgent({ name: 'opener', queues: [queue] })).agent.agentId;

  /** An agent whose session (opened with `openId`) holds one task of `queue`, a queue of its own. */
  const holding = async (queue: string, openId?: string) => {
    const { scheduler } = stack;
    const agentId = await register(queue);
    const opened = await scheduler.openSession(agentId, openId === undefined ? {} : { openId });
    const { task } = await scheduler.submit({ queue, payload: {} });
    const [held] = await claimUntil(scheduler, { agentId, sessionId: opened.sessionId }, 1);
    expect(held?.taskId).toBe(task.taskId);
    return { agentId, sessionId: opened.sessionId, taskId: task.taskId };
  };

  it('an open sent again with its id answers the session it made and takes nothing back', async () => {
    const { scheduler } = stack;
    const { agentId, sessionId, taskId } = await holding('again', 'open-first-0001');
    const before = await stack.ctx.sessions.get(agentId);
    stack.clock.advance(5_000);

    const again = await scheduler.openSession(agentId, { openId: 'open-first-0001' });

    expect(again.sessionId).toBe(sessionId);
    // Extended as by a heartbeat: an agent reckons the session from when it sent the open it got an answer to.
    expect(again.expiresAt).toBeGreaterThanOrEqual((before?.expiresAt ?? 0) + 5_000);
    expect(await scheduler.getTask(taskId)).toMatchObject({ status: 'leased', leaseEpoch: 1, sessionId });
    await scheduler.heartbeat(agentId, sessionId);
    await scheduler.complete({ agentId, taskId, leaseEpoch: 1 });
  });

  it('a copy of an older open delivered after a later one is refused and leaves the later session whole', async () => {
    const { scheduler } = stack;
    const agentId = await register('older');
    await scheduler.openSession(agentId, { openId: 'open-older-0001' });
    const later = await scheduler.openSession(agentId, { openId: 'open-later-0002' });
    const { task } = await scheduler.submit({ queue: 'older', payload: {} });
    await claimUntil(scheduler, { agentId, sessionId: later.sessionId }, 1);

    const late = await rejection(scheduler.openSession(agentId, { openId: 'open-older-0001' }));

    expect(late).toBeInstanceOf(SessionLostError);
    const session = await stack.ctx.sessions.get(agentId);
    expect(session?.sessionId).toBe(later.sessionId);
    expect(session && isSessionLive(session, stack.clock.now())).toBe(true);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({ status: 'leased', leaseEpoch: 1 });
  });

  it('an open sent before a later one but delivered after it (a start given up on) is refused by its number', async () => {
    const { scheduler } = stack;
    const agentId = await register('given-up');
    // The start given up on sent open 1; the agent's next start sent open 2, which landed first.
    const later = await scheduler.openSession(agentId, { openId: 'open-second-0002', openSeq: 2_000 });
    const { task } = await scheduler.submit({ queue: 'given-up', payload: {} });
    await claimUntil(scheduler, { agentId, sessionId: later.sessionId }, 1);

    const late = await rejection(
      scheduler.openSession(agentId, { openId: 'open-first-00001', openSeq: 1_000 }),
    );

    expect(late).toBeInstanceOf(SessionLostError);
    const session = await stack.ctx.sessions.get(agentId);
    expect(session?.sessionId).toBe(later.sessionId);
    expect(session && isSessionLive(session, stack.clock.now())).toBe(true);
    expect(await scheduler.getTask(task.taskId)).toMatchObject({ status: 'leased', leaseEpoch: 1 });
  });

  it('an open numbered below a session that is over, or one written before open numbers, opens anew', async () => {
    // An agent restarted on a host whose clock is behind: it waits out the old session's lease, no longer.
    const { scheduler, ctx } = stack;
    const agentId = await register('skewed');
    const first = await scheduler.openSession(agentId, { openId: 'open-ahead-00001', openSeq: 9_000 });
    stack.clock.advance(ctx.settings.leaseTtlSeconds * 1_000 + 1);

    const behind = await scheduler.openSession(agentId, { openId: 'open-behind-0001', openSeq: 1_000 });
    const unnumbered = await scheduler.openSession(agentId, { openId: 'open-nonum-00001' });
    const numbered = await scheduler.openSession(agentId, { openId: 'open-numbered-01', openSeq: 500 });

    expect(new Set([first, behind, unnumbered, numbered].map((s) => s.sessionId)).size).toBe(4);
    expect((await ctx.sessions.get(agentId))?.sessionId).toBe(numbered.sessionId);
  });

  it('an open without an id (an SDK older than open ids) replaces the session and takes its tasks back', async () => {
    const { scheduler } = stack;
    const { agentId, sessionId, taskId } = await holding('noid', 'open-before-0001');

    const next = await scheduler.openSession(agentId);

    expect(next.sessionId).not.toBe(sessionId);
    expect(await scheduler.getTask(taskId)).toMatchObject({ status: 'queued', leaseEpoch: 1 });
    await expect(scheduler.heartbeat(agentId, sessionId)).rejects.toBeInstanceOf(SessionLostError);
  });

  it('a session written before open ids is replaced by an open with one, whose retry then replays', async () => {
    // Prepare: the session item as the release before open ids wrote it (no openId, no opens).
    const { scheduler, ctx } = stack;
    const agentId = await register();
    const now = stack.clock.now();
    const old = {
      agentId,
      sessionId: 's_oldshapeoldshapeoldshape',
      queues: ['opens'],
      maxConcurrency: 1,
      startedAt: now,
      heartbeatAt: now,
      expiresAt: now + ctx.settings.leaseTtlSeconds * 1_000,
      held: {},
      cancelled: {},
      lost: {},
      roles: {},
      rolesPicked: {},
      rolesLost: {},
      claims: {},
    };
    await ctx.sessions.doc.send(
      new PutCommand({
        TableName: ctx.sessions.tableName,
        Item: { leaseId: sessionLeaseId(agentId), kind: 'session', ...old, purgeAt: Math.ceil(now / 1_000) },
      }),
    );
    expect(await ctx.sessions.get(agentId)).toEqual(old);

    const opened = await scheduler.openSession(agentId, { openId: 'open-upgrade-001' });
    const again = await scheduler.openSession(agentId, { openId: 'open-upgrade-001' });

    expect(opened.sessionId).not.toBe(old.sessionId);
    expect(again.sessionId).toBe(opened.sessionId);
    expect(await ctx.sessions.get(agentId)).toMatchObject({
      sessionId: opened.sessionId,
      openId: 'open-upgrade-001',
    });
  });

  it('a replaced session whose tasks could not be taken back keeps them for the sweep', async () => {
    // Prepare: the agent's session holds a task; the first take-back of it fails.
    const { scheduler, ctx } = stack;
    const { agentId, taskId } = await holding('failed');
    const takeBack = ctx.tasks.takeBack.bind(ctx.tasks);
    let failed = 0;
    ctx.tasks.takeBack = (...args) => {
      if (failed++ === 0) return Promise.reject(new ServiceUnavailableError('the take-back was lost'));
      return takeBack(...args);
    };

    // Act: the agent opens a new session; whatever it answers, the supervisor then runs once, well before the
    // task's deadline.
    try {
      await rejection(scheduler.openSession(agentId));
    } finally {
      ctx.tasks.takeBack = takeBack;
    }
    await scheduler.reclaim();

    // Assess: the task is back in its queue, not leased until its deadline to a session nobody looks at.
    expect(failed).toBeGreaterThanOrEqual(1);
    expect(await scheduler.getTask(taskId)).toMatchObject({ status: 'queued', leaseEpoch: 1 });
    const next = await scheduler.openSession(agentId);
    expect((await ctx.sessions.get(agentId))?.sessionId).toBe(next.sessionId);
  });

  it.each([
    ['a session', true],
    ['no session yet', false],
  ])(
    'a revoke landing between an open’s read of the agent and its write leaves no live session (%s)',
    async (_, before) => {
      // Prepare: the open has read the agent (not revoked yet); its write is about to be sent.
      const { scheduler, ctx } = stack;
      const agentId = await register();
      if (before) await scheduler.openSession(agentId);
      let revoked = false;
      stack.interleave(
        (operation, input) =>
          (operation === 'PutItemCommand' || operation === 'TransactWriteItemsCommand') &&
          JSON.stringify(input).includes(sessionLeaseId(agentId)),
        async () => {
          await stack.sibling().revokeAgent(agentId);
          revoked = true;
        },
      );

      // Act
      const answer = await rejection(scheduler.openSession(agentId));

      // Assess: refused, and nothing of the agent's can claim.
      expect(revoked).toBe(true);
      expect(answer).toBeInstanceOf(AgentRevokedError);
      const session = await ctx.sessions.get(agentId);
      expect(session !== undefined && isSessionLive(session, stack.clock.now())).toBe(false);
      if (session) {
        await expect(scheduler.claim({ agentId, sessionId: session.sessionId })).rejects.toBeInstanceOf(
          SessionLostError,
        );
      }
    },
  );

  it('a sweep that read the agent’s session before the agent opened anew takes nothing from the new session', async () => {
    const { scheduler, ctx, clock } = stack;
    const { agent } = await scheduler.registerAgent({
      name: 'swept',
      queues: ['swept-old', 'swept-new'],
      maxConcurrency: 2,
    });
    const { agentId } = agent;
    // A pass reads the due shards one after another, and the agent's session once for all its tasks: the old
    // session's task must be in an earlier shard than the task the new session is granted.
    const shardOf = (taskId: string) => ctx.tasks.dueShards.indexOf(dueShardOf(taskId));
    const submitIn = async (queue: string, fits: (shard: number) => boolean) => {
      for (;;) {
        const { task } = await scheduler.submit({ queue, payload: {} });
        if (fits(shardOf(task.taskId))) return task.taskId;
        await scheduler.cancel(task.taskId);
      }
    };
    const oldTask = await submitIn('swept-old', (shard) => shard < ctx.tasks.dueShards.length - 1);
    const newTask = await submitIn('swept-new', (shard) => shard > shardOf(oldTask));
    const claimIn = async (from: typeof scheduler, sessionId: string, queue: string) => {
      let claimed: Awaited<ReturnType<typeof scheduler.claim>> = [];
      await waitFor(async () => {
        claimed = await from.claim({ agentId, sessionId, queues: [queue] });
        return claimed.length > 0;
      });
      return claimed;
    };
    const first = await scheduler.openSession(agentId);
    expect((await claimIn(scheduler, first.sessionId, 'swept-old')).map((t) => t.taskId)).toEqual([oldTask]);
    // Both tasks come due for the sweep's look (their hints' reconcile time) while the agent keeps its session.
    for (let step = 0; step < 5; step++) {
      clock.advance(25_000);
      await scheduler.heartbeat(agentId, first.sessionId);
    }
    // The pass has read the agent's session for the old task and found its lease good; before it goes on, the
    // agent restarts: it opens a new session (the old task is taken back) and is granted the other task in it.
    const restarted = stack.sibling();
    let second = '';
    let granted: string[] = [];
    stack.interleave(
      (operation, input) => operation === 'UpdateItemCommand' && JSON.stringify(input.Key).includes(oldTask),
      () =>
        runApart('agentApi', async () => {
          second = (await restarted.openSession(agentId)).sessionId;
          granted = (await claimIn(restarted, second, 'swept-new')).map((t) => t.taskId);
        }),
    );

    const swept = await scheduler.reclaim();

    // The new session is live and its agent was answered the task: the pass leaves it leased there.
    expect(granted).toEqual([newTask]);
    expect(swept.requeued).not.toContain(newTask);
    expect(await scheduler.getTask(newTask)).toMatchObject({
      status: 'leased',
      sessionId: second,
      leaseEpoch: 1,
    });
    const session = await ctx.sessions.get(agentId);
    expect(session?.sessionId).toBe(second);
    expect(session?.endedAt).toBeUndefined();
  });

  it('the SDK of the last release opens, runs a task and reopens against this server', async () => {
    // Prepare: that release's SDK sources, as they were (the SDK imports nothing outside itself).
    const dir = mkdtempSync(join(tmpdir(), 'sdk-release-'));
    const server: LocalServer = await serveStack(stack, OPERATOR);
    try {
      // That release's SDK sends no open id and reads lost tasks by id only.
      const sdk = await loadReleasedSdk<typeof import('#sdk/index')>(dir);
      const operator = new sdk.AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
      const created = await operator.createAgent({ name: 'released', queues: ['release'] });
      const client = new sdk.AgentSchedulerClient({ endpoint: server.url, token: created.token ?? '' });
      const { taskId } = (await operator.submitTask({ queue: 'release', payload: { n: 1 } })).task;
      const worker = new sdk.Worker({
        client,
        handler: async () => 'done',
        pollIntervalMs: { min: 10, max: 50 },
      });
      const sessions: string[] = [];
      worker.on('session', (session) => sessions.push(session.sessionId));

      // Act: it runs the task; then, as a restarted agent would, it opens again without an id.
      await worker.start();
      await waitFor(async () => (await operator.getTask(taskId)).status === 'succeeded');
      await worker.stop();
      const reopened = await client.openSession();

      // Assess: each open without an id made a session of its own, as before open ids.
      expect(sessions).toHaveLength(1);
      expect(reopened.sessionId).not.toBe(sessions[0]);
      const stored = await stack.ctx.sessions.get(created.agent.agentId);
      expect(stored?.sessionId).toBe(reopened.sessionId);
      expect(stored?.openId).toBeUndefined();
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('over HTTP, an open id and number are optional, checked; sent again returns the same session, numbered below is refused', async () => {
    const server: LocalServer = await serveStack(stack, OPERATOR);
    try {
      const call = async (path: string, token: string, body?: unknown) => {
        const response = await fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      };
      const created = await call('/v1/agents', OPERATOR, { name: 'edge', queues: ['opens'] });
      const token = String(created.body.token);
      const sessionBefore = await stack.ctx.sessions.get((created.body.agent as { agentId: string }).agentId);
      expect(sessionBefore).toBeUndefined();

      const bad = await Promise.all(
        [
          { openId: 'short' },
          { openId: 'x'.repeat(65) },
          { openId: 7 },
          { openId: 'a b c d e f g' },
          { other: 1 },
          { openId: 'http-open-bad-seq', openSeq: 0 },
          { openSeq: -5 },
          { openSeq: 1.5 },
          { openSeq: '7' },
          { openSeq: 2 ** 53 },
          { openSeq: null },
        ].map((body) => call('/v1/agent/session', token, body)),
      );
      const none = await call('/v1/agent/session', token);
      const empty = await call('/v1/agent/session', token, {});
      const first = await call('/v1/agent/session', token, { openId: 'http-open-00001' });
      const second = await call('/v1/agent/session', token, { openId: 'http-open-00001' });
      const numbered = await call('/v1/agent/session', token, { openId: 'http-open-00002', openSeq: 20 });
      const older = await call('/v1/agent/session', token, { openId: 'http-open-00003', openSeq: 10 });
      const replayed = await call('/v1/agent/session', token, { openId: 'http-open-00002', openSeq: 20 });

      expect(bad.map((b) => [b.status, (b.body.error as { code?: string })?.code])).toEqual(
        bad.map(() => [400, 'ValidationError']),
      );
      expect([none.status, empty.status, first.status, second.status]).toEqual([200, 200, 200, 200]);
      expect(empty.body.sessionId).not.toBe(none.body.sessionId);
      expect(second.body.sessionId).toBe(first.body.sessionId);
      expect([numbered.status, older.status, replayed.status]).toEqual([200, 409, 200]);
      expect((older.body.error as { code?: string }).code).toBe('SessionLost');
      expect(replayed.body.sessionId).toBe(numbered.body.sessionId);
      expect(Date.parse(String(second.body.expiresAt))).toBeGreaterThanOrEqual(
        Date.parse(String(first.body.expiresAt)),
      );
    } finally {
      await server.close();
    }
  });
});
