/**
 * A model-based test (fast-check `commands`): random sequences of submit, claim, heartbeat, complete, fail, a
 * supervisor pass, and crash (the agent restarts and opens a new session) run against the real store on DynamoDB
 * Local and against a small model of what each task should be. After every command the store must agree with the
 * model: every task's status, owner and lease epoch.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LeaseLostError, SessionLostError, TaskNotFoundError } from '#domain/errors';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

interface ModelTask {
  status: 'queued' | 'leased' | 'succeeded';
  epoch: number;
  owner?: string;
}

interface Model {
  readonly tasks: Map<string, ModelTask>;
}

interface Real {
  readonly stack: TestStack;
  readonly agents: { agentId: string; sessionId: string }[];
}

type Command = fc.AsyncCommand<Model, Real>;

async function agreeWith(model: Model, real: Real): Promise<void> {
  for (const [taskId, expected] of model.tasks) {
    const task = await real.stack.scheduler.getTask(taskId);
    expect({
      taskId,
      status: task.status,
      epoch: task.leaseEpoch,
      owner: task.status === 'leased' ? task.owner : undefined,
    }).toEqual({
      taskId,
      status: expected.status,
      epoch: expected.epoch,
      owner: expected.status === 'leased' ? expected.owner : undefined,
    });
  }
}

const leasedBy = (model: Model, agentId: string) =>
  [...model.tasks].filter(([, task]) => task.status === 'leased' && task.owner === agentId);

class Submit implements Command {
  check = () => true;
  async run(model: Model, real: Real) {
    const { task } = await real.stack.scheduler.submit({
      queue: 'work',
      payload: {},
      maxAttempts: 100,
      backoffBaseSeconds: 1,
      backoffMaxSeconds: 1,
    });
    model.tasks.set(task.taskId, { status: 'queued', epoch: 0 });
    await agreeWith(model, real);
  }
  toString = () => 'submit';
}

class Claim implements Command {
  constructor(readonly agent: number) {}
  check = (model: Model) => [...model.tasks.values()].some((t) => t.status === 'queued');
  async run(model: Model, real: Real) {
    const agent = real.agents[this.agent];
    if (!agent) return;
    const claimed = await claimUntil(real.stack.scheduler, agent, 1, 300);
    for (const task of claimed) {
      const expected = model.tasks.get(task.taskId);
      // Only a queued task is handed out, under the next epoch.
      expect(expected?.status).toBe('queued');
      expect(task.leaseEpoch).toBe((expected?.epoch ?? 0) + 1);
      model.tasks.set(task.taskId, { status: 'leased', epoch: task.leaseEpoch, owner: agent.agentId });
    }
    await agreeWith(model, real);
  }
  toString = () => `claim(${this.agent})`;
}

class Finish implements Command {
  constructor(
    readonly agent: number,
    readonly pick: number,
    readonly kind: 'complete' | 'fail' | 'stale',
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const agent = real.agents[this.agent];
    if (!agent) return;
    const mine = leasedBy(model, agent.agentId);
    const other = [...model.tasks].filter(([, t]) => !(t.status === 'leased' && t.owner === agent.agentId));
    if (this.kind === 'stale' || mine.length === 0) {
      // A lease this agent does not hold (another's, a finished one, or an old epoch): refused, nothing changes.
      const [taskId, task] = other[this.pick % Math.max(1, other.length)] ?? mine[0] ?? [];
      if (!taskId || !task) return;
      // An epoch never granted yet: no replay of an earlier outcome can answer it. Its last holder hears that
      // its lease is gone; any other agent, that there is no such task.
      await expect(
        real.stack.scheduler.complete({ agentId: agent.agentId, taskId, leaseEpoch: task.epoch + 1 }),
      ).rejects.toSatisfy((error) => error instanceof LeaseLostError || error instanceof TaskNotFoundError);
    } else {
      const [taskId, task] = mine[this.pick % mine.length] ?? [];
      if (!taskId || !task) return;
      const lease = { agentId: agent.agentId, taskId, leaseEpoch: task.epoch };
      if (this.kind === 'complete') {
        await real.stack.scheduler.complete(lease, { ok: true });
        model.tasks.set(taskId, { status: 'succeeded', epoch: task.epoch });
      } else {
        await real.stack.scheduler.fail(lease, { message: 'model says fail', retryable: true });
        model.tasks.set(taskId, { status: 'queued', epoch: task.epoch });
      }
    }
    await agreeWith(model, real);
  }
  toString = () => `${this.kind}(${this.agent}, ${this.pick})`;
}

class Heartbeat implements Command {
  constructor(readonly agent: number) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const agent = real.agents[this.agent];
    if (!agent) return;
    const beat = await real.stack.scheduler.heartbeat(agent.agentId, agent.sessionId);
    expect(beat.lost).toEqual([]);
    await agreeWith(model, real);
  }
  toString = () => `heartbeat(${this.agent})`;
}

class Supervise implements Command {
  check = () => true;
  async run(model: Model, real: Real) {
    // Every session is live and no deadline has passed: a pass takes nothing back.
    const pass = await real.stack.scheduler.supervise();
    expect(pass.recoveredLeases).toBe(0);
    await agreeWith(model, real);
  }
  toString = () => 'supervise';
}

class Crash implements Command {
  constructor(readonly agent: number) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const agent = real.agents[this.agent];
    if (!agent) return;
    const old = agent.sessionId;
    // The agent restarts: its new session ends the old one, whose tasks go back to the queue at once.
    const opened = await real.stack.scheduler.openSession(agent.agentId);
    agent.sessionId = opened.sessionId;
    for (const [taskId, task] of leasedBy(model, agent.agentId)) {
      model.tasks.set(taskId, { status: 'queued', epoch: task.epoch });
    }
    await expect(real.stack.scheduler.heartbeat(agent.agentId, old)).rejects.toBeInstanceOf(SessionLostError);
    await agreeWith(model, real);
  }
  toString = () => `crash(${this.agent})`;
}

describe('the store against a model', () => {
  it('agrees with the model after every command of random sequences', async () => {
    const agent = fc.integer({ min: 0, max: 1 });
    // Submit and claim weigh double: most sequences should hold leases when the other commands come.
    const commands = [
      fc.constant(new Submit()),
      fc.constant(new Submit()),
      agent.map((a) => new Claim(a)),
      agent.map((a) => new Claim(a)),
      fc
        .tuple(agent, fc.nat(), fc.constantFrom<'complete' | 'fail' | 'stale'>('complete', 'fail', 'stale'))
        .map(([a, pick, kind]) => new Finish(a, pick, kind)),
      agent.map((a) => new Heartbeat(a)),
      fc.constant(new Supervise()),
      agent.map((a) => new Crash(a)),
    ];
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 25 }), async (sequence) => {
        // A store of its own per sequence, so no task of an earlier one is in its queue.
        const stack = await createTestStack({ queues: ['work'] });
        try {
          const agents = [
            await startAgent(stack.scheduler, { maxConcurrency: 3 }),
            await startAgent(stack.scheduler, { maxConcurrency: 3 }),
          ];
          await fc.asyncModelRun(() => ({ model: { tasks: new Map() }, real: { stack, agents } }), sequence);
        } finally {
          await stack.destroy();
        }
      }),
      { numRuns: 40, seed: 3 },
    );
  }, 240_000);
});
