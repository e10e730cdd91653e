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

/**
 * The base of the errors of one code: `class TaskNotFoundError extends errorKind('TaskNotFound', 404) {}` declares
 * the code and the status a caller sees in one place.
 */
function errorKind<const Code extends string>(code: Code, statusCode: number) {
  abstract class Kind extends SchedulerError {
    readonly code = code;
    readonly statusCode = statusCode;
  }
  return Kind;
}

/** The caller may not do this, whoever it is (an agent submitting to a queue agents may not submit to). */
export class ForbiddenError extends errorKind('Forbidden', 403) {}

/** The input does not satisfy the contract (bad field, unknown queue, …). */
export class ValidationError extends errorKind('ValidationError', 400) {}

/** A payload, result or checkpoint is larger than allowed. */
export class PayloadTooLargeError extends errorKind('PayloadTooLarge', 413) {}

export class TaskNotFoundError extends errorKind('TaskNotFound', 404) {
  constructor(
    readonly taskId: string,
    options: SchedulerErrorOptions = {},
  ) {
    super(`task ${taskId} does not exist`, { ...options, context: { taskId, ...options.context } });
  }
}

export class AgentNotFoundError extends errorKind('AgentNotFound', 404) {
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
export class AgentRevokedError extends errorKind('AgentRevoked', 403) {
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
export class LeaseLostError extends errorKind('LeaseLost', 409) {}

/** The agent session presented is not the agent's live session (expired, replaced or never opened). */
export class SessionLostError extends errorKind('SessionLost', 409) {}

/** No waitpoint by that id (or callback token). */
export class WaitpointNotFoundError extends errorKind('WaitpointNotFound', 404) {}

/** No named rate limit by that name is in force. */
export class RateLimitNotFoundError extends errorKind('RateLimitNotFound', 404) {}

/** A waitpoint already ended with another outcome (or by another request): nothing changed. */
export class WaitpointResolvedError extends errorKind('WaitpointResolved', 409) {}

/** A snooze of a task that has taken all the snoozes it may (`maxSnoozes`): nothing changed. */
export class SnoozeLimitError extends errorKind('SnoozeLimitReached', 409) {}

/** The requested transition is not allowed from the task's current status (e.g. cancel a succeeded task). */
export class InvalidTransitionError extends errorKind('InvalidTransition', 409) {}

/** An idempotency key was reused with a different task specification. */
export class IdempotencyConflictError extends errorKind('IdempotencyConflict', 409) {}

/** AWS throttled us or a dependency is briefly unavailable; the caller may retry the same request. */
export class ServiceUnavailableError extends errorKind('ServiceUnavailable', 503) {}

export const isSchedulerError = (error: unknown): error is SchedulerError => error instanceof SchedulerError;

/** This deployment offers no push channel: its clients poll. */
export class PushUnavailableError extends errorKind('PushUnavailable', 404) {
  constructor() {
    super('this deployment offers no push channel; poll instead');
  }
}

export class ScheduleNotFoundError extends errorKind('ScheduleNotFound', 404) {}

/** The request conflicts with what exists (a schedule name taken, a declared schedule deleted through the API). */
export class ConflictError extends errorKind('Conflict', 409) {}

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
