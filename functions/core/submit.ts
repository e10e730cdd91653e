/**
 * Submitting a task: write it to DynamoDB, then send a hint to the SQS queue of its queue and priority.
 *
 * The write is the commitment; the send is best effort. If the send is lost, the task sits in the `due`
 * index with a time at which `reconcile` sends it again, so a committed task is never lost.
 */

import { IdempotencyConflictError, LeaseLostError, ValidationError } from '#domain/errors';
import { hintPayloadOf } from '#domain/hint';
import { newTaskId, sha256Base64Url, taskIdForIdempotencyKey } from '#domain/ids';
import type { Task } from '#domain/task';
import { LIMITS, parseTaskSpec, type TaskSpec } from '#domain/task-spec';
import { isTerminal } from '#domain/task-status';
import type { SchedulerContext } from './context';
import { checkDependencies, linkDependencies, recheckAt } from './dependencies';
import { dispatch, type PendingDispatch } from './dispatch';
import { emit } from './events';
import { payloadPurgeAtFor } from './lifetimes';
import type { NewPayload, WrittenPayloads } from './ports/payload-store';
import type { OwnerFence } from './ports/task-store';
import { checkTaskRateLimits } from './rate-limits';
import { dueAtAfterDispatch, dueNoLaterThanExpiry } from './timing';

export interface SubmitResult {
  readonly task: Task;
  /** False when an idempotency key named a task that already existed: nothing new was written. */
  readonly created: boolean;
  /**
   * Submitted with `debounce`: true when the submission joined a window already open (its task now carries the
   * submission's payload), false when it opened one.
   */
  readonly debounced?: boolean;
}

/** Everything that defines a task, hashed so a reused idempotency key can be told apart from a retry. */
export const specHashOf = (spec: TaskSpec): string => sha256Base64Url(JSON.stringify(specFields(spec)));

/**
 * Everything that defines a task but its payload: the submissions of a debounce window share it, and only their
 * payloads differ (`core/debounce.ts`).
 */
export const debounceSpecOf = (spec: TaskSpec): string =>
  sha256Base64Url(JSON.stringify(['debounce', ...specFields(spec, null)]));

/** The fields of a specification, in the order they are hashed; `payload` in the payload's place. */
const specFields = (spec: TaskSpec, payload: string | null = spec.payloadJson): unknown[] => [
  spec.queue,
  spec.priority,
  payload,
  spec.retryPolicy.maxAttempts,
  spec.retryPolicy.backoffBaseSeconds,
  spec.retryPolicy.backoffMaxSeconds,
  spec.timeoutSeconds,
  spec.delaySeconds,
  // Added fields hash only when given, so that the tasks of earlier specifications keep their hashes. The trace
  // context is not hashed: a retry sent from another span is the same submission.
  ...(spec.expiry ? [spec.expiry] : []),
  ...(spec.onFailureJson ? [{ onFailure: spec.onFailureJson }] : []),
  ...(spec.dependsOn ? [{ dependsOn: spec.dependsOn, onDependencyFailure: spec.onDependencyFailure }] : []),
  ...(spec.concurrencyKey === undefined ? [] : [{ concurrencyKey: spec.concurrencyKey }]),
  ...(spec.maxSnoozes === undefined ? [] : [{ maxSnoozes: spec.maxSnoozes }]),
  ...(spec.maxTimeoutSeconds === undefined ? [] : [{ maxTimeoutSeconds: spec.maxTimeoutSeconds }]),
  ...(spec.rateLimits === undefined ? [] : [{ rateLimits: spec.rateLimits }]),
  ...(spec.require === undefined ? [] : [{ require: spec.require }]),
  ...(spec.debounce === undefined
    ? []
    : [{ debounce: [spec.debounce.key, spec.debounce.windowSeconds, spec.debounce.maxWaitSeconds] }]),
];

/** A submission checked and shaped, ready to be written. */
export interface PreparedSubmission {
  readonly task: Task;
  readonly payload: NewPayload;
  /** Its first look in the due index; undefined for a task the list walk looks at (`list-walk.ts`). */
  readonly dueAt: number | undefined;
  /** Whether its hint can go to SQS now, and with what delay (whole seconds). */
  readonly sendsNow: boolean;
  readonly delaySeconds: number;
}

/** What internal callers add to a submission. */
export interface SubmitOptions {
  /** The exact moment the task may be claimed (a schedule fired ahead of its time), in place of `delaySeconds`. */
  readonly notBefore?: number;
  /** The task opens a debounce window (`core/debounce.ts`): only that path writes a debounced task. */
  readonly debounced?: true;
  /** The task is the `onFailure` of this dead task. */
  readonly failureOf?: Task['failureOf'];
  /** Submitted by the agent running `parentTaskId`, in the tree that `rootTaskId` began. */
  readonly lineage?: { readonly parentTaskId: string; readonly rootTaskId: string };
}

/** Checks a submission and shapes its records; writes nothing. */
export function prepareSubmission(
  ctx: SchedulerContext,
  input: unknown,
  options: SubmitOptions = {},
): PreparedSubmission {
  return prepareSpec(ctx, parseTaskSpec(input), options);
}

/** The queues a specification names (its own, its `onFailure`'s) exist. */
export function checkQueues(ctx: SchedulerContext, spec: TaskSpec): void {
  for (const [field, queue] of [
    ['queue', spec.queue],
    ['onFailure.queue', spec.onFailureJson && (JSON.parse(spec.onFailureJson) as { queue: string }).queue],
  ] as const) {
    if (queue && !ctx.queues.directory.has(queue)) {
      throw new ValidationError(`${field}: ${queue} does not exist`, { context: { queue } });
    }
  }
}

/** `prepareSubmission` of a specification already parsed. */
export function prepareSpec(
  ctx: SchedulerContext,
  spec: TaskSpec,
  options: SubmitOptions = {},
): PreparedSubmission {
  const { debounce } = spec;
  if (debounce && !options.debounced) {
    throw new ValidationError('debounce: only in a submission of its own (POST /v1/tasks or its batch)');
  }
  checkQueues(ctx, spec);
  // Functions of earlier releases would hand such a task to any agent of its queue: stacks raise the layout once
  // every function is of this release. A follow-up's requirements were checked with the task that names it.
  if (spec.require && !options.failureOf && ctx.settings.taskLayout < 5) {
    throw new ValidationError(
      'require: needs taskLayout 5 (this stack runs an earlier layout for an upgrade)',
    );
  }
  const now = ctx.now();
  // A debounced task is named by no idempotency key: its submissions' keys name each submission (`core/debounce.ts`).
  const taskId =
    spec.idempotencyKey && !debounce ? taskIdForIdempotencyKey(spec.idempotencyKey) : newTaskId();
  const specHash = specHashOf(spec);
  const visibleAt = debounce
    ? now + debounce.windowSeconds * 1_000
    : options.notBefore !== undefined && options.notBefore > now
      ? options.notBefore
      : now + spec.delaySeconds * 1_000;
  const delaySeconds = (visibleAt - now) / 1_000;
  const expiresAt =
    spec.expiry && ('at' in spec.expiry ? spec.expiry.at : visibleAt + spec.expiry.ttlSeconds * 1_000);
  if (expiresAt !== undefined && expiresAt <= visibleAt) {
    throw new ValidationError(
      `expiresAt: ${new Date(expiresAt).toISOString()} is not after the time the task may first be claimed (${new Date(visibleAt).toISOString()})`,
    );
  }
  // Delays SQS can carry ride on the message; longer ones wait in the due index until `reconcile` sends them. A
  // task with dependencies is sent when they are done.
  const waits = spec.dependsOn !== undefined;
  const payloadPurgeAt = payloadPurgeAtFor(ctx.settings, visibleAt);
  const sendsNow = !waits && delaySeconds <= LIMITS.sqsMaxDelaySeconds;
  const task: Task = {
    taskId,
    queue: spec.queue,
    priority: spec.priority,
    status: waits ? 'waiting' : 'queued',
    attempt: 0,
    retryPolicy: spec.retryPolicy,
    timeoutSeconds: spec.timeoutSeconds,
    leaseEpoch: 0,
    dispatchCount: sendsNow ? 1 : 0,
    specHash,
    payloadBytes: spec.payloadBytes,
    createdAt: now,
    updatedAt: now,
    ...(visibleAt > now ? { notBefore: visibleAt } : {}),
    ...(sendsNow ? { dispatchedAt: visibleAt } : {}),
    ...(spec.idempotencyKey && !debounce ? { idempotencyKey: spec.idempotencyKey } : {}),
    ...(expiresAt === undefined ? {} : { expiresAt }),
    ...(spec.onFailureJson === undefined ? {} : { hasOnFailure: true }),
    ...(options.failureOf ? { failureOf: options.failureOf } : {}),
    ...(spec.dependsOn
      ? {
          waitingOn: spec.dependsOn,
          dependencyCount: spec.dependsOn.length,
          ...(spec.onDependencyFailure ? { onDependencyFailure: spec.onDependencyFailure } : {}),
        }
      : {}),
    ...(options.lineage ?? {}),
    ...(spec.concurrencyKey === undefined ? {} : { concurrencyKey: spec.concurrencyKey }),
    ...(spec.maxSnoozes === undefined ? {} : { maxSnoozes: spec.maxSnoozes }),
    ...(spec.maxTimeoutSeconds === undefined ? {} : { maxTimeoutSeconds: spec.maxTimeoutSeconds }),
    ...(spec.rateLimits === undefined ? {} : { rateLimits: spec.rateLimits }),
    ...(spec.require === undefined ? {} : { require: spec.require }),
    ...(spec.traceparent === undefined ? {} : { traceparent: spec.traceparent }),
    ...(spec.tracestate === undefined ? {} : { tracestate: spec.tracestate }),
    payloadPurgeAt,
    // A debounced task's payload is replaced while its window is open, each payload an item of its own: items keyed
    // by the task (layout 1), since under layout 2 each would be one more entry of the task in its queue's list. The
    // task is listed by the `listed` index instead, as layout 1 lists every task.
    ...(ctx.settings.taskLayout >= 2 && !debounce ? { payloadListed: true } : {}),
    ...(debounce
      ? {
          debounceKey: debounce.key,
          debounceSpec: debounceSpecOf(spec),
          debounceUntil: now + debounce.maxWaitSeconds * 1_000,
        }
      : {}),
  };
  return {
    task,
    payload: {
      taskId,
      queue: task.queue,
      createdAt: task.createdAt,
      ...(task.payloadListed ? { payloadListed: true } : {}),
      payloadJson: spec.payloadJson,
      ...(spec.onFailureJson === undefined ? {} : { onFailureJson: spec.onFailureJson }),
      specHash,
      purgeAt: payloadPurgeAt,
    },
    // A task of layout 2 claimable at once (its hint goes now, no delay) and with no deadline to start has no entry
    // in the due index: its list entry (the payload item) is walked `reconcileAfterSeconds` after its creation, and
    // it gets one then only if it is still open. Most tasks have ended by then, and a task whose entry is written at
    // submit and removed at its end costs two write units more. A delayed task keeps its look at its time (with a
    // push channel, the backstop of its timed wake), which a walk two minutes after its creation would miss.
    dueAt: waits
      ? recheckAt(ctx, now, task)
      : task.payloadListed && sendsNow && visibleAt === now && expiresAt === undefined
        ? undefined
        : dueNoLaterThanExpiry(dueAtAfterDispatch(ctx, visibleAt, now), task),
    sendsNow,
    // The hint's SQS delay is rounded up to whole seconds: the task is never claimable early (notBefore is exact).
    delaySeconds: Math.ceil(delaySeconds),
  };
}

/**
 * Creates the state item of a submission whose payload is written, then sends its hint (or, for a batch, adds
 * it to `pending`). A state item that exists already means a retry, or an idempotency key reused for another
 * specification: a conflict.
 */
export async function commitSubmission(
  ctx: SchedulerContext,
  prepared: PreparedSubmission,
  written: WrittenPayloads,
  pending?: PendingDispatch[],
  parent?: OwnerFence & { readonly taskId: string },
): Promise<SubmitResult> {
  const task: Task = written.inObject(prepared.payload)
    ? { ...prepared.task, payloadInObject: true }
    : prepared.task;
  const send = async (target: Task, delaySeconds: number) => {
    // The hint carries the payload when it is small: the claim that takes the task need not read it.
    const payload = hintPayloadOf(target, prepared.payload.payloadJson);
    if (pending) pending.push({ task: target, delaySeconds, ...(payload ? { payload } : {}) });
    else await dispatch(ctx, target, delaySeconds, 'submitted', payload);
  };
  // Its dependencies were checked before its payload was written (`checkBeforeWriting`).
  const dependsOn = task.waitingOn;
  const outcome = parent
    ? await ctx.tasks.createUnder(task, prepared.dueAt, parent, ctx.now())
    : await ctx.tasks.create(task, prepared.dueAt);
  if ('parentLost' in outcome) {
    throw new LeaseLostError(`the lease on task ${parent?.taskId} at epoch ${parent?.leaseEpoch} is lost`, {
      context: { taskId: parent?.taskId, leaseEpoch: parent?.leaseEpoch },
    });
  }
  if (!outcome.created) {
    const existing = outcome.existing;
    if (existing.specHash !== task.specHash) {
      throw new IdempotencyConflictError(
        `idempotency key was already used for a different task (${task.taskId})`,
        { context: { taskId: task.taskId } },
      );
    }
    // A retry of a submission whose first call may have died between the write and the send: send again.
    // A duplicate hint is harmless, a missing one would cost a reconcile delay.
    if (existing.status === 'queued' && existing.leaseEpoch === 0 && prepared.sendsNow) {
      const now = ctx.now();
      await send(existing, Math.max(0, (existing.notBefore ?? now) - now) / 1_000);
    }
    // The payload was written again with the time of this call: one kept longer since is kept as long again.
    const keptUntil = existing.payloadPurgeAt;
    if (!isTerminal(existing.status) && keptUntil !== undefined && keptUntil > prepared.payload.purgeAt) {
      await ctx.payloads.keepPayload(existing, keptUntil);
    }
    // Likewise its links to its dependencies, which the first call may not have finished.
    if (existing.status === 'waiting' && dependsOn) {
      await linkDependencies(ctx, existing, dependsOn, prepared.payload.purgeAt);
    }
    return { task: existing, created: false };
  }
  if (dependsOn) await linkDependencies(ctx, task, dependsOn, prepared.payload.purgeAt);
  if (prepared.sendsNow) await send(task, prepared.delaySeconds);
  await emit(ctx, [
    {
      type: 'task.submitted',
      fields: {
        taskId: task.taskId,
        queue: task.queue,
        data: { priority: task.priority, ...(dependsOn ? { dependsOn: dependsOn.length } : {}) },
      },
    },
  ]);
  return { task, created: true };
}

/** What a submission checks by reading before anything is written: a refused one leaves no payload behind. */
export async function checkBeforeWriting(ctx: SchedulerContext, prepared: PreparedSubmission): Promise<void> {
  const { waitingOn, taskId, rateLimits, failureOf } = prepared.task;
  // A follow-up is the scheduler's: a limit no longer in force is passed over by its claims, not refused here.
  if (!failureOf) await checkTaskRateLimits(ctx, rateLimits);
  if (waitingOn) await checkDependencies(ctx, waitingOn, { dependentId: taskId });
}

/** One submission: the payload first, so a visible state item always has its payload; then the state. */
export async function submitTask(
  ctx: SchedulerContext,
  input: unknown,
  options: SubmitOptions = {},
): Promise<SubmitResult> {
  return submitSpec(ctx, parseTaskSpec(input), options);
}

/** `submitTask` of a specification already parsed (a debounced one goes through `submitDebounced`). */
export async function submitSpec(
  ctx: SchedulerContext,
  spec: TaskSpec,
  options: SubmitOptions = {},
): Promise<SubmitResult> {
  const prepared = prepareSpec(ctx, spec, options);
  await checkBeforeWriting(ctx, prepared);
  return commitSubmission(ctx, prepared, await ctx.payloads.putPayloads([prepared.payload]));
}
