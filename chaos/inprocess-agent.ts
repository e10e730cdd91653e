/**
 * An agent of the in-process chaos run: it registers, opens a session, and claims one task at a time on the
 * scheduler's handlers, heartbeating as the SDK's Worker does. While the faults last, 5 % of its claims end in a
 * crash (the task dropped, the heartbeats stopped, a new session later) and 8 % in a pause past the lease, after
 * which its three late writes must each be refused. The rest it works on, then fails (a doomed task for good, at
 * its first attempt; a draw under 0.2, to be retried) or completes, a draw from 0.2 to 0.3 submitting a child
 * first; a waiting task's first run suspends it on a waitpoint instead, and its resumed run works as any. A task
 * naming the run's budget is failed or completed the same way, each finish (late ones too) reporting the usage of
 * its lease (`usageOf`). The first `ROLE_VOLUNTEERS` agents volunteer for a role, stepping down after each task, so
 * it changes hands. In a run with labelled tasks, agent `i` is registered with the labels of `LABEL_PROFILES[i % 5]`,
 * and each session it opens narrows them as the profile says.
 */
import type { ClaimedTask } from '#core/claim';
import { RETRYING } from './committed-writes';
import { HEARTBEAT_MS, type InProcessRun, LEASE_TTL_SECONDS } from './inprocess-stack';
import type { WaitingPayload } from './inprocess-workload';
import { LABEL_PROFILES, type LabelProfile } from './labels';
import { type RateLimitedPayload, usageReport } from './rate-ledger';

/** A tenth of the completions submit a child first. */
const CHILD_SHARE = 0.1;
/**
 * Agents that volunteer for one role: it changes hands each time its holder steps down (after each of its tasks),
 * crashes, pauses or reopens.
 */
const ROLE_VOLUNTEERS = 3;
const ROLE = 'chaos-leader';

/** A suspension is sent up to this many times while its answer is unknown or refused. */
const SUSPEND_TRIES = 6;
/** While the faults last, the share of suspensions whose answer is lost on its way back to the agent. */
const LOST_SUSPENSION_SHARE = 0.05;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Lease = { readonly agentId: string; readonly taskId: string; readonly leaseEpoch: number };

/** The usage a finish of a task naming the run's budget reports; none for another task. */
const usageFor = (task: ClaimedTask): Record<string, number> | undefined =>
  typeof (task.payload as Partial<RateLimitedPayload> | undefined)?.r === 'number'
    ? usageReport(task.taskId, task.leaseEpoch)
    : undefined;

/** Runs agent `index` until the run stops. */
export async function agentLoop(run: InProcessRun, index: number): Promise<void> {
  // Labels only in a run with labelled tasks: without, the fleet is as it was.
  const labels = run.options.labelled ? LABEL_PROFILES[index % LABEL_PROFILES.length] : undefined;
  const agent = new ChaosAgent(run, index < ROLE_VOLUNTEERS, labels ?? {});
  await agent.register(index);
  await agent.open();
  agent.startBeating();
  while (!run.live.stopping) await agent.claimAndWork();
  agent.stopBeating();
}

class ChaosAgent {
  private agentId = '';
  private sessionId = '';
  private beating: ReturnType<typeof setInterval> | undefined;
  private beatInFlight = false;
  /** Holding a task: the agent heartbeats. */
  private holding = false;
  /**
   * An idle agent looks again soon, but the fleet's empty claims stay near a hundred a second: a large fleet
   * polling every 20 ms spent the emulator on empty claims, and the sweeps starved behind them.
   */
  private readonly idlePollMs: number;

  constructor(
    private readonly run: InProcessRun,
    private readonly volunteer: boolean,
    /** Its labels, and what each of its sessions narrows them to: the same for every session, after a crash too. */
    private readonly profile: LabelProfile,
  ) {
    this.idlePollMs = Math.max(20, run.options.agents * 10);
  }

  async register(index: number): Promise<void> {
    while (!this.agentId) {
      const registered = await this.run.record({ op: 'open' }, () =>
        this.run.scheduler.registerAgent({
          name: `chaos-${index}`,
          queues: ['chaos'],
          maxConcurrency: 2,
          ...(this.profile.labels ? { labels: this.profile.labels } : {}),
        }),
      );
      if (registered.ok) this.agentId = registered.value.agent.agentId;
    }
  }

  /** Until the run stops: an agent whose opens keep failing must not keep the run from ending and reporting. */
  async open(): Promise<void> {
    const { run, agentId } = this;
    while (!run.live.stopping) {
      const narrowed = this.profile.session;
      const opened = await run.record({ op: 'open', agentId }, () =>
        run.scheduler.openSession(agentId, narrowed ? { labels: narrowed } : {}),
      );
      if (opened.ok) {
        this.sessionId = opened.value.sessionId;
        // A volunteer again with each session: the role moves to it when free, and on from it when it ends.
        if (this.volunteer)
          await run.scheduler.volunteerForRole(agentId, this.sessionId, ROLE).catch(() => undefined);
        return;
      }
      await sleep(50);
    }
  }

  private beat() {
    const { run, agentId, sessionId } = this;
    return run.record({ op: 'heartbeat', agentId }, () => run.scheduler.heartbeat(agentId, sessionId));
  }

  /**
   * As the SDK's worker beats: one heartbeat at a time, and only while holding a task or volunteering for the
   * role (an idle session needs none; the claim that gives it work extends it). Beats piling up behind a slow
   * store, or sent by idle agents, would be load no fleet makes, and a large one would spend the emulator on them.
   */
  private beatOnce(): void {
    if (this.beatInFlight || !(this.holding || this.volunteer)) return;
    this.beatInFlight = true;
    void this.beat().finally(() => {
      this.beatInFlight = false;
    });
  }

  startBeating(): void {
    clearInterval(this.beating);
    this.beating = setInterval(() => this.beatOnce(), HEARTBEAT_MS);
  }

  stopBeating(): void {
    clearInterval(this.beating);
  }

  /** One claim, and what follows it: a crash, a pause, or the work. */
  async claimAndWork(): Promise<void> {
    const { run, agentId } = this;
    const claim = await run.record({ op: 'claim', agentId }, () =>
      run.scheduler.claim({ agentId, sessionId: this.sessionId, max: 1 }),
    );
    if (!claim.ok) {
      if (claim.code === 'SessionLost') await this.open();
      else await sleep(20);
      return;
    }
    const [task] = claim.value;
    if (task) run.answered.add(`${task.taskId}#${task.leaseEpoch}`);
    if (task?.waitpoint)
      run.history.resumedClaims.push({
        taskId: task.taskId,
        leaseEpoch: task.leaseEpoch,
        waitpoint: task.waitpoint,
      });
    if (task?.dependencies) run.dagClaims.push({ taskId: task.taskId, dependencies: task.dependencies });
    else if (task && (task.payload as { dag?: number }).dag !== undefined)
      run.dagClaims.push({ taskId: task.taskId });
    if (!task) {
      await sleep(this.idlePollMs * (0.5 + run.random()));
      return;
    }
    this.holding = true;
    const lease = { agentId, taskId: task.taskId, leaseEpoch: task.leaseEpoch };
    const draw = run.random();
    if (run.live.faultsOn && draw < 0.05) return this.crash(lease);
    if (run.live.faultsOn && draw < 0.13) return this.pausePastLease(lease, usageFor(task));
    await this.work(task, lease, draw);
  }

  /** Crash: the task is dropped, heartbeats stop; the agent comes back later with a new session. */
  private async crash(lease: Lease): Promise<void> {
    const { run } = this;
    run.count('agentCrash');
    run.history.crashes.push({ taskId: lease.taskId, leaseEpoch: lease.leaseEpoch, at: Date.now() });
    this.stopBeating();
    this.holding = false;
    await sleep(LEASE_TTL_SECONDS * 1_000 + 500 + run.random() * 1_000);
    await this.open();
    this.startBeating();
  }

  /**
   * Pause past the lease: the agent wakes up believing it still holds the task, and its three late writes must each
   * be refused; a rate-limited task's late complete and fail report its usage, which must settle nothing.
   */
  private async pausePastLease(lease: Lease, usage: Record<string, number> | undefined): Promise<void> {
    const { run } = this;
    run.count('agentPause');
    this.stopBeating();
    this.holding = false;
    await sleep(LEASE_TTL_SECONDS * 1_000 + 1_000 + run.random() * 2_000);
    await this.beat();
    await run.record({ op: 'complete', ...lease }, () =>
      run.scheduler.complete(lease, { late: true }, undefined, usage),
    );
    await run.record({ op: 'fail', ...lease }, () =>
      run.scheduler.fail(lease, { message: 'late', retryable: true }, usage ? { usage } : {}),
    );
    await run.record({ op: 'release', ...lease }, () => run.scheduler.release(lease));
    await this.open();
    this.startBeating();
  }

  /**
   * Works on the task, then finishes it: a doomed task dies at its first attempt (a DAG's dependents must be
   * cancelled, a flat one's hook run); a draw under 0.2 fails it to be retried; the rest complete, those drawn
   * under 0.2 + `CHILD_SHARE` after submitting a child.
   */
  private async work(task: ClaimedTask, lease: Lease, draw: number): Promise<void> {
    const { run } = this;
    const { scheduler } = run;
    await sleep(run.random() * (run.options.workMs ?? 10));
    const payload = task.payload as { doom?: boolean; n?: number } & Partial<WaitingPayload>;
    if (payload.wait && payload.answered !== undefined && task.waitpoint === undefined) {
      // A waiting task's first run: suspended, it is held no more.
      await this.suspend(lease, { w: payload.w ?? 0, wait: payload.wait, answered: payload.answered });
      this.holding = false;
      return this.stepDown(lease.agentId);
    }
    const doomed = payload.doom === true;
    const usage = usageFor(task);
    if (!doomed && draw >= 0.2 && draw < 0.2 + CHILD_SHARE && typeof payload.n === 'number') {
      // A task of the flat workload submits a child before it completes.
      const child = await run.record({ op: 'submit' }, () =>
        scheduler.submitChild(
          { agentId: lease.agentId, parentTaskId: task.taskId, leaseEpoch: task.leaseEpoch },
          { key: 'child', queue: 'chaos', payload: { childOf: payload.n }, ...RETRYING },
        ),
      );
      if (child.ok) run.history.acknowledged.add(child.value.task.taskId);
    }
    const finished = doomed
      ? await run.record({ op: 'fail', ...lease }, () =>
          scheduler.fail(lease, { message: 'doomed', retryable: false }),
        )
      : draw < 0.2
        ? await run.record({ op: 'fail', ...lease }, () =>
            scheduler.fail(lease, { message: 'chaos says no', retryable: true }, usage ? { usage } : {}),
          )
        : await run.record({ op: 'complete', ...lease }, () =>
            scheduler.complete(lease, { n: task.taskId }, undefined, usage),
          );
    this.holding = false;
    if (finished.ok && draw >= 0.2) run.live.completed++;
    await this.stepDown(lease.agentId);
  }

  /** A volunteer steps down after each task and stands again: held, the role passes to the next volunteer. */
  private async stepDown(agentId: string): Promise<void> {
    if (!this.volunteer) return;
    const { scheduler } = this.run;
    await scheduler.withdrawFromRole(agentId, this.sessionId, ROLE).catch(() => undefined);
    await scheduler.volunteerForRole(agentId, this.sessionId, ROLE).catch(() => undefined);
  }

  /**
   * Suspends the task on a waitpoint, as its payload asks, and tells the callers of it. The wait is sent again while
   * its answer is unknown or refused (a retry whose token replacement lost its own answer is told its lease is
   * lost; the next one is answered): a retried suspension that had landed is answered with a new token for the same
   * waitpoint. While the faults last, one answer in twenty (and the run's first) is dropped as if lost on its way
   * back: the wait is sent again, and the first token must no longer work.
   */
  private async suspend(lease: Lease, payload: WaitingPayload): Promise<void> {
    const { run } = this;
    let lostToken: string | undefined;
    for (let attempt = 0; attempt < SUSPEND_TRIES; attempt++) {
      const waited = await run.record({ op: 'wait', ...lease }, () =>
        run.scheduler.wait(lease, payload.wait),
      );
      if (!waited.ok) {
        await sleep(50 * 2 ** attempt);
        continue;
      }
      const owed = run.faults.suspensionAnswerLost === undefined;
      if (lostToken === undefined && run.live.faultsOn && (owed || run.random() < LOST_SUSPENSION_SHARE)) {
        run.count('suspensionAnswerLost');
        lostToken = waited.value.token;
        continue;
      }
      run.suspensions.push({
        taskId: lease.taskId,
        waitpointId: waited.value.waitpoint.waitpointId,
        token: waited.value.token,
        answered: payload.answered,
        ...(lostToken === undefined ? {} : { staleToken: lostToken }),
      });
      return;
    }
  }
}
