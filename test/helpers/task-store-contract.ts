/**
 * What every task store promises (the port `TaskStore`), as one suite: run against the DynamoDB adapter on
 * DynamoDB Local and against the fake store the core's unit tests use, so the fake cannot drift from the real one.
 * Tasks reach each status through the store's own writes.
 */
import { describe, expect, it } from 'vitest';
import type { Ending, Observed, OwnerFence, Requeue, TaskStore, TaskWrite } from '#core/ports/task-store';
import { InvalidTransitionError } from '#domain/errors';
import type { Task } from '#domain/task';
import { canTransition, TASK_STATUSES, type TaskEvent, type TaskStatus } from '#domain/task-status';

export interface StoreUnderTest {
  readonly store: TaskStore;
  now(): number;
}

export const QUEUE = 'contract';
const AGENT = 'a_contractagentcontractagent';
const SESSION = 's_contract';
const LEASE_MS = 60_000;

let counter = 0;
const newTaskId = () =>
  `t_${process.pid.toString(36)}${Date.now().toString(36)}${(counter++).toString(36)}`
    .padEnd(28, 'x')
    .slice(0, 28);

export function newTask(now: number): Task {
  return {
    taskId: newTaskId(),
    queue: QUEUE,
    priority: 'normal',
    status: 'queued',
    attempt: 0,
    retryPolicy: { maxAttempts: 3, backoffBaseSeconds: 2, backoffMaxSeconds: 60 },
    timeoutSeconds: LEASE_MS / 1_000,
    leaseEpoch: 0,
    dispatchCount: 1,
    specHash: 'contract',
    payloadBytes: 2,
    createdAt: now,
    updatedAt: now,
  };
}

const requeue = (now: number, delayMs = 0): Requeue => ({
  status: 'queued',
  claimableAt: now + delayMs,
  dueAt: now + delayMs + 120_000,
  sentNow: true,
});
const ending = <S extends Ending['status']>(status: S, now: number): Ending & { status: S } => ({
  status,
  purgeAt: Math.ceil(now / 1_000) + 3_600,
});
const leaseOf = (task: Task): OwnerFence => ({
  agentId: task.owner ?? AGENT,
  sessionId: task.sessionId ?? SESSION,
  leaseEpoch: task.leaseEpoch,
});
const observed = (task: Task, status: TaskStatus = task.status): Observed => ({
  taskId: task.taskId,
  status,
  leaseEpoch: task.leaseEpoch,
});

function landed(write: TaskWrite): Task {
  if (!write.ok) throw new Error(`a write that should have landed was refused (${write.current?.status})`);
  return write.task;
}

/** A task of its own in `status`, reached through the store's writes. */
export async function taskInStatus(store: TaskStore, now: () => number, status: TaskStatus): Promise<Task> {
  const task: Task =
    status === 'waiting'
      ? { ...newTask(now()), status: 'waiting' }
      : status === 'expired'
        ? { ...newTask(now()), expiresAt: now() }
        : newTask(now());
  expect(await store.create(task, now())).toEqual({ created: true });
  if (status === 'queued' || status === 'waiting') return task;
  if (status === 'expired')
    return landed(await store.expire(observed(task), ending('expired', now()), now()));
  if (status === 'cancelled')
    return landed(await store.cancel(observed(task), ending('cancelled', now()), now()));
  const leased = landed(
    await store.grant(task.taskId, { queue: QUEUE, agentId: AGENT, sessionId: SESSION }, now()),
  );
  if (status === 'leased') return leased;
  if (status === 'succeeded')
    return landed(
      await store.finish(
        task.taskId,
        leaseOf(leased),
        { event: 'complete', to: ending('succeeded', now()) },
        now(),
      ),
    );
  return landed(
    await store.takeBack(
      observed(leased),
      { event: 'fail', to: ending('dead', now()), error: { message: 'x', retryable: false } },
      now(),
    ),
  );
}

export function taskStoreContract(name: string, subject: () => StoreUnderTest): void {
  describe(`the task store contract: ${name}`, () => {
    /** A task of its own in `status`, reached through the store's writes. */
    const taskIn = (status: TaskStatus): Promise<Task> => {
      const { store, now } = subject();
      return taskInStatus(store, now, status);
    };

    interface Write {
      readonly name: string;
      readonly event: TaskEvent;
      readonly to: TaskStatus;
      /** The status the writer believes the task is in (writes fenced by what was read). */
      readonly believed?: TaskStatus;
      readonly write: (store: TaskStore, task: Task, now: number) => Promise<TaskWrite>;
    }
    const agentGrant = { queue: QUEUE, agentId: AGENT, sessionId: SESSION };
    const retryable = { message: 'x', retryable: true };
    const WRITES: Write[] = [
      {
        name: 'grant',
        event: 'claim',
        to: 'leased',
        write: (s, t, now) => s.grant(t.taskId, agentGrant, now),
      },
      {
        name: 'complete',
        event: 'complete',
        to: 'succeeded',
        write: (s, t, now) =>
          s.finish(t.taskId, leaseOf(t), { event: 'complete', to: ending('succeeded', now) }, now),
      },
      {
        name: 'fail, retried',
        event: 'fail',
        to: 'queued',
        write: (s, t, now) =>
          s.finish(t.taskId, leaseOf(t), { event: 'fail', to: requeue(now), error: retryable }, now),
      },
      {
        name: 'fail, dead',
        event: 'fail',
        to: 'dead',
        write: (s, t, now) =>
          s.finish(t.taskId, leaseOf(t), { event: 'fail', to: ending('dead', now), error: retryable }, now),
      },
      {
        name: 'release',
        event: 'release',
        to: 'queued',
        write: (s, t, now) => s.finish(t.taskId, leaseOf(t), { event: 'release', to: requeue(now) }, now),
      },
      {
        name: 'reclaim to queued',
        event: 'reclaim',
        to: 'queued',
        believed: 'leased',
        write: (s, t, now) =>
          s.takeBack(observed(t, 'leased'), { event: 'reclaim', to: requeue(now), error: retryable }, now),
      },
      {
        name: 'reclaim to dead',
        event: 'reclaim',
        to: 'dead',
        believed: 'leased',
        write: (s, t, now) =>
          s.takeBack(
            observed(t, 'leased'),
            { event: 'reclaim', to: ending('dead', now), error: retryable },
            now,
          ),
      },
      ...(['queued', 'leased'] as const).map(
        (believed): Write => ({
          name: `cancel, believed ${believed}`,
          event: 'cancel',
          to: 'cancelled',
          believed,
          write: (s, t, now) => s.cancel(observed(t, believed), ending('cancelled', now), now),
        }),
      ),
      {
        name: 'redrive',
        event: 'redrive',
        to: 'queued',
        believed: 'dead',
        write: (s, t, now) => s.redrive(observed(t, 'dead'), requeue(now), now),
      },
    ];
    // A task is suspended by the waitpoint store, in a transaction with its waitpoint (`waitpoints.test.ts`).
    const cases = WRITES.flatMap((write) =>
      TASK_STATUSES.filter((status) => status !== 'suspended').map((status) => ({ ...write, status })),
    );

    it('expire lands once the deadline has passed, on a task not yet claimed, and no grant lands after it', async () => {
      const { store, now } = subject();
      const task: Task = { ...newTask(now()), expiresAt: now() + 1_000 };
      await store.create(task, now());
      expect((await store.expire(observed(task), ending('expired', now()), now())).ok).toBe(false);
      expect(
        (await store.grant(task.taskId, { queue: QUEUE, agentId: AGENT, sessionId: SESSION }, now() + 1_000))
          .ok,
      ).toBe(false);
      const expired = landed(
        await store.expire(observed(task), ending('expired', now() + 1_000), now() + 1_000),
      );
      expect(expired.status).toBe('expired');

      const claimed: Task = { ...newTask(now()), expiresAt: now() + 1_000 };
      await store.create(claimed, now());
      const leased = landed(
        await store.grant(claimed.taskId, { queue: QUEUE, agentId: AGENT, sessionId: SESSION }, now()),
      );
      // Claimed in time, it is no longer the deadline's: an expiry believing it queued is refused.
      expect(
        (await store.expire(observed(leased, 'queued'), ending('expired', now() + 2_000), now() + 2_000)).ok,
      ).toBe(false);
    });

    it('an ending with a follow-up stays due, flagged, until settled', async () => {
      const { store, now } = subject();
      const task = newTask(now());
      await store.create(task, now());
      const leased = landed(
        await store.grant(task.taskId, { queue: QUEUE, agentId: AGENT, sessionId: SESSION }, now()),
      );
      const dead = landed(
        await store.takeBack(
          observed(leased),
          {
            event: 'fail',
            to: { ...ending('dead', now()), followUpAt: now() },
            error: { message: 'x', retryable: false },
          },
          now(),
        ),
      );
      expect(dead.followUpPending).toBe(true);
      const dueNow = async () =>
        (await Promise.all(store.dueShards.map((shard) => store.queryDue(shard, now() + 1, 1_000)))).flat();
      expect(await dueNow()).toContain(task.taskId);
      const settled = landed(await store.settleEnd(observed(dead)));
      expect(settled.followUpPending).toBeUndefined();
      expect(await dueNow()).not.toContain(task.taskId);
    });

    it.each(cases)(
      '$name on a $status task lands only where the transition table has the arrow',
      async (c) => {
        const { store, now } = subject();
        const task = await taskIn(c.status);
        const allowed =
          canTransition(c.status, c.event, c.to) && (c.believed === undefined || c.believed === c.status);

        const written = await c.write(store, task, now());

        expect(written.ok).toBe(allowed);
        const after = await store.get(task.taskId);
        expect(after?.status).toBe(allowed ? c.to : c.status);
        if (!written.ok) expect(written.current).toEqual(after);
      },
    );

    it('refuses, before writing, a write from a status the table has no arrow from', async () => {
      const { store, now } = subject();
      const task = await taskIn('succeeded');
      await expect(store.cancel(observed(task), ending('cancelled', now()), now())).rejects.toBeInstanceOf(
        InvalidTransitionError,
      );
      await expect(store.redrive(observed(task), requeue(now()), now())).rejects.toBeInstanceOf(
        InvalidTransitionError,
      );
      await expect(
        store.takeBack(
          observed(task),
          { event: 'reclaim', to: requeue(now()), error: { message: 'x', retryable: true } },
          now(),
        ),
      ).rejects.toBeInstanceOf(InvalidTransitionError);
      expect(await store.get(task.taskId)).toEqual(task);
    });

    it('fences an owner’s writes by its agent, session, epoch and deadline', async () => {
      const { store, now } = subject();
      const task = await taskIn('leased');
      const lease = leaseOf(task);
      const complete = (fence: OwnerFence, at = now()) =>
        store.finish(task.taskId, fence, { event: 'complete', to: ending('succeeded', at) }, at);

      expect((await complete({ ...lease, agentId: 'a_someoneelsesomeoneelsesome' })).ok).toBe(false);
      expect((await complete({ ...lease, sessionId: 's_other' })).ok).toBe(false);
      expect((await complete({ ...lease, leaseEpoch: lease.leaseEpoch - 1 })).ok).toBe(false);
      expect((await complete(lease, (task.leaseDeadline ?? 0) + 1)).ok).toBe(false);
      expect((await store.checkpoint(task.taskId, { ...lease, leaseEpoch: 0 }, '{"n":1}', now())).ok).toBe(
        false,
      );
      expect(await store.get(task.taskId)).toEqual(task);

      const checkpointed = landed(await store.checkpoint(task.taskId, lease, '{"n":2}', now()));
      expect(checkpointed.checkpoint).toEqual({ n: 2 });
      const done = landed(
        await store.finish(
          task.taskId,
          lease,
          { event: 'complete', to: ending('succeeded', now()), result: '{"ok":true}' },
          now(),
        ),
      );
      expect(done).toMatchObject({ status: 'succeeded', result: { ok: true }, owner: AGENT });
      expect(done.lastFinish).toEqual({
        kind: 'complete',
        leaseEpoch: lease.leaseEpoch,
        agentId: AGENT,
        status: 'succeeded',
      });
      expect(done.finishedAt).toBeDefined();
    });

    it('moves a deadline later only under the owner’s lease and the grant time read, never earlier', async () => {
      const { store, now } = subject();
      const task = await taskIn('leased');
      const lease = leaseOf(task);
      const leasedAt = task.leasedAt ?? 0;
      const later = (task.leaseDeadline ?? 0) + 60_000;

      expect(
        (await store.extendDeadline(task.taskId, { ...lease, leaseEpoch: 0 }, leasedAt, later, now())).ok,
      ).toBe(false);
      expect((await store.extendDeadline(task.taskId, lease, leasedAt - 1, later, now())).ok).toBe(false);
      expect(
        (await store.extendDeadline(task.taskId, lease, leasedAt, (task.leaseDeadline ?? 0) - 1, now())).ok,
      ).toBe(false);
      expect(await store.get(task.taskId)).toEqual(task);

      expect(
        landed(await store.extendDeadline(task.taskId, lease, leasedAt, later, now())).leaseDeadline,
      ).toBe(later);
      // The owner's writes are fenced by the new deadline.
      const at = later - 1;
      expect(
        (await store.finish(task.taskId, lease, { event: 'complete', to: ending('succeeded', at) }, at)).ok,
      ).toBe(true);
    });

    it('a barred grant does not land, while the same session’s grant at another time does; a grant that landed is not barred', async () => {
      const { store, now } = subject();
      const queued = await taskIn('queued');
      const reservedAt = now();
      const grant = { queue: QUEUE, agentId: AGENT, sessionId: SESSION };
      landed(await store.barGrant(queued.taskId, { sessionId: SESSION, reservedAt }));
      // Barred twice: the same bar, written again.
      landed(await store.barGrant(queued.taskId, { sessionId: SESSION, reservedAt }));
      const refused = await store.grant(queued.taskId, grant, reservedAt);
      expect(refused.ok).toBe(false);
      expect(refused.ok ? undefined : refused.current).toMatchObject({ status: 'queued', leaseEpoch: 0 });
      // Another session's grant at that time, and this session's at a later one, are not barred.
      const other = landed(await store.grant(queued.taskId, { ...grant, sessionId: 's_other' }, reservedAt));
      expect(other).toMatchObject({ status: 'leased', sessionId: 's_other', leaseEpoch: 1 });

      const second = await taskIn('queued');
      const grantedAt = now();
      landed(await store.grant(second.taskId, grant, grantedAt));
      const late = await store.barGrant(second.taskId, { sessionId: SESSION, reservedAt: grantedAt });
      expect(late.ok).toBe(false);
      expect(late.ok ? undefined : late.current).toMatchObject({ status: 'leased', leasedAt: grantedAt });
      expect(
        (await store.barGrant('t_nonenonenonenonenonenonene', { sessionId: SESSION, reservedAt })).ok,
      ).toBe(false);
    });

    it('grants at a new epoch and attempt; a release gives the attempt back; a delay holds the next grant off', async () => {
      const { store, now } = subject();
      const queued = await taskIn('queued');
      const grant = {
        queue: QUEUE,
        agentId: AGENT,
        sessionId: SESSION,
        claimId: 'claim-contract-1',
        queueSlots: [QUEUE, `${QUEUE}/key/hash`],
      };
      expect((await store.grant(queued.taskId, { ...grant, queue: 'another' }, now())).ok).toBe(false);
      const grantedAt = now();
      const first = landed(await store.grant(queued.taskId, grant, grantedAt));
      expect(first).toMatchObject({
        status: 'leased',
        leaseEpoch: 1,
        attempt: 1,
        owner: AGENT,
        claimId: grant.claimId,
        leasedAt: grantedAt,
        queueSlots: grant.queueSlots,
      });
      // The same grant sent again (its answer lost) is refused, with the task as that grant left it.
      const again = await store.grant(queued.taskId, grant, grantedAt);
      expect(again.ok).toBe(false);
      expect(again.ok ? undefined : again.current).toMatchObject({
        status: 'leased',
        sessionId: SESSION,
        claimId: grant.claimId,
        leasedAt: grantedAt,
        leaseEpoch: 1,
      });

      const released = landed(
        await store.finish(
          queued.taskId,
          leaseOf(first),
          { event: 'release', to: requeue(now(), 60_000) },
          now(),
        ),
      );
      // The grant time and the slots stay, for the end of the lease to free them.
      expect(released).toMatchObject({
        status: 'queued',
        attempt: 0,
        leaseEpoch: 1,
        leasedAt: grantedAt,
        queueSlots: grant.queueSlots,
      });
      expect(released.owner).toBeUndefined();
      expect(released.notBefore).toBeGreaterThan(now());
      expect((await store.grant(queued.taskId, { ...grant, claimId: 'claim-contract-2' }, now())).ok).toBe(
        false,
      );
      const later = (released.notBefore ?? 0) + 1;
      const second = landed(
        await store.grant(queued.taskId, { queue: QUEUE, agentId: AGENT, sessionId: SESSION }, later),
      );
      expect(second).toMatchObject({ leaseEpoch: 2, attempt: 1 });
      expect(second.claimId).toBeUndefined();
      expect(second.queueSlots).toBeUndefined();
    });

    it('fences the writes of whoever read the task by the status and epoch read', async () => {
      const { store, now } = subject();
      const task = await taskIn('leased');
      const stale = { ...observed(task), leaseEpoch: task.leaseEpoch - 1 };
      expect(
        (
          await store.takeBack(
            stale,
            { event: 'reclaim', to: requeue(now()), error: { message: 'x', retryable: true } },
            now(),
          )
        ).ok,
      ).toBe(false);
      expect((await store.lookAgainAt(stale, now() + 1_000)).ok).toBe(false);
      expect((await store.lookAgainAt({ ...observed(task), status: 'queued' }, now() + 1_000)).ok).toBe(
        false,
      );
      expect((await store.lookAgainAt(observed(task), now() + 1_000)).ok).toBe(true);

      const back = landed(
        await store.takeBack(
          observed(task),
          { event: 'reclaim', to: requeue(now()), error: { message: 'lease expired', retryable: true } },
          now(),
        ),
      );
      expect(back).toMatchObject({ status: 'queued', error: { message: 'lease expired', retryable: true } });
      expect(
        (
          await store.recordDispatch(
            { ...observed(back), leaseEpoch: back.leaseEpoch + 1 },
            { dispatchedAt: now(), dueAt: now() },
          )
        ).ok,
      ).toBe(false);
      const dispatchedAt = now() + 5;
      const sent = landed(await store.recordDispatch(observed(back), { dispatchedAt, dueAt: now() }));
      expect(sent).toMatchObject({ dispatchedAt, dispatchCount: back.dispatchCount + 1 });
      const unsent = landed(await store.markUnsent(observed(sent), now()));
      expect(unsent.dispatchedAt).toBeUndefined();
    });

    it('climbs the starvation ladder only from the level read', async () => {
      const { store } = subject();
      const task = await taskIn('queued');
      const climb = { fromLevel: 0, toLevel: 1, priority: 'high' as const, needsAttention: false };
      const promoted = landed(await store.climbLadder(observed(task), climb));
      expect(promoted).toMatchObject({ starvationLevel: 1, priority: 'high' });
      expect((await store.climbLadder(observed(task), climb)).ok).toBe(false);
      const flagged = landed(
        await store.climbLadder(observed(task), { fromLevel: 1, toLevel: 3, needsAttention: true }),
      );
      expect(flagged).toMatchObject({ starvationLevel: 3, priority: 'high', needsAttention: true });
    });

    it('clears the mark alone, once: a task not marked, or none, is refused and left as it is', async () => {
      const { store } = subject();
      const task = await taskIn('queued');
      const unmarked = await store.clearAttention(task.taskId);
      expect(unmarked.ok).toBe(false);
      expect(!unmarked.ok && unmarked.current?.needsAttention).toBeUndefined();
      const flagged = landed(
        await store.climbLadder(observed(task), { fromLevel: 0, toLevel: 3, needsAttention: true }),
      );
      const cleared = landed(await store.clearAttention(task.taskId));
      expect(cleared.needsAttention).toBeUndefined();
      // Nothing else moved: the level stays, so the ladder does not mark it again for the same wait.
      const { needsAttention: _mark, ...rest } = flagged;
      expect(cleared).toEqual(rest);
      const again = await store.clearAttention(task.taskId);
      expect(again).toMatchObject({ ok: false, current: rest });
      expect(await store.clearAttention(`t_${'q'.repeat(26)}`)).toEqual({ ok: false });
    });

    it('creates a task once: a second create answers the task already there', async () => {
      const { store, now } = subject();
      const task = await taskIn('queued');
      const again = await store.create({ ...task, specHash: 'another' }, now());
      // Read back, a queued task says since when it is claimable: from its submit here; and, created with a due
      // time, that it is in the due index.
      expect(again).toEqual({
        created: false,
        existing: { ...task, readyAt: task.notBefore ?? task.createdAt, inDueIndex: true },
      });
    });

    it('redrives a dead task with a fresh set of attempts', async () => {
      const { store, now } = subject();
      const dead = await taskIn('dead');
      const back = landed(await store.redrive(observed(dead), requeue(now()), now()));
      expect(back).toMatchObject({ status: 'queued', attempt: 0, leaseEpoch: dead.leaseEpoch });
      expect(back.finishedAt).toBeUndefined();
      expect(back.redrives).toBe(1);
    });

    it('a redrive counts itself and drops a follow-up still flagged: the task runs again', async () => {
      const { store, now } = subject();
      const task = newTask(now());
      await store.create(task, now());
      const dieOnce = async (from: Task) => {
        const leased = landed(
          await store.grant(from.taskId, { queue: QUEUE, agentId: AGENT, sessionId: SESSION }, now()),
        );
        return landed(
          await store.takeBack(
            observed(leased),
            {
              event: 'fail',
              to: { ...ending('dead', now()), followUpAt: now() },
              error: { message: 'x', retryable: false },
            },
            now(),
          ),
        );
      };
      const first = await dieOnce(task);
      expect(first.redrives).toBeUndefined();
      const back = landed(await store.redrive(observed(first), requeue(now()), now()));
      expect(back).toMatchObject({ status: 'queued', redrives: 1 });
      expect(back.followUpPending).toBeUndefined();
      const second = await dieOnce(back);
      const again = landed(await store.redrive(observed(second), requeue(now()), now()));
      expect(again.redrives).toBe(2);
    });
  });
}
