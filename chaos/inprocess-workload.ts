/**
 * The work of the in-process chaos run besides the agents': the submissions (flat tasks, one in twenty doomed with
 * an `onFailure` hook, among them tasks that wait on a waitpoint and tasks that name the run's budget, then a
 * workflow's; among the flat ones too, tasks that require labels), and a schedule firing while the faults last, its occurrences delivered more than once.
 */
import { fireSchedule } from '#core/fire-schedule';
import { RETRYING } from './committed-writes';
import type { DagTask } from './dag';
import type { InProcessRun, ScheduleFire } from './inprocess-stack';
import { labelledSpecs } from './labels';
import { rateLimitedSpecs } from './rate-ledger';

/** Every twentieth flat task dies at once, with an onFailure. */
const HOOKED_EVERY = 20;

/**
 * Of every 25 waiting tasks, one is left to time out and resume, one to time out and fail (8 %); the racing callers
 * answer the rest, whose wait would time out only if no caller ever learnt of it.
 */
const TIMEOUT_PLANS: Readonly<Record<number, 'resume' | 'fail'>> = { 0: 'resume', 12: 'fail' };
const TIMEOUT_SECONDS = 3;
const ANSWERED_TIMEOUT_SECONDS = 120;

/** What a waiting task's payload asks of its first run: the suspension to send, and whether callers answer it. */
export interface WaitingPayload {
  readonly w: number;
  readonly wait: {
    readonly timeoutSeconds: number;
    readonly onTimeout?: 'resume' | 'fail';
    readonly checkpoint: unknown;
  };
  readonly answered: boolean;
}

function waitingPayload(w: number): WaitingPayload {
  const onTimeout = TIMEOUT_PLANS[w % 25];
  return {
    w,
    wait: onTimeout
      ? { timeoutSeconds: TIMEOUT_SECONDS, onTimeout, checkpoint: { asked: w } }
      : { timeoutSeconds: ANSWERED_TIMEOUT_SECONDS, checkpoint: { asked: w } },
    answered: onTimeout === undefined,
  };
}

/** The items of the lists, one from each in turn while they last. */
function interleaved<T>(...lists: readonly (readonly T[])[]): T[] {
  return Array.from({ length: Math.max(...lists.map((list) => list.length)) }, (_, i) =>
    lists.map((list) => list[i]),
  ).flatMap((row) => row.filter((item): item is T => item !== undefined));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Submissions, 25 at a time, each batch tried up to five times: acknowledged ones must never be lost. One flat
 * task in twenty dies at its first attempt, and has an onFailure hook submitted for it. The waiting tasks and the
 * rate-limited and the labelled ones go in turn with the flat ones, so they suspend and are answered, take units and
 * settle usage, wait in their requirement sets' lanes, while the faults last.
 */
export async function submitAll(run: InProcessRun, dag: readonly DagTask[]): Promise<void> {
  const { options, history, scheduler } = run;
  const specs = Array.from({ length: options.tasks }, (_, n) => ({
    queue: 'chaos',
    ...(n % HOOKED_EVERY === HOOKED_EVERY - 1
      ? { payload: { n, doom: true }, onFailure: { queue: 'chaos', payload: { hookFor: n } } }
      : { payload: { n } }),
    ...RETRYING,
    idempotencyKey: `chaos-${options.seed}-${n}`,
  }));
  const waiting = Array.from({ length: options.waitpoints ?? 0 }, (_, w) => ({
    queue: 'chaos',
    payload: waitingPayload(w),
    ...RETRYING,
    idempotencyKey: `chaos-${options.seed}-w${w}`,
  }));
  const limited = rateLimitedSpecs(options.seed, options.rateLimited ?? 0, { queue: 'chaos', ...RETRYING });
  const labelled = labelledSpecs(options.seed, options.labelled ?? 0, { queue: 'chaos', ...RETRYING });
  const all = [
    ...interleaved<Record<string, unknown>>(specs, waiting, limited, labelled),
    ...dag.map((t) => t.spec),
  ];
  for (let i = 0; i < all.length; i += 25) {
    const chunk = all.slice(i, i + 25);
    for (let attempt = 0; attempt < 5; attempt++) {
      const submitted = await run.record({ op: 'submit' }, () => scheduler.submitBatch(chunk));
      if (submitted.ok) {
        for (const outcome of submitted.value) if (outcome.ok) history.acknowledged.add(outcome.task.taskId);
        if (submitted.value.every((o) => o.ok)) break;
      }
    }
  }
}

/**
 * A schedule fires every 200 ms while the faults last; a third of its occurrences are delivered two or three times
 * at once, as EventBridge Scheduler may (each delivery with its own execution id).
 */
export async function tickSchedule(run: InProcessRun): Promise<void> {
  const { options, history, live } = run;
  // Occurrences in the past: a delivery ahead of its time would hold its task until then.
  const base = Date.now() - 10 * 24 * 60 * 60 * 1_000;
  for (let tick = 0; live.faultsOn && !live.stopping; tick++) {
    const deliveries = tick % 3 === 0 ? 2 + Math.floor(run.random() * 2) : 1;
    if (deliveries > 1) run.count('scheduleFireDuplicated');
    await Promise.all(
      Array.from({ length: deliveries }, async (_, d) => {
        const delivery: ScheduleFire = {
          schedule: 'chaos-tick',
          scheduledTime: new Date(base + tick * 60_000).toISOString(),
          executionId: `exec-${tick}-${d}`,
          overlap: 'allowAll',
          task: { queue: 'chaos', payload: { tick }, ...RETRYING },
        };
        const fired = await run.record({ op: 'submit' }, () =>
          fireSchedule(run.scheduler.ctx, options.mutateFire ? options.mutateFire(delivery) : delivery),
        );
        if (fired.ok && fired.value.taskId) history.acknowledged.add(fired.value.taskId);
      }),
    );
    await sleep(200);
  }
}
