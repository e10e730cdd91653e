/**
 * The checkpoints a heartbeat carries: as many as its body has room for, the longest waiting first so none starves,
 * and what becomes of them when the server refuses the beat whole for them. A checkpoint never lets the session
 * lapse: the beat goes again at once without it.
 */
import type { AgentSchedulerClient } from './client.js';
import { isRefusal, SERVER_LIMITS, takeWithinBudget } from './limits.js';
import type { RunningTask } from './running-task.js';
import type { HeartbeatResult, Session } from './types.js';
import { TaskError } from './worker-events.js';

/** A checkpoint going out with a heartbeat. */
export interface OutgoingCheckpoint {
  readonly entry: RunningTask;
  readonly value: unknown;
  readonly version: number;
}

/** How soon after a heartbeat the next one goes when checkpoints were left out of it to stay under the body limit. */
export const CHECKPOINT_FOLLOW_UP_MS = 1_000;

/**
 * The checkpoints the next beat of `session` carries, as many as its body has room for: `first`'s, then the longest
 * waiting, so none starves; the rest are `leftOver` for a sooner beat. One that was in a beat refused whole goes
 * alone.
 */
export function checkpointsToSend(
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

/** What a heartbeat needs of the Worker that sends it. */
export interface HeartbeatSender {
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
export async function heartbeatCarrying(
  sender: HeartbeatSender,
  session: Session,
  carried: readonly OutgoingCheckpoint[],
): Promise<{ result: HeartbeatResult; landed: readonly OutgoingCheckpoint[] }> {
  const send = (checkpoints: readonly OutgoingCheckpoint[]) =>
    sender.client.heartbeat(
      {
        sessionId: session.sessionId,
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
