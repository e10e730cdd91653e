/**
 * The push channel's core on DynamoDB Local and the SQS emulator, frames caught by a recording sender: tickets
 * used once, idle agents woken (a bounded number, each once per cooldown, by conditional writes), gone
 * connections forgotten, role grants and task endings pushed, bad frames refused without changing anything.
 */
import { DeleteItemCommand, PutItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { CONNECTION_TTL_SECONDS, type PushFrame, TICKET_TTL_SECONDS } from '#domain/push';
import {
  claimUntil,
  createTestStack,
  fireAsFunction,
  RecordingPushSender,
  startAgent,
  type TestStack,
} from '#test/stack';

const SAFETY_POLL_MS = 600_000;
const COOLDOWN_MS = 1_000;

describe('push channel', () => {
  let stack: TestStack;
  const sender = new RecordingPushSender();
  let connections = 0;

  beforeAll(async () => {
    stack = await createTestStack({
      queues: [
        'work',
        'other',
        'quiet',
        'lone',
        'cool',
        'back',
        'held',
        'closing',
        'tens',
        'spread',
        'legacy',
        'labelled',
      ],
      declaredSchedules: [
        { name: 'hourly', expression: 'cron(0 * * * ? *)', timeZone: 'UTC', task: { queue: 'back' } },
      ],
      push: { sender, url: 'ws://push.test/v1/push' },
      settings: { pushSafetyPollMs: SAFETY_POLL_MS, wakeCooldownMs: COOLDOWN_MS },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** An agent with a live session, connected through a ticket, as the `$connect` route does it. */
  const connectedAgent = async (
    queues = ['work'],
    maxConcurrency = 1,
    labels?: Record<string, string | string[]>,
  ) => {
    const agent = await startAgent(stack.scheduler, {
      queues,
      maxConcurrency,
      ...(labels ? { labels } : {}),
    });
    const { ticket } = await stack.scheduler.pushTicket({ kind: 'agent', agentId: agent.agentId });
    const principal = await stack.scheduler.redeemPushTicket(ticket);
    if (!principal) throw new Error('ticket refused');
    const connectionId = `c${connections++}`;
    await stack.scheduler.openPushConnection(connectionId, principal);
    return { ...agent, connectionId };
  };
  /** The agent found nothing and listens: it is idle. */
  const idle = async (agent: { agentId: string; sessionId: string }, max = 1) => {
    const answer = await stack.scheduler.claimOrListen({ ...agent, max });
    expect(answer.tasks).toEqual([]);
    return answer;
  };
  /** Holds the clock still for the rest of the test: only `advance` moves it. */
  const holdClock = () => {
    stack.clock.stop();
    onTestFinished(() => stack.clock.resume());
  };
  const wakesTo = (connectionId: string) => sender.to(connectionId).filter((f) => f.type === 'wake');
  /** Claims and completes `count` tasks of a queue, so later tests start from an empty queue. */
  const drain = async (queue: string, count: number) => {
    const agent = await startAgent(stack.scheduler, { queues: [queue], maxConcurrency: 10 });
    const claimed = await claimUntil(stack.scheduler, agent, count, 10_000, 10);
    expect(claimed).toHaveLength(count);
    await stack.scheduler.completeBatch(
      agent.agentId,
      claimed.map((t) => ({ taskId: t.taskId, leaseEpoch: t.leaseEpoch })),
    );
  };

  describe('tickets', () => {
    it('are good once, for their caller, and carry the URL to open', async () => {
      const agent = await startAgent(stack.scheduler);
      const issued = await stack.scheduler.pushTicket({ kind: 'agent', agentId: agent.agentId });
      expect(new URL(issued.url).searchParams.get('ticket')).toBe(issued.ticket);
      expect(issued.url.startsWith('ws://push.test/v1/push?')).toBe(true);
      expect(await stack.scheduler.redeemPushTicket(issued.ticket)).toEqual({
        kind: 'agent',
        agentId: agent.agentId,
      });
      expect(await stack.scheduler.redeemPushTicket(issued.ticket)).toBeUndefined();
    });

    it('expire, and name no revoked agent', async () => {
      const agent = await startAgent(stack.scheduler);
      const late = await stack.scheduler.pushTicket({ kind: 'agent', agentId: agent.agentId });
      const revoked = await stack.scheduler.pushTicket({ kind: 'agent', agentId: agent.agentId });
      await stack.scheduler.revokeAgent(agent.agentId);
      expect(await stack.scheduler.redeemPushTicket(revoked.ticket)).toBeUndefined();
      const operator = await stack.scheduler.pushTicket({ kind: 'operator' });
      stack.clock.advance(TICKET_TTL_SECONDS * 1_000 + 1);
      try {
        expect(await stack.scheduler.redeemPushTicket(late.ticket)).toBeUndefined();
        expect(await stack.scheduler.redeemPushTicket(operator.ticket)).toBeUndefined();
      } finally {
        stack.clock.advance(-(TICKET_TTL_SECONDS * 1_000 + 1));
      }
    });

    it('refuses what is not a ticket without reading anything', async () => {
      stack.meter.reset();
      for (const ticket of [undefined, '', 'pt_short', `pt_${'a'.repeat(31)}!`, 'x'.repeat(5_000)])
        expect(await stack.scheduler.redeemPushTicket(ticket)).toBeUndefined();
      expect(stack.meter.totals().requests).toBe(0);
    });
  });

  describe('wakes', () => {
    it('an empty claim leaves a listening agent idle, told to wait for its safety poll', async () => {
      const agent = await connectedAgent(['quiet']);
      stack.meter.reset();
      expect((await idle(agent)).retryAfterMs).toBe(SAFETY_POLL_MS);
      const first = stack.meter.totals((r) => r.service === 'dynamodb').requests;
      // Its next claim, a safety poll of an agent idle already, looks once: no gap to cover.
      stack.meter.reset();
      expect((await idle(agent)).retryAfterMs).toBe(SAFETY_POLL_MS);
      expect(stack.meter.totals((r) => r.service === 'dynamodb').requests).toBeLessThan(first);
      // Without a connection, a claim is a claim: no wait of the channel's.
      const polling = await startAgent(stack.scheduler, { queues: ['quiet'] });
      expect((await stack.scheduler.claimOrListen(polling)).retryAfterMs).toBeUndefined();
    });

    it('a submission wakes one idle agent of its queue, and a batch one per task', async () => {
      const agents = await Promise.all(Array.from({ length: 5 }, () => connectedAgent(['other'])));
      for (const agent of agents) await idle(agent);
      const before = sender.frames.length;
      await stack.scheduler.submit({ queue: 'other', payload: { n: 1 } });
      const woken = () => agents.filter((a) => wakesTo(a.connectionId).length > 0).map((a) => a.connectionId);
      expect(woken()).toHaveLength(1);
      expect(sender.frames.slice(before).map((f) => f.frame)).toEqual([
        { type: 'wake', version: 1, queue: 'other', reason: 'submitted' },
      ]);
      await stack.scheduler.submitBatch([
        { queue: 'other', payload: { n: 2 } },
        { queue: 'other', payload: { n: 3 } },
      ]);
      // The first agent woken is not idle any more: two others hear of the batch.
      expect(woken()).toHaveLength(3);
      expect(sender.frames.length - before).toBe(3);
      await drain('other', 3);
    });

    it('a task that requires labels wakes only an idle agent whose labels meet them', async () => {
      const plain = await Promise.all(Array.from({ length: 4 }, () => connectedAgent(['labelled'])));
      const t4 = await connectedAgent(['labelled'], 1, { gpu: 't4' });
      const h100 = await connectedAgent(['labelled'], 1, { gpu: ['a100', 'h100'] });
      for (const agent of [...plain, t4, h100]) await idle(agent);
      await stack.scheduler.submit({ queue: 'labelled', payload: {}, require: { gpu: 'h100' } });
      expect(wakesTo(h100.connectionId)).toHaveLength(1);
      for (const agent of [...plain, t4]) expect(wakesTo(agent.connectionId)).toEqual([]);
      // The one agent able to serve it is woken already: another such task wakes nobody else.
      await stack.scheduler.submit({ queue: 'labelled', payload: {}, require: { gpu: '*' } });
      expect(wakesTo(t4.connectionId)).toHaveLength(1);
      for (const agent of plain) expect(wakesTo(agent.connectionId)).toEqual([]);
      await stack.scheduler.submit({ queue: 'labelled', payload: {}, require: { gpu: 'mi300' } });
      for (const agent of plain) expect(wakesTo(agent.connectionId)).toEqual([]);
      // A task that requires nothing wakes any idle agent of the queue.
      await stack.scheduler.submit({ queue: 'labelled', payload: {} });
      expect(plain.filter((a) => wakesTo(a.connectionId).length > 0)).toHaveLength(1);
    });

    it('wakes nobody in another queue, and nobody busy', async () => {
      const busy = await connectedAgent(['quiet']);
      await idle(busy);
      const before = sender.frames.length;
      await stack.scheduler.submit({ queue: 'work', payload: {} });
      expect(wakesTo(busy.connectionId)).toEqual([]);
      await drain('work', 1);
      expect(sender.frames.length).toBe(before);
    });

    it('an agent woken is not woken again within the cooldown, and is told to look once it is over', async () => {
      // The cooldown passes only when the test moves the clock, however long the calls take on a busy machine.
      holdClock();
      const agent = await connectedAgent(['cool']);
      await idle(agent);
      // The only agent of its queue.
      await stack.scheduler.submit({ queue: 'cool', payload: { first: true } });
      expect(wakesTo(agent.connectionId)).toHaveLength(1);
      const [task] = await claimUntil(stack.scheduler, agent, 1);
      if (!task) throw new Error('nothing claimed');
      await stack.scheduler.complete({
        agentId: agent.agentId,
        taskId: task.taskId,
        leaseEpoch: task.leaseEpoch,
      });
      // Idle again at once: a wake now would be its second within the cooldown.
      const again = await idle(agent);
      expect(again.retryAfterMs).toBeGreaterThan(0);
      expect(again.retryAfterMs).toBeLessThanOrEqual(COOLDOWN_MS + 50);
      await stack.scheduler.submit({ queue: 'cool', payload: { second: true } });
      expect(wakesTo(agent.connectionId)).toHaveLength(1);
      stack.clock.advance(COOLDOWN_MS);
      // Its look after the cooldown finds the task; a submission now would wake it.
      expect(await claimUntil(stack.scheduler, agent, 1)).toHaveLength(1);
    });

    it('a task made claimable between the empty look and the idle mark is claimed by the second look', async () => {
      const agent = await connectedAgent(['quiet']);
      await stack.scheduler.submit({ queue: 'quiet', payload: { early: true } });
      // The submission found nobody idle; the agent's listening claim marks it idle and looks again.
      let claimed: Awaited<ReturnType<typeof stack.scheduler.claimOrListen>> = { tasks: [] };
      for (let i = 0; i < 50 && claimed.tasks.length === 0; i++) {
        claimed = await stack.scheduler.claimOrListen(agent);
        if (claimed.tasks.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(claimed.tasks).toHaveLength(1);
      expect(claimed.retryAfterMs).toBeUndefined();
    });

    it('a gone connection is forgotten, and the wake goes to the next idle agent', async () => {
      const gone = await connectedAgent(['lone']);
      const live = await connectedAgent(['lone']);
      await idle(gone);
      sender.gone.add(gone.connectionId);
      await stack.scheduler.submit({ queue: 'lone', payload: { afterGone: 1 } });
      // Its records are gone: it is not idle anywhere, and its connection is unknown.
      expect(await stack.ctx.push?.connections.get(gone.connectionId)).toBeUndefined();
      expect(await stack.ctx.push?.connections.markIdle(gone.agentId, ['lone'])).toBeUndefined();
      await drain('lone', 1);
      // The next idle agent is woken by the next task.
      await idle(live);
      await stack.scheduler.submit({ queue: 'lone', payload: { afterGone: 2 } });
      expect(wakesTo(live.connectionId)).toHaveLength(1);
      expect(sender.to(gone.connectionId)).toEqual([]);
      await drain('lone', 1);
    });

    it('an agent of several queues woken through one is not idle in the others', async () => {
      const agent = await connectedAgent(['work', 'quiet']);
      await idle(agent);
      stack.clock.advance(COOLDOWN_MS);
      await stack.scheduler.submit({ queue: 'work', payload: { multi: 1 } });
      await stack.scheduler.submit({ queue: 'quiet', payload: { multi: 2 } });
      expect(wakesTo(agent.connectionId).map((f) => (f as { queue: string }).queue)).toEqual(['work']);
      await drain('work', 1);
      await drain('quiet', 1);
    });

    it('a task given back, a lease taken back, a hint sent again and a schedule fire each wake an idle agent', async () => {
      // A retry's backoff and the cooldown end only when the test moves the clock, however long the calls take.
      holdClock();
      const listener = await connectedAgent(['back']);
      const wakeReasons = () => wakesTo(listener.connectionId).map((f) => (f as { reason: string }).reason);
      const worker = await startAgent(stack.scheduler, { queues: ['back'] });
      const cooled = () => stack.clock.advance(COOLDOWN_MS);

      // Released by its holder (the agent API).
      await stack.scheduler.submit({ queue: 'back', payload: { n: 'released' } });
      const [held] = await claimUntil(stack.scheduler, worker, 1);
      if (!held) throw new Error('nothing claimed');
      await idle(listener);
      cooled();
      await stack.scheduler.release({
        agentId: worker.agentId,
        taskId: held.taskId,
        leaseEpoch: held.leaseEpoch,
      });
      expect(wakeReasons()).toEqual(['released']);

      // Taken back from a session that went silent (the supervisor): held back by its retry's backoff, it wakes an
      // agent when the supervisor finds it claimable, since the end of an SQS delay wakes nobody.
      const [again] = await claimUntil(stack.scheduler, worker, 1);
      if (!again) throw new Error('nothing claimed');
      await idle(listener);
      stack.clock.advance(stack.ctx.settings.leaseTtlSeconds * 1_000 + 1);
      expect((await stack.scheduler.reclaim()).requeued).toContain(again.taskId);
      expect(wakeReasons()).toEqual(['released']);
      await stack.scheduler.reconcile();
      expect(wakeReasons()).toEqual(['released']);
      const { notBefore = 0 } = await stack.scheduler.getTask(again.taskId);
      stack.clock.advance(Math.max(0, notBefore - stack.clock.now()) + 1);
      await stack.scheduler.reconcile();
      expect(wakeReasons()).toEqual(['released', 'due']);
      // Looked at again later, it is not found due twice.
      await stack.scheduler.reconcile();
      expect(wakeReasons()).toEqual(['released', 'due']);
      await drain('back', 1);

      // A schedule's fire (the schedule-fire function).
      await idle(listener);
      cooled();
      const fired = await fireAsFunction(stack.ctx, {
        schedule: 'hourly',
        // An occurrence an hour ago: one ahead of its time would hold its task until then.
        scheduledTime: new Date(Math.floor(stack.clock.now() / 3_600_000 - 1) * 3_600_000).toISOString(),
        executionId: 'push-1',
        task: { queue: 'back' },
      });
      expect(fired).toMatchObject({ status: 'fired', created: true });
      expect(wakeReasons()).toEqual(['released', 'due', 'submitted']);
      await drain('back', 1);
    });

    it('an agent woken stands for the tasks its empty claim asked for: twelve tasks wake two agents claiming ten', async () => {
      holdClock();
      const agents = await Promise.all(Array.from({ length: 4 }, () => connectedAgent(['tens'], 10)));
      for (const agent of agents) await idle(agent, 10);
      await stack.scheduler.submitBatch(
        Array.from({ length: 12 }, (_, n) => ({ queue: 'tens', payload: { n } })),
      );
      expect(agents.filter((a) => wakesTo(a.connectionId).length > 0)).toHaveLength(2);
      // One more task, and one more agent: each woken agent was counted for its ten.
      await stack.scheduler.submit({ queue: 'tens', payload: { n: 12 } });
      expect(agents.filter((a) => wakesTo(a.connectionId).length > 0)).toHaveLength(3);
      await drain('tens', 10);
      await drain('tens', 3);
    });

    it('spreads a queue’s listeners over its partitions, and a wake finds the one idle agent in any of them', async () => {
      holdClock();
      const shards = stack.ctx.settings.listenerShards;
      const agents = await Promise.all(Array.from({ length: 12 }, () => connectedAgent(['spread'])));
      const { Items = [] } = await stack.dynamodb.send(
        new ScanCommand({ TableName: stack.wiring.tables.connections, ConsistentRead: true }),
      );
      const partitions = new Set(
        Items.map((item) => unmarshall(item))
          .filter((item) => /^queue#spread(#\d+)?$/.test(String(item.pk)))
          .map((item) => String(item.pk)),
      );
      expect(partitions.size).toBeGreaterThan(1);
      expect(partitions.size).toBeLessThanOrEqual(shards);
      // Each agent in turn is the only idle one: the wake reads a partition first, and finds it wherever it is.
      for (const agent of agents) {
        await idle(agent);
        stack.clock.advance(COOLDOWN_MS);
        await stack.scheduler.submit({ queue: 'spread', payload: {} });
        expect(wakesTo(agent.connectionId)).toHaveLength(1);
        await drain('spread', 1);
      }
    });

    it('wakes a listener kept as functions before partitions kept it, in the queue’s first partition', async () => {
      holdClock();
      const agent = await connectedAgent(['legacy']);
      await idle(agent);
      const table = stack.wiring.tables.connections;
      const { Items = [] } = await stack.dynamodb.send(
        new ScanCommand({ TableName: table, ConsistentRead: true }),
      );
      const written = Items.map((item) => unmarshall(item)).find(
        (item) => String(item.pk).startsWith('queue#legacy') && item.sk === `agent#${agent.agentId}`,
      );
      if (!written) throw new Error('no listener item');
      // The same listener, idle, as an earlier release wrote it: in `queue#legacy`, without a capacity.
      const { capacity: _, ...old } = written;
      await stack.dynamodb.send(
        new DeleteItemCommand({ TableName: table, Key: marshall({ pk: written.pk, sk: written.sk }) }),
      );
      await stack.dynamodb.send(
        new PutItemCommand({ TableName: table, Item: marshall({ ...old, pk: 'queue#legacy' }) }),
      );
      stack.clock.advance(COOLDOWN_MS);
      await stack.scheduler.submit({ queue: 'legacy', payload: {} });
      expect(wakesTo(agent.connectionId)).toHaveLength(1);
      await drain('legacy', 1);
    });

    it('resuming a paused queue wakes its idle agents', async () => {
      const agent = await connectedAgent(['held']);
      await idle(agent);
      stack.clock.advance(COOLDOWN_MS);
      await stack.scheduler.pauseQueue('held');
      expect(wakesTo(agent.connectionId)).toEqual([]);
      await stack.scheduler.resumeQueue('held');
      expect(wakesTo(agent.connectionId)).toEqual([
        { type: 'wake', version: 1, queue: 'held', reason: 'resumed' },
      ]);
    });
  });

  describe('roles', () => {
    it('the next holder hears of its grant the moment the holder releases', async () => {
      const holder = await connectedAgent();
      const next = await connectedAgent();
      const role = `leader-${connections}`;
      const held = await stack.scheduler.volunteerForRole(holder.agentId, holder.sessionId, role);
      await stack.scheduler.volunteerForRole(next.agentId, next.sessionId, role);
      await stack.scheduler.releaseRole(holder.agentId, role, held.leaseEpoch ?? 0);
      expect(sender.to(next.connectionId).filter((f) => f.type === 'role')).toEqual([
        { type: 'role', version: 1, role, event: 'granted', leaseEpoch: (held.leaseEpoch ?? 0) + 1 },
      ]);
      expect(sender.to(holder.connectionId).filter((f) => f.type === 'role')).toEqual([]);
    });
  });

  describe('frames', () => {
    const operatorConnection = async () => {
      const { ticket } = await stack.scheduler.pushTicket({ kind: 'operator' });
      const principal = await stack.scheduler.redeemPushTicket(ticket);
      if (!principal) throw new Error('ticket refused');
      const connectionId = `c${connections++}`;
      await stack.scheduler.openPushConnection(connectionId, principal);
      return connectionId;
    };
    const answer = async (connectionId: string, raw: string): Promise<PushFrame | undefined> => {
      const before = sender.to(connectionId).length;
      await stack.scheduler.answerPushFrame(connectionId, raw);
      return sender.to(connectionId).slice(before)[0];
    };

    it('an operator watching a task hears when it ends, with its result', async () => {
      const connectionId = await operatorConnection();
      const { task } = await stack.scheduler.submit({ queue: 'quiet', payload: { watched: true } });
      expect(
        await answer(
          connectionId,
          JSON.stringify({ type: 'subscribe', version: 1, id: 'w1', taskIds: [task.taskId] }),
        ),
      ).toEqual({
        type: 'subscribed',
        version: 1,
        id: 'w1',
        tasks: [{ taskId: task.taskId, status: 'queued' }],
      });
      const agent = await startAgent(stack.scheduler, { queues: ['quiet'] });
      const [claimed] = await claimUntil(stack.scheduler, agent, 1);
      if (!claimed) throw new Error('nothing claimed');
      await stack.scheduler.complete(
        { ...agent, taskId: claimed.taskId, leaseEpoch: claimed.leaseEpoch },
        { ok: 42 },
      );
      expect(sender.to(connectionId).filter((f) => f.type === 'task')).toEqual([
        { type: 'task', version: 1, taskId: task.taskId, status: 'succeeded', result: { ok: 42 } },
      ]);
    });

    it('a task that ended before the watch is answered as ended; an unknown one as null; a cancel is pushed', async () => {
      const connectionId = await operatorConnection();
      const { task: done } = await stack.scheduler.submit({ queue: 'quiet', payload: {} });
      await stack.scheduler.cancel(done.taskId);
      const { task: open } = await stack.scheduler.submit({ queue: 'quiet', payload: {} });
      const reply = await answer(
        connectionId,
        JSON.stringify({
          type: 'subscribe',
          version: 1,
          id: 'w2',
          taskIds: [done.taskId, open.taskId, 't_aaaaaaaaaaaaaaaaaaaaaaaaaa'],
        }),
      );
      expect(reply).toMatchObject({
        tasks: [
          { taskId: done.taskId, status: 'cancelled' },
          { taskId: open.taskId, status: 'queued' },
          { taskId: 't_aaaaaaaaaaaaaaaaaaaaaaaaaa', status: null },
        ],
      });
      await stack.scheduler.cancel(open.taskId);
      expect(sender.to(connectionId).filter((f) => f.type === 'task')).toEqual([
        { type: 'task', version: 1, taskId: open.taskId, status: 'cancelled' },
      ]);
    });

    it('an agent cannot watch tasks', async () => {
      const agent = await connectedAgent();
      const { task } = await stack.scheduler.submit({ queue: 'quiet', payload: {} });
      stack.meter.reset();
      expect(
        await answer(
          agent.connectionId,
          JSON.stringify({ type: 'subscribe', version: 1, id: 'a1', taskIds: [task.taskId] }),
        ),
      ).toMatchObject({ type: 'error', code: 'Forbidden', id: 'a1' });
      expect(stack.meter.totals((r) => r.service === 'dynamodb').writeUnits).toBe(0);
      expect((await stack.scheduler.getTask(task.taskId)).watched).toBeUndefined();
    });

    it('bad frames get an error frame and change nothing; a ping gets nothing', async () => {
      const connectionId = await operatorConnection();
      const bad = [
        'not json',
        '[]',
        'null',
        '{}',
        '{"type":"subscribe"}',
        '{"type":"subscribe","version":2,"id":"x","taskIds":["t_aaaaaaaaaaaaaaaaaaaaaaaaaa"]}',
        '{"type":"subscribe","version":1,"id":"x","taskIds":[]}',
        '{"type":"subscribe","version":1,"id":"x","taskIds":["../etc"]}',
        '{"type":"wake","version":1,"queue":"work","reason":"submitted"}',
        '{"type":"ping","extra":1}',
        JSON.stringify({
          type: 'subscribe',
          version: 1,
          id: 'x',
          taskIds: Array(26).fill('t_aaaaaaaaaaaaaaaaaaaaaaaaaa'),
        }),
        JSON.stringify({ type: 'ping', pad: 'x'.repeat(10_000) }),
      ];
      for (const raw of bad) {
        stack.meter.reset();
        const reply = await answer(connectionId, raw);
        expect(reply, raw).toMatchObject({ type: 'error', version: 1 });
        expect(JSON.stringify(reply)).not.toMatch(/arn:|at .*\.ts/);
        expect(stack.meter.totals((r) => r.service === 'dynamodb').writeUnits, raw).toBe(0);
      }
      expect(await answer(connectionId, '{"type":"ping"}')).toBeUndefined();
    });

    it('a connection closed is forgotten, with what it listened to', async () => {
      const agent = await connectedAgent(['closing']);
      await idle(agent);
      await stack.scheduler.closePushConnection(agent.connectionId);
      expect(await stack.ctx.push?.connections.get(agent.connectionId)).toBeUndefined();
      expect(await stack.ctx.push?.connections.connectionOf(agent.agentId)).toBeUndefined();
      expect(
        await stack.ctx.push?.connections.findIdle(
          'closing',
          Date.now() + CONNECTION_TTL_SECONDS * 1_000,
          100,
        ),
      ).not.toContainEqual(expect.objectContaining({ agentId: agent.agentId }));
    });
  });
});
