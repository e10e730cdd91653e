/**
 * A task store in memory, for fast tests of the core against its port. It enforces what the DynamoDB adapter's
 * conditions enforce, from the same transition table; `task-store-contract.ts` runs one suite against both, so
 * the two cannot drift apart unnoticed.
 */
import type * as Port from '#core/ports/task-store';
import { InvalidTransitionError } from '#domain/errors';
import { requirementsKey } from '#domain/labels';
import type { Task, TaskError } from '#domain/task';
import { isTerminal, statusesFrom, type TaskEvent, type TaskStatus } from '#domain/task-status';

/** A stored record: the task, and what the adapter keeps beside it (its due time, the purge time). */
interface StoredTask {
  task: Task;
  dueAt?: number;
  purgeAt?: number;
  /** Grants barred (`TaskStore.barGrant`), by session and reservation time. */
  barred?: Set<string>;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export class FakeTaskStore implements Port.TaskStore {
  readonly dueShards = ['due#00'];
  private readonly records = new Map<string, StoredTask>();
  /** Every write attempted, landed or not: what a test counts. */
  readonly writes: { readonly kind: string; readonly taskId: string; readonly ok: boolean }[] = [];

  /** Every task held, as it is now: what the other fakes of the tasks table read beside their own records. */
  all(): Task[] {
    return [...this.records.values()].map((r) => structuredClone(r.task));
  }

  async get(taskId: string): Promise<Task | undefined> {
    const stored = this.records.get(taskId);
    return stored && viewOf(stored);
  }

  async getMany(taskIds: readonly string[]): Promise<Map<string, Task>> {
    const found = new Map<string, Task>();
    for (const id of taskIds) {
      const task = await this.get(id);
      if (task) found.set(id, task);
    }
    return found;
  }

  async queryDue(_shard: string, dueBy: number, limit: number): Promise<string[]> {
    return [...this.records.values()]
      .filter((r) => r.dueAt !== undefined && r.dueAt <= dueBy)
      .slice(0, limit)
      .map((r) => r.task.taskId);
  }

  /** Every listed task in due order (then by id); the key is the last entry's id. */
  async pageDue(
    _shard: string,
    from: { startKey?: Port.ListingCursor; limit: number },
  ): Promise<{ taskIds: string[]; startKey?: Port.ListingCursor }> {
    const listed = [...this.records.values()]
      .filter((r) => r.dueAt !== undefined)
      .sort((a, b) => (a.dueAt ?? 0) - (b.dueAt ?? 0) || a.task.taskId.localeCompare(b.task.taskId));
    const after = from.startKey?.taskId;
    const start = after === undefined ? 0 : listed.findIndex((r) => r.task.taskId === after) + 1;
    const page = listed.slice(start, start + from.limit).map((r) => r.task.taskId);
    const last = page.at(-1);
    return {
      taskIds: page,
      ...(start + from.limit < listed.length && last ? { startKey: { taskId: last } } : {}),
    };
  }

  listedShards(queue: string): readonly string[] {
    return [queue];
  }

  async queryListed(
    listShard: string,
    from: { atOrBefore?: number; startKey?: Port.ListingCursor; limit: number },
  ): Promise<{ entries: { taskId: string; createdAt: number }[]; startKey?: Port.ListingCursor }> {
    const all = [...this.records.values()]
      .map((r) => r.task)
      .filter((t) => t.queue === listShard && t.createdAt <= (from.atOrBefore ?? Number.MAX_SAFE_INTEGER))
      .sort((a, b) => b.createdAt - a.createdAt || b.taskId.localeCompare(a.taskId));
    const start = typeof from.startKey?.index === 'number' ? from.startKey.index : 0;
    const page = all.slice(start, start + from.limit);
    return {
      entries: page.map((t) => ({ taskId: t.taskId, createdAt: t.createdAt })),
      ...(start + from.limit < all.length ? { startKey: { index: start + from.limit } } : {}),
    };
  }

  walkPartitions(queue: string): readonly string[] {
    return [`walk:${queue}`];
  }

  /** Layout 2 tasks of the queue by their place (creation, then id), as their payload items sort. */
  async queryWalk(
    partition: string,
    from: { after?: string; upTo?: number; limit: number },
  ): Promise<{ entries: { taskId: string; createdAt: number; place: string }[] }> {
    const queue = partition.slice('walk:'.length);
    const entries = [...this.records.values()]
      .map((r) => r.task)
      .filter(
        (t) => t.queue === queue && t.payloadListed && t.createdAt <= (from.upTo ?? Number.MAX_SAFE_INTEGER),
      )
      .map((t) => ({
        taskId: t.taskId,
        createdAt: t.createdAt,
        place: `${String(t.createdAt).padStart(15, '0')}#${t.taskId}`,
      }))
      .filter((entry) => from.after === undefined || entry.place > from.after)
      .sort((a, b) => (a.place < b.place ? -1 : 1));
    return { entries: entries.slice(0, from.limit) };
  }

  async armLook(observed: Port.Observed, dueAt: number): Promise<Port.TaskWrite> {
    return this.write('armLook', observed.taskId, (r) => {
      if (!asObserved(r.task, observed) || r.dueAt !== undefined) return false;
      r.dueAt = dueAt;
      return true;
    });
  }

  async create(
    task: Task,
    dueAt: number | undefined,
  ): Promise<{ created: true } | { created: false; existing: Task }> {
    const existing = this.records.get(task.taskId);
    this.writes.push({ kind: 'create', taskId: task.taskId, ok: !existing });
    if (existing) return { created: false, existing: viewOf(existing) };
    // As the table has it: a queued task is claimable from its delay's end, or from its submit.
    const stored = task.status === 'queued' ? { ...task, readyAt: task.notBefore ?? task.createdAt } : task;
    this.records.set(task.taskId, { task: structuredClone(stored), dueAt });
    return { created: true };
  }

  async createUnder(
    task: Task,
    dueAt: number | undefined,
    parent: Port.OwnerFence & { readonly taskId: string },
    now: number,
  ): Promise<{ created: true } | { created: false; existing: Task } | { parentLost: true }> {
    const holder = this.records.get(parent.taskId)?.task;
    if (holder?.status !== 'leased' || !ownedBy(holder, parent, now)) return { parentLost: true };
    return this.create(task, dueAt);
  }

  async grant(taskId: string, grant: Port.Grant, now: number): Promise<Port.TaskWrite> {
    return this.write('grant', taskId, (r) => {
      const t = r.task;
      if (
        !statusIn(t, 'claim', 'leased') ||
        t.queue !== grant.queue ||
        r.barred?.has(`${grant.sessionId}@${now}`) ||
        (t.notBefore ?? 0) > now ||
        (t.expiresAt ?? Number.POSITIVE_INFINITY) <= now ||
        (t.require !== undefined &&
          (grant.requireKey === undefined || requirementsKey(t.require) !== grant.requireKey))
      )
        return false;
      const next: Mutable<Task> = {
        ...t,
        status: 'leased',
        leaseEpoch: t.leaseEpoch + 1,
        attempt: t.attempt + 1,
        owner: grant.agentId,
        sessionId: grant.sessionId,
        leasedAt: now,
        leaseDeadline: t.timeoutSeconds * 1_000 + now,
        updatedAt: now,
      };
      if (grant.claimId === undefined) delete next.claimId;
      else next.claimId = grant.claimId;
      if (grant.queueSlots?.length) next.queueSlots = [...grant.queueSlots];
      else delete next.queueSlots;
      delete next.readyAt;
      r.task = next;
      return true;
    });
  }

  async barGrant(
    taskId: string,
    reservation: { readonly sessionId: string; readonly reservedAt: number },
  ): Promise<Port.TaskWrite> {
    const { sessionId, reservedAt } = reservation;
    return this.write('barGrant', taskId, (r) => {
      const t = r.task;
      if (t.status === 'leased' && t.sessionId === sessionId && t.leasedAt === reservedAt) return false;
      r.barred = new Set([...(r.barred ?? []), `${sessionId}@${reservedAt}`]);
      return true;
    });
  }

  async finish(
    taskId: string,
    lease: Port.OwnerFence,
    finish: Port.OwnerFinish,
    now: number,
  ): Promise<Port.TaskWrite> {
    return this.write('finish', taskId, (r) => {
      if (!statusIn(r.task, finish.event, finish.to.status) || !ownedBy(r.task, lease, now)) return false;
      const attempt = r.task.attempt;
      arrive(r, finish.to, now);
      const next = r.task as Mutable<Task>;
      if (finish.event === 'complete' && finish.result !== undefined) next.result = JSON.parse(finish.result);
      if (finish.event === 'fail') next.error = { ...finish.error };
      if (finish.event === 'release') next.attempt = attempt - 1;
      next.lastFinish = {
        kind: finish.event,
        leaseEpoch: lease.leaseEpoch,
        agentId: lease.agentId,
        status: finish.to.status,
      };
      return true;
    });
  }

  async takeBack(
    observed: Port.Observed,
    { event, to, error }: Port.TakingBack,
    now: number,
  ): Promise<Port.TaskWrite> {
    allowedFrom(observed, event, to.status);
    return this.write('takeBack', observed.taskId, (r) => {
      if (!asObserved(r.task, observed)) return false;
      arrive(r, to, now);
      (r.task as Mutable<Task>).error = { ...error };
      return true;
    });
  }

  async cancel(
    observed: Port.Observed,
    to: Port.Ending & { status: 'cancelled' },
    now: number,
    because?: { readonly failedDependency: string; readonly error: TaskError },
  ): Promise<Port.TaskWrite> {
    allowedFrom(observed, 'cancel', to.status);
    return this.write('cancel', observed.taskId, (r) => {
      if (!asObserved(r.task, observed)) return false;
      arrive(r, to, now);
      if (because) r.task = { ...r.task, failedDependency: because.failedDependency, error: because.error };
      return true;
    });
  }

  async unblock(observed: Port.Observed, to: Port.Requeue, now: number): Promise<Port.TaskWrite> {
    allowedFrom(observed, 'unblock', to.status);
    return this.write('unblock', observed.taskId, (r) => {
      if (!asObserved(r.task, observed) || (r.task.waitingOn?.length ?? 0) > 0) return false;
      arrive(r, to, now);
      const next: Mutable<Task> = { ...r.task };
      delete next.waitingOn;
      r.task = next;
      return true;
    });
  }

  async strikeDependency(taskId: string, dependencyId: string): Promise<Port.TaskWrite> {
    return this.write('strikeDependency', taskId, (r) => {
      if (r.task.status !== 'waiting' || !r.task.waitingOn?.includes(dependencyId)) return false;
      r.task = { ...r.task, waitingOn: r.task.waitingOn.filter((id) => id !== dependencyId) };
      return true;
    });
  }

  async expire(
    observed: Port.Observed,
    to: Port.Ending & { status: 'expired' },
    now: number,
  ): Promise<Port.TaskWrite> {
    allowedFrom(observed, 'expire', to.status);
    return this.write('expire', observed.taskId, (r) => {
      if (!asObserved(r.task, observed) || (r.task.expiresAt ?? Number.POSITIVE_INFINITY) > now) return false;
      arrive(r, to, now);
      return true;
    });
  }

  async settleEnd(observed: Port.Observed): Promise<Port.TaskWrite> {
    return this.write('settleEnd', observed.taskId, (r) => {
      if (!asObserved(r.task, observed)) return false;
      const next: Mutable<Task> = { ...r.task };
      delete next.followUpPending;
      r.task = next;
      if (isTerminal(observed.status)) delete r.dueAt;
      return true;
    });
  }

  async redrive(observed: Port.Observed, to: Port.Requeue, now: number): Promise<Port.TaskWrite> {
    allowedFrom(observed, 'redrive', to.status);
    return this.write('redrive', observed.taskId, (r) => {
      if (!asObserved(r.task, observed)) return false;
      arrive(r, to, now);
      const next = r.task as Mutable<Task>;
      next.attempt = 0;
      next.redrives = (next.redrives ?? 0) + 1;
      delete next.finishedAt;
      delete next.expiresAt;
      delete next.followUpPending;
      delete r.purgeAt;
      return true;
    });
  }

  async checkpoint(
    taskId: string,
    lease: Port.OwnerFence,
    checkpointJson: string,
    now: number,
  ): Promise<Port.TaskWrite> {
    return this.write('checkpoint', taskId, (r) => {
      if (r.task.status !== 'leased' || !ownedBy(r.task, lease, now)) return false;
      r.task = { ...r.task, checkpoint: JSON.parse(checkpointJson) };
      return true;
    });
  }

  async extendDeadline(
    taskId: string,
    lease: Port.OwnerFence,
    leasedAt: number,
    deadline: number,
    now: number,
  ): Promise<Port.TaskWrite> {
    return this.write('extendDeadline', taskId, (r) => {
      if (r.task.status !== 'leased' || !ownedBy(r.task, lease, now) || r.task.leasedAt !== leasedAt)
        return false;
      if ((r.task.leaseDeadline ?? 0) >= deadline) return false;
      r.task = { ...r.task, leaseDeadline: deadline };
      return true;
    });
  }

  async lookAgainAt(observed: Port.Observed, dueAt: number): Promise<Port.TaskWrite> {
    return this.write('lookAgainAt', observed.taskId, (r) => {
      if (!asObserved(r.task, observed)) return false;
      r.dueAt = dueAt;
      return true;
    });
  }

  async recordDispatch(
    observed: Port.Observed,
    dispatch: { dispatchedAt: number; dueAt: number },
  ): Promise<Port.TaskWrite> {
    return this.write('recordDispatch', observed.taskId, (r) => {
      if (!asObserved(r.task, observed)) return false;
      r.task = { ...r.task, dispatchedAt: dispatch.dispatchedAt, dispatchCount: r.task.dispatchCount + 1 };
      r.dueAt = dispatch.dueAt;
      return true;
    });
  }

  async markUnsent(observed: Port.Observed, now: number): Promise<Port.TaskWrite> {
    return this.write('markUnsent', observed.taskId, (r) => {
      if (!asObserved(r.task, observed)) return false;
      const next: Mutable<Task> = { ...r.task };
      delete next.dispatchedAt;
      r.task = next;
      r.dueAt = now;
      return true;
    });
  }

  async climbLadder(observed: Port.Observed, climb: Port.LadderClimb): Promise<Port.TaskWrite> {
    return this.write('climbLadder', observed.taskId, (r) => {
      if (!asObserved(r.task, observed) || (r.task.starvationLevel ?? 0) !== climb.fromLevel) return false;
      r.task = {
        ...r.task,
        starvationLevel: climb.toLevel,
        ...(climb.priority ? { priority: climb.priority } : {}),
        ...(climb.needsAttention ? { needsAttention: true } : {}),
      };
      return true;
    });
  }

  async clearAttention(taskId: string): Promise<Port.TaskWrite> {
    return this.write('clearAttention', taskId, (r) => {
      if (r.task.needsAttention !== true) return false;
      const next: Mutable<Task> = { ...r.task };
      delete next.needsAttention;
      r.task = next;
      return true;
    });
  }

  async watch(taskId: string): Promise<Task | undefined> {
    const written = await this.write('watch', taskId, (r) => {
      r.task = { ...r.task, watched: true };
      return true;
    });
    return written.ok ? written.task : undefined;
  }

  /**
   * One conditional write: `apply` changes the record and says whether its condition held. The other fakes of the
   * tasks table write the state record through here, as their adapters do.
   */
  async write(kind: string, taskId: string, apply: (r: StoredTask) => boolean): Promise<Port.TaskWrite> {
    const stored = this.records.get(taskId);
    if (!stored) {
      this.writes.push({ kind, taskId, ok: false });
      return { ok: false };
    }
    const draft: StoredTask = structuredClone(stored);
    const ok = apply(draft);
    this.writes.push({ kind, taskId, ok });
    if (!ok) return { ok: false, current: viewOf(stored) };
    this.records.set(taskId, draft);
    return { ok: true, task: viewOf(draft) };
  }
}

/** A task as the table answers it: with whether it has an entry in the due index. */
const viewOf = (stored: StoredTask): Task => {
  const task = structuredClone(stored.task);
  return stored.dueAt === undefined ? task : { ...task, inDueIndex: true };
};

const statusIn = (task: Task, event: TaskEvent, to: TaskStatus): boolean =>
  statusesFrom(event, to).includes(task.status);

const ownedBy = (task: Task, lease: Port.OwnerFence, now: number): boolean =>
  task.owner === lease.agentId &&
  task.sessionId === lease.sessionId &&
  task.leaseEpoch === lease.leaseEpoch &&
  (task.leaseDeadline ?? 0) > now;

const asObserved = (task: Task, observed: Port.Observed): boolean =>
  task.status === observed.status && task.leaseEpoch === observed.leaseEpoch;

/** As the adapter does, before anything is written: the table must have the arrow from the status observed. */
function allowedFrom(observed: Port.Observed, event: TaskEvent, to: TaskStatus): void {
  if (!statusesFrom(event, to).includes(observed.status)) {
    throw new InvalidTransitionError(
      `task ${observed.taskId} is ${observed.status}; ${event} cannot lead to ${to}`,
    );
  }
}

/** The record as a requeue or an ending leaves it. */
function arrive(r: StoredTask, to: Port.Requeue | Port.Ending, now: number): void {
  const next: Mutable<Task> = { ...r.task, status: to.status, updatedAt: now };
  delete next.leaseDeadline;
  delete next.notBefore;
  delete next.readyAt;
  if (to.status === 'queued') {
    delete next.owner;
    delete next.starvationLevel;
    delete next.needsAttention;
    next.readyAt = to.claimableAt;
    if (to.claimableAt > now) next.notBefore = to.claimableAt;
    if (to.sentNow) {
      next.dispatchedAt = to.claimableAt;
      next.dispatchCount = r.task.dispatchCount + 1;
    } else {
      delete next.dispatchedAt;
    }
    r.dueAt = to.dueAt;
  } else {
    next.finishedAt = now;
    r.purgeAt = to.purgeAt;
    if (to.followUpAt === undefined) delete r.dueAt;
    else {
      r.dueAt = to.followUpAt;
      next.followUpPending = true;
    }
  }
  r.task = next;
}
