/**
 * Agents and their sessions: register, open a session, heartbeat.
 *
 * As in Fluid's AgentScheduler, an agent keeps its tasks while it is connected: its leases are tied to its
 * session, and one heartbeat write keeps all of them alive. Opening a new session ends the old one, and the
 * old session's tasks are taken back at once; an open sent again with its open id is answered with the session
 * it made instead.
 */
import { z } from 'zod';
import type { Agent } from '#domain/agent';
import {
  AgentNotFoundError,
  AgentRevokedError,
  ForbiddenError,
  ServiceUnavailableError,
  SessionLostError,
  ValidationError,
} from '#domain/errors';
import { newAgentId, newSessionId, TASK_ID_PATTERN } from '#domain/ids';
import { addedTo, agentLabelsSchema, type Labels, labelsSchema, normaliseLabels } from '#domain/labels';
import { type AgentSession, type AgentState, agentState, isSessionLive, type Task } from '#domain/task';
import {
  describeIssues,
  encodeBoundedJson,
  jsonValueSchema,
  LIMITS,
  printableNameSchema,
  queueNameSchema,
} from '#domain/task-spec';
import { accepts } from '#domain/wire-match';
import type * as Sdk from '#sdk/types';
import type { SchedulerContext } from './context';
import { extendDeadline } from './deadline-extensions';
import { emit } from './events';
import { takeBackTasks } from './reclaim';
import { takeBackRoles } from './roles';

export const agentSpecSchema = accepts<Sdk.CreateAgentInput>()(
  z.strictObject({
    name: printableNameSchema(128),
    queues: z.array(queueNameSchema).min(1).max(32),
    maxConcurrency: z.int().min(1).max(1_000).default(1),
    interactive: z.boolean().default(true),
    labels: agentLabelsSchema
      .describe(
        'What it offers beyond its queues: up to 16 label names, each a value or up to 16 values. It is given only tasks whose `require` these meet; its sessions may narrow them, never add to them.',
      )
      .optional(),
  }),
);

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
  const { labels, ...spec } = parsed.data;
  const agent: Agent = {
    agentId,
    ...spec,
    queues: [...new Set(spec.queues)],
    ...(labels ? { labels: normaliseLabels(labels) } : {}),
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

/** An open id: chosen by the agent, sent again on every retry of one open. */
export const OPEN_ID_PATTERN = /^[A-Za-z0-9_-]{8,64}$/;

/**
 * How many open ids a session item remembers (see `AgentSession.opens`). An agent sends a new one only once it
 * has the answer to the last, so a copy of an older open delivered late names one of the last few; more would
 * make every heartbeat of the session cost more (a write is billed on the size of the item).
 */
export const OPENS_REMEMBERED = 4;

/** How many times an open reads the agent's session again when it changed under it. */
const OPEN_ATTEMPTS = 3;

export interface OpenSessionOptions {
  /** The open's id; without one (an SDK older than open ids), every call opens a new session. */
  readonly openId?: string;
  /**
   * The open's number, growing with each new open the agent sends (the SDK numbers them by its clock in ms, so a
   * restarted agent's opens still grow): an open numbered below the one that made the live session was sent before
   * it, by a start the agent gave up on, and is refused. Without one, an open is not ordered.
   */
  readonly openSeq?: number;
  /** Narrows the agent's labels for the session; never adds to them (`#domain/labels`). Default: the agent's. */
  readonly labels?: Readonly<Record<string, string | readonly string[]>>;
}

/**
 * Opens a session for the agent, ending the one it had: what that one held (tasks and roles) is taken back
 * before the new session is written, so a failure on the way leaves it on the old item for the sweep, and the
 * open answers 503 to be retried. An open sent again with its id (a retry, or a copy delivered late) is answered
 * with the session it made while that session lives, and refused once a later open has replaced it.
 */
export async function openSession(
  ctx: SchedulerContext,
  agentId: string,
  options: OpenSessionOptions = {},
): Promise<OpenedSession> {
  const { openId, openSeq } = options;
  if (openId !== undefined && !OPEN_ID_PATTERN.test(openId)) {
    throw new ValidationError('openId: 8 to 64 letters, digits, "-" or "_"');
  }
  // Positive integers JavaScript counts exactly.
  if (openSeq !== undefined && !(Number.isSafeInteger(openSeq) && openSeq >= 1)) {
    throw new ValidationError('openSeq: an integer from 1 to 2^53 - 1');
  }
  const agent = await ctx.agents.get(agentId);
  if (!agent) throw new AgentNotFoundError(agentId);
  if (agent.revokedAt !== undefined) throw new AgentRevokedError(agentId);
  const labels = sessionLabels(agent.labels ?? {}, options.labels);
  for (let attempt = 0; attempt < OPEN_ATTEMPTS; attempt++) {
    const current = await ctx.sessions.get(agentId);
    if (openId !== undefined && current?.opens?.[openId] !== undefined) {
      if (current.openId !== openId) {
        throw new SessionLostError('a later open replaced the session this open made; open with a new id');
      }
      // Answered as a heartbeat would be: the agent reckons the session from when it sent this open.
      const now = ctx.now();
      const beat = isSessionLive(current, now)
        ? await ctx.sessions.heartbeat(agentId, current.sessionId, now, ctx.settings.leaseTtlSeconds * 1_000)
        : undefined;
      if (beat?.ok) return openedView(ctx, beat.session);
      // The session it made is over (or ended just now): a new one is opened under the same id.
    } else if (current && outrunOpen(current, openSeq, ctx.now())) {
      throw new SessionLostError('a later open of this agent made its live session; open with a new id');
    }
    if (current) await giveUp(ctx, current);
    // Dated once the hand-over is done: a slow one must not leave the new session with less than its TTL.
    const now = ctx.now();
    const remembered = Object.entries({
      ...current?.opens,
      ...(openId === undefined ? {} : { [openId]: now }),
    })
      .sort(([, a], [, b]) => b - a)
      .slice(0, OPENS_REMEMBERED);
    const session: AgentSession = {
      agentId,
      sessionId: newSessionId(),
      queues: agent.queues,
      maxConcurrency: agent.maxConcurrency,
      ...(Object.keys(labels).length > 0 ? { labels } : {}),
      startedAt: now,
      heartbeatAt: now,
      expiresAt: now + ctx.settings.leaseTtlSeconds * 1_000,
      held: {},
      cancelled: {},
      lost: {},
      roles: {},
      rolesPicked: {},
      rolesLost: {},
      ...(openId === undefined ? {} : { openId }),
      ...(openSeq === undefined ? {} : { openSeq }),
      ...(remembered.length > 0 ? { opens: Object.fromEntries(remembered) } : {}),
    };
    const outcome = await ctx.sessions.open(session, current);
    if (outcome === 'revoked') throw new AgentRevokedError(agentId);
    if (outcome === 'opened') {
      await emit(ctx, [
        { type: 'agent.online', fields: { agentId, data: { sessionId: session.sessionId } } },
      ]);
      return openedView(ctx, session);
    }
    // Another open, or a claim or hand-over to the old session, landed since the read: look again.
  }
  throw new ServiceUnavailableError('the agent’s session kept changing while it was opened; retry');
}

/**
 * The labels a session claims under: its agent's, or fewer when the open narrows them. A label or value the agent was
 * not given is refused: an agent cannot take work meant for others by saying it has what they have.
 */
function sessionLabels(agentLabels: Labels, narrowed: OpenSessionOptions['labels']): Labels {
  if (narrowed === undefined) return agentLabels;
  const parsed = labelsSchema.safeParse(narrowed);
  if (!parsed.success) throw new ValidationError(`labels: ${describeIssues(parsed.error)}`);
  const labels = normaliseLabels(parsed.data);
  const added = addedTo(agentLabels, labels);
  if (added !== undefined)
    throw new ForbiddenError(
      `labels: the agent was not given ${added}; a session may only narrow its labels`,
    );
  return labels;
}

/**
 * An open sent before the one that made the live session: ordered only when both are numbered, and only while
 * that session lives (an agent restarted on a host whose clock is behind waits out its old session's lease).
 */
const outrunOpen = (current: AgentSession, openSeq: number | undefined, now: number): boolean =>
  openSeq !== undefined &&
  current.openSeq !== undefined &&
  openSeq < current.openSeq &&
  isSessionLive(current, now);

const openedView = (ctx: SchedulerContext, session: AgentSession): OpenedSession => ({
  sessionId: session.sessionId,
  leaseTtlSeconds: ctx.settings.leaseTtlSeconds,
  heartbeatIntervalSeconds: ctx.settings.heartbeatIntervalSeconds,
  expiresAt: session.expiresAt,
});

/**
 * Ends the agent's previous session if it holds tasks or roles, and takes them back now rather than at their
 * deadlines: the agent opening anew is its own restart. Until they are all back, they stay on the ended item,
 * where the sweep finds them, and the open is refused with a 503 to be retried.
 */
async function giveUp(ctx: SchedulerContext, current: AgentSession): Promise<void> {
  const holdsTasks = Object.keys(current.held).length > 0;
  const holdsRoles = Object.keys(current.roles).length > 0;
  if (!holdsTasks && !holdsRoles) return;
  const ended = current.endedAt === undefined ? await ctx.sessions.endNow(current, ctx.now()) : undefined;
  // Replaced meanwhile by a parallel open: the new session's write finds the item changed and reads it again.
  if (ended && !ended.ok) return;
  const session = ended?.session ?? current;
  const rolesLeft = holdsRoles ? (await takeBackRoles(ctx, session)).left : 0;
  const tasksLeft = holdsTasks ? !(await takeBackTasks(ctx, session, 'session')).retired : false;
  if (rolesLeft > 0 || tasksLeft) {
    throw new ServiceUnavailableError('what the previous session held is being handed over; retry');
  }
}

/**
 * Checkpoints a heartbeat carries: each names the lease it was taken under, and is written only while that very
 * lease (task, epoch, session) holds, so a checkpoint of an earlier attempt cannot overwrite a later one's.
 */
export const checkpointsSchema = z
  .array(
    z.strictObject({
      taskId: z.string().regex(TASK_ID_PATTERN, 'a task id'),
      leaseEpoch: z.int().min(1).max(Number.MAX_SAFE_INTEGER),
      checkpoint: jsonValueSchema,
    }),
  )
  .max(100, 'at most 100 checkpoints per heartbeat')
  .refine(
    (list) => new Set(list.map((c) => c.taskId)).size === list.length,
    'one checkpoint per task and heartbeat',
  );

/**
 * Deadlines a heartbeat pushes forward: each names the lease it is for, and moves that lease's deadline only while
 * it holds.
 */
export const extensionsSchema = z
  .array(
    z.strictObject({
      taskId: z.string().regex(TASK_ID_PATTERN, 'a task id'),
      leaseEpoch: z.int().min(1).max(Number.MAX_SAFE_INTEGER),
      seconds: z.int().min(1).max(LIMITS.timeoutSeconds),
    }),
  )
  .max(100, 'at most 100 extensions per heartbeat')
  .refine(
    (list) => new Set(list.map((c) => c.taskId)).size === list.length,
    'one extension per task and heartbeat',
  );

/** A held task's deadline after an extension, and what is left of its attempt from the write. */
export interface ExtendedLease {
  readonly taskId: string;
  readonly leaseEpoch: number;
  readonly seconds: number;
  readonly leaseDeadline: number;
}

/** A task and the epoch of the lease a notice is about. */
export interface TaskLease {
  readonly taskId: string;
  readonly leaseEpoch: number;
}

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
  /**
   * The same, each with the epoch of the lease lost: a run of the task the session claimed again since, at a
   * later epoch, is not the one lost.
   */
  readonly lostLeases: TaskLease[];
  /** Roles granted to this session since the last heartbeat (a hand-over or a release made it the holder). */
  readonly rolesPicked: RoleLease[];
  /** Roles taken from this session since the last heartbeat. */
  readonly rolesLost: RoleLease[];
  /**
   * Task ids the session holds or is reserving (a superset of its leases). A task here that the agent does not
   * know of is a grant whose answer it never got: `readSession` tells its epoch, so it can be released.
   */
  readonly held: string[];
  /** The deadlines the heartbeat's extensions asked for, as they now are (leases still held only). */
  readonly extended: ExtendedLease[];
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
  extensions: unknown = undefined,
): Promise<HeartbeatResult> {
  let asked: z.output<typeof extensionsSchema> = [];
  if (extensions !== undefined) {
    const parsed = extensionsSchema.safeParse(extensions);
    if (!parsed.success) throw new ValidationError(`extend.${describeIssues(parsed.error)}`);
    asked = parsed.data;
  }
  let encoded: { taskId: string; leaseEpoch: number; json: string }[] = [];
  if (checkpoints !== undefined) {
    const parsed = checkpointsSchema.safeParse(checkpoints);
    if (!parsed.success) throw new ValidationError(`checkpoints.${describeIssues(parsed.error)}`);
    encoded = parsed.data.map(({ taskId, leaseEpoch, checkpoint }) => ({
      taskId,
      leaseEpoch,
      json: encodeBoundedJson(checkpoint, LIMITS.checkpointBytes, `checkpoint of ${taskId}`),
    }));
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
  // A notice's value is the epoch of the lease taken back (`SessionStore.notify`).
  const lost = new Map(
    Object.entries(lostNotices).map(([taskId, leaseEpoch]) => [
      `${taskId}:${leaseEpoch}`,
      { taskId, leaseEpoch },
    ]),
  );
  await Promise.all(
    encoded.map(async ({ taskId, leaseEpoch, json }) => {
      const written = await ctx.tasks.checkpoint(taskId, { agentId, sessionId, leaseEpoch }, json, now);
      // Refused: the lease it was taken under is over. Lost, unless this session holds the task again.
      if (!written.ok && !(written.current && holdsNow(written.current, agentId, sessionId, now))) {
        lost.set(`${taskId}:${leaseEpoch}`, { taskId, leaseEpoch });
      }
    }),
  );
  const extended: ExtendedLease[] = [];
  await Promise.all(
    asked.map(async ({ taskId, leaseEpoch, seconds }) => {
      const lease = { agentId, sessionId, leaseEpoch };
      const moved = await extendDeadline(ctx, taskId, lease, seconds * 1_000, now);
      if (moved) extended.push({ taskId, leaseEpoch, ...moved });
      else lost.set(`${taskId}:${leaseEpoch}`, { taskId, leaseEpoch });
    }),
  );
  return {
    held: Object.keys(outcome.session.held),
    extended,
    expiresAt: outcome.session.expiresAt,
    cancelled: Object.keys(cancelled),
    lost: [...new Set([...lost.values()].map((l) => l.taskId))],
    lostLeases: [...lost.values()],
    rolesPicked: roleLeases(rolesPicked),
    rolesLost: roleLeases(rolesLost),
  };
}

const holdsNow = (task: Task, agentId: string, sessionId: string, now: number): boolean =>
  task.status === 'leased' &&
  task.owner === agentId &&
  task.sessionId === sessionId &&
  (task.leaseDeadline ?? 0) > now;

/** A task the session holds, as the agent needs it to act on it (a grant whose answer it never got). */
export interface HeldTask {
  readonly taskId: string;
  readonly queue: string;
  readonly leaseEpoch: number;
  readonly attempt: number;
  readonly leaseDeadline: number;
}

export interface SessionHoldings {
  readonly sessionId: string;
  readonly expiresAt: number;
  readonly tasks: HeldTask[];
  readonly roles: RoleLease[];
}

/**
 * What the agent's live session holds: its leased tasks with their epochs and the roles it holds, read from the
 * tasks and roles themselves (the session's own entries are a superset). As Fluid's `pickedTasks()`, it lets an
 * agent that missed a grant's answer or notice find out what it owns.
 */
export async function readSession(ctx: SchedulerContext, agentId: string): Promise<SessionHoldings> {
  const session = await ctx.sessions.get(agentId);
  const now = ctx.now();
  if (!session || !isSessionLive(session, now)) {
    throw new SessionLostError('the agent has no live session; open a new session', { context: { agentId } });
  }
  const ids = Object.keys(session.held);
  const tasks = ids.length === 0 ? new Map<string, Task>() : await ctx.tasks.getMany(ids);
  const held = [...tasks.values()]
    .filter((task) => holdsNow(task, agentId, session.sessionId, now))
    .map((task) => ({
      taskId: task.taskId,
      queue: task.queue,
      leaseEpoch: task.leaseEpoch,
      attempt: task.attempt,
      leaseDeadline: task.leaseDeadline ?? 0,
    }))
    .sort((a, b) => a.taskId.localeCompare(b.taskId));
  const roles: RoleLease[] = [];
  for (const name of Object.keys(session.roles).sort()) {
    const role = await ctx.roles.get(name);
    if (role?.holder?.sessionId === session.sessionId) roles.push({ role: name, leaseEpoch: role.epoch });
  }
  return { sessionId: session.sessionId, expiresAt: session.expiresAt, tasks: held, roles };
}

/** What an operator sees of an agent's session in a list of agents. */
export interface AgentPresence {
  /** A live session (and the agent not revoked). */
  readonly online: boolean;
  /** Online, idle (its session lapsed holding nothing, as a Worker's does between polls) or offline. */
  readonly state: AgentState;
  /** The last heartbeat (or claim, which counts as one) of its latest session; absent if it never opened one. */
  readonly lastHeartbeatAt?: number;
  /** Tasks its live session holds or is being granted right now; 0 when offline (its leases ended with it). */
  readonly tasksHeld: number;
}

/** The presence of each agent of a page, from their session items in one read. */
export async function agentPresence(
  ctx: SchedulerContext,
  agents: readonly Agent[],
): Promise<Map<string, AgentPresence>> {
  const sessions = agents.length === 0 ? new Map() : await ctx.sessions.getMany(agents.map((a) => a.agentId));
  const now = ctx.now();
  return new Map(
    agents.map((agent) => {
      const session = sessions.get(agent.agentId);
      const state = agentState(session, agent.revokedAt, now);
      const online = state === 'online';
      return [
        agent.agentId,
        {
          online,
          state,
          ...(session ? { lastHeartbeatAt: session.heartbeatAt } : {}),
          tasksHeld: online ? Object.keys(session.held).length : 0,
        },
      ];
    }),
  );
}
