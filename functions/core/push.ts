/**
 * The push channel's operations: connect tickets, connections, wakes and role grants pushed.
 *
 * A wake goes to idle agents listening to the task's queue: enough of them for `wakesPerTask` claims per task made
 * claimable (an agent counts for the tasks its last empty claim asked for), each agent at most once per
 * `wakeCooldownMs` (the starvation ladder's first rung excepted), taken with a conditional write so parallel wakes
 * never pick the same agent. Pushes are hints: a failure is logged and the operation that
 * caused it goes on; agents keep a slow safety poll. While the whole scheduler is paused no wake is sent
 * (`scheduler-control.ts`); resuming it wakes every queue's idle agents.
 */
import { errorName } from '#domain/errors';
import { type Labels, meets, type Requirements, requirementsKey, requiresAny } from '#domain/labels';
import { type Progress, progressView } from '#domain/progress';
import {
  type CancelFrame,
  CONNECTION_TTL_SECONDS,
  clientFrameSchema,
  type ErrorFrame,
  frame,
  MAX_CLIENT_FRAME_BYTES,
  MAX_PUSHED_RESULT_BYTES,
  newTicket,
  type ProgressFrame,
  type PushFrame,
  type PushPrincipal,
  type RoleFrame,
  type SubscribedFrame,
  type TaskFrame,
  TICKET_PATTERN,
  TICKET_TTL_SECONDS,
  ticketHash,
  type WakeFrame,
  type WakeReason,
} from '#domain/push';
import type { Task } from '#domain/task';
import { describeIssues } from '#domain/task-spec';
import type { SchedulerContext } from './context';
import type { Listener, PushConnection } from './ports/connection-store';
import type { PushChannel, TimedWake } from './ports/push-channel';
import { isSchedulerPaused } from './scheduler-control';

export interface PushTicket {
  readonly ticket: string;
  /** The URL to open, ticket included. */
  readonly url: string;
  readonly expiresAt: number;
}

/** A ticket for one connection, good for `TICKET_TTL_SECONDS`. */
export async function issueTicket(
  ctx: SchedulerContext,
  push: PushChannel,
  principal: PushPrincipal,
): Promise<PushTicket> {
  const { ticket, hash } = newTicket();
  const expiresAt = ctx.now() + TICKET_TTL_SECONDS * 1_000;
  await push.connections.putTicket(hash, principal, expiresAt);
  const url = new URL(push.url);
  url.searchParams.set('ticket', ticket);
  return { ticket, url: url.toString(), expiresAt };
}

/**
 * The caller a ticket was issued to, using the ticket up; undefined for a ticket malformed, unknown, used or
 * expired, and for an agent revoked since.
 */
export async function redeemTicket(
  ctx: SchedulerContext,
  push: PushChannel,
  ticket: string | undefined,
): Promise<PushPrincipal | undefined> {
  if (!ticket || !TICKET_PATTERN.test(ticket)) return undefined;
  const principal = await push.connections.takeTicket(ticketHash(ticket), ctx.now());
  if (principal?.kind !== 'agent') return principal;
  const agent = await ctx.agents.get(principal.agentId);
  return agent && agent.revokedAt === undefined ? principal : undefined;
}

/** Records a connection of a caller its ticket named; an agent's listens to the agent's queues. */
export async function openConnection(
  ctx: SchedulerContext,
  push: PushChannel,
  connectionId: string,
  principal: PushPrincipal,
): Promise<PushConnection> {
  let queues: readonly string[] = [];
  if (principal.kind === 'agent') {
    const agent = await ctx.agents.get(principal.agentId);
    queues = agent?.queues ?? [];
  }
  const connectedAt = ctx.now();
  const connection = { connectionId, principal, queues, connectedAt };
  await push.connections.open(connection, connectedAt + CONNECTION_TTL_SECONDS * 1_000);
  return connection;
}

export async function closeConnection(push: PushChannel, connectionId: string): Promise<void> {
  const connection = await push.connections.get(connectionId);
  if (connection) await push.connections.close(connection);
}

/** Sends a frame; a connection found gone is forgotten. True if sent. */
export async function pushTo(
  ctx: SchedulerContext,
  push: PushChannel,
  connectionId: string,
  message: PushFrame,
): Promise<boolean> {
  const outcome = await push.sender.send(connectionId, message);
  if (outcome === 'sent') return true;
  await closeConnection(push, connectionId).catch((error: unknown) =>
    ctx.log.warn('forgetting a gone connection failed', { error: errorName(error) }),
  );
  return false;
}

/**
 * An agent that found nothing to claim is idle in these queues, and hears the next wake. Undefined if it listens
 * on no connection (its socket is down: it polls as without one); otherwise how long it may wait before its next
 * look: its safety poll, or, when it was woken less than a cooldown ago, the rest of the cooldown (a task made
 * claimable meanwhile could not wake it again, so it looks once the cooldown is over).
 */
export async function markIdle(
  ctx: SchedulerContext,
  agentId: string,
  queues: readonly string[],
  capacity = 1,
  /** The labels its session claims under: wakes for tasks that require labels go only to agents that meet them. */
  labels: Labels = {},
): Promise<{ readonly retryAfterMs: number; readonly wasIdle: boolean } | undefined> {
  if (!ctx.push || queues.length === 0) return undefined;
  const marked = await ctx.push.connections.markIdle(agentId, queues, capacity, labels);
  if (!marked) return undefined;
  const coolingFor = marked.wokenAt + ctx.settings.wakeCooldownMs - ctx.now();
  return {
    retryAfterMs: coolingFor > 0 ? coolingFor + 50 : ctx.settings.pushSafetyPollMs,
    wasIdle: marked.wasIdle,
  };
}

export interface WakeOptions {
  readonly reason: WakeReason;
  /**
   * Tasks to wake agents for: agents are woken until their capacities add up to it. `Infinity` with
   * `ignoreCooldown` wakes every idle listener (the ladder's rung).
   */
  readonly count: number;
  readonly ignoreCooldown?: boolean;
  /** The tasks' requirements: only listeners whose labels meet them are woken. */
  readonly require?: Requirements;
  /** Told of an error the wake met (it is logged and swallowed all the same): how a supervisor pass counts it. */
  readonly failed?: (error: unknown) => void;
}

/**
 * Wakes idle agents listening to `queue`; the number woken. None while the scheduler is paused. Never throws: a
 * wake is a hint.
 */
export async function wake(ctx: SchedulerContext, queue: string, options: WakeOptions): Promise<number> {
  const push = ctx.push;
  if (!push || options.count <= 0) return 0;
  const now = ctx.now();
  const wokenBefore = options.ignoreCooldown ? now : now - ctx.settings.wakeCooldownMs;
  const message = frame<WakeFrame>({ type: 'wake', queue, reason: options.reason });
  let woken = 0;
  try {
    // Every idle listener the read finds (one request reads a fleet of hundreds), in random order: the wakes are
    // spread over the fleet, and one taken by a parallel wake between the read and the write is passed over.
    const want = Number.isFinite(options.count) ? options.count : Number.MAX_SAFE_INTEGER;
    // Agents that cannot serve the tasks are passed over (they find them no use), and count for nothing: not even
    // toward the idle agents a partition must hold before the others are read.
    const found = shuffled(
      ctx,
      await push.connections.findIdle(queue, wokenBefore, want, (listener) =>
        meets(listener.labels, options.require),
      ),
    );
    // Nobody is taken while the scheduler is paused: the agents stay idle, for the resume's wake. Looked at only
    // once someone would be woken, so a wake that finds nobody idle costs no more than before.
    if (found.length > 0 && (await isSchedulerPaused(ctx))) return 0;
    let covered = 0;
    for (const listener of found) {
      if (covered >= want) break;
      if (!(await push.connections.takeForWake(queue, listener, now, wokenBefore))) continue;
      const others = listener.queues.filter((q) => q !== queue);
      const [sent] = await Promise.all([
        pushTo(ctx, push, listener.connectionId, message),
        others.length > 0 ? push.connections.markBusy(listener, others) : undefined,
      ]);
      if (sent) {
        woken++;
        covered += listener.capacity;
      }
    }
  } catch (error) {
    options.failed?.(error);
    ctx.log.warn('waking agents failed; they find the work at their next poll', {
      queue,
      error: errorName(error),
    });
  }
  return woken;
}

/** What a wake needs of a task: its queue, and what it requires of the agent. */
type Woken = { readonly queue: string; readonly require?: Requirements };

/**
 * Wakes for tasks made claimable now: agents for `wakesPerTask` claims per task, for each queue and requirement set
 * (agents whose labels meet it). `failed` is told of each error a wake met (see `WakeOptions`).
 */
export async function wakeFor(
  ctx: SchedulerContext,
  tasks: readonly Woken[],
  reason: WakeReason,
  failed?: (error: unknown) => void,
): Promise<void> {
  if (!ctx.push || tasks.length === 0) return;
  await Promise.all(
    wakesPerQueue(ctx, tasks).map(({ queue, require, count }) =>
      wake(ctx, queue, { reason, count, ...(require ? { require } : {}), ...(failed ? { failed } : {}) }),
    ),
  );
}

/** How many claims the tasks of each queue and requirement set wake agents for: `wakesPerTask` per task. */
function wakesPerQueue(
  ctx: SchedulerContext,
  tasks: readonly Woken[],
): { queue: string; require?: Requirements; count: number }[] {
  const perSet = new Map<string, { queue: string; require?: Requirements; n: number }>();
  for (const task of tasks) {
    const require = requiresAny(task.require) ? task.require : undefined;
    const key = require ? `${task.queue} ${requirementsKey(require)}` : task.queue;
    const seen = perSet.get(key);
    if (seen) seen.n++;
    else perSet.set(key, { queue: task.queue, ...(require ? { require } : {}), n: 1 });
  }
  return [...perSet.values()].map(({ n, ...set }) => ({
    ...set,
    count: Math.ceil(n * ctx.settings.wakesPerTask),
  }));
}

/**
 * Wakes for tasks made claimable `delaySeconds` from now, by the push channel's timer: at the end of the same whole
 * seconds their hints wait in SQS (armed after the hints, so each hint is visible when its wake comes). The
 * supervisor's pass after their time wakes for those still waiting then: without a timer, or when arming failed.
 * Never throws: a wake is a hint (`failed` is told of the error).
 */
export async function wakeLater(
  ctx: SchedulerContext,
  tasks: readonly Woken[],
  delaySeconds: number,
  failed?: (error: unknown) => void,
): Promise<void> {
  const timer = ctx.push?.timer;
  if (!timer || tasks.length === 0) return;
  const at = ctx.now() + Math.ceil(delaySeconds) * 1_000;
  try {
    await timer.arm(wakesPerQueue(ctx, tasks).map((set) => ({ ...set, at, reason: 'due' as const })));
  } catch (error) {
    failed?.(error);
    ctx.log.warn('arming a wake failed; the supervisor’s pass after the task’s time wakes for it', {
      error: errorName(error),
    });
  }
}

/** What the timer's function did with the wakes it was handed. */
export interface TimedWakesOutcome {
  /** Idle agents woken. */
  readonly woken: number;
  /** Wakes not yet due (longer than SQS's longest delay), armed again. */
  readonly rearmed: number;
}

/**
 * The timer's function: wakes that are due wake their queues' idle agents; one delivered early (a wait longer
 * than an SQS delay carries) is armed again for the rest. Never throws for a wake: each is a hint.
 */
export async function fireTimedWakes(
  ctx: SchedulerContext,
  wakes: readonly TimedWake[],
): Promise<TimedWakesOutcome> {
  const now = ctx.now();
  const early = wakes.filter((w) => w.at - now >= 1_000);
  const due = wakes.filter((w) => w.at - now < 1_000);
  // Several due wakes of one queue (and requirement set) are one wake for all their agents.
  const perSet = new Map<
    string,
    { queue: string; require?: Requirements; count: number; reason: WakeReason }
  >();
  for (const w of due) {
    const key = w.require ? `${w.queue} ${requirementsKey(w.require)}` : w.queue;
    const seen = perSet.get(key);
    perSet.set(key, {
      queue: w.queue,
      ...(w.require ? { require: w.require } : {}),
      count: (seen?.count ?? 0) + w.count,
      reason: seen?.reason ?? w.reason,
    });
  }
  const [woken] = await Promise.all([
    Promise.all(
      [...perSet.values()].map(({ queue, require, count, reason }) =>
        wake(ctx, queue, { reason, count, ...(require ? { require } : {}) }),
      ),
    ),
    early.length > 0 && ctx.push?.timer
      ? ctx.push.timer.arm(early).catch((error: unknown) =>
          ctx.log.warn(
            'arming a wake again failed; the supervisor’s pass after the task’s time wakes for it',
            {
              error: errorName(error),
            },
          ),
        )
      : undefined,
  ]);
  return { woken: woken.reduce((a, b) => a + b, 0), rearmed: early.length };
}

/** Tells an agent, on its connection if it has one, that a role is now its. Never throws. */
export function pushRoleGrant(
  ctx: SchedulerContext,
  agentId: string,
  role: string,
  leaseEpoch: number,
): Promise<void> {
  return pushToAgent(ctx, agentId, frame<RoleFrame>({ type: 'role', role, event: 'granted', leaseEpoch }), {
    role,
  });
}

/**
 * Tells an agent, on its connection if it has one, that a task it holds was cancelled, so that its handler stops
 * now rather than at its next heartbeat. Never throws.
 */
export function pushCancel(
  ctx: SchedulerContext,
  agentId: string,
  taskId: string,
  leaseEpoch: number,
): Promise<void> {
  return pushToAgent(ctx, agentId, frame<CancelFrame>({ type: 'cancel', taskId, leaseEpoch }), { taskId });
}

/** Sends a frame to an agent's connection, if it has one; a failure is logged: the next heartbeat tells the same. */
async function pushToAgent(
  ctx: SchedulerContext,
  agentId: string,
  message: PushFrame,
  about: Record<string, string>,
): Promise<void> {
  const push = ctx.push;
  if (!push) return;
  try {
    const connectionId = await push.connections.connectionOf(agentId);
    if (connectionId) await pushTo(ctx, push, connectionId, message);
  } catch (error) {
    ctx.log.warn(`pushing a ${message.type} frame failed; the agent learns it at its next heartbeat`, {
      ...about,
      error: errorName(error),
    });
  }
}

function shuffled(ctx: SchedulerContext, listeners: Listener[]): Listener[] {
  for (let i = listeners.length - 1; i > 0; i--) {
    const j = Math.floor(ctx.random() * (i + 1));
    const a = listeners[i] as Listener;
    listeners[i] = listeners[j] as Listener;
    listeners[j] = a;
  }
  return listeners;
}

/**
 * The answer to a frame a client sent, if any: `ping` is answered by nothing; a frame that is not JSON, too large,
 * of an unknown type or malformed gets an error frame and changes nothing.
 */
export async function answerFrame(
  ctx: SchedulerContext,
  connectionId: string,
  raw: string,
): Promise<PushFrame | undefined> {
  const refuse = (code: string, message: string, id?: string) =>
    frame<ErrorFrame>({ type: 'error', code, message, ...(id === undefined ? {} : { id }) });
  if (Buffer.byteLength(raw) > MAX_CLIENT_FRAME_BYTES)
    return refuse('FrameTooLarge', `frames are at most ${MAX_CLIENT_FRAME_BYTES} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return refuse('BadFrame', 'a frame is a JSON object with a "type"');
  }
  const checked = clientFrameSchema.safeParse(parsed);
  if (!checked.success) {
    const id = (parsed as { id?: unknown } | null)?.id;
    return refuse(
      'BadFrame',
      describeIssues(checked.error),
      typeof id === 'string' ? id.slice(0, 64) : undefined,
    );
  }
  const message = checked.data;
  if (message.type === 'ping') return undefined;
  const push = ctx.push;
  const connection = push && (await push.connections.get(connectionId));
  if (!connection)
    return refuse('ConnectionUnknown', 'this connection is not open; connect again', message.id);
  return subscribe(ctx, connection, message);
}

/**
 * An operator's connection watches tasks: each watch is recorded, then the task is marked watched and read in
 * the same write, so an ending either sees the mark (and is pushed) or is in the answer. Agents read no tasks.
 */
async function subscribe(
  ctx: SchedulerContext,
  connection: PushConnection,
  request: { readonly id: string; readonly taskIds: readonly string[] },
): Promise<PushFrame> {
  const push = ctx.push as PushChannel;
  if (connection.principal.kind !== 'operator')
    return frame<ErrorFrame>({
      type: 'error',
      code: 'Forbidden',
      message: 'agents cannot watch tasks; an operator connection can',
      id: request.id,
    });
  const until = connection.connectedAt + CONNECTION_TTL_SECONDS * 1_000;
  const tasks = await Promise.all(
    [...new Set(request.taskIds)].map(async (taskId) => {
      await push.connections.watch(taskId, connection.connectionId, until);
      const task = await ctx.tasks.watch(taskId);
      return { taskId, status: task?.status ?? null };
    }),
  );
  return frame<SubscribedFrame>({ type: 'subscribed', id: request.id, tasks });
}

/** Pushes a watched task's progress report to the connections watching it. Never throws: they read it instead. */
export function announceProgress(ctx: SchedulerContext, task: Task, progress: Progress): Promise<void> {
  return pushToWatchers(ctx, task, 'a progress report', () =>
    frame<ProgressFrame>({ type: 'progress', taskId: task.taskId, progress: progressView(progress) }),
  );
}

/** Tells the connections watching a task that it ended. Never throws: a watcher falls back to reading the task. */
export function announceEnd(ctx: SchedulerContext, task: Task): Promise<void> {
  const status = task.status;
  if (status === 'waiting' || status === 'queued' || status === 'leased' || status === 'suspended') {
    return Promise.resolve();
  }
  return pushToWatchers(ctx, task, 'a task ending', () => {
    const resultJson = task.result === undefined ? undefined : JSON.stringify(task.result);
    const fits = resultJson === undefined || Buffer.byteLength(resultJson) <= MAX_PUSHED_RESULT_BYTES;
    return frame<TaskFrame>({
      type: 'task',
      taskId: task.taskId,
      status,
      ...(task.result === undefined ? {} : fits ? { result: task.result } : { resultOmitted: true }),
      ...(task.error ? { error: { message: task.error.message } } : {}),
    });
  });
}

/** Sends the frame `message` makes to every connection watching a watched task; a failure is logged. */
async function pushToWatchers(
  ctx: SchedulerContext,
  task: Task,
  what: string,
  message: () => PushFrame,
): Promise<void> {
  const push = ctx.push;
  if (!push || !task.watched) return;
  try {
    const sent = message();
    const watchers = await push.connections.watchers(task.taskId);
    await Promise.all(watchers.map((connectionId) => pushTo(ctx, push, connectionId, sent)));
  } catch (error) {
    ctx.log.warn(`pushing ${what} failed; its watchers read the task instead`, {
      taskId: task.taskId,
      error: errorName(error),
    });
  }
}
