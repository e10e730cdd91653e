/**
 * A RoleSubscription follows one role for an agent, as Fluid Framework's AgentScheduler does for a task:
 * `volunteer()` joins the role's candidates, `gotRole` fires when this agent is granted it, `lostRole` when the
 * grant ends (released, taken away, or the session lost), and `haveRole()` says whether it holds it now.
 *
 * A role lives as long as the agent's session: the subscription rides on a Worker's session and heartbeats (one
 * write keeps every task and role of the agent). Without a worker it keeps a session of its own, which replaces
 * any other session of the same agent: an agent that also runs tasks gives its Worker `roles` instead.
 */
import type { AgentSchedulerClient } from './client.js';
import { RoleFollower } from './role-follower.js';
import { Worker } from './worker.js';

export type { RoleLostReason, RoleSubscriptionEvents } from './role-follower.js';

export interface RoleSubscriptionOptions {
  /** The worker whose session holds the role. @default a session of the subscription's own */
  readonly worker?: Worker;
}

export class RoleSubscription extends RoleFollower {
  constructor(client: AgentSchedulerClient, role: string, options: RoleSubscriptionOptions = {}) {
    super(client, role, options.worker ?? new Worker({ client }), options.worker === undefined);
  }
}
