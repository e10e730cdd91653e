/**
 * Roles end to end over HTTP: RoleSubscription and Worker `roles` against the local server on the emulators,
 * with a supervisor pass every half second and 3-second leases.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { isAgentSchedulerError } from '#sdk/errors';
import { RoleSubscription } from '#sdk/role-subscription';
import type { RoleLease } from '#sdk/types';
import { Worker } from '#sdk/worker';
import { RoleAbortedError, type RoleLostReason } from '#sdk/worker-events';
import { createTestStack, everyUnlessRunning, serveStack, type TestStack, waitFor } from '#test/stack';
import { main } from '../../cli/main';

const OPERATOR = 'op_e2e-roles-operator';
const LEASE_TTL_SECONDS = 3;

describe('roles through the SDK', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;
  let sweeper: NodeJS.Timeout;

  beforeAll(async () => {
    stack = await createTestStack({
      settings: { leaseTtlSeconds: LEASE_TTL_SECONDS, heartbeatIntervalSeconds: 1 },
    });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
    sweeper = everyUnlessRunning(() => stack.scheduler.supervise(), 500);
  });
  afterAll(async () => {
    clearInterval(sweeper);
    await server.close();
    await stack.destroy();
  });

  async function agentClient(
    options: {
      interactive?: boolean;
      cut?: { value: boolean };
      /** Requests whose URL ends with `suffix` wait for `until` before they are sent. */
      hold?: { suffix: string; until: Promise<unknown> };
      /** Answers to requests whose URL ends with `suffix` reach the client only after `until`. */
      slowAnswer?: { suffix: string; until: Promise<unknown> };
    } = {},
  ) {
    const { agent, token } = await operator.createAgent({
      name: 'e2e-roles',
      queues: ['work'],
      ...(options.interactive === undefined ? {} : { interactive: options.interactive }),
    });
    const { cut, hold, slowAnswer } = options;
    const client = new AgentSchedulerClient({
      endpoint: server.url,
      token,
      retries: { maxAttempts: 2, baseDelayMs: 20, maxDelayMs: 50 },
      ...(cut || hold || slowAnswer
        ? {
            fetch: async (...[input, init]: Parameters<typeof fetch>) => {
              if (cut?.value) throw new TypeError('network cut');
              const url = input instanceof Request ? input.url : String(input);
              if (hold && url.endsWith(hold.suffix)) await hold.until;
              const response = await fetch(input, init);
              if (slowAnswer && url.endsWith(slowAnswer.suffix)) await slowAnswer.until;
              return response;
            },
          }
        : {}),
    });
    return { agentId: agent.agentId, client };
  }

  /** Volunteers and waits for the grant (at once, or under the next session); answers the grant's epoch. */
  async function granted(subscription: RoleSubscription): Promise<number> {
    const lease = new Promise<RoleLease>((resolve) => subscription.once('gotRole', resolve));
    await subscription.volunteer();
    const { leaseEpoch } = await Promise.race([
      lease,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('no grant within 10 s')), 10_000).unref(),
      ),
    ]);
    return leaseEpoch;
  }

  it('a subscription that released its role can volunteer again and is granted it again', async () => {
    const { client } = await agentClient();
    const subscription = new RoleSubscription(client, 'again');
    try {
      // A free role is granted at once; with 3-second leases on two busy cores the session may lapse and be
      // opened anew in between, and the grant then comes under the new session: the grant is waited for, not
      // the first answer.
      const first = await granted(subscription);
      await subscription.release();
      expect(subscription.haveRole()).toBe(false);

      // Fluid's "should pick a previously released task": the second volunteer reaches the server (an answer
      // kept from the first one would grant nothing, and this would time out).
      const second = await granted(subscription);

      expect(subscription.haveRole()).toBe(true);
      expect(second).toBeGreaterThan(first);
      const [role] = (await operator.listRoles()).filter((r) => r.role === 'again');
      expect(role?.leaseEpoch).toBe(second);
    } finally {
      await subscription.close();
    }
  });

  it('a release stops acting in the role before the server can hand it on, not when its answer is back', async () => {
    let answer = () => {};
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const { client } = await agentClient({
      slowAnswer: { suffix: '/roles/handover/release', until: answered },
    });
    const { client: nextClient } = await agentClient();
    const holder = new RoleSubscription(client, 'handover');
    const next = new RoleSubscription(nextClient, 'handover');
    const order: string[] = [];
    holder.on('lostRole', () => order.push('holder stopped'));
    next.on('gotRole', () => order.push('next started'));
    try {
      expect(await holder.volunteer()).toBe(true);
      expect(await next.volunteer()).toBe(false);
      const released = holder.release();
      // The release committed and handed the role on; its answer is still on its way to the holder.
      await waitFor(() => next.haveRole(), 10_000);
      expect(order).toEqual(['holder stopped', 'next started']);
      answer();
      await released;
      expect(holder.haveRole()).toBe(false);
    } finally {
      answer();
      await Promise.allSettled([holder.close(), next.close()]);
    }
  });

  it('a volunteer that withdraws leaves the line and is not granted the role later', async () => {
    const holder = new RoleSubscription((await agentClient()).client, 'withdrawn');
    const { agentId: waitingId, client: waitingClient } = await agentClient();
    const waiting = new RoleSubscription(waitingClient, 'withdrawn');
    const granted: RoleLease[] = [];
    waiting.on('gotRole', (lease) => granted.push(lease));
    try {
      expect(await holder.volunteer()).toBe(true);
      expect(await waiting.volunteer()).toBe(false);
      await waiting.release();

      await holder.release();
      await new Promise((resolve) => setTimeout(resolve, 1_500));

      const [role] = (await operator.listRoles()).filter((r) => r.role === 'withdrawn');
      expect(role?.holder).toBeNull();
      expect(role?.volunteers).not.toContain(waitingId);
      expect(granted).toEqual([]);
    } finally {
      await Promise.all([holder.close(), waiting.close()]);
    }
  });

  it('a release while the volunteer call is still in flight leaves the line all the same', async () => {
    const holder = new RoleSubscription((await agentClient()).client, 'overtaken');
    let send: (value?: unknown) => void = () => undefined;
    const sent = new Promise((resolve) => {
      send = resolve;
    });
    const { agentId: slowId, client: slowClient } = await agentClient({
      hold: { suffix: '/roles/overtaken/volunteer', until: sent },
    });
    const slow = new RoleSubscription(slowClient, 'overtaken');
    try {
      expect(await holder.volunteer()).toBe(true);
      const volunteered = slow.volunteer();
      // The release is asked for while the volunteer call has not reached the server; it reaches it after.
      const released = slow.release();
      setTimeout(send, 200);
      await Promise.all([volunteered, released]);

      const [role] = (await operator.listRoles()).filter((r) => r.role === 'overtaken');
      expect(role?.volunteers).not.toContain(slowId);
      await holder.release();
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(slow.haveRole()).toBe(false);
      const [after] = (await operator.listRoles()).filter((r) => r.role === 'overtaken');
      expect(after?.holder).toBeNull();
    } finally {
      await Promise.all([holder.close(), slow.close()]);
    }
  });

  it('a holder that withdraws gives the role to the next volunteer in the same call', async () => {
    const { client } = await agentClient();
    const { agentId: nextId, client: nextClient } = await agentClient();
    const holder = new Worker({ client, roles: {} });
    const next = new RoleSubscription(nextClient, 'handed');
    await holder.start();
    try {
      const sessionId = holder.sessionId ?? '';
      const volunteered = await client.volunteerForRole('handed', { sessionId });
      expect(volunteered.picked).toBe(true);
      expect(await next.volunteer()).toBe(false);

      const withdrawn = await client.withdrawFromRole('handed', {
        sessionId,
        leaseEpoch: volunteered.leaseEpoch ?? 0,
      });

      expect(withdrawn).toMatchObject({ withdrawn: true, released: true, nextHolder: nextId });
      await waitFor(() => next.haveRole(), 5_000);
    } finally {
      await Promise.all([holder.stop({ drain: false }), next.close()]);
    }
  });

  it('a subscription gets a free role, hands it to the next volunteer on release, and hears of its own grant', async () => {
    const a = await agentClient();
    const b = await agentClient();
    const first = new RoleSubscription(a.client, 'digest');
    const second = new RoleSubscription(b.client, 'digest');
    const got: string[] = [];
    const lost: [string, RoleLostReason][] = [];
    first.on('gotRole', () => got.push('a'));
    second.on('gotRole', () => got.push('b'));
    first.on('lostRole', (_lease, reason) => lost.push(['a', reason]));

    expect(await first.volunteer()).toBe(true);
    expect(first.haveRole()).toBe(true);
    expect(await second.volunteer()).toBe(false);
    expect(second.haveRole()).toBe(false);

    await first.release();
    expect(first.haveRole()).toBe(false);
    // The server granted it to b in the release's write; b learns it at its next heartbeat.
    await waitFor(() => second.haveRole());
    expect(second.leaseEpoch).toBe(2);
    expect(got).toEqual(['a', 'b']);
    expect(lost).toEqual([['a', 'released']]);

    const [listed] = (await operator.listRoles()).filter((r) => r.role === 'digest');
    expect(listed).toMatchObject({ holder: b.agentId, leaseEpoch: 2, volunteers: [b.agentId] });
    // The CLI lists the same, as a table and as JSON.
    const printed: string[] = [];
    const cli = ['--endpoint', server.url, '--token', OPERATOR];
    expect(await main(['roles', 'list', ...cli], (text) => printed.push(text))).toBe(0);
    expect(printed[0]).toMatch(new RegExp(`digest\\s+${b.agentId}\\s+2\\s`));
    expect(await main(['roles', 'list', '--json', ...cli], (text) => printed.push(text))).toBe(0);
    expect(JSON.parse(printed[1] ?? '')).toContainEqual(
      expect.objectContaining({ role: 'digest', holder: b.agentId }),
    );
    await Promise.all([first.close(), second.close()]);
  });

  it('a worker runs its role handler while it holds the role; a cut-off holder is aborted and replaced', async () => {
    const cut = { value: false };
    const a = await agentClient({ cut });
    const b = await agentClient();
    const runs: { agent: string; lease: RoleLease; aborted?: RoleLostReason }[] = [];
    const leader =
      (agent: string) => async (context: { role: string; leaseEpoch: number; signal: AbortSignal }) => {
        const run: (typeof runs)[number] = {
          agent,
          lease: { role: context.role, leaseEpoch: context.leaseEpoch },
        };
        runs.push(run);
        await new Promise<void>((resolve) =>
          context.signal.addEventListener('abort', () => {
            const reason: unknown = context.signal.reason;
            if (reason instanceof RoleAbortedError) run.aborted = reason.reason;
            resolve();
          }),
        );
      };
    const workerA = new Worker({ client: a.client, roles: { 'stream-listener': leader('a') } });
    const workerB = new Worker({ client: b.client, roles: { 'stream-listener': leader('b') } });
    await workerA.start();
    await waitFor(() => runs.length === 1);
    await workerB.start();

    // a's network goes: its heartbeats fail, it gives the role up locally once its TTL passes, and the
    // supervisor passes the role to b once a's session is over on the server.
    const cutAt = Date.now();
    cut.value = true;
    await waitFor(() => runs.some((r) => r.agent === 'b'));
    const handOverMs = Date.now() - cutAt;
    await waitFor(() => runs[0]?.aborted !== undefined);
    expect(runs[0]).toMatchObject({ agent: 'a', lease: { leaseEpoch: 1 }, aborted: 'session' });
    expect(runs[1]).toMatchObject({ agent: 'b', lease: { leaseEpoch: 2 } });
    expect(handOverMs).toBeLessThan((LEASE_TTL_SECONDS + 2) * 1_000);

    // a comes back, opens a new session and waits in line behind b.
    cut.value = false;
    await waitFor(async () => {
      const [role] = (await operator.listRoles()).filter((r) => r.role === 'stream-listener');
      return role?.volunteers.length === 2;
    });
    expect(runs).toHaveLength(2);

    // Stopping b releases the role at once: a's handler starts without waiting for b's session to expire.
    await workerB.stop();
    expect(runs[1]?.aborted).toBe('released');
    await waitFor(() => runs.length === 3, 5_000);
    // Epoch 3 on a quiet machine; later if a's session lapsed by its own reckoning meanwhile (a grant made under a
    // session it gave up is not acted on, and the role is granted again).
    expect(runs[2]?.agent).toBe('a');
    expect(runs[2]?.lease.leaseEpoch).toBeGreaterThan(2);
    await workerA.stop();
  });

  it('a grant whose answer arrives after its session was given up is not acted on', async () => {
    // Prepare: the first volunteer answer is held back while the Worker's network goes (from that volunteer on) and
    // its session ends on its side; the Worker opens a new session (replacing the one the grant was made under)
    // before it arrives.
    const { agent, token } = await operator.createAgent({ name: 'e2e-late-grant', queues: ['work'] });
    const cut = { value: false };
    const answers: ((value?: unknown) => void)[] = [];
    const held = [0, 1].map((i) => new Promise((resolve) => answers.splice(i, 0, resolve)));
    let volunteers = 0;
    const client = new AgentSchedulerClient({
      endpoint: server.url,
      token,
      retries: { maxAttempts: 2, baseDelayMs: 20, maxDelayMs: 50 },
      fetch: async (...[input, init]: Parameters<typeof fetch>) => {
        const url = input instanceof Request ? input.url : String(input);
        const firstVolunteer = url.endsWith('/roles/late-grant/volunteer') && volunteers === 0;
        if (cut.value && !firstVolunteer) throw new TypeError('network cut');
        // From the first volunteer on, nothing else of this Worker's reaches the server: a heartbeat landing after
        // the grant would tell the Worker of it under its live session (beside a CPU-bound process one did, and
        // the handler ran, as it should), and the grant must be heard only by the late answer.
        if (firstVolunteer) cut.value = true;
        const response = await fetch(input, init);
        if (url.endsWith('/roles/late-grant/volunteer')) await held[Math.min(volunteers++, 1)];
        return response;
      },
    });
    const runs: { leaseEpoch: number; sessionId: string | undefined }[] = [];
    const worker = new Worker({
      client,
      roles: {
        'late-grant': async ({ leaseEpoch, signal }) => {
          runs.push({ leaseEpoch, sessionId: worker.sessionId });
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
        },
      },
    });
    worker.on('error', () => undefined);
    const sessions: string[] = [];
    worker.on('session', (session) => sessions.push(session.sessionId));
    await worker.start();
    await waitFor(() => volunteers === 1);
    const [role] = (await operator.listRoles()).filter((r) => r.role === 'late-grant');
    expect(role).toMatchObject({ holder: agent.agentId, leaseEpoch: 1 });
    await waitFor(() => worker.sessionId === undefined, (LEASE_TTL_SECONDS + 2) * 1_000);
    cut.value = false;
    await waitFor(() => sessions.length === 2, 5_000);

    // Act: the old grant's answer arrives, then, a moment later, the answer under the new session.
    answers[0]?.();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const beforeNewGrant = [...runs];
    answers[1]?.();
    await waitFor(() => runs.length > 0, 5_000);

    // Assess: no handler ran for the grant of the session given up; the new session's grant runs it.
    expect(beforeNewGrant).toEqual([]);
    expect(runs).toEqual([{ leaseEpoch: 2, sessionId: sessions[1] }]);
    await worker.stop();
  });

  it('a non-interactive agent is refused with a 409', async () => {
    const batch = await agentClient({ interactive: false });
    const session = await batch.client.openSession();
    const error = await batch.client
      .volunteerForRole('digest', { sessionId: session.sessionId })
      .catch((e: unknown) => e);
    expect(isAgentSchedulerError(error, 'AgentNotInteractive')).toBe(true);
    expect((error as { status: number }).status).toBe(409);
  });
});
