/**
 * The network of the HTTP chaos run: each agent's `fetch`, with faults drawn from the seed, and the count of every
 * fault by its kind and by the route it fell on.
 *
 * Faults, on every agent request while the faults last (the shares are those of the busy routes; the routes an
 * agent calls a few times a run — the session open, roles, releases, children — get `rareRouteBoost` times them,
 * so every kind of fault lands on every route in a run of a few thousand tasks):
 * - 503 before the request reaches the server (3 %); the SDK retries;
 * - the request hangs until the per-attempt timeout (1 %);
 * - the request is served and its answer lost (3 %); the SDK retries, so a claim, open, completion, child submit
 *   or role call that committed is sent again;
 * - the request is held in the network: the attempt times out, and the server gets it 0.5 to 6 s later
 *   (`lateShare`, 1 %), after the SDK's retry of it;
 * - an agent cut off (every request hangs) for longer than the lease's time to live; see the workload.
 *
 * Whatever the draws, the first request of each route while the faults last is delivered late and the next one that
 * reaches the server loses its answer, so a short run too sends every route again after the server acted on it. A
 * route first called once the faults have stopped (a role that only began to move late) still owes them: its
 * requests get them until it has had both, while the run goes on.
 */
import { ROUTES } from '../functions/http/routes';
import { claimIdOf, WireRecord } from './wire-record';

/** Faults by kind, and by kind and where they fell (a route's operation, a store write's kind). */
export class FaultCounts {
  readonly byKind: Record<string, number> = {};
  readonly byWhere: Record<string, Record<string, number>> = {};

  count(kind: string, where?: string): void {
    this.byKind[kind] = (this.byKind[kind] ?? 0) + 1;
    if (where === undefined) return;
    const places = this.byWhere[kind] ?? {};
    places[where] = (places[where] ?? 0) + 1;
    this.byWhere[kind] = places;
  }
}

const AGENT_ROUTES = ROUTES.filter((route) => route.access === 'agent').map((route) => ({
  method: route.method,
  pattern: new RegExp(`^${route.path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  operation: route.operation,
}));

/** The operation of an agent route, as the route table names it; a heartbeat carrying checkpoints is told apart. */
export function operationOf(method: string, url: string, body: string | undefined): string {
  const path = new URL(url).pathname;
  const operation =
    AGENT_ROUTES.find((route) => route.method === method && route.pattern.test(path))?.operation ?? path;
  if (operation === 'heartbeat' && body && /"checkpoints":\[\{/.test(body)) return 'heartbeatWithCheckpoints';
  return operation;
}

/** The request under the faults that is held if none was yet (a run makes hundreds; 1 % are held by chance). */
const HUNG_OWED_AFTER = 50;

/** The routes an agent calls a few times a run, where a share of faults would land a handful of times at most. */
export const RARE_ROUTES = new Set([
  'openSession',
  'releaseTask',
  'submitChildTask',
  'submitChildTasks',
  'registerRole',
  'volunteerForRole',
  'releaseRole',
  'withdrawFromRole',
]);

/** Waits for the abort of an attempt's signal, then fails as fetch does. */
export const hangUntilAborted = (signal: AbortSignal | null | undefined, limitMs: number) =>
  new Promise<never>((_, reject) => {
    const fail = () => reject(signal?.reason ?? new DOMException('aborted', 'AbortError'));
    if (signal?.aborted) return fail();
    signal?.addEventListener('abort', fail, { once: true });
    setTimeout(fail, limitMs);
  });

export interface NetworkOptions {
  readonly random: () => number;
  readonly faultsOn: () => boolean;
  /**
   * Whether the run goes on: until it stops, a route that has not yet had a request delivered late and one whose
   * answer was lost gets them, faults on or off. @default the faults are on
   */
  readonly runningOn?: () => boolean;
  readonly faults: FaultCounts;
  /** Per-attempt timeout of the agents' clients: a hung request fails after it. */
  readonly attemptTimeoutMs: number;
  /** Share of requests held in the network and delivered late. @default 0.01 */
  readonly lateShare?: number;
  /** The routes (paths) whose requests may be delivered late. @default every agent route */
  readonly lateRoutes?: readonly string[];
  /** How late such a request reaches the server, in ms. @default 500 to 6,000 */
  readonly lateDelayMs?: { readonly min: number; readonly max: number };
  /** How many times the shares are on the rarely called routes. @default 5 */
  readonly rareRouteBoost?: number;
}

/** What the network makes of one request: a refusal, a hang, a late delivery, or its answer served or lost. */
type Fault = 'unavailable' | 'hung' | 'answerLost' | 'late' | 'none';

/** One request of an agent, as the network reads it. */
interface AgentRequest {
  readonly url: string;
  readonly operation: string;
  /** The claim's id, on a claim or a completion carrying one. */
  readonly claimId: string | undefined;
  readonly signal: AbortSignal | null | undefined;
}

async function requestOf(
  input: Parameters<typeof fetch>[0],
  init: RequestInit | undefined,
): Promise<AgentRequest> {
  const request = input instanceof Request ? input : undefined;
  const url = request ? request.url : String(input);
  const method = request ? request.method : (init?.method ?? 'GET');
  const body = request
    ? await request.clone().text()
    : typeof init?.body === 'string'
      ? init.body
      : undefined;
  const operation = operationOf(method, url, body);
  const claimId = claimIdOf(operation, body);
  return { url, operation, claimId, signal: init?.signal };
}

/** The agents' network: a faulty fetch per agent, and what it saw the server answer. */
export class FaultyNetwork extends WireRecord {
  constructor(private readonly options: NetworkOptions) {
    super();
  }

  /** An agent's fetch: real requests to the local server, with the faults drawn from the seed. */
  fetchFor(agent: { readonly cutOffUntil: number }): typeof fetch {
    return (input, init) => this.send(agent, input, init);
  }

  private async send(
    agent: { readonly cutOffUntil: number },
    input: Parameters<typeof fetch>[0],
    init: RequestInit | undefined,
  ): Promise<Response> {
    const { faults, attemptTimeoutMs } = this.options;
    this.noteRequest();
    const request = await requestOf(input, init);
    // A cut-off, once begun, lasts its time even after the other faults stop.
    if (Date.now() < agent.cutOffUntil) {
      faults.count('agentCutOffRequest');
      return hangUntilAborted(request.signal, attemptTimeoutMs * 2);
    }
    const fault = this.drawFault(request);
    if (fault === 'unavailable') {
      faults.count('unavailableBeforeDelivery', request.operation);
      return new Response(JSON.stringify({ error: { code: 'ServiceUnavailable', message: 'injected' } }), {
        status: 503,
        headers: { 'content-type': 'application/json' },
      });
    }
    if (fault === 'hung') {
      faults.count('requestHung', request.operation);
      return hangUntilAborted(request.signal, attemptTimeoutMs * 2);
    }
    if (fault === 'late') return this.deliverLate(request, input, init);
    return this.serve(request, input, init, fault === 'answerLost');
  }

  /**
   * The fault of one request: the shares one after another on the unit interval, `rareRouteBoost` times them on a
   * rare route. Until a route has had a request delivered late and one whose answer was lost, its next request is,
   * after the faults too while the run goes on; and a run with no request held yet by its `HUNG_OWED_AFTER`th
   * under the faults holds that one.
   */
  private drawFault({ url, operation }: AgentRequest): Fault {
    const { options } = this;
    const boost = RARE_ROUTES.has(operation) ? (options.rareRouteBoost ?? 5) : 1;
    const lateShare = options.lateShare ?? 0.01;
    const lateRoute = options.lateRoutes?.some((path) => url.endsWith(path)) ?? true;
    const unavailable = 0.03 * boost;
    const hung = unavailable + 0.01 * boost;
    const answerLost = hung + 0.03 * boost;
    const late = answerLost + (lateRoute ? lateShare * boost : 0);
    const faultsOn = options.faultsOn();
    if (faultsOn) this.noteUnderFaults(operation);
    if (!faultsOn && !(options.runningOn?.() ?? false)) return 'none';
    const forceLate = lateRoute && lateShare > 0 && !options.faults.byWhere.deliveredLate?.[operation];
    const forceLost = !forceLate && !options.faults.byWhere.answerLost?.[operation];
    const forceHung = !forceLate && !forceLost && faultsOn && this.owesHung();
    const draw = forceLate
      ? answerLost
      : forceLost
        ? hung
        : forceHung
          ? unavailable
          : faultsOn
            ? options.random()
            : 1;
    if (draw < unavailable) return 'unavailable';
    if (draw < hung) return 'hung';
    if (draw < answerLost) return 'answerLost';
    return draw < late ? 'late' : 'none';
  }

  /** No request held yet, and `HUNG_OWED_AFTER` sent under the faults. */
  private owesHung(): boolean {
    const sent = Object.values(this.requestsWhere).reduce((sum, n) => sum + n, 0);
    return sent >= HUNG_OWED_AFTER && this.options.faults.byWhere.requestHung === undefined;
  }

  /**
   * Held in the network: the attempt gives up, the server gets the request later all the same. What it answers
   * then reaches nobody (a late claim may lease what the agent never hears of: its session's held tasks are
   * reconciled).
   */
  private deliverLate(
    request: AgentRequest,
    input: Parameters<typeof fetch>[0],
    init: RequestInit | undefined,
  ): Promise<never> {
    const { options } = this;
    options.faults.count('deliveredLate', request.operation);
    const { signal: _attempt, ...rest } = init ?? {};
    const delay = options.lateDelayMs ?? { min: 500, max: 6_000 };
    setTimeout(
      () =>
        void fetch(input, rest)
          .then(async (answer) =>
            this.noteAnswer(request.operation, request.claimId, answer.status, await answer.text(), false),
          )
          .catch(() => undefined),
      delay.min + options.random() * (delay.max - delay.min),
    );
    return hangUntilAborted(request.signal, options.attemptTimeoutMs * 2);
  }

  /** Sends the request to the server, timing its answer; a lost answer is noted, then fails as fetch does. */
  private async serve(
    request: AgentRequest,
    input: Parameters<typeof fetch>[0],
    init: RequestInit | undefined,
    lost: boolean,
  ): Promise<Response> {
    const { operation, signal } = request;
    const sentAt = Date.now();
    const { response, text } = await fetch(input, init)
      .then(async (response) => ({ response, text: await response.text() }))
      .catch((error: unknown) => {
        // Given up by the agent while the server had it: the server's work on it is thrown away.
        if (signal?.aborted) this.noteAbandoned(operation);
        throw error;
      });
    this.noteAnswerTime(operation, Date.now() - sentAt);
    this.noteAnswer(operation, request.claimId, response.status, text, !lost);
    if (lost) {
      this.options.faults.count('answerLost', operation);
      throw new TypeError('fetch failed: injected loss of the answer');
    }
    return new Response(text, { status: response.status, headers: response.headers });
  }
}
