/**
 * Agents and their sessions: register, open a session, heartbeat.
 *
 * As in Fluid's AgentScheduler, an agent keeps its tasks while it is connected: its leases are tied to its
 * session, and one heartbeat write keeps all of them alive. Opening a new session ends the old one, and the
 * old session's tasks are taken back at once.
 */
import { z } from 'zod';
import type { Agent } from '#adapters/agent-table';
import { AgentNotFoundError, errorName, SessionLostError, ValidationError } from '#domain/errors';
import { newAgentId, newSessionId, TASK_ID_PATTERN } from '#domain/ids';
import type { AgentSession } from '#domain/task';
import {
  describeIssues,
  encodeBoundedJson,
  jsonValueSchema,
  LIMITS,
  printableNameSchema,
  queueNameSchema,
} from '#domain/task-spec';
import type { SchedulerContext } from './context';
import { emit } from './events';
import { reclaimTask } from './reclaim';
import { handOverRolesOf } from './roles';

export const agentSpecSchema = z.strictObject({
  name: printableNameSchema(128),
  queues: z.array(queueNameSchema).min(1).max(32),
  maxConcurrency: z.int().min(1).max(1_000).default(1),
  interactive: z.boolean().default(true),
});

export type AgentSpecInput = z.input<typeof agentSpecSchema>;

export interface RegisteredAgent {
  readonly agent: Agent;
  /** The bearer token, when one was minted: shown once, stored only as a hash. */
  readonly token?: string;
}

export async function registerAgent(
  ctx: SchedulerContext,
  input: unknown,
  mintToken?: (agentId: string) => { token: string; tokenHash: string },
): Promise<RegisteredAgent> {
  const parsed = agentSpecSchema.safeParse(input);
  if (!parsed.success) throw new ValidationError(describeIssues(parsed.error));
  const unknown = parsed.data.queues.filter((q) => !ctx.queues.directory.has(q));
  if (unknown.length > 0) throw new ValidationError(`queues: ${unknown.join(', ')} does not exist`);
  const agentId = newAgentId();
  const minted = mintToken?.(agentId);
  const agent: Agent = {
    agentId,
    ...parsed.data,
    queues: [...new Set(parsed.data.queues)],
    createdAt: ctx.now(),
    ...(minted ? { tokenHash: minted.tokenHash } : {}),
  };
  await ctx.agents.create(agent);
  return { agent, ...(minted ? { token: minted.token } : {}) };
}

export interface OpenedSession {
  readonly sessionId: string;
  readonly leaseTtlSeconds: number;
  readonly heartbeatIntervalSeconds: number;
  readonly expiresAt: number;
}

export async function openSession(ctx: SchedulerContext, agentId: string): Promise<OpenedSession> {
  const agent = await ctx.agents.get(agentId);
  if (!agent || agent.revokedAt !== undefined) throw new AgentNotFoundError(agentId);
  const now = ctx.now();
  const session: AgentSession = {
    agentId,
    sessionId: newSessionId(),
    queues: agent.queues,
    maxConcurrency: agent.maxConcurrency,
    startedAt: now,
    heartbeatAt: now,
    expiresAt: now + ctx.settings.leaseTtlSeconds * 1_000,
    held: {},
    cancelled: {},
    lost: {},
    roles: {},
    rolesPicked: {},
    rolesLost: {},
  };
  const previous = await ctx.sessions.open(session);
  // The old session's roles pass to other volunteers now, as its leases do below.
  if (previous && Object.keys(previous.roles).length > 0) await handOverRolesOf(ctx, previous);
  if (previous) {
    // The old session's leases are lost now; take its tasks back rather than wait for their deadlines.
    for (const taskId of Object.keys(previous.held)) {
      await reclaimTask(ctx, taskId, { session: previous, reason: 'session' }).catch((error: unknown) =>
        ctx.log.warn('could not take back a task of a replaced session; the sweep will', {
          taskId,
          error: errorName(error),
        }),
      );
    }
  }
  await emit(ctx, [{ type: 'agent.online', fields: { agentId, data: { sessionId: session.sessionId } } }]);
  return {
    sessionId: session.sessionId,
    leaseTtlSeconds: ctx.settings.leaseTtlSeconds,
    heartbeatIntervalSeconds: ctx.settings.heartbeatIntervalSeconds,
    expiresAt: session.expiresAt,
  };
}

export const checkpointsSchema = z
  .record(z.string().regex(TASK_ID_PATTERN, 'a task id'), jsonValueSchema)
  .refine((record) => Object.keys(record).length <= 100, 'at most 100 checkpoints per heartbeat');

/** A role and the epoch of the grant a notice is about. */
export interface RoleLease {
  readonly role: string;
  readonly leaseEpoch: number;
}

export interface HeartbeatResult {
  readonly expiresAt: number;
  /** Tasks of this session an operator cancelled: stop working on them. */
  readonly cancelled: string[];
  /** Tasks this session held and no longer does (taken back, or their checkpoint was refused). */
  readonly lost: string[];
  /** Roles granted to this session since the last heartbeat (a hand-over or a release made it the holder). */
  readonly rolesPicked: RoleLease[];
  /** Roles taken from this session since the last heartbeat. */
  readonly rolesLost: RoleLease[];
}

const roleLeases = (map: Readonly<Record<string, number>>): RoleLease[] =>
  Object.entries(map).map(([role, leaseEpoch]) => ({ role, leaseEpoch }));

/**
 * Keeps the session, and so every lease it holds, alive: one write, whatever the number of tasks. Checkpoints
 * are optional; each is a conditional write on its task that only the current holder can make, and it is
 * handed to the next holder if the task is reassigned.
 */
export async function heartbeat(
  ctx: SchedulerContext,
  agentId: string,
  sessionId: string,
  checkpoints: unknown = undefined,
): Promise<HeartbeatResult> {
  let encoded: [string, string][] = [];
  if (checkpoints !== undefined) {
    const parsed = checkpointsSchema.safeParse(checkpoints);
    if (!parsed.success) throw new ValidationError(`checkpoints.${describeIssues(parsed.error)}`);
    encoded = Object.entries(parsed.data).map(([taskId, value]) => [
      taskId,
      encodeBoundedJson(value, LIMITS.checkpointBytes, `checkpoint of ${taskId}`),
    ]);
  }
  const now = ctx.now();
  const outcome = await ctx.sessions.heartbeat(agentId, sessionId, now, ctx.settings.leaseTtlSeconds * 1_000);
  if (!outcome.ok) {
    const current = outcome.current;
    const same = current && current.sessionId === sessionId ? current : undefined;
    const lost = same ? [...Object.keys(same.held), ...Object.keys(same.lost)] : [];
    // Every role of the session ends with it, whether or not it has been handed over yet.
    const lostRoles = same ? roleLeases({ ...same.roles, ...same.rolesLost }) : [];
    throw new SessionLostError('the session expired or was replaced; open a new session', {
      context: { agentId, lost: [...new Set(lost)], lostRoles },
    });
  }
  const { cancelled, lost: lostNotices, rolesPicked, rolesLost } = outcome.session;
  const notices = { cancelled, lost: lostNotices, rolesPicked, rolesLost };
  if (Object.values(notices).some((map) => Object.keys(map).length > 0)) {
    // Each notice is given once; if this response is lost, the agent's next write on the task tells it anyway,
    // and a role's holder can always ask the role's epoch.
    await ctx.sessions.clearNotices(agentId, sessionId, notices).catch(() => undefined);
  }
  const lost = new Set(Object.keys(lostNotices));
  await Promise.all(
    encoded.map(async ([taskId, json]) => {
      const written = await ctx.tasks.update(taskId, (e) => ({
        set: [`${e.n('checkpoint')} = ${e.v(json)}`],
        condition: [
          `${e.n('status')} = ${e.v('leased')}`,
          `${e.n('owner')} = ${e.v(agentId)}`,
          `${e.n('sessionId')} = ${e.v(sessionId)}`,
          `${e.n('leaseDeadline')} > ${e.v(now)}`,
        ].join(' AND '),
      }));
      if (!written.ok) lost.add(taskId);
    }),
  );
  return {
    expiresAt: outcome.session.expiresAt,
    cancelled: Object.keys(cancelled),
    lost: [...lost],
    rolesPicked: roleLeases(rolesPicked),
    rolesLost: roleLeases(rolesLost),
  };
}
