/**
 * The fault-injecting proxy of the fleet chaos run (`chaos/fault-proxy.ts`) in front of the local server: each kind
 * of fault as the agent's client sees it (an answer, late or not, a 503, a cut connection, a timeout) and as the
 * server sees it (the requests that reached it, when, and what it answered), each counted by kind and route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '#local/seeded-random';
import { type LocalServer, startLocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import type { AgentSchedulerError } from '#sdk/errors';
import { nextOpenSeq } from '#sdk/request-ids';
import { createTestStack, type TestStack, waitFor } from '#test/stack';
import { type FaultProxy, startFaultProxy } from '../../chaos/fault-proxy';

const OPERATOR = 'op_fault-proxy-operator';
/**
 * An attempt the proxy holds is given up after this; others have five seconds: on two cores shared with other
 * suites, the server's first writes have taken two.
 */
const HELD_ATTEMPT_MS = 250;
const ATTEMPT_MS = 5_000;
const LATE_MS = 800;
const CUT_OFF_MS = 800;
const DELAY_MS = 100;

/** A request the server answered: its operation, status, and when it arrived. */
interface Served {
  readonly operation: string;
  readonly statusCode: number;
  readonly arrivedAt: number;
}

describe('the fault proxy', () => {
  let stack: TestStack;
  let server: LocalServer;
  let proxy: FaultProxy;
  let operator: AgentSchedulerClient;
  const served: Served[] = [];
  const agentIds: string[] = [];
  const tokens: string[] = [];

  beforeAll(async () => {
    stack = await createTestStack({ queues: ['proxied'] });
    server = await startLocalServer({
      scheduler: stack.scheduler,
      agents: stack.ctx.agents,
      operatorToken: OPERATOR,
      port: 0,
      log: { info() {}, warn() {}, error() {} },
      onRequest: ({ operation, statusCode, durationMs }) =>
        served.push({ operation, statusCode, arrivedAt: Date.now() - durationMs }),
    });
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
    // Faults only when a test asks for one (`inject`), or for the agent of the last test.
    proxy = await startFaultProxy({
      upstream: server.url,
      random: seededRandom(1),
      cutOffMs: CUT_OFF_MS,
      owed: false,
      shares: { unavailableBeforeDelivery: 1 },
      faultsFor: (agent) => agent === 'always-503',
      lateDelayMs: { min: LATE_MS, max: LATE_MS },
      delayMs: { min: DELAY_MS, max: DELAY_MS },
    });
    for (const name of ['one', 'two']) {
      const created = await operator.createAgent({ name, queues: ['proxied'], maxConcurrency: 4 });
      agentIds.push(created.agent.agentId);
      tokens.push(created.token);
    }
  });
  afterAll(async () => {
    await proxy.close();
    await server.close();
    await stack.destroy();
  });

  /** An agent's client through the proxy: `attempts` attempts of `timeoutMs` each. */
  const through = ({ attempts = 1, agent = 0, timeoutMs = ATTEMPT_MS } = {}) =>
    new AgentSchedulerClient({
      endpoint: proxy.url,
      token: tokens[agent] as string,
      timeoutMs,
      retries: { maxAttempts: attempts, baseDelayMs: 10, maxDelayMs: 10 },
      push: false,
    });
  /** What the server answered of `operation` since `from`. */
  const servedSince = (from: number, operation: string) =>
    served.filter((s) => s.arrivedAt >= from && s.operation === operation);
  const failure = (call: Promise<unknown>) =>
    call.then(
      () => undefined,
      (error: unknown) => error as AgentSchedulerError,
    );

  it('delays a request: answered, late, and served once', async () => {
    proxy.inject('delayed', { operation: 'readSession' });
    const client = through();
    await client.openSession();
    const from = Date.now();
    const holdings = await client.getSession();
    expect(holdings.tasks).toEqual([]);
    expect(Date.now() - from).toBeGreaterThanOrEqual(DELAY_MS);
    expect(servedSince(from, 'readSession')).toHaveLength(1);
    expect(proxy.faults.byWhere.delayed).toEqual({ readSession: 1 });
  });

  it('duplicates a request: the server gets it twice, the agent one answer, the same session', async () => {
    const from = Date.now();
    proxy.inject('duplicated', { operation: 'openSession' });
    const session = await through().openSession({ openId: 'dup-open-0001' });
    await waitFor(() => servedSince(from, 'openSession').length === 2, 2_000);
    expect(servedSince(from, 'openSession').map((s) => s.statusCode)).toEqual([200, 200]);
    // The copy was answered with the session the first opened: it is still the agent's.
    expect((await through().getSession()).sessionId).toBe(session.sessionId);
    expect(proxy.faults.byKind.duplicated).toBe(1);
  });

  it("cuts the agent's connection after the server committed: the retry is answered with what the first granted", async () => {
    await operator.submitTask({ queue: 'proxied', payload: { n: 1 } });
    const client = through();
    const session = await client.openSession();
    const from = Date.now();
    proxy.inject('answerLostCut', { operation: 'claimTasks' });
    const claim = { sessionId: session.sessionId, max: 1, claimId: 'cut-claim-0001', claimSeq: 1 };
    const error = await failure(client.claim(claim));
    expect(error?.code).toBe('NetworkError');
    expect(servedSince(from, 'claimTasks').map((s) => s.statusCode)).toEqual([200]);
    const [granted] = proxy.claimAnswers.filter((a) => a.claimId === claim.claimId);
    expect(granted?.granted).toHaveLength(1);
    // Lost on the way: the agent never heard of it; its retry is answered with it.
    expect(proxy.heard.has(granted?.granted[0] as string)).toBe(false);
    const again = await client.claim(claim);
    expect(again.tasks.map((t) => `${t.taskId}#${t.leaseEpoch}`)).toEqual(granted?.granted);
    expect(proxy.faults.byWhere.answerLostCut).toEqual({ claimTasks: 1 });
  });

  it('answers 503 instead of what the server answered', async () => {
    const client = through();
    const session = await client.openSession();
    const from = Date.now();
    proxy.inject('answerLost503', { operation: 'heartbeat' });
    const error = await failure(client.heartbeat({ sessionId: session.sessionId }));
    expect([error?.status, error?.code]).toEqual([503, 'ServiceUnavailable']);
    expect(servedSince(from, 'heartbeat').map((s) => s.statusCode)).toEqual([200]);
    expect(proxy.faults.byWhere.answerLost503).toEqual({ heartbeat: 1 });
  });

  it('cuts the connection before forwarding, or answers 503 without it: the server gets nothing', async () => {
    const client = through();
    const from = Date.now();
    proxy.inject('cutBeforeForward', { operation: 'readSession' });
    expect((await failure(client.getSession()))?.code).toBe('NetworkError');
    proxy.inject('unavailableBeforeDelivery', { operation: 'readSession' });
    expect((await failure(client.getSession()))?.status).toBe(503);
    expect(servedSince(from, 'readSession')).toEqual([]);
    expect(proxy.faults.byWhere.cutBeforeForward).toEqual({ readSession: 1 });
    expect(proxy.faults.byWhere.unavailableBeforeDelivery).toEqual({ readSession: 1 });
  });

  it('holds a request unanswered and never forwards it', async () => {
    const from = Date.now();
    proxy.inject('requestHung', { operation: 'readSession' });
    expect((await failure(through({ timeoutMs: HELD_ATTEMPT_MS }).getSession()))?.code).toBe('Timeout');
    expect(Date.now() - from).toBeGreaterThanOrEqual(HELD_ATTEMPT_MS);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(servedSince(from, 'readSession')).toEqual([]);
    expect(proxy.faults.byKind.requestHung).toBe(1);
  });

  it("delivers a request late, after the agent's retry: the late copy changes nothing", async () => {
    const from = Date.now();
    proxy.inject('deliveredLate', { operation: 'openSession' });
    const open = { openId: 'late-open-0001', openSeq: nextOpenSeq() };
    expect((await failure(through({ timeoutMs: HELD_ATTEMPT_MS }).openSession(open)))?.code).toBe('Timeout');
    const retriedAt = Date.now();
    const session = await through().openSession(open);
    await waitFor(() => servedSince(from, 'openSession').length === 2, 5_000);
    const [retry, late] = servedSince(from, 'openSession');
    expect(retry?.arrivedAt).toBeGreaterThanOrEqual(retriedAt);
    expect(late?.arrivedAt).toBeGreaterThanOrEqual(Math.max(retriedAt, from + LATE_MS));
    expect(late?.statusCode).toBe(200);
    expect((await through().getSession()).sessionId).toBe(session.sessionId);
    expect(proxy.faults.byWhere.deliveredLate).toEqual({ openSession: 1 });
  });

  it('cuts one agent off for its time: its requests hang, the other agent is served meanwhile', async () => {
    const from = Date.now();
    proxy.inject('agentCutOff', { agent: agentIds[0] as string, operation: 'readSession' });
    const cutOff = through({ timeoutMs: HELD_ATTEMPT_MS });
    expect((await failure(cutOff.getSession()))?.code).toBe('Timeout');
    const [held, other] = await Promise.all([
      failure(cutOff.getSession()),
      through({ agent: 1 }).openSession(),
    ]);
    expect(held?.code).toBe('Timeout');
    expect(other.sessionId).toBeDefined();
    expect(servedSince(from, 'readSession')).toEqual([]);
    await waitFor(() => Date.now() - from > CUT_OFF_MS + 100, 2 * CUT_OFF_MS);
    expect((await through().getSession()).sessionId).toBeDefined();
    expect(proxy.faults.byKind.agentCutOff).toBe(1);
    expect(proxy.faults.byWhere.agentCutOffRequest).toEqual({ readSession: 2 });
  });

  it('draws faults for the agents it is told to, by token or path prefix, and stops on command', async () => {
    const res = await fetch(`${proxy.url}/agents/always-503/v1/health`);
    expect(res.status).toBe(503);
    expect((await fetch(`${proxy.url}/agents/another/v1/health`)).status).toBe(200);
    proxy.stopFaults();
    expect((await fetch(`${proxy.url}/agents/always-503/v1/health`)).status).toBe(200);
    expect(proxy.faults.byWhere.unavailableBeforeDelivery).toEqual({ readSession: 1, '/v1/health': 1 });
  });
});
