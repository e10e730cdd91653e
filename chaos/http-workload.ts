/**
 * The work of the HTTP chaos run: what is submitted and what the handlers do.
 *
 * - A tenth of the tasks carry an `onFailure` and fail for good when they run (`NonRetryableError`), so the
 *   scheduler submits their hooks while the faults last; each dead task must have its hook.
 * - A tenth of the top-level tasks submit children through the SDK's child API (one or two, by key), and every one
 *   until the first child is acknowledged; a third of those submit them again as a retry does: the same keys must
 *   give the same tasks back.
 * - Two handlers in a hundred give their task back mid-run (`worker.release`).
 * - At agent sizes, each result is 50 to 250 KB of incompressible text and each checkpoint 15 KB (the server takes
 *   16 KB), so a heartbeat of a Worker running 25 tasks carries more than a body may: the SDK splits it.
 *
 * Every execution is recorded for the checker of the agents' side, with a digest of the result it returned: the
 * result the server keeps must be that one, byte for byte.
 */
import { createHash, randomBytes } from 'node:crypto';
import { NonRetryableError } from '#sdk/errors';
import type { ClaimedTask, SubmitTaskInput } from '#sdk/types';
import type { Worker } from '#sdk/worker';
import type { TaskContext } from '#sdk/worker-events';
import { RETRYING } from './committed-writes';
import type { Execution } from './history';

export type Sizes = 'small' | 'agent';

export interface Shape {
  /** Tasks each Worker runs at once. */
  readonly concurrency: number;
  /** Bytes of each result's text, drawn between these; absent: a result of a few bytes. */
  readonly resultBytes?: { readonly min: number; readonly max: number };
  /** Bytes of each checkpoint's text; absent: a few bytes. */
  readonly checkpointBytes?: number;
}

export const SHAPES: Readonly<Record<Sizes, Shape>> = {
  small: { concurrency: 4 },
  // Under the server's limits (`sdk/limits.ts`): a result up to 256 KB, a checkpoint up to 16 KB, each measured
  // as JSON with what wraps it.
  agent: { concurrency: 25, resultBytes: { min: 50 * 1024, max: 250 * 1024 }, checkpointBytes: 15 * 1024 },
};

/** What a task is, by its payload. */
interface Payload {
  readonly n?: number;
  /** Carries an `onFailure`, and fails for good when it runs. */
  readonly doomable?: boolean;
  readonly childOf?: string;
  readonly hookOf?: number;
}

/** The submissions of a run: `count` top-level tasks, a tenth of them with an `onFailure`. */
export function taskSpecs(seed: number, count: number, random: () => number): SubmitTaskInput[] {
  return Array.from({ length: count }, (_, n) => {
    const doomable = random() < 0.1;
    return {
      queue: 'chaos',
      payload: doomable ? { n, doomable } : { n },
      ...RETRYING,
      ...(doomable
        ? { maxAttempts: 3, onFailure: { queue: 'chaos', payload: { hookOf: n }, ...RETRYING } }
        : {}),
      idempotencyKey: `chaos-http-${seed}-${n}`,
    };
  });
}

/** Text of `bytes` characters that no compression shrinks. */
const incompressible = (bytes: number) =>
  randomBytes(Math.ceil((bytes * 3) / 4))
    .toString('base64')
    .slice(0, bytes);

export const digestOf = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');

export interface WorkloadState {
  readonly random: () => number;
  readonly faultsOn: () => boolean;
  readonly count: (kind: string) => void;
  readonly executions: Execution[];
  /** The digest of the result each execution returned, by `taskId#leaseEpoch`. */
  readonly results: Map<string, string>;
  /** Children the server acknowledged: their ids, to be waited for and checked as submissions are. */
  readonly onChildren: (taskIds: readonly string[]) => void;
  /** How many children the server has acknowledged so far. */
  readonly childrenMade: () => number;
  /** A retried child submission answered with other tasks than the first: a violation. */
  readonly onChildMismatch: (detail: string) => void;
  readonly shape: Shape;
  readonly leaseTtlSeconds: number;
  readonly cutOffShare: number;
  readonly longShare: number;
  readonly failShare: number;
}

type Agent = { readonly name: string; cutOffUntil: number; worker?: Worker };

/** Submits one or two children of `task` by key, and a third of the time submits them again as a retry would. */
async function submitChildren(state: WorkloadState, task: ClaimedTask, context: TaskContext): Promise<void> {
  const keys = state.random() < 0.5 ? ['a'] : ['a', 'b'];
  const children = keys.map((key) => ({
    key,
    queue: 'chaos',
    payload: { childOf: task.taskId },
    ...RETRYING,
  }));
  const again = state.random() < 1 / 3;
  const first = await context.submit(children).catch(() => undefined);
  if (!first) return;
  const ids = first.flatMap((outcome) => (outcome.ok ? [outcome.task.taskId] : []));
  state.onChildren(ids);
  if (!again || ids.length < keys.length) return;
  const second = await context.submit(children).catch(() => undefined);
  const idsAgain = second?.flatMap((outcome) => (outcome.ok ? [outcome.task.taskId] : []));
  if (idsAgain && idsAgain.length === ids.length && idsAgain.some((id, i) => id !== ids[i]))
    state.onChildMismatch(`${task.taskId}: ${ids.join(',')} then ${idsAgain.join(',')}`);
}

/** The handler of one agent's Worker. */
export const handlerFor =
  (state: WorkloadState, agent: Agent) =>
  async (task: ClaimedTask, context: TaskContext): Promise<unknown> => {
    const { random, shape } = state;
    const execution: Execution = {
      taskId: task.taskId,
      leaseEpoch: task.leaseEpoch,
      agent: agent.name,
      start: Date.now(),
    };
    state.executions.push(execution);
    const ended = () => {
      execution.end ??= Date.now();
    };
    context.signal.addEventListener('abort', ended, { once: true });
    try {
      const payload = task.payload as Payload;
      const draw = random();
      const cutOff = state.faultsOn() && draw < state.cutOffShare;
      if (cutOff) {
        state.count('agentCutOff');
        agent.cutOffUntil = Date.now() + state.leaseTtlSeconds * 1_000 * 3;
      } else if (state.faultsOn() && draw < state.cutOffShare + 0.005) {
        state.count('agentCrash');
        // Stops claiming and heartbeating at once; nothing is released.
        agent.cutOffUntil = Number.POSITIVE_INFINITY;
      } else if (state.faultsOn() && draw < state.cutOffShare + 0.025 && agent.worker) {
        // Gives the task back mid-run: it is claimed again, without counting as an attempt.
        state.count('handlerReleased');
        await agent.worker.release(task.taskId).catch(() => undefined);
        return undefined;
      }
      // Until the server has acknowledged a child, every top-level handler submits some, whatever the seed draws
      // (a run whose few draws fell on cut-off handlers, or whose submissions all lost their answers, made none).
      if (payload.n !== undefined && !cutOff && (state.childrenMade() === 0 || random() < 0.1))
        await submitChildren(state, task, context);
      // Most handlers are quick; one in twenty works for 3 s (past the lease's time to live, so only its
      // heartbeats keep it), checkpointing, until done or aborted.
      const steps = cutOff ? 160 : random() < state.longShare ? 60 : 1;
      for (let step = 0; step < steps && !context.signal.aborted; step++) {
        // The epoch says which lease wrote the checkpoint, for the checker.
        context.checkpoint({
          step,
          leaseEpoch: task.leaseEpoch,
          ...(shape.checkpointBytes ? { notes: incompressible(shape.checkpointBytes) } : {}),
        });
        await new Promise((resolve) => setTimeout(resolve, steps > 1 ? 50 : 5 + random() * 45));
      }
      if (payload.doomable) throw new NonRetryableError('chaos says never');
      if (random() < state.failShare) throw new Error('chaos says no');
      const size = shape.resultBytes;
      const result = size
        ? {
            taskId: task.taskId,
            text: incompressible(size.min + Math.floor(random() * (size.max - size.min))),
          }
        : { n: task.taskId };
      state.results.set(`${task.taskId}#${task.leaseEpoch}`, digestOf(result));
      return result;
    } finally {
      ended();
    }
  };
