/**
 * Ten agents volunteer for three roles while they are killed, paused past their TTL and restarted at random
 * (seeded), on DynamoDB Local with a clock the test moves. The run records a history: every grant (from the
 * `role.picked` events, with its epoch and time), every release, and every session's end as the server sees it
 * (its last expiry, or the moment a new session replaced it). Checked afterwards:
 *
 * - per role, epochs strictly increase and each grant starts no earlier than its predecessor's holder ended:
 *   at most one valid holder at every instant;
 * - whenever a live volunteer exists, the role has a holder, except within the hand-over window;
 * - a paused holder that comes back is told it lost its roles and its old epoch is refused.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { RoleConflictError, SessionLostError } from '#domain/errors';
import { percentile } from '#local/percentile';
import { seededRandom } from '#local/seeded-random';
import { collectedEvents, createTestStack, type TestStack } from '#test/stack';

const TTL_MS = 30_000;
const BEAT_MS = 10_000;
const STEP_MS = 1_000;
const SUPERVISOR_PERIOD_MS = 5_000;
const STEPS = 600;
const AGENTS = 10;
const ROLES = ['stream-listener', 'channel-summary', 'singleton-loop'];

interface SimAgent {
  readonly agentId: string;
  state: 'alive' | 'dead' | 'paused';
  sessionId?: string;
  nextBeatAt: number;
  /** When it stopped answering (killed or paused). */
  silentAt?: number;
  wakeAt?: number;
  /** Roles it believes it holds, from volunteer answers and heartbeat notices. */
  readonly believes: Map<string, number>;
  /** When it volunteered for each role under its current session. */
  readonly volunteeredAt: Map<string, number>;
}

interface Grant {
  readonly role: string;
  readonly epoch: number;
  readonly agentId: string;
  readonly sessionId: string;
  readonly since: number;
}

describe('role hand-over under random kills, pauses and restarts', () => {
  let stack: TestStack;
  const { publisher: feed, events } = collectedEvents();

  beforeAll(async () => {
    stack = await createTestStack({ events: feed, settings: { leaseTtlSeconds: TTL_MS / 1_000 } });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('keeps one holder per role at every instant and hands over within TTL plus a supervisor period', async () => {
    const { scheduler, clock } = stack;
    // Only the steps move the clock: the wall time a step takes (40 ms on two quiet cores, far more on a busy
    // machine) would otherwise add to the hand-overs measured against TTL plus a supervisor period plus one step.
    clock.stop();
    onTestFinished(() => clock.resume());
    const random = seededRandom(6);
    const sessionExpiry = new Map<string, number>();
    const sessionReplacedAt = new Map<string, number>();
    const releasedAt = new Map<string, number>();
    const silentSince = new Map<string, number>();
    let staleRejected = 0;
    let lostRolesReported = 0;

    const agents: SimAgent[] = [];
    for (let i = 0; i < AGENTS; i++) {
      const { agent } = await scheduler.registerAgent({ name: `agent-${i}`, queues: ['work'] });
      agents.push({
        agentId: agent.agentId,
        state: 'dead',
        nextBeatAt: 0,
        believes: new Map(),
        volunteeredAt: new Map(),
      });
    }

    const start = async (agent: SimAgent) => {
      const previous = agent.sessionId;
      // The agent gives up its old session when it asks for a new one; the server ends it within the call.
      const replacing = clock.now();
      const opened = await scheduler.openSession(agent.agentId);
      if (previous) sessionReplacedAt.set(previous, replacing);
      agent.sessionId = opened.sessionId;
      sessionExpiry.set(opened.sessionId, opened.expiresAt);
      agent.state = 'alive';
      agent.nextBeatAt = clock.now() + BEAT_MS;
      agent.believes.clear();
      agent.volunteeredAt.clear();
      for (const role of ROLES) await volunteer(agent, role);
    };
    const volunteer = async (agent: SimAgent, role: string) => {
      const result = await scheduler.volunteerForRole(agent.agentId, agent.sessionId ?? '', role);
      agent.volunteeredAt.set(role, clock.now());
      if (result.picked && result.leaseEpoch !== undefined) agent.believes.set(role, result.leaseEpoch);
    };
    const beat = async (agent: SimAgent) => {
      const sessionId = agent.sessionId ?? '';
      try {
        const result = await scheduler.heartbeat(agent.agentId, sessionId);
        sessionExpiry.set(sessionId, result.expiresAt);
        for (const { role, leaseEpoch } of result.rolesPicked) agent.believes.set(role, leaseEpoch);
        for (const { role } of result.rolesLost) agent.believes.delete(role);
        agent.nextBeatAt = clock.now() + BEAT_MS;
      } catch (error) {
        if (!(error instanceof SessionLostError)) throw error;
        // Back from a pause: told what it lost; acting on an old epoch is refused.
        lostRolesReported += ((error.context.lostRoles as unknown[]) ?? []).length;
        for (const [role, epoch] of agent.believes) {
          const refused = await scheduler.releaseRole(agent.agentId, role, epoch).then(
            () => false,
            (e: unknown) => e instanceof RoleConflictError && e.code === 'RoleNotHeld',
          );
          if (refused) staleRejected++;
        }
        await start(agent);
      }
    };

    for (const agent of agents) await start(agent);

    for (let step = 1; step <= STEPS; step++) {
      clock.advance(STEP_MS);
      const now = clock.now();
      for (const agent of agents) {
        const draw = random();
        if (agent.state === 'alive') {
          if (draw < 0.02) {
            agent.state = 'dead';
            agent.silentAt = now;
            silentSince.set(agent.sessionId ?? '', now);
          } else if (draw < 0.03) {
            agent.state = 'paused';
            agent.silentAt = now;
            agent.wakeAt = now + TTL_MS + 5_000 + Math.floor(random() * 10_000);
            silentSince.set(agent.sessionId ?? '', now);
          } else if (draw < 0.07 && agent.believes.size > 0) {
            const [role, epoch] = [...agent.believes][0] ?? ['', 0];
            releasedAt.set(`${role}:${epoch}`, clock.now());
            await scheduler.releaseRole(agent.agentId, role, epoch);
            agent.believes.delete(role);
            await volunteer(agent, role);
          } else if (agent.nextBeatAt <= now) {
            await beat(agent);
          }
        } else if (agent.state === 'dead' && draw < 0.08) {
          await start(agent);
        } else if (agent.state === 'paused' && now >= (agent.wakeAt ?? 0)) {
          agent.state = 'alive';
          await beat(agent);
        }
      }
      if (step % (SUPERVISOR_PERIOD_MS / STEP_MS) === 0) await scheduler.supervise();
      liveness.push({ at: clock.now(), volunteers: liveVolunteers(agents, clock.now()) });
    }

    // The history.
    const grants: Grant[] = events
      .filter((e) => e.type === 'role.picked')
      .map((e) => ({
        role: e.role ?? '',
        epoch: Number(e.data?.leaseEpoch),
        agentId: e.agentId ?? '',
        sessionId: String(e.data?.sessionId),
        since: Date.parse(String(e.data?.since)),
      }));
    const endOf = (g: Grant) =>
      Math.min(
        releasedAt.get(`${g.role}:${g.epoch}`) ?? Number.POSITIVE_INFINITY,
        sessionReplacedAt.get(g.sessionId) ?? Number.POSITIVE_INFINITY,
        sessionExpiry.get(g.sessionId) ?? Number.POSITIVE_INFINITY,
      );

    let overlaps = 0;
    let nonMonotonic = 0;
    let uncovered = 0;
    const handOverMs: number[] = [];
    const silentToHolderMs: number[] = [];
    for (const role of ROLES) {
      const history = grants.filter((g) => g.role === role).sort((a, b) => a.epoch - b.epoch);
      history.forEach((grant, i) => {
        const previous = history[i - 1];
        if (!previous) return;
        if (grant.epoch <= previous.epoch || grant.since < previous.since) nonMonotonic++;
        const previousEnd = endOf(previous);
        if (grant.since < previousEnd) overlaps++;
        if (!releasedAt.has(`${role}:${previous.epoch}`)) {
          handOverMs.push(grant.since - previousEnd);
          const silent = silentSince.get(previous.sessionId);
          if (silent !== undefined) silentToHolderMs.push(grant.since - silent);
        }
      });
      // Liveness: at every step with a live volunteer, a holder, unless within the window after the last one ended.
      for (const sample of liveness) {
        const candidates = sample.volunteers.get(role) ?? [];
        if (candidates.length === 0) continue;
        const held = history.some((g) => g.since <= sample.at && sample.at < endOf(g));
        if (held) continue;
        // The window opens when the last holder ended, or when the earliest live volunteer came, if later.
        const lastEnd = Math.max(
          ...history.filter((g) => g.since <= sample.at).map(endOf),
          Math.min(...candidates),
        );
        if (sample.at - lastEnd > SUPERVISOR_PERIOD_MS + STEP_MS) uncovered++;
      }
    }

    const figures = {
      grants: grants.length,
      releases: releasedAt.size,
      handOverAfterSessionEndMs: { p50: percentile(handOverMs, 0.5), max: Math.max(...handOverMs) },
      silentToNewHolderMs: { p50: percentile(silentToHolderMs, 0.5), max: Math.max(...silentToHolderMs) },
      staleRejected,
      lostRolesReported,
    };
    console.log(`role hand-over: ${JSON.stringify(figures)}`);

    expect({ overlaps, nonMonotonic, uncovered }).toEqual({ overlaps: 0, nonMonotonic: 0, uncovered: 0 });
    // Not vacuous: roles changed hands many times, by every route.
    expect(grants.length).toBeGreaterThan(50);
    expect(handOverMs.length).toBeGreaterThan(20);
    expect(releasedAt.size).toBeGreaterThan(5);
    expect(staleRejected).toBeGreaterThan(0);
    expect(lostRolesReported).toBeGreaterThan(0);
    expect(figures.silentToNewHolderMs.max).toBeLessThanOrEqual(TTL_MS + SUPERVISOR_PERIOD_MS + STEP_MS);
    // A guard against a hang, not a bound: 25 s on two quiet cores.
  }, 400_000);

  const liveness: { at: number; volunteers: Map<string, number[]> }[] = [];

  /** Per role, when each live volunteer (alive, with a live session) volunteered under its current session. */
  function liveVolunteers(agents: readonly SimAgent[], _now: number): Map<string, number[]> {
    const byRole = new Map<string, number[]>();
    for (const agent of agents) {
      if (agent.state !== 'alive') continue;
      for (const [role, at] of agent.volunteeredAt) byRole.set(role, [...(byRole.get(role) ?? []), at]);
    }
    return byRole;
  }
});
