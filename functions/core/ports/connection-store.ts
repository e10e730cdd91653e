/**
 * Where the push channel keeps what it knows: connect tickets (by hash, single use), open connections, and for
 * each queue the agents listening to it, with whether each is idle and when it was last woken.
 */

import type { Labels } from '#domain/labels';
import type { PushPrincipal } from '#domain/push';

export interface PushConnection {
  readonly connectionId: string;
  readonly principal: PushPrincipal;
  /** The queues an agent's connection hears wakes for: the agent's own, as registered. */
  readonly queues: readonly string[];
  readonly connectedAt: number;
}

/** An agent listening to a queue, as a wake finds it. */
export interface Listener {
  readonly agentId: string;
  readonly connectionId: string;
  /** Every queue the agent listens to (a wake through one queue marks it busy in all of them). */
  readonly queues: readonly string[];
  /** The tasks its last empty claim could have taken: one wake of it stands for that many. */
  readonly capacity: number;
  /** The labels its session claims under, as its last empty claim marked them: it is woken only for tasks they meet. */
  readonly labels?: Labels;
  /** Where the store found it, for the write that takes it (the store's own business). */
  readonly partition?: string;
}

export interface ConnectionStore {
  /** Keeps a ticket's hash for its caller until `expiresAt`. */
  putTicket(hash: string, principal: PushPrincipal, expiresAt: number): Promise<void>;
  /** Uses a ticket up: its caller if it was good at `now` and not used before; undefined otherwise. */
  takeTicket(hash: string, now: number): Promise<PushPrincipal | undefined>;
  /**
   * Records a connection; an agent's also becomes its agent's connection and listens to its queues (not yet
   * idle), replacing an older connection of the same agent.
   */
  open(connection: PushConnection, expiresAt: number): Promise<void>;
  get(connectionId: string): Promise<PushConnection | undefined>;
  /** Forgets a connection and what it listened to (records a newer connection of the same agent wrote stay). */
  close(connection: PushConnection): Promise<void>;
  /** The connection an agent listens on, if any. */
  connectionOf(agentId: string): Promise<string | undefined>;
  /**
   * Marks an agent idle in the given queues it listens to, able to take `capacity` tasks, and says when it was last
   * woken through them and whether it was idle in all of them already; undefined if it listens to none of them.
   */
  markIdle(
    agentId: string,
    queues: readonly string[],
    capacity?: number,
    labels?: Labels,
  ): Promise<{ readonly wokenAt: number; readonly wasIdle: boolean } | undefined>;
  /**
   * Idle listeners of a queue not woken since `wokenBefore`, in no set order: enough for `capacity` tasks if the
   * part of the listeners read first has them, otherwise every one there is.
   */
  findIdle(
    queue: string,
    wokenBefore: number,
    capacity: number,
    /** Only listeners this accepts are found, and count toward `capacity` (those whose labels meet the tasks'). */
    serves?: (listener: Listener) => boolean,
  ): Promise<Listener[]>;
  /**
   * Takes an idle listener for one wake: it is no longer idle and was woken `now`, unless another wake took it
   * first or it was woken after `wokenBefore` (false).
   */
  takeForWake(queue: string, listener: Listener, now: number, wokenBefore: number): Promise<boolean>;
  /**
   * Sets back the cooldown of every listener of `queue` woken after `wokenAfter` (its `wokenAt`, as if never woken),
   * each only if not woken again since it was read, so that the next wake may reach it at once: the number set back.
   */
  clearWakeMarks(queue: string, wokenAfter: number): Promise<number>;
  /** Marks the agent busy in its other queues (after a wake through one), so no second wake finds it idle there. */
  markBusy(listener: Listener, queues: readonly string[]): Promise<void>;
  /** The connection hears when the task ends, until `expiresAt`. */
  watch(taskId: string, connectionId: string, expiresAt: number): Promise<void>;
  /** The connections watching a task. */
  watchers(taskId: string): Promise<string[]>;
}
