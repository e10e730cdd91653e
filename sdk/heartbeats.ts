/**
 * A Worker's heartbeats: one every interval while the session holds anything (an idle session needs none: the claim
 * that gives it work extends it), one at a time, each carrying the checkpoints waiting to go out, as many as its
 * body has room for, the longest waiting first so none starves, the rest in a sooner beat. A beat refused whole
 * for its checkpoints goes again at once without them: a checkpoint never lets the session lapse.
 */
import type { AgentSchedulerClient } from './client.js';
import { SessionLostError } from './errors.js';
import { isRefusal, SERVER_LIMITS, takeWithinBudget } from './limits.js';
import type { RunningTask } from './running-task.js';
import type { HeartbeatResult, Session } from './types.js';
import { TaskError } from './worker-events.js';

/** A checkpoint going out with a heartbeat. */
interface OutgoingCheckpoint {
  readonly entry: RunningTask;
  readonly value: unknown;
  readonly version: number;
}

/** How soon after a heartbeat the next one goes when checkpoints were left out of it to stay under the body limit. */
const CHECKPOINT_FOLLOW_UP_MS = 1_000;

/**
 * The checkpoints the next beat of `session` carries, as many as its body has room for: `first`'s, then the longest
 * waiting, so none starves; the rest are `leftOver` for a sooner beat. One that was in a beat refused whole goes
 * alone.
 */
function checkpointsToSend(
  tasks: Iterable<RunningTask>,
  session: Session,
  first: RunningTask | undefined,
): { carried: OutgoingCheckpoint[]; leftOver: boolean } {
  const pending: (OutgoingCheckpoint & { bytes: number; since: number; alone: boolean })[] = [];
  for (const entry of tasks) {
    if (entry.aborted || entry.sessionId !== session.sessionId) continue;
    const checkpoint = entry.pendingCheckpoint();
    if (checkpoint) pending.push({ entry, ...checkpoint });
  }
  pending.sort((a, b) => Number(b.entry === first) - Number(a.entry === first) || a.since - b.since);
  const [head] = pending;
  const carried = head?.alone
    ? [head]
    : takeWithinBudget(
        pending.filter((p) => !p.alone),
        // Each goes as `{"taskId":…,"leaseEpoch":…,"checkpoint":…}`.
        (p) => p.bytes + p.entry.taskId.length + String(p.entry.task.leaseEpoch).length + 44,
        SERVER_LIMITS.checkpointsPerHeartbeat,
      );
  return { carried, leftOver: carried.length < pending.length };
}

/** What one heartbeat needs of the Worker that sends it. */
interface HeartbeatSender {
  readonly client: AgentSchedulerClient;
  /** How long an attempt sent now may take, and the signal that abandons it. */
  attempt(): { readonly timeoutMs: number; readonly signal: AbortSignal };
  /** A beat sooner than the interval, for the checkpoints this one could not carry. */
  beatSoon(): void;
  report(error: unknown): void;
}

/**
 * One heartbeat of `session` carrying `carried`. A beat refused whole for its checkpoints (over the body limit, one
 * nested too deep) is sent again at once without them, so no checkpoint can let the session lapse: a checkpoint
 * refused alone is reported and dropped, and those refused together go alone in the next beats. `landed` are those
 * the server has.
 */
async function heartbeatCarrying(
  sender: HeartbeatSender,
  session: Session,
  carried: readonly OutgoingCheckpoint[],
  extensions: readonly { readonly entry: RunningTask; readonly seconds: number }[],
): Promise<{ result: HeartbeatResult; landed: readonly OutgoingCheckpoint[] }> {
  const send = (checkpoints: readonly OutgoingCheckpoint[]) =>
    sender.client.heartbeat(
      {
        sessionId: session.sessionId,
        ...(extensions.length === 0
          ? {}
          : {
              extend: extensions.map(({ entry, seconds }) => ({
                taskId: entry.taskId,
                leaseEpoch: entry.task.leaseEpoch,
                seconds,
              })),
            }),
        ...(checkpoints.length === 0
          ? {}
          : {
              checkpoints: checkpoints.map((p) => ({
                taskId: p.entry.taskId,
                leaseEpoch: p.entry.task.leaseEpoch,
                checkpoint: p.value,
              })),
            }),
      },
      sender.attempt(),
    );
  try {
    return { result: await send(carried), landed: carried };
  } catch (error) {
    if (carried.length === 0 || !isRefusal(error)) throw error;
    const [only] = carried;
    if (carried.length === 1 && only) {
      only.entry.acknowledgeCheckpoint(only.version);
      sender.report(
        new TaskError(only.entry.taskId, `its checkpoint was refused: ${error.message}`, { cause: error }),
      );
    } else for (const p of carried) p.entry.sendCheckpointAlone = true;
    sender.beatSoon();
    return { result: await send([]), landed: [] };
  }
}

/** What the heartbeats need of the Worker. */
export interface HeartbeatHost {
  readonly client: AgentSchedulerClient;
  /** The worker's session now. */
  session(): Session | undefined;
  /** The tasks the worker runs, whose checkpoints the beats carry. */
  tasks(): Iterable<RunningTask>;
  /** Whether the session must stay live: tasks, roles, or someone listening for heartbeats. */
  holdsAnything(): boolean;
  /** When the session is over by the agent's own reckoning. */
  sessionValidUntil(): number;
  /** Aborted when the session is over: calls made under it are abandoned. */
  sessionSignal(): AbortSignal;
  /** A beat of `session` sent at `sentAt` got through: the reckoning moves on, and listeners hear its answer. */
  answered(session: Session, sentAt: number, result: HeartbeatResult): void;
  /** What the answer says of the session's tasks and holdings, once its checkpoints are acknowledged. */
  heard(session: Session, result: HeartbeatResult): void;
  /** A beat of `session` failed (thrown to its caller after this). */
  failed(session: Session, error: unknown): void;
  report(error: unknown): void;
}

export class Heartbeats {
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The sooner beat that carries checkpoints a beat had no room for. */
  private followUpTimer: ReturnType<typeof setTimeout> | undefined;
  /** Turned off once a stop has dealt with every task, so no beat is scheduled after it. */
  private on = true;
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly host: HeartbeatHost) {}

  /** The next beat of the session, an interval from now, and after it the next, for as long as the session lasts. */
  schedule(): void {
    clearTimeout(this.timer);
    const session = this.host.session();
    if (!session || !this.on) return;
    this.timer = setTimeout(() => {
      // Holding nothing, there is nothing to keep alive: an idle agent costs no heartbeats, and the claim that
      // gives it work extends its session.
      const beat = this.host.holdsAnything() ? this.beat() : Promise.resolve();
      beat
        .catch(() => undefined)
        .finally(() => {
          if (this.host.session() === session) this.schedule();
        });
    }, session.heartbeatIntervalSeconds * 1_000);
  }

  /** The session is gone: its next beat is not sent. */
  cancelNext(): void {
    clearTimeout(this.timer);
  }

  /** The worker stops: no beat is sent or scheduled any more. Settles once the beat in flight, if any, has. */
  stop(): Promise<void> {
    this.on = false;
    clearTimeout(this.timer);
    clearTimeout(this.followUpTimer);
    return this.chain;
  }

  /**
   * One heartbeat at a time: a beat asked for while one is in flight goes after it, with newer checkpoints. A beat
   * asked for by a task's `heartbeatNow` carries that task's checkpoint first.
   */
  beat(first?: RunningTask): Promise<void> {
    const run = this.chain.then(() => this.send(first));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async send(first?: RunningTask): Promise<void> {
    const host = this.host;
    const session = host.session();
    if (!session) {
      throw new SessionLostError({
        status: 409,
        code: 'SessionLost',
        message: 'the worker has no live session',
      });
    }
    const { carried, leftOver } = checkpointsToSend(host.tasks(), session, first);
    const extensions = [...host.tasks()].flatMap((entry) => {
      const seconds =
        entry.aborted || entry.sessionId !== session.sessionId ? undefined : entry.pendingExtension();
      return seconds === undefined ? [] : [{ entry, seconds }];
    });
    const sentAt = Date.now();
    let result: HeartbeatResult;
    let landed: readonly OutgoingCheckpoint[];
    try {
      ({ result, landed } = await heartbeatCarrying(
        {
          client: host.client,
          attempt: () => ({
            // An attempt may not outlast the next beat, nor the session's own reckoning.
            timeoutMs: Math.max(
              100,
              Math.min(session.heartbeatIntervalSeconds * 1_000, host.sessionValidUntil() - sentAt),
            ),
            signal: host.sessionSignal(),
          }),
          beatSoon: () => this.beatSoon(session),
          report: (error) => host.report(error),
        },
        session,
        carried,
        extensions,
      ));
    } catch (error) {
      host.failed(session, error);
      throw error;
    }
    host.answered(session, sentAt, result);
    for (const p of landed) p.entry.acknowledgeCheckpoint(p.version);
    for (const { entry, seconds } of extensions) {
      const moved = result.extended?.find(
        (e) => e.taskId === entry.taskId && e.leaseEpoch === entry.task.leaseEpoch,
      );
      // Absent: the lease is over (the answer's lost leases say so), or a server older than extensions.
      entry.extended(sentAt, moved?.seconds ?? 0, seconds);
    }
    if (leftOver) this.beatSoon(session);
    host.heard(session, result);
  }

  /** A beat sooner than the interval, for checkpoints the last one had no room for. */
  private beatSoon(session: Session): void {
    if (this.followUpTimer !== undefined) return;
    this.followUpTimer = setTimeout(
      () => {
        this.followUpTimer = undefined;
        if (this.host.session() === session && this.on) this.beat().catch(() => undefined);
      },
      Math.min(CHECKPOINT_FOLLOW_UP_MS, session.heartbeatIntervalSeconds * 1_000),
    );
  }
}
