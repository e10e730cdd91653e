/**
 * A registered agent: who it is, which queues it serves and how many tasks it may hold at once.
 */
import type { Labels } from './labels';

export interface Agent {
  readonly agentId: string;
  readonly name: string;
  /** The task queues this agent serves: its capabilities. */
  readonly queues: readonly string[];
  readonly maxConcurrency: number;
  /** What it offers beyond its queues (`#domain/labels`); absent for an agent registered without (or before them). */
  readonly labels?: Labels;
  /** Interactive agents may hold roles (exclusive duties); batch agents only run tasks. */
  readonly interactive: boolean;
  readonly createdAt: number;
  readonly revokedAt?: number;
  /** SHA-256 of the agent's bearer token; the token itself is never stored. */
  readonly tokenHash?: string;
}
