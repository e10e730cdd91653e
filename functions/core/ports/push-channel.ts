/**
 * The push channel: where its records are kept, how a frame reaches a connection (API Gateway's management API
 * in AWS, the local server's socket here), and the URL clients connect to.
 */
import type { Requirements } from '#domain/labels';
import type { PushFrame, WakeReason } from '#domain/push';
import type { ConnectionStore } from './connection-store';

export interface PushSender {
  /** Sends a frame; `gone` when the connection no longer exists (the caller forgets it). */
  send(connectionId: string, frame: PushFrame): Promise<'sent' | 'gone'>;
}

/** A wake due at `at` (ms): up to `count` idle agents of `queue` are woken then. */
export interface TimedWake {
  readonly queue: string;
  readonly at: number;
  readonly count: number;
  readonly reason: WakeReason;
  /** The tasks' requirements: only agents whose labels meet them are woken. */
  readonly require?: Requirements;
}

/**
 * Wakes idle agents later: a task held back (a delay, a retry's backoff, a schedule fired ahead of its time) wakes
 * an agent when it becomes claimable, not at the supervisor's next pass. In AWS, SQS messages delayed to the wake's
 * time, read by a function of their own; on this machine, the same queue on the emulator.
 */
export interface WakeTimer {
  /**
   * Arms the wakes. A wake is delivered no earlier than its time, rounded up to the second as an SQS delay is: a
   * hint sent before it with the same delay is visible by then. Throws when some could not be armed.
   */
  arm(wakes: readonly TimedWake[]): Promise<void>;
}

export interface PushChannel {
  readonly connections: ConnectionStore;
  readonly sender: PushSender;
  /** The WebSocket URL clients connect to; the ticket goes in its `ticket` query parameter. */
  readonly url: string;
  /** Wakes for later. @default none: a held-back task wakes an agent at the supervisor's pass after its time */
  readonly timer?: WakeTimer;
}
