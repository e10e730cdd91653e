/**
 * Deadlines from outside, as an agent meets them: an attempt whose handler hangs while its agent keeps
 * heartbeating is taken back once its `timeoutSeconds` pass, within one supervisor period and 5 s, through the
 * local server on the emulators with the supervisor run every `PERIOD_MS` as the dev stack runs it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { createTestStack, everyUnlessRunning, serveStack, type TestStack, waitFor } from '#test/stack';

const OPERATOR = 'op_e2e-deadline-token';
/** The supervisor's period here, as `npm start --supervisor-seconds 2` would run it. */
const PERIOD_MS = 2_000;
/** The bound the scheduler promises: a deadline is enforced within the supervisor's period and 5 s. */
const BOUND_MS = PERIOD_MS + 5_000;

describe('deadlines', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;
  let supervisor: NodeJS.Timeout;

  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['deadline'],
      settings: { leaseTtlSeconds: 10, heartbeatIntervalSeconds: 1 },
    });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
    supervisor = everyUnlessRunning(() => stack.scheduler.supervise(), PERIOD_MS);
  });
  afterAll(async () => {
    clearInterval(supervisor);
    await server.close();
    await stack.destroy();
  });

  it('a hung attempt of a heartbeating agent dies within the supervisor period + 5 s of its deadline', async () => {
    const { token } = await operator.createAgent({ name: 'hangs', queues: ['deadline'] });
    const agent = new AgentSchedulerClient({ endpoint: server.url, token });
    const { task } = await operator.submitTask({
      queue: 'deadline',
      payload: {},
      timeoutSeconds: 2,
      maxAttempts: 1,
    });
    const { sessionId } = await agent.openSession();
    let claimed: string | undefined;
    await waitFor(async () => {
      claimed = (await agent.claim({ sessionId })).tasks[0]?.taskId;
      return claimed !== undefined;
    });
    expect(claimed).toBe(task.taskId);
    // The handler hangs; the agent's heartbeat goes on, so its session (and the lease, but for its deadline) lives.
    let beating = true;
    const beats = (async () => {
      while (beating) {
        await agent.heartbeat({ sessionId }).catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    })();
    try {
      const leased = await operator.getTask(task.taskId);
      expect(leased.status).toBe('leased');
      const deadline = Date.parse(leased.leaseDeadline ?? '');
      await waitFor(
        async () => (await operator.getTask(task.taskId)).status === 'dead',
        deadline - Date.now() + BOUND_MS,
      );
      const dead = await operator.getTask(task.taskId);
      expect(dead.error?.message).toBe('lease expired (deadline)');
      expect(Date.parse(dead.finishedAt ?? '') - deadline).toBeLessThanOrEqual(BOUND_MS);
      // The agent heartbeat all along: its session is still the live one, the task no longer among its holdings.
      expect(await agent.getSession()).toMatchObject({ sessionId, tasks: [] });
    } finally {
      beating = false;
      await beats;
    }
  }, 60_000);
});
