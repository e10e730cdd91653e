/**
 * Tasks the server says a Worker's session holds that the Worker does not run: grants whose answers were lost (a
 * claim retried after its first attempt, still in flight, had granted them). Seen in heartbeats in a row, or after
 * a heartbeat whose answer was lost, the Worker reads what its session holds and gives such tasks back, and never
 * runs them should their grant come after all.
 */
import type { AgentSchedulerClient } from './client.js';
import { givingBackFailed } from './task-outcomes.js';
import type { ClaimedTask, Session, SessionHoldings } from './types.js';
import type { WorkerLog } from './worker-events.js';

/** Heartbeats in a row that must name a task this worker does not run before it asks the server what it holds. */
const UNKNOWN_HELD_BEATS = 2;

/** What the check needs of the Worker. */
export interface HoldingsHost {
  readonly client: AgentSchedulerClient;
  readonly log: WorkerLog;
  /** The worker's session now. */
  session(): Session | undefined;
  /** Aborted when the session is over: calls made under it are abandoned. */
  sessionSignal(): AbortSignal;
  /** The ids of the tasks the worker runs. */
  runningTaskIds(): ReadonlySet<string>;
  /** Claims of the session: whether one is being sent now, whether one awaits its answer, and how many were sent. */
  claims(): { readonly inFlight: boolean; readonly unanswered: boolean; readonly sent: number };
  /** What the session holds was read. */
  heardHoldings(holdings: SessionHoldings, session: Session): void;
  report(error: unknown): void;
}

export class UnknownHoldings {
  /** Task ids the server says the session holds and this worker does not run: heartbeats in a row. */
  private readonly unknownHeld = new Map<string, number>();
  /** A heartbeat answer may have been lost (its notices with it): ask the server what the session holds. */
  private reconcileNeeded = false;
  /** Leases (`taskId:epoch`) this worker gave back without running them: a claim answer that brings one is ignored. */
  private readonly givenBack = new Set<string>();

  constructor(private readonly host: HoldingsHost) {}

  /** A new session: nothing of the last one counts. */
  reset(): void {
    this.unknownHeld.clear();
    this.givenBack.clear();
    this.reconcileNeeded = false;
  }

  /** A heartbeat's answer may have been lost, notices with it: look once a beat gets through. */
  lookAfterNextBeat(): void {
    this.reconcileNeeded = true;
  }

  /** Whether the task a claim brought was given back already: it is not run, and is forgotten. */
  takeGivenBack(task: ClaimedTask): boolean {
    return this.givenBack.delete(`${task.taskId}:${task.leaseEpoch}`);
  }

  /**
   * A heartbeat of `session` says it holds `held`. Ids this worker does not run, seen in a row and with no claim in
   * flight, are given back; a beat whose answer was lost leads to the same check.
   */
  notice(session: Session, held: readonly string[]): void {
    const known = this.host.runningTaskIds();
    const unknown = held.filter((taskId) => !known.has(taskId));
    for (const taskId of [...this.unknownHeld.keys()])
      if (!unknown.includes(taskId)) this.unknownHeld.delete(taskId);
    for (const taskId of unknown) this.unknownHeld.set(taskId, (this.unknownHeld.get(taskId) ?? 0) + 1);
    const due =
      [...this.unknownHeld.values()].some((beats) => beats >= UNKNOWN_HELD_BEATS) &&
      !this.host.claims().inFlight;
    if (!due && !this.reconcileNeeded) return;
    this.reconcileNeeded = false;
    this.unknownHeld.clear();
    this.reconcile(session).catch((error: unknown) => this.host.report(error));
  }

  /**
   * Reads what the session holds, and gives back the tasks this worker does not run. A grant of a claim still in
   * flight shows in the read before its answer is back: while a claim is open, or one was sent during the read,
   * nothing is given back and the next beat looks again. What is given back is never run, should its grant come
   * after all.
   */
  private async reconcile(session: Session): Promise<void> {
    const { client, log } = this.host;
    const claimsBefore = this.host.claims().sent;
    const holdings = await client.getSession({ signal: this.host.sessionSignal() });
    if (holdings.sessionId !== session.sessionId || this.host.session() !== session) return;
    this.host.heardHoldings(holdings, session);
    const claims = this.host.claims();
    if (claims.inFlight || claims.unanswered || claims.sent !== claimsBefore) {
      this.reconcileNeeded = true;
      return;
    }
    const known = this.host.runningTaskIds();
    await Promise.all(
      holdings.tasks
        .filter((task) => !known.has(task.taskId))
        .map(async (task) => {
          this.givenBack.add(`${task.taskId}:${task.leaseEpoch}`);
          log.warn('giving back a task whose grant was never heard of', { taskId: task.taskId });
          await client
            .release(task.taskId, { leaseEpoch: task.leaseEpoch }, { signal: this.host.sessionSignal() })
            .catch(givingBackFailed((error) => this.host.report(error), task.taskId));
        }),
    );
  }
}
