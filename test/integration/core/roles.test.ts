/**
 * Exclusive roles on DynamoDB Local: the rules of the model, each a 409; hand-over on release, on a silent
 * holder and on a replaced session; the holder's heartbeat as the only write that keeps its roles.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { RoleConflictError, ServiceUnavailableError, SessionLostError } from '#domain/errors';
import { collectedEvents, createTestStack, startAgent, type TestStack } from '#test/stack';

describe('roles', () => {
  let stack: TestStack;
  const { publisher: feed, events } = collectedEvents();
  let roleCount = 0;
  const newRole = () => `role-${roleCount++}`;
  const ttlMs = 30_000;

  beforeAll(async () => {
    stack = await createTestStack({ events: feed, settings: { leaseTtlSeconds: ttlMs / 1_000 } });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  const conflictCode = async (call: Promise<unknown>): Promise<string> => {
    const error = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RoleConflictError);
    expect((error as RoleConflictError).statusCode).toBe(409);
    return (error as RoleConflictError).code;
  };

  it('grants a free role to its first volunteer; later volunteers wait in line', async () => {
    const { scheduler } = stack;
    const role = newRole();
    const [a, b] = [await startAgent(scheduler), await startAgent(scheduler)];
    const first = await scheduler.volunteerForRole(a.agentId, a.sessionId, role);
    const second = await scheduler.volunteerForRole(b.agentId, b.sessionId, role);
    expect(first).toMatchObject({ picked: true, leaseEpoch: 1 });
    expect(second.picked).toBe(false);
    expect(second.leaseEpoch).toBeUndefined();
    const [listed] = (await scheduler.listRoles()).filter((r) => r.role === role);
    expect(listed).toMatchObject({ holder: a.agentId, leaseEpoch: 1, volunteers: [a.agentId, b.agentId] });
  });

  it('refuses each broken rule with its own 409 and changes nothing', async () => {
    const { scheduler } = stack;
    const role = newRole();
    const a = await startAgent(scheduler);
    const b = await startAgent(scheduler);
    await scheduler.registerRole(a.agentId, role);
    expect(await conflictCode(scheduler.registerRole(a.agentId, role))).toBe('RoleAlreadyRegistered');
    await scheduler.registerRole(b.agentId, role);

    await scheduler.volunteerForRole(a.agentId, a.sessionId, role);
    expect(await conflictCode(scheduler.volunteerForRole(a.agentId, a.sessionId, role))).toBe(
      'RoleAlreadyVolunteered',
    );
    await scheduler.volunteerForRole(b.agentId, b.sessionId, role);
    expect(await conflictCode(scheduler.volunteerForRole(b.agentId, b.sessionId, role))).toBe(
      'RoleAlreadyVolunteered',
    );
    // Only the holder, with the current epoch, may release.
    expect(await conflictCode(scheduler.releaseRole(b.agentId, role, 1))).toBe('RoleNotHeld');
    expect(await conflictCode(scheduler.releaseRole(a.agentId, role, 2))).toBe('RoleNotHeld');
    expect(await conflictCode(scheduler.releaseRole(a.agentId, newRole(), 1))).toBe('RoleNotHeld');

    const { agent: batch } = await scheduler.registerAgent({
      name: 'batch',
      queues: ['work'],
      interactive: false,
    });
    const batchSession = await scheduler.openSession(batch.agentId);
    expect(await conflictCode(scheduler.volunteerForRole(batch.agentId, batchSession.sessionId, role))).toBe(
      'AgentNotInteractive',
    );

    const [listed] = (await scheduler.listRoles()).filter((r) => r.role === role);
    expect(listed).toMatchObject({
      holder: a.agentId,
      leaseEpoch: 1,
      volunteers: [a.agentId, b.agentId],
      registered: [a.agentId, b.agentId].sort(),
    });
  });

  it('a release hands the role to the next live volunteer at once, who hears of it at its heartbeat', async () => {
    const { scheduler } = stack;
    const role = newRole();
    const [a, b, c] = [await startAgent(scheduler), await startAgent(scheduler), await startAgent(scheduler)];
    await scheduler.volunteerForRole(a.agentId, a.sessionId, role);
    await scheduler.volunteerForRole(b.agentId, b.sessionId, role);
    await scheduler.volunteerForRole(c.agentId, c.sessionId, role);
    const released = await scheduler.releaseRole(a.agentId, role, 1);
    expect(released.nextHolder).toBe(b.agentId);
    expect(released.role).toMatchObject({
      holder: b.agentId,
      leaseEpoch: 2,
      volunteers: [b.agentId, c.agentId],
    });

    const beat = await scheduler.heartbeat(b.agentId, b.sessionId);
    expect(beat.rolesPicked).toEqual([{ role, leaseEpoch: 2 }]);
    expect((await scheduler.heartbeat(b.agentId, b.sessionId)).rolesPicked).toEqual([]);
    // The releasing agent left the line; the old epoch is refused.
    expect(await conflictCode(scheduler.releaseRole(a.agentId, role, 1))).toBe('RoleNotHeld');
    const kinds = events.filter((e) => e.role === role).map((e) => [e.type, e.agentId, e.data?.leaseEpoch]);
    expect(kinds).toEqual([
      ['role.picked', a.agentId, 1],
      ['role.released', a.agentId, 1],
      ['role.picked', b.agentId, 2],
    ]);
  });

  it('a holder whose heartbeat lands after its role passed on is refused; one that lands first keeps it', async () => {
    const { scheduler, clock, ctx } = stack;
    const [late, early] = [newRole(), newRole()];
    const [a, b, c, d] = [
      await startAgent(scheduler),
      await startAgent(scheduler),
      await startAgent(scheduler),
      await startAgent(scheduler),
    ];
    await scheduler.volunteerForRole(a.agentId, a.sessionId, late);
    await scheduler.volunteerForRole(b.agentId, b.sessionId, late);
    await scheduler.volunteerForRole(c.agentId, c.sessionId, early);
    await scheduler.volunteerForRole(d.agentId, d.sessionId, early);
    const expiryOf = async (agentId: string) => (await ctx.sessions.get(agentId))?.expiresAt ?? 0;
    const [aExpiresAt, cExpiresAt] = [await expiryOf(a.agentId), await expiryOf(c.agentId)];
    // The volunteers keep beating; the holders' last heartbeats are slow to arrive.
    clock.advance(ttlMs - 5_000);
    await scheduler.heartbeat(b.agentId, b.sessionId);
    await scheduler.heartbeat(d.agentId, d.sessionId);
    clock.advance(6_000);

    // c's heartbeat, sent before its expiry, lands between the sweep's read of c's session and the hand-over.
    const cLate = stack.sibling({ now: () => cExpiresAt - 1 });
    stack.interleave(
      (operation, input) =>
        operation === 'TransactWriteItemsCommand' && JSON.stringify(input).includes(c.agentId),
      () => cLate.heartbeat(c.agentId, c.sessionId),
    );
    await scheduler.supervise();
    const holding = async (name: string) => (await scheduler.listRoles()).find((r) => r.role === name);
    expect(await holding(late)).toMatchObject({ holder: b.agentId, leaseEpoch: 2 });
    expect(await holding(early)).toMatchObject({ holder: c.agentId, leaseEpoch: 1 });

    // a's heartbeat, sent before its expiry too, arrives after its role went to the volunteer.
    const aLate = stack.sibling({ now: () => aExpiresAt - 1 });
    const error = await aLate.heartbeat(a.agentId, a.sessionId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionLostError);
    expect((error as SessionLostError).context.lostRoles).toEqual([{ role: late, leaseEpoch: 1 }]);
  });

  it('a silent holder loses the role to a live volunteer within the TTL plus one supervisor pass', async () => {
    const { scheduler, clock } = stack;
    const role = newRole();
    const a = await startAgent(scheduler);
    const b = await startAgent(scheduler);
    await scheduler.volunteerForRole(a.agentId, a.sessionId, role);
    await scheduler.volunteerForRole(b.agentId, b.sessionId, role);
    // a says nothing more: its session ends at most a TTL from now.
    const aExpiresAt = (await stack.ctx.sessions.get(a.agentId))?.expiresAt ?? 0;
    expect(aExpiresAt).toBeLessThanOrEqual(clock.now() + ttlMs);
    // b keeps beating; a says nothing. Before a's session ends, a pass leaves the role where it is.
    clock.advance(ttlMs - 5_000);
    await scheduler.heartbeat(b.agentId, b.sessionId);
    expect((await scheduler.supervise()).rolesHandedOver).toBe(0);
    clock.advance(6_000);
    const passStartedAt = clock.now();
    const pass = await scheduler.supervise();
    const passEndedAt = clock.now();
    expect(pass.rolesHandedOver).toBeGreaterThanOrEqual(1);
    const [listed] = (await scheduler.listRoles()).filter((r) => r.role === role);
    expect(listed).toMatchObject({ holder: b.agentId, leaseEpoch: 2, volunteers: [b.agentId] });
    // Silent for the TTL, then handed over by the first pass after the session ended (a second after it here),
    // within that pass: never before the session ended, never a pass (or a TTL) later.
    expect(passStartedAt).toBeGreaterThan(aExpiresAt);
    expect(listed?.since ?? 0).toBeGreaterThanOrEqual(Math.max(aExpiresAt, passStartedAt));
    expect(listed?.since ?? 0).toBeLessThanOrEqual(passEndedAt);

    // The old holder comes back: its heartbeat says the session and its role are gone; its epoch is refused.
    const error = await scheduler.heartbeat(a.agentId, a.sessionId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionLostError);
    expect((error as SessionLostError).context.lostRoles).toEqual([{ role, leaseEpoch: 1 }]);
    expect(await conflictCode(scheduler.releaseRole(a.agentId, role, 1))).toBe('RoleNotHeld');
    expect(events.filter((e) => e.role === role && e.type === 'role.lost')).toHaveLength(1);
  });

  /** A new role held by `a`, with `b` next in line. */
  const heldWithOneWaiting = async () => {
    const { scheduler } = stack;
    const role = newRole();
    const a = await startAgent(scheduler);
    const b = await startAgent(scheduler);
    await scheduler.volunteerForRole(a.agentId, a.sessionId, role);
    await scheduler.volunteerForRole(b.agentId, b.sessionId, role);
    return { scheduler, role, a, b };
  };
  /** Runs `before` just before the transaction that hands `agentId`'s roles over. */
  const beforeHandOverOf = (agentId: string, before: () => Promise<unknown>) =>
    stack.interleave(
      (operation, input) =>
        operation === 'TransactWriteItemsCommand' && JSON.stringify(input).includes(agentId),
      before,
    );

  it('opening a new session hands the old session’s roles over without waiting for a sweep', async () => {
    const { scheduler, role, a, b } = await heldWithOneWaiting();
    const reopened = await scheduler.openSession(a.agentId);
    const [listed] = (await scheduler.listRoles()).filter((r) => r.role === role);
    expect(listed).toMatchObject({ holder: b.agentId, leaseEpoch: 2, volunteers: [b.agentId] });
    // The restarted agent volunteers again and waits behind b.
    const again = await scheduler.volunteerForRole(a.agentId, reopened.sessionId, role);
    expect(again.picked).toBe(false);
    expect(again.role.volunteers).toEqual([b.agentId, a.agentId]);
  });

  it('a new session dates its lease from when it is written, however long the old one’s hand-over took', async () => {
    const { scheduler, a } = await heldWithOneWaiting();
    // The hand-over's transaction is slow: a whole lease TTL passes before it lands.
    let handedOverAt = 0;
    beforeHandOverOf(a.agentId, async () => {
      stack.clock.advance(ttlMs);
      handedOverAt = stack.clock.now();
    });

    const opened = await scheduler.openSession(a.agentId);

    const written = await stack.ctx.sessions.get(a.agentId);
    expect(written?.sessionId).toBe(opened.sessionId);
    expect(opened.expiresAt).toBeGreaterThanOrEqual(handedOverAt + ttlMs);
    expect(written?.expiresAt).toBe(opened.expiresAt);
  });

  it('a replaced session whose hand-over failed stays for the sweep to find, and the new session waits for it', async () => {
    const { scheduler, role, a, b } = await heldWithOneWaiting();
    beforeHandOverOf(a.agentId, () => Promise.reject(new Error('the hand-over failed')));

    const error = await scheduler.openSession(a.agentId).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect((await stack.ctx.sessions.get(a.agentId))?.sessionId).toBe(a.sessionId);
    expect((await scheduler.supervise()).rolesHandedOver).toBeGreaterThanOrEqual(1);
    const [listed] = (await scheduler.listRoles()).filter((r) => r.role === role);
    expect(listed).toMatchObject({ holder: b.agentId, leaseEpoch: 2 });
    await scheduler.openSession(a.agentId);
  });

  it('a role with no live volunteer is freed, and the next volunteer gets it with a higher epoch', async () => {
    const { scheduler, clock } = stack;
    const role = newRole();
    const a = await startAgent(scheduler);
    await scheduler.volunteerForRole(a.agentId, a.sessionId, role);
    clock.advance(ttlMs + 1_000);
    expect((await scheduler.supervise()).rolesFreed).toBeGreaterThanOrEqual(1);
    const [freed] = (await scheduler.listRoles()).filter((r) => r.role === role);
    expect(freed).toMatchObject({ leaseEpoch: 1, volunteers: [] });
    expect(freed?.holder).toBeUndefined();
    const b = await startAgent(scheduler);
    expect(await scheduler.volunteerForRole(b.agentId, b.sessionId, role)).toMatchObject({
      picked: true,
      leaseEpoch: 2,
    });
  });

  it('a waiting volunteer that withdraws leaves the line: the next release passes it by', async () => {
    const { scheduler } = stack;
    const role = newRole();
    const [a, b, c] = [await startAgent(scheduler), await startAgent(scheduler), await startAgent(scheduler)];
    await scheduler.volunteerForRole(a.agentId, a.sessionId, role);
    await scheduler.volunteerForRole(b.agentId, b.sessionId, role);
    await scheduler.volunteerForRole(c.agentId, c.sessionId, role);

    const withdrawn = await scheduler.withdrawFromRole(b.agentId, b.sessionId, role);
    expect(withdrawn).toMatchObject({ withdrawn: true, released: false });
    expect(withdrawn.role.volunteers).toEqual([a.agentId, c.agentId]);
    // Again: nothing left to withdraw.
    expect(await scheduler.withdrawFromRole(b.agentId, b.sessionId, role)).toMatchObject({
      withdrawn: false,
      released: false,
    });

    const released = await scheduler.releaseRole(a.agentId, role, 1);
    expect(released.nextHolder).toBe(c.agentId);
    expect((await scheduler.heartbeat(b.agentId, b.sessionId)).rolesPicked).toEqual([]);
  });

  it('a holder that withdraws hands the role to the next live volunteer in the same move', async () => {
    const { scheduler } = stack;
    const role = newRole();
    const [a, b] = [await startAgent(scheduler), await startAgent(scheduler)];
    await scheduler.volunteerForRole(a.agentId, a.sessionId, role);
    await scheduler.volunteerForRole(b.agentId, b.sessionId, role);

    const withdrawn = await scheduler.withdrawFromRole(a.agentId, a.sessionId, role, 1);

    expect(withdrawn).toMatchObject({ withdrawn: true, released: true, nextHolder: b.agentId });
    expect(withdrawn.role).toMatchObject({ holder: b.agentId, leaseEpoch: 2, volunteers: [b.agentId] });
    expect((await scheduler.heartbeat(b.agentId, b.sessionId)).rolesPicked).toEqual([
      { role, leaseEpoch: 2 },
    ]);
    expect((await stack.ctx.sessions.get(a.agentId))?.roles).toEqual({});
    expect(await conflictCode(scheduler.releaseRole(a.agentId, role, 1))).toBe('RoleNotHeld');
  });

  it('a withdraw releases a holding only at the epoch it names: one landing late keeps a later grant', async () => {
    const { scheduler } = stack;
    const role = newRole();
    const [a, b] = [await startAgent(scheduler), await startAgent(scheduler)];
    await scheduler.volunteerForRole(a.agentId, a.sessionId, role);
    await scheduler.volunteerForRole(b.agentId, b.sessionId, role);
    // a gives the role up and takes it back later in the same session, at epoch 3.
    await scheduler.releaseRole(a.agentId, role, 1);
    await scheduler.volunteerForRole(a.agentId, a.sessionId, role);
    await scheduler.releaseRole(b.agentId, role, 2);

    // A withdraw sent before the new grant arrives now: it names no epoch, or the one given up.
    for (const leaseEpoch of [undefined, 1]) {
      const late = await scheduler.withdrawFromRole(a.agentId, a.sessionId, role, leaseEpoch);
      expect(late).toMatchObject({ released: false, role: { holder: a.agentId, leaseEpoch: 3 } });
    }
    expect((await scheduler.heartbeat(b.agentId, b.sessionId)).rolesPicked).toEqual([]);
    // Named, the holding goes.
    expect(await scheduler.withdrawFromRole(a.agentId, a.sessionId, role, 3)).toMatchObject({
      released: true,
    });
  });

  it('one heartbeat write keeps every role of the session, however many', async () => {
    const { scheduler, meter } = stack;
    const a = await startAgent(scheduler);
    for (let i = 0; i < 3; i++) await scheduler.volunteerForRole(a.agentId, a.sessionId, newRole());
    await scheduler.heartbeat(a.agentId, a.sessionId);
    meter.reset();
    await scheduler.heartbeat(a.agentId, a.sessionId);
    expect(meter.totals()).toMatchObject({ requests: 1, writeUnits: 1 });
  });
});

describe('roles at scale', () => {
  let stack: TestStack;
  const ttlMs = 30_000;
  const maxRolesPerAgent = 40;

  beforeAll(async () => {
    stack = await createTestStack({
      settings: { leaseTtlSeconds: ttlMs / 1_000, sweepLimit: 5, maxRolesPerAgent },
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('a sweep hands over a silent holder’s role placed last in scan order, however many roles come first', async () => {
    // Prepare: 40 roles; the last one a scan reads is held by an agent that goes silent, the others by one that
    // keeps beating. The sweep looks at 5 items per kind. Only the test moves the clock: the 80 writes of the setup
    // took more than the 5 s left of the live agent's lease beside another CPU-bound process.
    const { scheduler, clock } = stack;
    clock.stop();
    onTestFinished(() => clock.resume());
    const names = Array.from({ length: 40 }, (_, i) => `scale-${i}`);
    for (const name of names) await stack.ctx.roles.getOrCreate(name, clock.now());
    const scanned = await stack.ctx.sessions.doc.send(
      new ScanCommand({ TableName: stack.ctx.sessions.tableName }),
    );
    const inScanOrder = (scanned.Items ?? [])
      .map((item) => String(item.role))
      .filter((r) => names.includes(r));
    const last = inScanOrder.at(-1) ?? '';
    const silent = await startAgent(scheduler);
    const live = await startAgent(scheduler);
    await scheduler.volunteerForRole(silent.agentId, silent.sessionId, last);
    for (const name of inScanOrder) await scheduler.volunteerForRole(live.agentId, live.sessionId, name);

    // Act: the silent holder's session expires; the live agent keeps beating.
    clock.advance(ttlMs - 5_000);
    await scheduler.heartbeat(live.agentId, live.sessionId);
    clock.advance(6_000);
    const pass = await scheduler.supervise();

    // Assess
    expect(pass.rolesHandedOver).toBe(1);
    const [role] = (await scheduler.listRoles()).filter((r) => r.role === last);
    expect(role).toMatchObject({ holder: live.agentId, leaseEpoch: 2 });
    // The session's roles were cleared: the next pass does not look at it again.
    expect((await stack.ctx.sessions.get(silent.agentId))?.roles).toEqual({});
    expect((await scheduler.supervise()).rolesHandedOver).toBe(0);
  });

  it('parallel registrations by one agent never pass maxRolesPerAgent', async () => {
    const { scheduler } = stack;
    const a = await startAgent(scheduler);
    const outcomes = await Promise.allSettled(
      Array.from({ length: maxRolesPerAgent + 15 }, (_, i) =>
        scheduler.registerRole(a.agentId, `bounded-${i}`),
      ),
    );
    const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as RoleConflictError] : []));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(maxRolesPerAgent);
    expect(new Set(refused.map((e) => `${e.statusCode} ${e.code}`))).toEqual(
      new Set(['409 RoleLimitReached']),
    );
    const registered = (await scheduler.listRoles()).filter((r) => r.registered.includes(a.agentId));
    expect(registered).toHaveLength(maxRolesPerAgent);
  });

  it('volunteering registers the role, so it is bounded too, and an agent at its bound creates no role', async () => {
    const { scheduler, ctx } = stack;
    const c = await startAgent(scheduler);
    for (let i = 0; i < maxRolesPerAgent; i++) {
      await scheduler.volunteerForRole(c.agentId, c.sessionId, `volunteered-${i}`);
    }

    await expect(
      scheduler.volunteerForRole(c.agentId, c.sessionId, 'volunteered-extra'),
    ).rejects.toMatchObject({ statusCode: 409, code: 'RoleLimitReached' });
    await expect(scheduler.registerRole(c.agentId, 'registered-extra')).rejects.toMatchObject({
      statusCode: 409,
      code: 'RoleLimitReached',
    });
    expect(await ctx.roles.get('volunteered-extra')).toBeUndefined();
    expect(await ctx.roles.get('registered-extra')).toBeUndefined();
    // A role it volunteered for counts as registered: registering it again is a conflict, not a new role.
    await expect(scheduler.registerRole(c.agentId, 'volunteered-0')).rejects.toMatchObject({
      code: 'RoleAlreadyRegistered',
    });
  });
});
