/**
 * Typed errors of the SDK. Every failed call rejects with an `AgentSchedulerError` carrying the HTTP status, the
 * server's stable `code` and its request id; the two codes a worker must react to have classes of their own.
 */

export interface AgentSchedulerErrorInit {
  readonly status: number;
  readonly code: string;
  readonly message: string;
  readonly requestId?: string;
  /** How long the server asked the caller to wait before trying again, when it said so. */
  readonly retryAfterMs?: number;
  readonly cause?: unknown;
}

export class AgentSchedulerError extends Error {
  /** The HTTP status; 0 when no response was received. */
  readonly status: number;
  /** The server's stable error code (`TaskNotFound`, `LeaseLost`, ...). */
  readonly code: string;
  readonly requestId: string | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(init: AgentSchedulerErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** The lease presented is no longer held: expired, reclaimed, cancelled or finished differently. */
export class LeaseLostError extends AgentSchedulerError {}

/** The session presented is not the agent's live session; open a new one. */
export class SessionLostError extends AgentSchedulerError {}

/** No response was received: the connection failed or the attempt timed out. */
export class NetworkError extends AgentSchedulerError {}

/** The error for a non-2xx response, as the class that matches its code. */
export function errorForResponse(init: AgentSchedulerErrorInit): AgentSchedulerError {
  if (init.status === 409 && init.code === 'LeaseLost') return new LeaseLostError(init);
  if (init.status === 409 && init.code === 'SessionLost') return new SessionLostError(init);
  return new AgentSchedulerError(init);
}

/** A call ended by its caller's signal: nothing more is sent, and whether the server acted is unknown. */
export function abortedError(signal: AbortSignal, message: string): AgentSchedulerError {
  return new AgentSchedulerError({ status: 0, code: 'Aborted', message, cause: signal.reason });
}

/** An answer that asking again will not change (a 4xx other than 408 and 429): the caller may not, or it is not there. */
export const isRefusal = (error: unknown): boolean =>
  error instanceof AgentSchedulerError &&
  error.status >= 400 &&
  error.status < 500 &&
  error.status !== 408 &&
  error.status !== 429;

export const isAgentSchedulerError = (error: unknown, code?: string): error is AgentSchedulerError =>
  error instanceof AgentSchedulerError && (code === undefined || error.code === code);

/**
 * Throw this from a task handler when trying again cannot help: the task goes to `dead` rather than back to
 * its queue. Any error with `retryable === false` has the same effect.
 */
export class NonRetryableError extends Error {
  readonly retryable = false;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}
