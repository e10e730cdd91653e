/**
 * Debounce: submissions of one queue, key and specification (all of it but the payload) that come within
 * `windowSeconds` of each other collapse into one task. It is claimable once no submission came for `windowSeconds`,
 * or `maxWaitSeconds` after the first, whichever is sooner, and it carries the payload of the submission that
 * joined it last. Each submission is answered with that task.
 *
 * - **The window's record** (`DebounceStore`, one per queue, key and specification) names the window's task. A
 *   submission reads it (eventually consistent) and either joins that task or, when there is no open window, opens
 *   one: a new task and the record pointed at it, in one transaction conditioned on the record still naming the task
 *   it named (or on there being none). Two submissions that both found the window closed cannot both open one: the
 *   second transaction is refused, and that submission reads the record again, consistently, and joins the first
 *   one's task. A stale copy of the record costs the same retry, never a second task.
 * - **The end of a window** is decided on its task's item alone: its time has come, or it was granted, ended or
 *   cancelled. A task that ended its window unclaimed is marked closed in the very transaction that opens the next
 *   window, so a submission that decided to join it on a clock behind the opener's (or was held up on its way)
 *   cannot join it after its successor exists: of two windows of one key, only the newest takes submissions.
 * - **A join** is one conditional write of the task's state item: it holds only while the task is queued, was never
 *   granted, is not closed, and is not yet claimable (`notBefore` after now). It moves `notBefore` (and `readyAt`) to now plus the
 *   window, never past the first submission plus the longest wait, and points the task at the new payload. A grant is
 *   conditioned on `notBefore <= now` on the same item, so a submission either joins before the grant (which then
 *   carries its payload) or finds the task granted and opens the next window: none is lost, and the task a
 *   submission is answered with runs its payload or a later one. Parallel joins are ordered by DynamoDB; the last to
 *   land is the payload the task runs.
 * - **The payload**, written once elsewhere, is never rewritten: each submission writes its own payload item (and
 *   S3 object, for a large one) under its own specification hash before its join, and the join moves the task's
 *   `specHash` to it. A claim reads the payload named by the state its grant wrote, so it always gets the payload of
 *   the task it was granted; a hint that carried the first payload carries it under the first hash, which the grant
 *   no longer has, and the claim reads the item instead. Debounced tasks keep their payload items by task (layout 1
 *   keys), so replaced ones are no entries of the queue's list; they expire with their purge time (their objects
 *   with the bucket's lifecycle rule).
 * - **Its hint** goes when the window opens, delayed by the window: when joins have moved the task's time since, a
 *   claim that meets the hint early hides it until then (and, with a push channel, arms a timed wake for it); a
 *   window longer than SQS's delay waits in the due index, and `reconcile` sends it once it is near, reading the time
 *   as it then is.
 * - **Idempotency keys** name submissions, not tasks: a key seen before (kept a day) is answered with the task its
 *   submission went to, and changes nothing (the same key for another submission: a conflict). A retry therefore
 *   neither joins its window a second time (which could put back an older payload over a later one) nor opens a
 *   window of its own once its first attempt's has closed. It costs the submission one more write.
 */
import { IdempotencyConflictError, ServiceUnavailableError } from '#domain/errors';
import { hintPayloadOf } from '#domain/hint';
import type { Task } from '#domain/task';
import { parseTaskSpec, type TaskSpec } from '#domain/task-spec';
import type { SchedulerContext } from './context';
import { dispatch } from './dispatch';
import { emit } from './events';
import { payloadPurgeAtFor } from './lifetimes';
import type { DebouncedSubmission, DebounceRef, DebounceWindow } from './ports/debounce-store';
import type { NewPayload } from './ports/payload-store';
import {
  checkQueues,
  debounceSpecOf,
  prepareSpec,
  type SubmitOptions,
  type SubmitResult,
  specHashOf,
  submitSpec,
} from './submit';

/**
 * Rounds of join and open before the submission gives up with a 503 (the caller retries). Each round that fails
 * means another submission changed the window meanwhile: a join never fails against another join, only against the
 * window closing, so two rounds are the most a submission takes unless windows close under it again and again.
 */
const ROUNDS = 8;

/** How long what a submission with an idempotency key was answered is kept for its retries. */
const SUBMISSION_KEPT_SECONDS = 24 * 60 * 60;

/** A submission from the API: debounced when it says so, else as any other. */
export async function submitAny(
  ctx: SchedulerContext,
  input: unknown,
  options: SubmitOptions = {},
): Promise<SubmitResult> {
  const spec = parseTaskSpec(input);
  return spec.debounce ? submitDebounced(ctx, spec) : submitSpec(ctx, spec, options);
}

/** A submission with `debounce`: joins the open window of its key and specification, or opens one. */
export async function submitDebounced(ctx: SchedulerContext, spec: TaskSpec): Promise<SubmitResult> {
  const { debounce } = spec;
  if (!debounce) throw new Error('submitDebounced: a specification without debounce');
  checkQueues(ctx, spec);
  const ref: DebounceRef = { queue: spec.queue, key: debounce.key, specOf: debounceSpecOf(spec) };
  const specHash = specHashOf(spec);
  const submissionKey = spec.idempotencyKey;
  const seen = await ctx.debounces.read(ref, submissionKey, false);
  if (seen.submission) {
    const replayed = await replay(ctx, seen.submission, specHash);
    if (replayed) return replayed;
  }
  const answer = async (result: SubmitResult): Promise<SubmitResult> => {
    if (submissionKey !== undefined) {
      const submission = { taskId: result.task.taskId, specHash, opened: result.created };
      const purgeAt = Math.ceil(ctx.now() / 1_000) + SUBMISSION_KEPT_SECONDS;
      await ctx.debounces.remember(ref, submissionKey, submission, purgeAt);
    }
    return result;
  };
  let window = seen.window;
  for (let round = 0; round < ROUNDS; round++) {
    let replacing: { taskId: string; close: boolean } | undefined;
    if (window) {
      const joined = await join(ctx, spec, ref, specHash, window);
      if ('task' in joined) return answer({ task: joined.task, created: false, debounced: true });
      const { current } = joined;
      // Open after all (a submission whose clock is behind moved its time since): join it.
      if (current && takesSubmissions(current, ctx.now())) continue;
      // Its task is claimable, granted, ended or gone: the window is over, and this submission opens the next. One
      // still queued and never granted is closed with it, for good.
      replacing = {
        taskId: window.taskId,
        close: current?.status === 'queued' && current.leaseEpoch === 0 && !current.debounceClosed,
      };
    }
    const opened = await open(ctx, spec, ref, replacing);
    if (opened) return answer({ task: opened, created: true, debounced: false });
    // Another submission opened the window first, or the copy of the record read was stale: join the one it names.
    window = (await ctx.debounces.read(ref, undefined, true)).window;
  }
  throw new ServiceUnavailableError(
    `debounce: the window of ${debounce.key} changed under this submission ${ROUNDS} times; try again`,
  );
}

/** Whether a window's task still takes submissions at `now`: queued, never granted, not closed, not yet due. */
const takesSubmissions = (task: Task, now: number): boolean =>
  task.status === 'queued' &&
  task.leaseEpoch === 0 &&
  !task.debounceClosed &&
  task.notBefore !== undefined &&
  task.notBefore > now;

/**
 * The window's task with this submission's payload; or, if it no longer takes submissions, the task as it stands
 * (absent if it is gone). The payload item goes first, so the task never names a payload that is not there.
 */
async function join(
  ctx: SchedulerContext,
  spec: TaskSpec,
  ref: DebounceRef,
  specHash: string,
  window: DebounceWindow,
): Promise<{ readonly task: Task } | { readonly current?: Task | undefined }> {
  const windowMs = (spec.debounce?.windowSeconds ?? 0) * 1_000;
  // Past its longest wait the window takes nothing: only how its task stands is wanted.
  if (window.closesBy <= ctx.now()) return { current: await ctx.tasks.get(window.taskId) };
  const payload: NewPayload = {
    taskId: window.taskId,
    queue: spec.queue,
    // Keyed by the task and the specification (layout 1): the creation is not part of the key.
    createdAt: ctx.now(),
    specHash,
    payloadJson: spec.payloadJson,
    ...(spec.onFailureJson === undefined ? {} : { onFailureJson: spec.onFailureJson }),
    purgeAt: payloadPurgeAtFor(ctx.settings, Math.min(ctx.now() + windowMs, window.closesBy)),
  };
  const written = await ctx.payloads.putPayloads([payload]);
  const now = ctx.now();
  const notBefore = Math.min(now + windowMs, window.closesBy);
  const ttlSeconds = spec.expiry && 'ttlSeconds' in spec.expiry ? spec.expiry.ttlSeconds : undefined;
  const joined = await ctx.debounces.join(
    ref,
    window.taskId,
    {
      specHash,
      payloadBytes: spec.payloadBytes,
      payloadInObject: written.inObject(payload),
      notBefore,
      payloadPurgeAt: payload.purgeAt,
      ...(ttlSeconds === undefined ? {} : { expiresAt: notBefore + ttlSeconds * 1_000 }),
    },
    now,
  );
  return joined.ok ? { task: joined.task } : { current: joined.current };
}

/**
 * A new task for the window, held back by the window, and the record pointed at it; undefined if the record no
 * longer names `replacing` (another submission opened the window first) or the task to close changed.
 */
async function open(
  ctx: SchedulerContext,
  spec: TaskSpec,
  ref: DebounceRef,
  replacing: { taskId: string; close: boolean } | undefined,
): Promise<Task | undefined> {
  const prepared = prepareSpec(ctx, spec, { debounced: true });
  const written = await ctx.payloads.putPayloads([prepared.payload]);
  const task: Task = written.inObject(prepared.payload)
    ? { ...prepared.task, payloadInObject: true }
    : prepared.task;
  if (!(await ctx.debounces.open(ref, task, prepared.dueAt, replacing, ctx.now()))) {
    // The payload item of a task that never was: no state item names it and no list shows it (it is keyed by the
    // task), and it expires with its purge time. Its object, if any, goes now (S3 does not bill a DELETE).
    if (task.payloadInObject) await ctx.payloads.deletePayloadObject(task).catch(() => undefined);
    return undefined;
  }
  if (prepared.sendsNow) {
    const payload = hintPayloadOf(task, prepared.payload.payloadJson);
    await dispatch(ctx, task, prepared.delaySeconds, 'submitted', payload);
  }
  await emit(ctx, [
    {
      type: 'task.submitted',
      fields: { taskId: task.taskId, queue: task.queue, data: { priority: task.priority } },
    },
  ]);
  return task;
}

/** A submission sent again under its idempotency key: the task it went to, as it is now; nothing written. */
async function replay(
  ctx: SchedulerContext,
  submission: DebouncedSubmission,
  specHash: string,
): Promise<SubmitResult | undefined> {
  if (submission.specHash !== specHash) {
    throw new IdempotencyConflictError(
      `idempotency key was already used for a different submission (task ${submission.taskId})`,
      { context: { taskId: submission.taskId } },
    );
  }
  const task = await ctx.tasks.get(submission.taskId);
  return task && { task, created: false, debounced: !submission.opened };
}
