/**
 * Typed errors of the scheduler. Each one carries a stable `code`, the HTTP status a caller should see, and
 * a small `context` object; the HTTP edge serialises `{ error: { code, message } }` from them and never
 * exposes `cause`, which may hold SDK errors with ARNs.
 */
export interface SchedulerErrorOptions {
  readonly cause?: unknown;
  readonly context?: Record<string, unknown>;
}

export abstract class SchedulerError extends Error {
  abstract readonly code: string;
  abstract readonly statusCode: number;
  readonly context: Record<string, unknown>;

  constructor(message: string, options: SchedulerErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.context = options.context ?? {};
  }

  /** Below 500 the message is meant for the caller; above, it is an internal failure. */
  get expose(): boolean {
    return this.statusCode < 500;
  }
}

/** The caller may not do this, whoever it is (an agent submitting to a queue agents may not submit to). */
export class ForbiddenError extends SchedulerError {
  readonly code = 'Forbidden';
  readonly statusCode = 403;
}

/** The input does not satisfy the contract (bad field, unknown queue, …). */
export class ValidationError extends SchedulerError {
  readonly code = 'ValidationError';
  readonly statusCode = 400;
}

/** A payload, result or checkpoint is larger than allowed. */
export class PayloadTooLargeError extends SchedulerError {
  readonly code = 'PayloadTooLarge';
  readonly statusCode = 413;
}

export class TaskNotFoundError extends SchedulerError {
  readonly code = 'TaskNotFound';
  readonly statusCode = 404;
  constructor(
    readonly taskId: string,
    options: SchedulerErrorOptions = {},
  ) {
    super(`task ${taskId} does not exist`, { ...options, context: { taskId, ...options.context } });
  }
}

export class AgentNotFoundError extends SchedulerError {
  readonly code = 'AgentNotFound';
  readonly statusCode = 404;
  constructor(
    readonly agentId: string,
    options: SchedulerErrorOptions = {},
  ) {
    super(`agent ${agentId} does not exist or was revoked`, {
      ...options,
      context: { agentId, ...options.context },
    });
  }
}

/** The agent was revoked: it may not open a session or register roles again. */
export class AgentRevokedError extends SchedulerError {
  readonly code = 'AgentRevoked';
  readonly statusCode = 403;
  constructor(
    readonly agentId: string,
    options: SchedulerErrorOptions = {},
  ) {
    super(`agent ${agentId} was revoked`, { ...options, context: { agentId, ...options.context } });
  }
}

/**
 * The caller presented a lease (task id + epoch) it no longer holds: the lease expired, was reclaimed and
 * granted to someone else, or the task was finished by this very owner with a different outcome.
 */
export class LeaseLostError extends SchedulerError {
  readonly code = 'LeaseLost';
  readonly statusCode = 409;
}

/** The agent session presented is not the agent's live session (expired, replaced or never opened). */
export class SessionLostError extends SchedulerError {
  readonly code = 'SessionLost';
  readonly statusCode = 409;
}

/** The requested transition is not allowed from the task's current status (e.g. cancel a succeeded task). */
export class InvalidTransitionError extends SchedulerError {
  readonly code = 'InvalidTransition';
  readonly statusCode = 409;
}

/** An idempotency key was reused with a different task specification. */
export class IdempotencyConflictError extends SchedulerError {
  readonly code = 'IdempotencyConflict';
  readonly statusCode = 409;
}

/** AWS throttled us or a dependency is briefly unavailable; the caller may retry the same request. */
export class ServiceUnavailableError extends SchedulerError {
  readonly code = 'ServiceUnavailable';
  readonly statusCode = 503;
}

export const isSchedulerError = (error: unknown): error is SchedulerError => error instanceof SchedulerError;

/** This deployment offers no push channel: its clients poll. */
export class PushUnavailableError extends SchedulerError {
  readonly code = 'PushUnavailable';
  readonly statusCode = 404;
  constructor() {
    super('this deployment offers no push channel; poll instead');
  }
}

export class ScheduleNotFoundError extends SchedulerError {
  readonly code = 'ScheduleNotFound';
  readonly statusCode = 404;
}

/** The request conflicts with what exists (a schedule name taken, a declared schedule deleted through the API). */
export class ConflictError extends SchedulerError {
  readonly code = 'Conflict';
  readonly statusCode = 409;
}

/** Why a role request breaks a rule of the role model. */
export type RoleConflictCode =
  | 'RoleAlreadyRegistered'
  | 'RoleAlreadyVolunteered'
  | 'RoleNotHeld'
  | 'AgentNotInteractive'
  | 'RoleLimitReached';

/**
 * A role request that breaks a rule of the model: a role is registered once and volunteered for once per agent,
 * only its holder (with the current epoch) can release it, and only interactive agents may volunteer.
 */
export class RoleConflictError extends SchedulerError {
  readonly statusCode = 409;
  constructor(
    readonly code: RoleConflictCode,
    message: string,
    options: SchedulerErrorOptions = {},
  ) {
    super(message, options);
  }
}

/** What to log of an error caught on a best-effort path: its name, never its message (it may hold ARNs). */
export const errorName = (error: unknown): string => (error instanceof Error ? error.name : String(error));
