/**
 * What workflows cost on top of plain tasks, measured in requests and capacity units on the emulators:
 * - a **dependency edge**: a join that depends on `fanIn` tasks, less what the same tasks would cost without the
 *   edges, per edge (linking, the mark on the dependency, the resolution with its result kept, the strike-off, the
 *   join's unblock and the read of its inputs at its claim);
 * - a **follow-up submit**: a child an agent submits under its lease on the parent (a transaction with the
 *   lease check), less an operator's plain submit.
 * Calls go straight to the scheduler (no HTTP), so the figures are AWS requests only.
 */
import { AwsMeter } from '#adapters/aws-meter';
import type { Scheduler } from '#core/scheduler';
import { type LocalStack, startLocalStack } from '#local/local-stack';
import { PRICES } from './prices';

export interface WorkflowOptions {
  /** Joins (and parents) measured. */
  readonly groups: number;
  /** Dependencies of each join. */
  readonly fanIn: number;
  readonly endpoints?: { readonly dynamodb: string; readonly sqs: string };
}

export interface Cost {
  readonly requests: number;
  readonly writeUnits: number;
  readonly readUnits: number;
  readonly sqsRequests: number;
  readonly usdPerMillion: number;
}

export interface WorkflowReport {
  readonly groups: number;
  readonly fanIn: number;
  /** A plain task: submit, claim, complete. */
  readonly plainTask: Cost;
  /** What one dependency edge adds. */
  readonly dependencyEdge: Cost;
  /** What submitting a task as an agent's follow-up adds to a plain submit. */
  readonly followUpSubmit: Cost;
}

/** Requests and capacity, in all or per task. */
interface Usage {
  readonly requests: number;
  readonly writeUnits: number;
  readonly readUnits: number;
  readonly sqsRequests: number;
}

/** The stack, metered, and one agent with its session open, calling the scheduler directly. */
interface Workflow {
  readonly stack: LocalStack;
  readonly meter: AwsMeter;
  readonly agent: { readonly agentId: string; readonly sessionId: string };
}

async function setUpWorkflow(options: WorkflowOptions): Promise<Workflow> {
  const meter = new AwsMeter();
  const stack = await startLocalStack({
    name: 'workflow',
    queues: ['wf'],
    endpoints: options.endpoints,
    onClients: ({ dynamodb, sqs }) => {
      meter.attach(dynamodb, 'dynamodb');
      meter.attach(sqs, 'sqs');
    },
    context: { settings: { idleClaimRetryBaseMs: 10, idleClaimRetryMaxMs: 50, agentSubmitQueues: ['wf'] } },
  });
  try {
    const { scheduler } = stack;
    const { agentId } = (await scheduler.registerAgent({ name: 'bench', queues: ['wf'], maxConcurrency: 10 }))
      .agent;
    const { sessionId } = await scheduler.openSession(agentId);
    return { stack, meter, agent: { agentId, sessionId } };
  } catch (error) {
    await stack.stop();
    throw error;
  }
}

/** Claims and completes until `count` tasks ran. */
async function runAll(
  scheduler: Scheduler,
  agent: Workflow['agent'],
  count: number,
  onClaim?: (t: { taskId: string; leaseEpoch: number }) => Promise<void>,
): Promise<void> {
  let done = 0;
  for (let idle = 0; done < count && idle < 200; ) {
    const tasks = await scheduler.claim({ ...agent, max: 10 });
    if (tasks.length === 0) {
      idle++;
      await new Promise((resolve) => setTimeout(resolve, 10));
      continue;
    }
    for (const t of tasks) {
      await onClaim?.(t);
      await scheduler.complete(
        { agentId: agent.agentId, taskId: t.taskId, leaseEpoch: t.leaseEpoch },
        { ok: t.taskId },
      );
    }
    done += tasks.length;
  }
  if (done < count) throw new Error(`only ${done} of ${count} tasks ran`);
}

/** The DynamoDB and SQS requests and capacity of `work`. */
async function measure(meter: AwsMeter, work: () => Promise<void>): Promise<Usage> {
  meter.reset();
  await work();
  const dynamodb = meter.totals((r) => r.service === 'dynamodb');
  const sqs = meter.totals((r) => r.service === 'sqs');
  return {
    requests: dynamodb.requests + sqs.requests,
    writeUnits: dynamodb.writeUnits,
    readUnits: dynamodb.readUnits,
    sqsRequests: sqs.requests,
  };
}

/** Three runs: plain tasks; joins of `fanIn` dependencies; parents that submit a child each. */
async function runWorkflows({ stack: { scheduler }, meter, agent }: Workflow, options: WorkflowOptions) {
  const { groups, fanIn } = options;
  const plain = await measure(meter, async () => {
    for (let i = 0; i < groups; i++) await scheduler.submit({ queue: 'wf', payload: { i } });
    await runAll(scheduler, agent, groups);
  });
  const joined = await measure(meter, async () => {
    for (let g = 0; g < groups; g++) {
      const dependencies: string[] = [];
      for (let i = 0; i < fanIn; i++)
        dependencies.push((await scheduler.submit({ queue: 'wf', payload: { g, i } })).task.taskId);
      await scheduler.submit({ queue: 'wf', payload: { g }, dependsOn: dependencies });
    }
    await runAll(scheduler, agent, groups * (fanIn + 1));
  });
  const parented = await measure(meter, async () => {
    for (let g = 0; g < groups; g++) await scheduler.submit({ queue: 'wf', payload: { g } });
    await runAll(scheduler, agent, groups * 2, async (t) => {
      // Parents submit one child each; the children submit nothing.
      const task = await scheduler.ctx.tasks.get(t.taskId);
      if (task?.parentTaskId) return;
      await scheduler.submitChild(
        { agentId: agent.agentId, parentTaskId: t.taskId, leaseEpoch: t.leaseEpoch },
        { key: 'child', queue: 'wf', payload: {} },
      );
    });
  });
  return { plain, joined, parented };
}

const per = (a: Usage, n: number): Usage => ({
  requests: a.requests / n,
  writeUnits: a.writeUnits / n,
  readUnits: a.readUnits / n,
  sqsRequests: a.sqsRequests / n,
});

const less = (a: Usage, b: Usage, times: number): Usage => ({
  requests: a.requests - b.requests * times,
  writeUnits: a.writeUnits - b.writeUnits * times,
  readUnits: a.readUnits - b.readUnits * times,
  sqsRequests: a.sqsRequests - b.sqsRequests * times,
});

const priced = (c: Usage): Cost => {
  const round = (n: number) => Math.round(n * 100) / 100;
  const usd =
    c.writeUnits * PRICES.dynamodb.writeUnit +
    c.readUnits * PRICES.dynamodb.readUnit +
    c.sqsRequests * PRICES.sqs.request;
  return {
    requests: round(c.requests),
    writeUnits: round(c.writeUnits),
    readUnits: round(c.readUnits),
    sqsRequests: round(c.sqsRequests),
    usdPerMillion: round(usd * 1e6),
  };
};

/** What an edge and a follow-up submit add, from the three runs. */
function reportWorkflow(
  options: WorkflowOptions,
  { plain, joined, parented }: Awaited<ReturnType<typeof runWorkflows>>,
): WorkflowReport {
  const { groups, fanIn } = options;
  const plainTask = per(plain, groups);
  // A group of the join run: fanIn + 1 plain tasks and fanIn edges. The child run: two tasks, one a child.
  const edge = per(less(per(joined, groups), plainTask, fanIn + 1), fanIn);
  const child = less(per(parented, groups), plainTask, 2);
  // The child's own lookup of its parentage in `runAll` is the benchmark's, not the scheduler's.
  const childCost = { ...child, requests: child.requests - 1, readUnits: child.readUnits - 1 };
  return {
    groups,
    fanIn,
    plainTask: priced(plainTask),
    dependencyEdge: priced(edge),
    followUpSubmit: priced(childCost),
  };
}

export async function runWorkflow(options: WorkflowOptions): Promise<WorkflowReport> {
  const workflow = await setUpWorkflow(options);
  try {
    return reportWorkflow(options, await runWorkflows(workflow, options));
  } finally {
    await workflow.stack.stop();
  }
}
