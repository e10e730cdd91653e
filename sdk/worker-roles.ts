/**
 * The roles a Worker holds on its session: its own `roles`, each run by its handler while the agent holds it, and
 * the `RoleSubscription`s given the worker, which ride on the same session. Stopping gives them all up first, so
 * their next holders need not wait for the session to expire.
 */
import type { AgentSchedulerClient } from './client.js';
import { PollBackoff, type PollInterval } from './poll-backoff.js';
import { RoleFollower } from './role-follower.js';
import { sleep } from './sleep.js';
import { RoleAbortedError, type RoleHandler, type RoleHost, type WorkerEvents } from './worker-events.js';

/** What holding roles needs of the Worker. */
export interface RolesHost {
  readonly client: AgentSchedulerClient;
  /** The Worker whose session holds the roles. */
  readonly worker: RoleHost;
  readonly pollInterval: PollInterval;
  /** Aborted when the worker stops. */
  readonly stopSignal: AbortSignal;
  /** Whether the worker runs (not stopping nor stopped). */
  running(): boolean;
  emit<K extends 'gotRole' | 'lostRole'>(event: K, ...args: WorkerEvents[K]): void;
  report(error: unknown): void;
}

interface HeldRole {
  readonly subscription: RoleFollower;
  running?: { controller: AbortController; done: Promise<void> };
}

export class WorkerRoles {
  private readonly held = new Map<string, HeldRole>();
  /** Every role followed on this worker's session: its own `roles` and `RoleSubscription`s given this worker. */
  private readonly followers = new Set<{ release(): Promise<void> }>();

  constructor(private readonly host: RolesHost) {}

  /** How many of its own roles the worker follows. */
  get size(): number {
    return this.held.size;
  }

  /** Volunteers for `role`, and runs `handler` while the agent holds it; a handler that returns gives it up. */
  hold(role: string, handler: RoleHandler): void {
    const host = this.host;
    const report = (error: unknown) => host.report(error);
    const subscription = new RoleFollower(host.client, role, host.worker, false);
    const held: HeldRole = { subscription };
    this.held.set(role, held);
    subscription.on('error', report);
    subscription.on('lostRole', (lease, reason) => {
      host.emit('lostRole', lease, reason);
      held.running?.controller.abort(new RoleAbortedError(role, reason));
    });
    subscription.on('gotRole', (lease) => {
      host.emit('gotRole', lease);
      const controller = new AbortController();
      const done = (async () => {
        try {
          await handler({ role, leaseEpoch: lease.leaseEpoch, signal: controller.signal });
        } catch (error) {
          if (!controller.signal.aborted) report(error);
        }
        if (controller.signal.aborted || !host.running()) return;
        // The handler gave the role up: the next candidate gets it, and this agent joins the line again.
        await subscription.release().catch(report);
        await sleep(new PollBackoff(host.pollInterval).next(), host.stopSignal);
        if (host.running()) await subscription.volunteer().catch(report);
      })();
      held.running = { controller, done };
    });
    subscription.volunteer().catch(report);
  }

  /** Counts a follower riding on the worker's session; returns the call that stops counting it. */
  track(follower: { release(): Promise<void> }): () => void {
    this.followers.add(follower);
    return () => this.followers.delete(follower);
  }

  /**
   * On stop: the worker's own `roles` are given up, then those of subscriptions sharing its session (each stops
   * volunteering, as on its own `release()`).
   */
  async releaseAll(): Promise<void> {
    const report = (error: unknown) => this.host.report(error);
    await Promise.all(
      [...this.held.values()].map(async ({ subscription, running }) => {
        await subscription.close().catch(report);
        running?.controller.abort(new RoleAbortedError(subscription.role, 'released'));
        await running?.done;
      }),
    );
    await Promise.all([...this.followers].map((follower) => follower.release().catch(report)));
  }
}
