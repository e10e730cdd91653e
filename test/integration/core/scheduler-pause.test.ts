/**
 * The scheduler-wide pause on DynamoDB Local and the SQS emulator: from 2 s after the pause's answer no claim is
 * granted anything, with agents claiming in parallel in processes of their own (each with its own copy of the
 * control); while paused no wake frame goes out, a schedule's fire is recorded and its task queues, the supervisor
 * takes leases back without climbing the starvation ladder; after the resume the idle agents are woken and all the
 * work is claimed.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClaimedTask } from '#core/claim';
import { fireTimedWakes } from '#core/push';
import type { Scheduler } from '#core/scheduler';
import { SCHEDULER_CONTROL_CACHE_MS } from '#core/scheduler-control';
import { runApart } from '#local/function-scope';
import {
  claimUntil,
  createTestStack,
  fireAsFunction,
  RecordingPushSender,
  startAgent,
  type TestStack,
} from '#test/stack';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('scheduler-wide pause', () => {
  describe('grants, with agents claiming in parallel in several processes', () => {
    const QUEUES = ['work', 'other'];
    const PROCESSES = 3;
    const AGENTS_PER_PROCESS = 3;
    const TASKS = 300;
    let stack: TestStack;

    beforeAll(async () => {
      stack = await createTestStack({ queues: QUEUES, settings: { leaseTtlSeconds: 600 } });
    });
    afterAll(async () => {
      await stack?.destroy();
    });

    it('grants nothing from 2 s after the pause’s answer, and everything after the resume', async () => {
      const { scheduler } = stack;
      // Each process is a function instance: its own clients, and its own copy of the scheduler's control.
      const processes: Scheduler[] = Array.from({ length: PROCESSES }, () => stack.sibling());
      const agents = await Promise.all(
        Array.from({ length: PROCESSES * AGENTS_PER_PROCESS }, (_, n) =>
          startAgent(scheduler, { name: `pauser-${n}`, queues: QUEUES, maxConcurrency: 2 }),
        ),
      );
      for (let n = 0; n < TASKS; n += 25) {
        await scheduler.submitBatch(
          Array.from({ length: 25 }, (_, i) => ({ queue: QUEUES[(n + i) % 2], payload: { n: n + i } })),
        );
      }

      /** Every grant a claim answered with: the grant's time (the lease's start), and when the answer came. */
      const grants: { taskId: string; grantedAt: number; answeredAt: number }[] = [];
      /** Every claim: when it was sent, and how many tasks it got. */
      const claims: { sentAt: number; got: number }[] = [];
      const done = new Set<string>();
      let running = true;
      const claimLoop = async (process: Scheduler, agent: (typeof agents)[number]) => {
        while (running && done.size < TASKS) {
          const sentAt = stack.clock.now();
          const tasks: ClaimedTask[] = await process.claim({ ...agent, max: 2 });
          const answeredAt = stack.clock.now();
          claims.push({ sentAt, got: tasks.length });
          for (const task of tasks) {
            grants.push({
              taskId: task.taskId,
              grantedAt: task.leaseDeadline - task.timeoutSeconds * 1_000,
              answeredAt,
            });
          }
          if (tasks.length === 0) {
            await sleep(20);
            continue;
          }
          await process.completeBatch(
            agent.agentId,
            tasks.map((t) => ({ taskId: t.taskId, leaseEpoch: t.leaseEpoch })),
          );
          for (const task of tasks) done.add(task.taskId);
        }
      };
      const runAll = () =>
        Promise.all(agents.map((agent, n) => claimLoop(processes[n % PROCESSES] as Scheduler, agent)));

      // Work flows in every process; then an operator (a process of its own) pauses the scheduler.
      const before = runAll();
      const started = Date.now();
      while (grants.length < 30 && Date.now() - started < 30_000) await sleep(20);
      expect(grants.length).toBeGreaterThanOrEqual(30);
      await scheduler.pauseScheduler();
      const pausedAt = stack.clock.now();
      await sleep(SCHEDULER_CONTROL_CACHE_MS + 1_500);
      running = false;
      await before;

      const bound = pausedAt + SCHEDULER_CONTROL_CACHE_MS;
      const afterAnswer = grants.filter((g) => g.answeredAt > pausedAt);
      const lastGrant = Math.max(pausedAt, ...grants.map((g) => g.grantedAt)) - pausedAt;
      const lastAnswer = Math.max(pausedAt, ...afterAnswer.map((g) => g.answeredAt)) - pausedAt;
      const lateClaims = claims.filter((c) => c.sentAt >= bound);
      console.log(
        `[scheduler pause] ${agents.length} agents in ${PROCESSES} processes: ${grants.length} grants, ${afterAnswer.length} of them answered after the pause's answer, ` +
          `the last dated ${lastGrant} ms and answered ${lastAnswer} ms after it; ` +
          `${lateClaims.length} claims sent from ${SCHEDULER_CONTROL_CACHE_MS} ms on, ${lateClaims.filter((c) => c.got > 0).length} granted anything`,
      );
      // Claims kept coming through the whole window, and none of those from 2 s on got a task.
      expect(lateClaims.length).toBeGreaterThanOrEqual(agents.length);
      expect(lateClaims.filter((c) => c.got > 0)).toEqual([]);
      // No grant is dated from 2 s after the answer: in the answers, and in the tasks' own records.
      expect(grants.filter((g) => g.grantedAt >= bound)).toEqual([]);
      const { Items = [] } = await stack.ctx.sessions.doc.send(
        new ScanCommand({
          TableName: stack.ctx.tasks.tableName,
          FilterExpression: 'leasedAt >= :bound',
          ExpressionAttributeValues: { ':bound': bound },
          ConsistentRead: true,
        }),
      );
      expect(Items).toEqual([]);
      // Work was left for the resume.
      expect(done.size).toBeLessThan(TASKS);

      expect(await scheduler.getSchedulerControl()).toMatchObject({ paused: true });
      await scheduler.resumeScheduler();
      const resumedAt = stack.clock.now();
      running = true;
      const deadline = Date.now() + 60_000;
      const after = runAll();
      while (done.size < TASKS && Date.now() < deadline) await sleep(50);
      running = false;
      await after;
      console.log(
        `[scheduler pause] resumed: the first grant ${Math.min(...grants.filter((g) => g.answeredAt > resumedAt).map((g) => g.grantedAt)) - resumedAt} ms after the resume's answer; all ${TASKS} tasks done`,
      );
      expect(done.size).toBe(TASKS);
      expect(await scheduler.getSchedulerControl()).toMatchObject({ paused: false });
    });
  });

  describe('wakes, sweeps and fires', () => {
    const sender = new RecordingPushSender();
    let stack: TestStack;
    let connections = 0;

    beforeAll(async () => {
      stack = await createTestStack({
        queues: ['work', 'other', 'alone'],
        declaredSchedules: [
          { name: 'hourly', expression: 'cron(0 * * * ? *)', timeZone: 'UTC', task: { queue: 'work' } },
        ],
        push: { sender, url: 'ws://push.test/v1/push' },
        settings: {
          pushSafetyPollMs: 600_000,
          wakeCooldownMs: 1_000,
          reconcileAfterSeconds: 5,
          starvation: { promoteAfterSeconds: 10, announceAfterSeconds: 20, attentionAfterSeconds: 30 },
        },
      });
    });
    afterAll(async () => {
      await stack?.destroy();
    });

    /** An agent with a live session, connected through a ticket, as `$connect` does it. */
    const connectedAgent = async (queues: string[]) => {
      const agent = await startAgent(stack.scheduler, { queues, maxConcurrency: 10 });
      const { ticket } = await stack.scheduler.pushTicket({ kind: 'agent', agentId: agent.agentId });
      const principal = await stack.scheduler.redeemPushTicket(ticket);
      if (!principal) throw new Error('ticket refused');
      const connectionId = `c${connections++}`;
      await stack.scheduler.openPushConnection(connectionId, principal);
      return { ...agent, connectionId };
    };
    const wakeFrames = (from: number, to = sender.frames.length) =>
      sender.frames.slice(from, to).filter((f) => f.frame.type === 'wake');

    it('sends no wake while paused; records fires and takes leases back; the resume wakes, and all is claimed', async () => {
      const { scheduler, clock } = stack;
      clock.stop();
      try {
        // A listening agent of two queues, idle; another of a third queue; a third agent holding a task.
        const listener = await connectedAgent(['work', 'other']);
        const lone = await connectedAgent(['alone']);
        expect((await scheduler.claimOrListen({ ...listener, max: 10 })).tasks).toEqual([]);
        expect((await scheduler.claimOrListen({ ...lone, max: 10 })).tasks).toEqual([]);
        const holder = await startAgent(scheduler, { queues: ['work'] });
        const { task: held } = await scheduler.submit({ queue: 'work', payload: { held: true } });
        // The submission woke the listener; the holder takes the task before it.
        const [lease] = await claimUntil(scheduler, holder, 1);
        expect(lease?.taskId).toBe(held.taskId);
        clock.advance(1_000);
        expect((await scheduler.claimOrListen({ ...listener, max: 10 })).tasks).toEqual([]);

        const paused = await scheduler.pauseScheduler();
        expect(paused).toMatchObject({ paused: true, updatedAt: clock.now() });
        const pausedFrom = sender.frames.length;

        // Submitted while paused: queued, nobody woken, nobody granted anything.
        const { task: single } = await scheduler.submit({ queue: 'work', payload: { n: 1 } });
        const batch = await scheduler.submitBatch([
          { queue: 'other', payload: { n: 2 } },
          { queue: 'alone', payload: { n: 3 } },
        ]);
        expect(batch.every((b) => b.ok)).toBe(true);
        const listening = await scheduler.claimOrListen({ ...listener, max: 10 });
        expect(listening.tasks).toEqual([]);
        expect(listening.retryAfterMs).toEqual(expect.any(Number));
        expect(await scheduler.claim({ ...lone, max: 10 })).toEqual([]);

        // A schedule's fire is recorded, and its task queues.
        const fired = await fireAsFunction(stack.ctx, {
          schedule: 'hourly',
          scheduledTime: new Date(Math.floor(clock.now() / 3_600_000 - 1) * 3_600_000).toISOString(),
          executionId: 'paused-1',
          task: { queue: 'work' },
        });
        expect(fired).toMatchObject({ status: 'fired', created: true, taskId: expect.any(String) });
        expect(await scheduler.listOccurrences('hourly')).toEqual([
          expect.objectContaining({ status: 'fired', taskId: fired.taskId }),
        ]);
        expect((await scheduler.getTask(fired.taskId ?? '')).status).toBe('queued');

        // Timed wakes due now, as the timer's function delivers them: none goes out.
        const timed = await runApart('wakeTimer', () =>
          fireTimedWakes(stack.ctx, [
            { queue: 'work', at: clock.now(), count: 5, reason: 'due' },
            { queue: 'alone', at: clock.now(), count: 1, reason: 'due' },
          ]),
        );
        expect(timed).toEqual({ woken: 0, rearmed: 0 });

        // The holder falls silent: the supervisor takes its task back (and requeues it), and the work that waits
        // climbs no rung of the starvation ladder. The listeners keep their sessions.
        const passes = [];
        for (const seconds of [10, 10, 10, 10]) {
          clock.advance(seconds * 1_000);
          await scheduler.heartbeat(listener.agentId, listener.sessionId);
          await scheduler.heartbeat(lone.agentId, lone.sessionId);
          passes.push(await scheduler.supervise());
        }
        expect(passes.reduce((sum, p) => sum + p.requeued, 0)).toBe(1);
        expect((await scheduler.getTask(held.taskId)).status).toBe('queued');
        expect(passes.map((p) => [p.promoted, p.starved, p.escalated])).toEqual([
          [0, 0, 0],
          [0, 0, 0],
          [0, 0, 0],
          [0, 0, 0],
        ]);
        expect(passes.reduce((sum, p) => sum + p.pausedQueuesSkipped, 0)).toBeGreaterThanOrEqual(4);
        expect(passes.every((p) => p.errors === 0)).toBe(true);
        expect((await scheduler.getTask(single.taskId)).priority).toBe('normal');
        expect(await scheduler.claim({ ...listener, max: 10 })).toEqual([]);

        // Not one wake frame while paused.
        expect(wakeFrames(pausedFrom)).toEqual([]);
        console.log(
          `[scheduler pause] paused: ${sender.frames.length - pausedFrom} frames sent, 0 wakes (3 submissions, 1 fire, 2 timed wakes, 1 take-back, 4 passes)`,
        );

        // The resume wakes each idle agent once, for a queue of its own.
        const resumedFrom = sender.frames.length;
        expect(await scheduler.resumeScheduler()).toMatchObject({ paused: false });
        const woken = wakeFrames(resumedFrom);
        expect(woken.map((f) => [f.connectionId, (f.frame as { reason: string }).reason]).sort()).toEqual(
          [
            [listener.connectionId, 'resumed'],
            [lone.connectionId, 'resumed'],
          ].sort(),
        );

        // All the work is claimed: what was submitted and fired while paused, and the task taken back.
        const [toOther, toAlone] = batch.map((b) => (b.ok ? b.task.taskId : ''));
        const queued = [held.taskId, single.taskId, fired.taskId ?? '', toOther ?? ''].sort();
        clock.resume();
        const claimed = await claimUntil(scheduler, listener, queued.length, 15_000, 10);
        expect(claimed.map((t) => t.taskId).sort()).toEqual(queued);
        const [alone] = await claimUntil(scheduler, lone, 1, 15_000, 10);
        expect(alone?.taskId).toBe(toAlone);
      } finally {
        clock.resume();
      }
    });
  });
});
