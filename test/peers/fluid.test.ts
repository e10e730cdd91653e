/**
 * Fluid Framework's AgentScheduler tests (`packages/test/test-end-to-end-tests/src/test/agentScheduler.spec.ts` of
 * microsoft/FluidFramework, for `packages/framework/agent-scheduler`) expressed as a user of agent-scheduler would
 * check the same promises with roles, through the HTTP API and the SDK only, on the local stack
 * (`#test/peer-stack`: 5-second leases, supervisor every second). Fluid's task is our role, its client our agent.
 *
 * Covered, Fluid's scenario → ours:
 * - no tasks initially; register a task without picking it → `registerRole`: listed, held by no one.
 * - pick a task; picked tasks listed per client → `RoleSubscription.volunteer()`, `getSession().roles`, `listRoles`.
 * - duplicate picking fails → a second volunteer of the same session is `409 RoleAlreadyVolunteered`.
 * - releasing a task not held fails → `409 RoleNotHeld`.
 * - pick a previously released task → volunteer again after `release()`, granted at a higher epoch.
 * - clients agree on picking sequentially; picking the same tasks is exclusive and agreed upon → two agents, six
 *   roles: each role has one holder, and every view (each agent's, its session's, the operator's) agrees.
 * - released tasks are picked up automatically by interested clients; releasing leadership elects a new leader →
 *   a release hands each role to the waiting volunteer in the same write.
 * - a client that leaves (closes, or crashes) has its tasks picked by another → `close()` hands on at once; a
 *   Worker cut off the network loses its roles to the other agent within the lease TTL and a supervisor pass, and
 *   stops acting in them before the other starts.
 * - many clients racing for one task → eight agents volunteer at once: exactly one is granted it.
 *
 * Not covered, no analogue: Fluid's read-only ("read" mode) containers and its leader being a built-in task
 * (any role here can play it), the ordering service's sequence numbers (our epochs are the agreed order).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentSchedulerClient } from '#sdk/client';
import { isAgentSchedulerError } from '#sdk/errors';
import { RoleSubscription } from '#sdk/role-subscription';
import { Worker } from '#sdk/worker';
import { LEASE_TTL_SECONDS, type PeerStack, SUPERVISOR_PERIOD_MS, startPeerStack } from '#test/peer-stack';
import { waitFor } from '#test/stack';

/** An agent with one session (a Worker that claims nothing) following any number of roles. */
interface Client {
  readonly agentId: string;
  readonly client: AgentSchedulerClient;
  readonly worker: Worker;
  readonly roles: Map<string, RoleSubscription>;
  pick(role: string): Promise<boolean>;
  release(...roles: string[]): Promise<void>;
  /** The roles this agent believes it holds. */
  picked(): string[];
  /** Sessions its Worker lost (expired by its own reckoning, or ended by the server). */
  sessionsLost(): number;
}

describe('Fluid AgentScheduler scenarios on agent-scheduler roles', () => {
  let stack: PeerStack;
  let operator: AgentSchedulerClient;
  const clients: Client[] = [];

  beforeAll(async () => {
    stack = await startPeerStack(['work'], 'op_peers-fluid');
    operator = stack.operator;
  });
  afterAll(async () => {
    await Promise.all(
      clients.map((c) => c.worker.stop({ drain: false, timeoutMs: 1_000 }).catch(() => undefined)),
    );
    await stack.close();
  });

  async function connect(cut?: { value: boolean }): Promise<Client> {
    const { agentId, client } = await stack.agent(['work'], cut ? { cut } : {});
    const worker = new Worker({ client, pollIntervalMs: { min: 20, max: 100 }, push: false });
    let sessionsLost = 0;
    worker.on('sessionLost', () => {
      sessionsLost++;
    });
    await worker.start();
    const roles = new Map<string, RoleSubscription>();
    const subscription = (role: string) => {
      let found = roles.get(role);
      if (!found) {
        found = new RoleSubscription(client, role, { worker });
        found.on('error', () => undefined);
        roles.set(role, found);
      }
      return found;
    };
    const made: Client = {
      agentId,
      client,
      worker,
      roles,
      pick: (role) => subscription(role).volunteer(),
      release: async (...names) => {
        for (const name of names) await subscription(name).release();
      },
      picked: () =>
        [...roles.entries()]
          .filter(([, s]) => s.haveRole())
          .map(([name]) => name)
          .sort(),
      sessionsLost: () => sessionsLost,
    };
    clients.push(made);
    return made;
  }

  /** Who holds each of `names`, as the operator sees it. */
  async function holders(names: readonly string[]): Promise<Record<string, string | null>> {
    const roles = await operator.listRoles();
    return Object.fromEntries(
      names.map((name) => [name, roles.find((r) => r.role === name)?.holder ?? null]),
    );
  }

  /** The roles an agent's live session holds, as the server says. */
  const sessionRoles = async (c: Client) => (await c.client.getSession()).roles.map((r) => r.role).sort();

  describe('single client', () => {
    it('registers a role without picking it: listed, held by no one', async () => {
      const a = await connect();
      await a.client.registerRole('registered-only');
      const [role] = (await operator.listRoles()).filter((r) => r.role === 'registered-only');
      expect(role).toMatchObject({ holder: null, registered: [a.agentId] });
      expect(await sessionRoles(a)).toEqual([]);
      expect(a.picked()).toEqual([]);
    });

    it('picks a role, lists it, refuses a duplicate pick and a release of one never picked', async () => {
      const a = await connect();
      expect(await a.pick('solo-1')).toBe(true);
      expect(a.picked()).toEqual(['solo-1']);
      expect(await sessionRoles(a)).toEqual(['solo-1']);
      const sessionId = a.worker.sessionId as string;
      const duplicate = await a.client
        .volunteerForRole('solo-1', { sessionId })
        .catch((error: unknown) => error);
      expect(isAgentSchedulerError(duplicate, 'RoleAlreadyVolunteered')).toBe(true);
      const never = await a.client
        .releaseRole('solo-never', { leaseEpoch: 1 })
        .catch((error: unknown) => error);
      expect(isAgentSchedulerError(never, 'RoleNotHeld')).toBe(true);
      expect(await sessionRoles(a)).toEqual(['solo-1']);
    });

    it('picks a role again after releasing it, under a newer epoch', async () => {
      const a = await connect();
      expect(await a.pick('solo-2')).toBe(true);
      const firstEpoch = a.roles.get('solo-2')?.leaseEpoch as number;
      await a.release('solo-2');
      expect(a.picked()).toEqual([]);
      expect(await holders(['solo-2'])).toEqual({ 'solo-2': null });
      expect(await a.pick('solo-2')).toBe(true);
      expect(a.roles.get('solo-2')?.leaseEpoch).toBeGreaterThan(firstEpoch);
      expect(await sessionRoles(a)).toEqual(['solo-2']);
    });
  });

  describe('multiple clients', () => {
    it('picking the same roles is exclusive, and every view agrees on who holds what', async () => {
      const [a, b] = [await connect(), await connect()];
      for (const role of ['m1', 'm2', 'm3']) expect(await a.pick(role)).toBe(true);
      for (const role of ['m2', 'm3']) expect(await b.pick(role)).toBe(false);
      expect(await b.pick('m4')).toBe(true);
      // Fluid's interleaved order: each role goes to whoever asked first.
      expect(await b.pick('m5')).toBe(true);
      expect(await a.pick('m5')).toBe(false);
      expect(await a.pick('m6')).toBe(true);
      expect(await b.pick('m6')).toBe(false);

      expect(a.picked()).toEqual(['m1', 'm2', 'm3', 'm6']);
      expect(b.picked()).toEqual(['m4', 'm5']);
      expect(await sessionRoles(a)).toEqual(a.picked());
      expect(await sessionRoles(b)).toEqual(b.picked());
      expect(await holders(['m1', 'm2', 'm3', 'm4', 'm5', 'm6'])).toEqual({
        m1: a.agentId,
        m2: a.agentId,
        m3: a.agentId,
        m4: b.agentId,
        m5: b.agentId,
        m6: a.agentId,
      });
    });

    it('released roles are picked up by the interested client, and back again', async () => {
      const [a, b] = [await connect(), await connect()];
      for (const role of ['h1', 'h2', 'h3']) expect(await a.pick(role)).toBe(true);
      for (const role of ['h1', 'h2', 'h3']) expect(await b.pick(role)).toBe(false);
      expect(await b.pick('h4')).toBe(true);

      await a.release('h1', 'h2', 'h3');
      expect(a.picked()).toEqual([]);
      // Each release hands the role on in the same write; the new holder hears of it with its next word.
      await waitFor(() => b.picked().length === 4, 10_000);
      expect(await holders(['h1', 'h2', 'h3', 'h4'])).toEqual({
        h1: b.agentId,
        h2: b.agentId,
        h3: b.agentId,
        h4: b.agentId,
      });

      for (const role of ['h1', 'h2', 'h3', 'h4']) expect(await a.pick(role)).toBe(false);
      await b.release('h1', 'h2', 'h3', 'h4');
      await waitFor(() => a.picked().length === 4, 10_000);
      expect(await sessionRoles(a)).toEqual(['h1', 'h2', 'h3', 'h4']);
      expect(await sessionRoles(b)).toEqual([]);
    });

    it('a client that closes hands its roles to the waiting client at once', async () => {
      const [a, b] = [await connect(), await connect()];
      expect(await a.pick('leader')).toBe(true);
      expect(await a.pick('closing-2')).toBe(true);
      expect(await b.pick('leader')).toBe(false);
      expect(await b.pick('closing-2')).toBe(false);
      const lost: string[] = [];
      for (const [name, s] of a.roles) s.on('lostRole', (_lease, reason) => lost.push(`${name}:${reason}`));

      await a.worker.stop();

      // Given up as the session closes, not left to expire: the waiting client holds them the moment stop returns.
      expect(a.picked()).toEqual([]);
      expect(lost.sort()).toEqual(['closing-2:released', 'leader:released']);
      expect(await holders(['leader', 'closing-2'])).toEqual({ leader: b.agentId, 'closing-2': b.agentId });
      await waitFor(() => b.picked().length === 2, 15_000);
    });

    it('a crashed client’s roles go to another within the lease TTL and a supervisor pass, never to two at once', async () => {
      const cut = { value: false };
      const a = await connect(cut);
      const b = await connect();
      expect(await a.pick('crash-1')).toBe(true);
      expect(await a.pick('crash-2')).toBe(true);
      expect(await b.pick('crash-1')).toBe(false);
      expect(await b.pick('crash-2')).toBe(false);
      const stoppedAt = new Map<string, number>();
      const startedAt = new Map<string, number>();
      for (const [name, s] of a.roles) s.on('lostRole', () => stoppedAt.set(name, Date.now()));
      for (const [name, s] of b.roles) s.on('gotRole', () => startedAt.set(name, Date.now()));

      const crashedAt = Date.now();
      cut.value = true;
      const bound = (LEASE_TTL_SECONDS + 1) * 1_000 + SUPERVISOR_PERIOD_MS + 5_000;
      await waitFor(() => b.picked().length === 2, bound);

      expect(Date.now() - crashedAt).toBeLessThanOrEqual(bound);
      expect(await holders(['crash-1', 'crash-2'])).toEqual({ 'crash-1': b.agentId, 'crash-2': b.agentId });
      for (const name of ['crash-1', 'crash-2']) {
        // The cut-off agent stopped acting in the role on its own reckoning before the other was granted it.
        expect(stoppedAt.get(name)).toBeDefined();
        expect(stoppedAt.get(name) as number).toBeLessThanOrEqual(startedAt.get(name) as number);
      }
      expect(a.picked()).toEqual([]);
    });

    it('of eight clients racing for one role, exactly one gets it', async () => {
      const racers = await Promise.all(Array.from({ length: 8 }, () => connect()));
      const answers = await Promise.all(racers.map((c) => c.pick('contended')));
      expect(answers.filter(Boolean)).toHaveLength(1);
      const winner = racers[answers.indexOf(true)] as Client;
      const [role] = (await operator.listRoles()).filter((r) => r.role === 'contended');
      expect(role?.holder).toBe(winner.agentId);
      expect(role?.leaseEpoch).toBe(1);
      // Every racer volunteered. A racer leaves the volunteers only when its session ends: with 5-second leases a
      // machine busy enough can make a Worker's heartbeat late, and then its session (and its candidacy) is over.
      const volunteers = new Set(role?.volunteers ?? []);
      expect(volunteers.has(winner.agentId)).toBe(true);
      for (const racer of racers) {
        if (!volunteers.has(racer.agentId))
          expect(
            racer.sessionsLost(),
            `${racer.agentId} left the volunteers with its session`,
          ).toBeGreaterThan(0);
      }
      expect(racers.filter((c) => c.picked().includes('contended'))).toEqual([winner]);
    });
  });
});
