/**
 * A Worker on the push channel: while its socket is up, a `wake` for one of the worker's queues ends the claim
 * loop's idle wait, a role grant brings a heartbeat at once (its notices start the role's handler), and a cancel
 * aborts the handler of the task it names. A channel
 * that connects or goes down also ends the wait: the next claim says whether the worker listens.
 */
import type { AgentSchedulerClient } from './client.js';
import { PushChannel, type PushFrame, type PushOptions } from './push-channel.js';
import type { WorkerLog } from './worker-events.js';

/** What listening needs of the Worker. */
export interface PushHost {
  readonly client: AgentSchedulerClient;
  readonly queues: readonly string[] | undefined;
  readonly log: WorkerLog;
  /** Aborted when the worker stops. */
  readonly stopSignal: AbortSignal;
  /** Whether the worker runs (not stopping nor stopped). */
  running(): boolean;
  hasSession(): boolean;
  /** Ends the claim loop's idle wait now, or the next one. */
  nudge(): void;
  /** A heartbeat now. */
  beat(): void;
  /** The task held under `leaseEpoch` was cancelled: its handler is aborted. */
  cancelled(taskId: string, leaseEpoch: number): void;
}

export class WorkerPush {
  private channel: PushChannel | undefined;

  constructor(
    private readonly host: PushHost,
    /** Undefined when the worker polls only. */
    private readonly options: PushOptions | undefined,
  ) {}

  /** Whether the push channel's socket is up now. */
  get listening(): boolean {
    return this.channel?.connected === true;
  }

  open(): void {
    const { host, options } = this;
    if (!options || this.channel) return;
    const channel = new PushChannel({
      ...options,
      ticket: () => host.client.pushTicket('agent', { signal: host.stopSignal }),
    });
    this.channel = channel;
    channel.on('frame', (frame) => this.heard(frame));
    // A new connection listens but is not idle yet, and a lost one hears nothing: either way, claim now (saying
    // whether it listens) rather than at the end of a wait set for the other case.
    channel.on('connected', () => {
      host.log.debug('push channel connected', {});
      host.nudge();
    });
    channel.on('disconnected', () => {
      if (this.channel !== channel) return;
      host.log.info('push channel down; polling until it is back', {});
      host.nudge();
    });
    channel.on('unavailable', (reason) => {
      host.log.info('no push channel; polling', {
        reason: reason instanceof Error ? reason.message : String(reason),
      });
    });
    channel.on('failure', (error) => {
      host.log.debug('push channel connect failed', {
        error: error instanceof Error ? error.message : String(error),
      });
    });
    channel.start();
  }

  close(): void {
    const channel = this.channel;
    this.channel = undefined;
    channel?.close();
  }

  private heard(frame: PushFrame): void {
    const host = this.host;
    if (!host.running()) return;
    if (frame.type === 'wake') {
      if (!host.queues || host.queues.includes(frame.queue)) host.nudge();
    } else if (frame.type === 'cancel') {
      host.cancelled(frame.taskId, frame.leaseEpoch);
    } else if (frame.type === 'role' && host.hasSession()) {
      // The grant is in the session's notices: a heartbeat now brings it (and starts the role's handler).
      host.beat();
    }
  }
}
