/**
 * Where a task's payload is kept: written once at submit, beside its `onFailure` specification, in an item named by
 * the task's specification (or, when large, in an object that item names); read by each claim; kept longer while
 * the task may still run.
 */
import type { Task } from '#domain/task';

/**
 * What names a task's payload item: its specification and, when the item is also the task's list entry
 * (`payloadListed`, layout 2), its queue and creation.
 */
export type PayloadOwner = Pick<Task, 'taskId' | 'specHash' | 'queue' | 'createdAt' | 'payloadListed'>;

/** A payload to write: the task's, with the hash of its specification and when it may be purged. */
export interface NewPayload extends PayloadOwner {
  readonly payloadJson: string;
  /** The task's `onFailure` specification (JSON), kept beside its payload. */
  readonly onFailureJson?: string;
  readonly purgeAt: number;
}

/** What `keepPayload` needs to know of a task to find everything kept for it. */
export type PayloadHolder = PayloadOwner &
  Pick<Task, 'status' | 'payloadInObject' | 'dependencyCount' | 'waitingOn'>;

/** What `putPayloads` wrote: whether a payload went to an object of its own rather than into its item. */
export interface WrittenPayloads {
  inObject(payload: Pick<NewPayload, 'taskId' | 'specHash'>): boolean;
}

export interface PayloadStore {
  // Submission.
  /** Writes payloads (no condition: a payload's key names its specification, so a retry writes the same). */
  putPayloads(payloads: readonly NewPayload[]): Promise<WrittenPayloads>;
  /** Lets go of a payload's object once its task can never run again. */
  deletePayloadObject(task: Pick<Task, 'taskId' | 'specHash'>): Promise<void>;
  /** Takes back a payload (its item and its object) written for a task whose state item was then never written. */
  deletePayload(task: PayloadOwner): Promise<void>;

  // Reads.
  /** Payload JSON by task id; a task whose payload is gone (past its retention) is missing. */
  getPayloads(tasks: readonly PayloadOwner[]): Promise<Map<string, string>>;
  /** The `onFailure` specification (JSON) kept beside the task's payload; undefined if it has none (or is gone). */
  getOnFailure(task: PayloadOwner): Promise<string | undefined>;
  /**
   * Keeps what a task still to run needs until `purgeAt` (epoch seconds) at least: its payload item (and with it
   * its `onFailure`), its payload's S3 object, the inputs its dependencies left it and, while it waits, its links
   * in their partitions; then records `purgeAt` on the state item (`payloadPurgeAt`). Extends only, never shortens; a record already gone stays gone.
   * It reaches past the payload, to the records of other kinds, because of that order: the state item is written
   * last, so it never promises more than the records it names hold.
   */
  keepPayload(task: PayloadHolder, purgeAt: number): Promise<void>;
}
