/**
 * A task's progress, as its holder reports it while it runs: a percentage, a line for people, and a little data
 * (a step's name, counts). Only the last report is kept, in an item of its own beside the task's state (an update
 * of the state item would bill the whole item), fenced by the lease: a report is taken only from the agent that holds
 * the task, under the lease epoch it presents, and a report of an earlier lease never replaces a later one's.
 */
import { z } from 'zod';
import { jsonValueSchema } from './task-spec';

export const PROGRESS_LIMITS = {
  /** A report's data, serialised. */
  dataBytes: 16 * 1024,
  messageChars: 1_024,
  /** Reports in one call of the batch form. */
  perCall: 100,
} as const;

/** What a holder reports; at least one of the three. */
export const progressShape = {
  percent: z.number().min(0).max(100).optional(),
  message: z.string().min(1).max(PROGRESS_LIMITS.messageChars).optional(),
  data: jsonValueSchema.optional(),
};

/** The last report of a task, as kept. */
export interface Progress {
  readonly percent?: number;
  readonly message?: string;
  readonly dataJson?: string;
  /** When the server took it (epoch milliseconds). */
  readonly at: number;
  /** The lease it was reported under; its attempt. */
  readonly leaseEpoch: number;
  readonly attempt: number;
}

/** A report as the API shows it (`GET /v1/tasks/{id}`, push frames). */
export const progressView = (progress: Progress) => ({
  ...(progress.percent === undefined ? {} : { percent: progress.percent }),
  ...(progress.message === undefined ? {} : { message: progress.message }),
  ...(progress.dataJson === undefined ? {} : { data: JSON.parse(progress.dataJson) as unknown }),
  at: new Date(progress.at).toISOString(),
  attempt: progress.attempt,
});

/** Whether a report says anything: an empty one is refused rather than kept. */
export const saysSomething = (report: {
  readonly percent?: number;
  readonly message?: string;
  readonly data?: unknown;
}): boolean => report.percent !== undefined || report.message !== undefined || report.data !== undefined;
