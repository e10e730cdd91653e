/**
 * The labels scenario (`npm run bench -- --scenario labels [--agents N] [--tasks N] [--rate R] [--warmup N]`): a
 * fleet with mixed labels (`FLEET`, agent `i` the profile `i % 4`: two GPUs and claude, a T4, none, two models)
 * claims from one queue a steady stream of tasks at one priority, `--rate` a second, every other one unlabelled and
 * the rest requiring one of `SETS` in turn, each met by a quarter or a half of the fleet. Each agent claims one task
 * at a time, works on it `WORK_MS` and completes it; an empty claim waits as the server says (`idleRetryAfterMs`,
 * from 10 ms doubling to 200 ms), so the fleet polls as it would at those settings.
 *
 * A task's wait is from claimable (its `createdAt`: nothing here is held back) to claimed (its grant, the lease's
 * deadline less its timeout), both the server's clock. It reports p50, p90 and p99 of the waits of the unlabelled
 * tasks and of the labelled ones (every one servable by some agent), each set's p90, the difference of the two p90s
 * against the bound of 100 ms, the turns handed back unserved, and the AWS requests per task over the whole
 * run (idle polls included). Figures, not a pass or fail. The first `--warmup` tasks are run, not measured.
 */
import { AwsMeter } from '#adapters/aws-meter';
import { idleRetryAfterMs } from '#core/claim';
import type { Requirements } from '#domain/labels';
import { startLocalStack } from '#local/local-stack';
import { percentile } from '#local/percentile';

export interface LabelsBenchOptions {
  readonly agents: number;
  readonly tasks: number;
  /** Tasks submitted a second. */
  readonly rate: number;
  /** Tasks run first and not measured. */
  readonly warmup: number;
  readonly endpoints?: { readonly dynamodb: string; readonly sqs: string };
}

export interface Waits {
  readonly tasks: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

export interface LabelsBenchReport {
  readonly scenario: 'labels';
  readonly agents: number;
  readonly tasks: number;
  readonly rate: number;
  readonly warmup: number;
  readonly workMs: number;
  readonly durationMs: number;
  readonly unlabelled: Waits;
  readonly labelled: Waits;
  /** Each requirement set's waits, and how many of the fleet meet it. */
  readonly bySet: Readonly<Record<string, Waits & { readonly agents: number }>>;
  /** Labelled p90 less unlabelled p90, and the bound on it. */
  readonly p90DifferenceMs: number;
  readonly boundMs: number;
  /** Tasks not claimed by the end. */
  readonly unclaimed: number;
  /**
   * AWS requests per task, in all and by operation, and the requests that hand turns back unserved (each up to ten
   * turns) per labelled task.
   */
  readonly requestsPerTask: number;
  readonly requestsByOperation: Readonly<Record<string, number>>;
  readonly handBacksPerLabelledTask: number;
}

/** The fleet's labels, agent `i` the profile `i % 4`. */
const FLEET: readonly Readonly<Record<string, string | readonly string[]>>[] = [
  { gpu: ['a100', 'h100'], model: 'claude' },
  { gpu: 't4' },
  {},
  { model: ['claude', 'gpt'] },
];

/** The labelled tasks' requirement sets, in turn; each met by some agents of the fleet. */
const SETS: readonly {
  readonly name: string;
  readonly require: Requirements;
  readonly profiles: number[];
}[] = [
  { name: 'gpu=*', require: { gpu: '*' }, profiles: [0, 1] },
  { name: 'gpu=a100', require: { gpu: 'a100' }, profiles: [0] },
  { name: 'model=claude', require: { model: 'claude' }, profiles: [0, 3] },
  { name: 'gpu=t4', require: { gpu: 't4' }, profiles: [1] },
];

/** How long an agent works on a task before it completes it. */
const WORK_MS = 50;
/** The bound: a servable labelled task's p90 wait within this of the unlabelled p90, at one priority. */
const BOUND_MS = 100;
const QUEUE = 'labels';
/** Submissions go in batches this often. */
const TICK_MS = 100;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (ms: number) => Math.round(ms * 10) / 10;

const waitsOf = (values: readonly number[]): Waits => ({
  tasks: values.length,
  p50: round(percentile(values, 0.5)),
  p90: round(percentile(values, 0.9)),
  p99: round(percentile(values, 0.99)),
  max: round(Math.max(0, ...values)),
});

export async function runLabels(options: LabelsBenchOptions): Promise<LabelsBenchReport> {
  const meter = new AwsMeter();
  const settings = { idleClaimRetryBaseMs: 10, idleClaimRetryMaxMs: 200 };
  const stack = await startLocalStack({
    name: 'bench-labels',
    queues: [QUEUE],
    endpoints: options.endpoints,
    onClients: ({ dynamodb, sqs }) => {
      meter.attach(dynamodb, 'dynamodb');
      meter.attach(sqs, 'sqs');
    },
    context: { settings },
  });
  try {
    const { scheduler } = stack;
    const agents = await Promise.all(
      Array.from({ length: options.agents }, async (_, i) => {
        const labels = FLEET[i % FLEET.length] ?? {};
        const { agent } = await scheduler.registerAgent({
          name: `labels-${i}`,
          queues: [QUEUE],
          maxConcurrency: 1,
          // An agent without labels is registered without them (`{}` is refused).
          ...(Object.keys(labels).length > 0 ? { labels } : {}),
        });
        const session = await scheduler.openSession(agent.agentId);
        return { agentId: agent.agentId, sessionId: session.sessionId };
      }),
    );
    const requestsBefore = meter.requests.length;
    const started = Date.now();
    /** Each task's class (`''` unlabelled, else its set) and when it became claimable, by id. */
    const tasks = new Map<string, { set: string; n: number; createdAt: number }>();
    const waits = new Map<string, number>();
    let submitting = true;

    const submitter = (async () => {
      const perTick = Math.max(1, Math.round((options.rate * TICK_MS) / 1_000));
      for (let n = 0; n < options.tasks; n += perTick) {
        const tickStart = Date.now();
        const specs = Array.from({ length: Math.min(perTick, options.tasks - n) }, (_, j) => {
          const i = n + j;
          const set = i % 2 === 0 ? undefined : SETS[((i - 1) / 2) % SETS.length];
          return { queue: QUEUE, payload: { i }, ...(set ? { require: set.require } : {}), set, i };
        });
        const outcomes = await scheduler.submitBatch(specs.map(({ set: _set, i: _i, ...spec }) => spec));
        outcomes.forEach((outcome, j) => {
          const spec = specs[j];
          if (outcome.ok && spec)
            tasks.set(outcome.task.taskId, {
              set: spec.set?.name ?? '',
              n: spec.i,
              createdAt: outcome.task.createdAt,
            });
        });
        await sleep(Math.max(0, TICK_MS - (Date.now() - tickStart)));
      }
      submitting = false;
    })();

    const deadline = () => !submitting && (waits.size >= tasks.size || Date.now() > drainEnd);
    let drainEnd = Number.POSITIVE_INFINITY;
    const fleet = agents.map(async (agent) => {
      let idle = 0;
      while (!deadline()) {
        const claimed = await scheduler.claim({ ...agent, max: 1 }).catch(() => []);
        if (claimed.length === 0) {
          await sleep(idleRetryAfterMs(settings, idle++));
          continue;
        }
        idle = 0;
        for (const c of claimed) {
          const task = tasks.get(c.taskId);
          const grantedAt = c.leaseDeadline - c.timeoutSeconds * 1_000;
          waits.set(c.taskId, task ? grantedAt - task.createdAt : 0);
        }
        await sleep(WORK_MS);
        await Promise.all(
          claimed.map((c) =>
            scheduler
              .complete({ agentId: agent.agentId, taskId: c.taskId, leaseEpoch: c.leaseEpoch })
              .catch(() => undefined),
          ),
        );
      }
    });
    await submitter;
    drainEnd = Date.now() + 60_000;
    await Promise.all(fleet);
    const durationMs = Date.now() - started;

    const measured = [...tasks].filter(([, t]) => t.n >= options.warmup);
    const waitsOfSet = (set: (name: string) => boolean) =>
      waitsOf(measured.flatMap(([id, t]) => (set(t.set) && waits.has(id) ? [waits.get(id) ?? 0] : [])));
    const unlabelled = waitsOfSet((s) => s === '');
    const labelled = waitsOfSet((s) => s !== '');
    const requests = meter.requests.slice(requestsBefore);
    const byOperation: Record<string, number> = {};
    for (const r of requests) {
      const key = `${r.service}:${r.operation.replace(/Command$/, '')}`;
      byOperation[key] = (byOperation[key] ?? 0) + 1;
    }
    const labelledTasks = [...tasks.values()].filter((t) => t.set !== '').length;
    return {
      scenario: 'labels',
      agents: options.agents,
      tasks: tasks.size,
      rate: options.rate,
      warmup: options.warmup,
      workMs: WORK_MS,
      durationMs,
      unlabelled,
      labelled,
      bySet: Object.fromEntries(
        SETS.map((set) => [
          set.name,
          {
            ...waitsOfSet((s) => s === set.name),
            agents: Array.from({ length: options.agents }, (_, i) => i % FLEET.length).filter((p) =>
              set.profiles.includes(p),
            ).length,
          },
        ]),
      ),
      p90DifferenceMs: round(labelled.p90 - unlabelled.p90),
      boundMs: BOUND_MS,
      unclaimed: tasks.size - waits.size,
      requestsPerTask: Math.round((100 * requests.length) / Math.max(1, tasks.size)) / 100,
      requestsByOperation: Object.fromEntries(
        Object.entries(byOperation)
          .sort(([, a], [, b]) => b - a)
          .map(([operation, n]) => [operation, Math.round((100 * n) / Math.max(1, tasks.size)) / 100]),
      ),
      handBacksPerLabelledTask:
        Math.round(
          (100 * (byOperation['sqs:ChangeMessageVisibilityBatch'] ?? 0)) / Math.max(1, labelledTasks),
        ) / 100,
    };
  } finally {
    await stack.stop();
  }
}
