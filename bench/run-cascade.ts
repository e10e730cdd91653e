/**
 * The cascade scenario (`npm run bench -- --scenario cascade [--tasks N]`): a tree of about N tasks (a root, 50
 * children held by an agent, the rest their queued children, a hundred of those held too) cancelled with
 * `cascade: true`, on the local stack. It reports what the cancel call walked in its budget, then how long the
 * supervisor's passes take to finish the walk, run back to back (each walking as a pass does, 45 s at most). In AWS
 * each pass comes at most a period (60 s) after the call or the pass before: the tree is finished within a period
 * a pass plus the last pass's time, which the report states.
 */
import { advanceCascades } from '#core/cascade';
import { startLocalStack } from '#local/local-stack';

export interface CascadeOptions {
  readonly tasks: number;
}

export interface CascadeReport {
  readonly scenario: 'cascade';
  readonly tasks: number;
  readonly builtMs: number;
  /** What the cancel call walked before it answered. */
  readonly call: { readonly ms: number; readonly cancelled: number; readonly pending: number };
  /** Supervisor passes run back to back until the walk was done, and their time. */
  readonly passes: number;
  readonly passesMs: number;
  /** In AWS: a period (60 s) before each pass, and the last pass's own time. */
  readonly finishedWithinMs: number;
  readonly cancelled: number;
  readonly leftOpen: number;
}

const CHILDREN = 50;
const AWS_SUPERVISOR_PERIOD_MS = 60_000;

export async function runCascade(options: CascadeOptions): Promise<CascadeReport> {
  const stack = await startLocalStack({
    name: 'bench-cascade',
    queues: ['roots', 'steps', 'leaves'],
    context: { settings: { agentSubmitQueues: ['steps', 'leaves'], leaseTtlSeconds: 3_600 } },
  });
  try {
    const { scheduler } = stack;
    const built = Date.now();
    const agent = async (name: string, queues: string[], maxConcurrency: number) => {
      const { agent: registered } = await scheduler.registerAgent({ name, queues, maxConcurrency });
      const session = await scheduler.openSession(registered.agentId);
      return { agentId: registered.agentId, sessionId: session.sessionId };
    };
    const claim = async (who: { agentId: string; sessionId: string }, count: number) => {
      const claimed = [];
      while (claimed.length < count) {
        const batch = await scheduler.claim({ ...who, max: Math.min(10, count - claimed.length) });
        claimed.push(...batch);
        if (batch.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return claimed;
    };
    const { task: root } = await scheduler.submit({ queue: 'roots', payload: { root: true } });
    const rootAgent = await agent('root', ['roots'], 1);
    const [rootLease] = await claim(rootAgent, 1);
    const lease = {
      agentId: rootAgent.agentId,
      parentTaskId: root.taskId,
      leaseEpoch: rootLease?.leaseEpoch ?? 0,
    };
    for (let from = 0; from < CHILDREN; from += 25) {
      await scheduler.submitChildren(
        lease,
        Array.from({ length: 25 }, (_, i) => ({ key: `step-${from + i}`, queue: 'steps', payload: {} })),
      );
    }
    const stepAgent = await agent('steps', ['steps'], CHILDREN);
    const steps = await claim(stepAgent, CHILDREN);
    const perStep = Math.max(0, Math.ceil((options.tasks - 1 - CHILDREN) / CHILDREN));
    await Promise.all(
      steps.map(async (step) => {
        const parent = { agentId: stepAgent.agentId, parentTaskId: step.taskId, leaseEpoch: step.leaseEpoch };
        for (let from = 0; from < perStep; from += 25) {
          await scheduler.submitChildren(
            parent,
            Array.from({ length: Math.min(25, perStep - from) }, (_, i) => ({
              key: `leaf-${from + i}`,
              queue: 'leaves',
              payload: {},
            })),
          );
        }
      }),
    );
    await claim(await agent('leaves', ['leaves'], 100), 100);
    const tasks = 1 + CHILDREN + perStep * CHILDREN;
    const builtMs = Date.now() - built;

    const called = Date.now();
    const { cascade } = await scheduler.cancelTree(root.taskId);
    const callMs = Date.now() - called;
    const passTimes: number[] = [];
    while ((await scheduler.cascadeOf(root.taskId))?.finishedAt === undefined) {
      const passStarted = Date.now();
      await advanceCascades(stack.ctx);
      passTimes.push(Date.now() - passStarted);
    }
    const passes = passTimes.length;
    const passesMs = passTimes.reduce((a, b) => a + b, 0);
    const done = await scheduler.cascadeOf(root.taskId);
    let leftOpen = 0;
    for (const status of ['queued', 'waiting', 'leased', 'suspended']) {
      leftOpen += (await scheduler.listTasks({ status, limit: 100 })).tasks.length;
    }
    return {
      scenario: 'cascade',
      tasks,
      builtMs,
      call: { ms: callMs, cancelled: cascade?.cancelled ?? 0, pending: cascade?.pending ?? 0 },
      passes,
      passesMs,
      // Each pass at most a period after the call or the pass before it; the last one's own time.
      finishedWithinMs: callMs + passes * AWS_SUPERVISOR_PERIOD_MS + (passTimes.at(-1) ?? 0),
      cancelled: done?.cancelled ?? 0,
      leftOpen,
    };
  } finally {
    await stack.stop();
  }
}
