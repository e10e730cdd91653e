/**
 * Batches: several submissions, or several completions, in one call. Each item is its own conditional write
 * with its own outcome (DynamoDB has no conditional batch write short of a transaction, which costs double), so
 * a batch saves API calls and function invocations, and one bad item never fails the others.
 */
import { isSchedulerError, ValidationError } from '#domain/errors';
import type { RateUsage } from '#domain/rate-limits';
import type { Task } from '#domain/task';
import { parseTaskSpec } from '#domain/task-spec';
import type { SchedulerContext } from './context';
import { submitDebounced } from './debounce';
import { dispatchMany, type PendingDispatch } from './dispatch';
import { completeTask, type LeaseRef, ownerSession } from './finish';
import type { SessionRead } from './session-reads';
import { checkBeforeWriting, commitSubmission, prepareSpec } from './submit';

/** Most items in one batch: a submit batch's bodies stay within the API's request size. */
export const BATCH_LIMITS = { submit: 25, complete: 10 } as const;

export type ItemOutcome<T> =
  | ({ readonly ok: true } & T)
  | {
      readonly ok: false;
      readonly error: { readonly code: string; readonly message: string; readonly status: number };
    };

/** A caller's mistake in one item is that item's outcome; anything else fails the whole call, as it would alone. */
export async function outcomeOf<T>(work: Promise<T>): Promise<ItemOutcome<T>> {
  try {
    return { ok: true, ...(await work) };
  } catch (error) {
    if (isSchedulerError(error) && error.expose) {
      return { ok: false, error: { code: error.code, message: error.message, status: error.statusCode } };
    }
    throw error;
  }
}

function items(input: unknown, limit: number, name: string): unknown[] {
  if (!Array.isArray(input) || input.length === 0 || input.length > limit) {
    throw new ValidationError(`${name}: an array of 1 to ${limit} items`);
  }
  return input;
}

export async function submitBatch(
  ctx: SchedulerContext,
  input: unknown,
): Promise<ItemOutcome<{ task: Task; created: boolean; debounced?: boolean }>[]> {
  const prepared = await Promise.all(
    items(input, BATCH_LIMITS.submit, 'tasks').map((raw) =>
      outcomeOf(
        Promise.resolve().then(async () => {
          const spec = parseTaskSpec(raw);
          // A debounced submission goes its own way (`debounce.ts`), after the others.
          if (spec.debounce) return { debounced: spec };
          const submission = prepareSpec(ctx, spec);
          await checkBeforeWriting(ctx, submission);
          return { submission };
        }),
      ),
    ),
  );
  // Every payload first, in shared requests, then each state.
  const written = await ctx.payloads.putPayloads(
    prepared.flatMap((p) => (p.ok && p.submission ? [p.submission.payload] : [])),
  );
  const pending: PendingDispatch[] = [];
  const settled = await Promise.allSettled(
    prepared.map((p) =>
      p.ok && p.submission ? outcomeOf(commitSubmission(ctx, p.submission, written, pending)) : p,
    ),
  );
  // Each hint is sent after its task is written, as for a single submission, and the hints share requests;
  // the tasks written are hinted even when another item fails the call.
  await dispatchMany(ctx, pending, 'submitted');
  const outcomes = settled.map((outcome) => {
    if (outcome.status === 'rejected') throw outcome.reason;
    return outcome.value;
  });
  // Debounced submissions one after the other, in the batch's order: of two of one window, the later one's payload
  // is the one its task keeps.
  for (const [index, p] of prepared.entries()) {
    if (p.ok && p.debounced) outcomes[index] = await outcomeOf(submitDebounced(ctx, p.debounced));
  }
  return outcomes as ItemOutcome<{ task: Task; created: boolean; debounced?: boolean }>[];
}

export interface Completion {
  readonly taskId: string;
  readonly leaseEpoch: number;
  readonly result?: unknown;
  /** Units used, by rate limit (`completeTask`'s `usage`). */
  readonly usage?: RateUsage;
}

export async function completeBatch(
  ctx: SchedulerContext,
  agentId: string,
  completions: readonly Completion[],
  /** The agent's session, read once for the batch (and the claim the call carries), not once per completion. */
  sessionRead?: Promise<SessionRead>,
): Promise<ItemOutcome<{ task: Task; replayed: boolean }>[]> {
  items(completions, BATCH_LIMITS.complete, 'tasks');
  const session = sessionRead ?? ownerSession(ctx, agentId);
  return Promise.all(
    completions.map((c) => {
      const lease: LeaseRef = { agentId, taskId: c.taskId, leaseEpoch: c.leaseEpoch };
      return outcomeOf(
        completeTask(ctx, lease, c.result, { sessionRead: session, ...(c.usage ? { usage: c.usage } : {}) }),
      );
    }),
  );
}
