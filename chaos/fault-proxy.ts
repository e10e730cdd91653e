/**
 * A fault-injecting HTTP proxy for agents out of process (Python or TypeScript, any SDK): agents take its URL as
 * their endpoint, it forwards their requests to the server, and, while its faults are on, draws from a seed what
 * the network does to each, the kinds of the in-process faulty fetch (`http-faults.ts`) and a few only a wire has:
 *
 * - `delayed`: forwarded 50 to 500 ms late, answered (3 %);
 * - `duplicated`: sent to the server twice, the copy 0 to 20 ms after the first; the agent gets the first's
 *   answer (2 %);
 * - `answerLostCut` and `answerLost503`: forwarded, and once the server's answer is back (its write committed) the
 *   agent's connection is cut, or it is answered 503 instead (1.5 % each); the SDK sends the call again;
 * - `cutBeforeForward`: the agent's connection is cut before anything is forwarded (1 %);
 * - `unavailableBeforeDelivery`: answered 503 without forwarding (2 %);
 * - `requestHung`: never answered nor forwarded; held until the agent gives up (0.5 %);
 * - `deliveredLate`: held until the agent gives the attempt up, then forwarded 0.5 to 6 s after it came (and no
 *   sooner than the agent gave up), so the server gets it after the agent's retry; its answer reaches nobody (1 %);
 * - an agent cut off (`agentCutOff`) for longer than its lease: a heartbeat (with checkpoints or not) in a hundred
 *   starts it (and, with `cutOffEachAgent`, each agent's fifth heartbeat under the faults), and every request of that
 *   agent is held unanswered until it ends (`agentCutOffRequest`). Once begun it lasts its time, faults on or off.
 *
 * The routes an agent calls a few times a run (`RARE_ROUTES`) get `rareRouteBoost` times the shares. Whatever the
 * draws, under the faults each route's first request is delivered late, and its next ones lose their answer (cut),
 * lose it (503), and are duplicated: a short run too sends every route again after the server acted on it.
 *
 * An agent is known by its token (`Authorization: Bearer <agentId>.<secret>`), or by a path prefix
 * (`/agents/<name>/v1/…`, taken off before forwarding), so faults can be kept to some agents (`faultsFor`) and a cut
 * off is an agent's. Every fault is counted by kind and by the route it fell on (`FaultCounts`); what passed is kept
 * as the in-process run keeps it (`WireRecord`: claim answers, leases heard, answer times, stale refusals), for the
 * same report. `stopFaults()` ends the injection; `inject()` gives the next matching request a fault of the caller's
 * choosing. Node's `http` only.
 */
import {
  createServer,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { FaultCounts, operationOf, RARE_ROUTES } from './http-faults';
import { claimIdOf, WireRecord } from './wire-record';

/** What the proxy does to one request. */
export type ProxyFault =
  | 'delayed'
  | 'duplicated'
  | 'answerLostCut'
  | 'answerLost503'
  | 'cutBeforeForward'
  | 'unavailableBeforeDelivery'
  | 'requestHung'
  | 'deliveredLate'
  | 'none';

/** The share of requests (while the faults last) each fault falls on, and of heartbeats that cut their agent off. */
export interface ProxyShares {
  readonly delayed: number;
  readonly duplicated: number;
  readonly answerLostCut: number;
  readonly answerLost503: number;
  readonly cutBeforeForward: number;
  readonly unavailableBeforeDelivery: number;
  readonly requestHung: number;
  readonly deliveredLate: number;
  readonly agentCutOff: number;
}

export const DEFAULT_SHARES: ProxyShares = {
  delayed: 0.03,
  duplicated: 0.02,
  answerLostCut: 0.015,
  answerLost503: 0.015,
  cutBeforeForward: 0.01,
  unavailableBeforeDelivery: 0.02,
  requestHung: 0.005,
  deliveredLate: 0.01,
  agentCutOff: 0.01,
};

/** The kinds drawn per request, in the order their shares are laid on the unit interval. */
const DRAWN = [
  'delayed',
  'duplicated',
  'answerLostCut',
  'answerLost503',
  'cutBeforeForward',
  'unavailableBeforeDelivery',
  'requestHung',
  'deliveredLate',
] as const satisfies readonly (ProxyFault & keyof ProxyShares)[];

/** What each route owes under the faults, in turn, before the draws decide: the faults a retry must survive. */
const OWED = ['deliveredLate', 'answerLostCut', 'answerLost503', 'duplicated'] as const;
/** The heartbeat under the faults at which an agent owes its cut-off (`cutOffEachAgent`): it holds work by then. */
const CUT_OFF_OWED_AT = 5;

export interface FaultProxyOptions {
  /** The server's base URL. */
  readonly upstream: string;
  readonly random: () => number;
  /** Where the faults are counted. @default counts of the proxy's own */
  readonly faults?: FaultCounts;
  /** @default `DEFAULT_SHARES` */
  readonly shares?: Partial<ProxyShares>;
  /** How many times the shares are on the routes an agent calls a few times a run. @default 5 */
  readonly rareRouteBoost?: number;
  /** How long a cut-off lasts: longer than the agents' lease. */
  readonly cutOffMs: number;
  /** How late a request held in the network reaches the server, from when it came. @default 500 to 6,000 ms */
  readonly lateDelayMs?: { readonly min: number; readonly max: number };
  /** How long a delayed request waits before it is forwarded. @default 50 to 500 ms */
  readonly delayMs?: { readonly min: number; readonly max: number };
  /** Longest a request is held unanswered before the proxy cuts its connection. @default 30 s */
  readonly heldMaxMs?: number;
  /** The agents whose requests get faults (by agent id or path name). @default every agent */
  readonly faultsFor?: (agent: string) => boolean;
  /** Each route gets one request of each fault of `OWED` before the draws decide. @default true */
  readonly owed?: boolean;
  /**
   * Each agent is cut off once, whatever the draws, at its `CUT_OFF_OWED_AT`th heartbeat under the faults: every
   * agent, of every language, then outlives a lease. @default false
   */
  readonly cutOffEachAgent?: boolean;
}

/** A fault asked for the next request that matches (`FaultProxy.inject`). */
interface Injected {
  readonly fault: ProxyFault | 'agentCutOff';
  readonly operation: string | undefined;
  readonly agent: string | undefined;
}

/** One request as the proxy read it. */
interface Proxied {
  readonly agent: string;
  readonly method: string;
  /** The path forwarded, query included, with any `/agents/<name>` prefix taken off. */
  readonly path: string;
  /** Its headers as the server gets them. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  readonly operation: string;
  readonly claimId: string | undefined;
}

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

const AGENT_TOKEN = /^Bearer (a_[a-z2-7]+)\./;
const AGENT_PREFIX = /^\/agents\/([^/]+)(\/.*)$/;
/** Headers of one connection, not of the message: never forwarded either way. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host']);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const between = (random: () => number, range: { readonly min: number; readonly max: number }) =>
  range.min + random() * (range.max - range.min);

/** Starts a proxy on a free port of 127.0.0.1. */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const proxy = new FaultProxy(options);
  await proxy.listen();
  return proxy;
}

export class FaultProxy extends WireRecord {
  readonly faults: FaultCounts;
  private readonly shares: ProxyShares;
  private readonly server: Server;
  private readonly upstream: URL;
  private readonly keepAlive = new HttpAgent({ keepAlive: true });
  private readonly cutOffUntil = new Map<string, number>();
  private readonly injected: Injected[] = [];
  /** The faults of `OWED` each route has had. */
  private readonly paid = new Map<string, Set<string>>();
  /** Heartbeats of each agent under the faults, while it owes its cut-off. */
  private readonly beatsOwing = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private faultsOn = true;
  private closed = false;
  private port = 0;

  constructor(private readonly options: FaultProxyOptions) {
    super();
    this.faults = options.faults ?? new FaultCounts();
    this.shares = { ...DEFAULT_SHARES, ...options.shares };
    this.upstream = new URL(options.upstream);
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => req.socket.destroy());
    });
  }

  /** The endpoint agents are given. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** No more faults: every request is forwarded and answered as the server answers it. */
  stopFaults(): void {
    this.faultsOn = false;
  }

  /** The next request matching (`operation`: a route's operation; `agent`) gets `fault`, faults on or off. */
  inject(fault: ProxyFault | 'agentCutOff', match: { operation?: string; agent?: string } = {}): void {
    this.injected.push({ fault, operation: match.operation, agent: match.agent });
  }

  /** Holds every request of `agent` unanswered for `ms` from now. */
  cutOff(agent: string, ms: number, operation?: string): void {
    this.faults.count('agentCutOff', operation);
    this.cutOffUntil.set(agent, Date.now() + ms);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.keepAlive.destroy();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = await this.read(req);
    const under = this.faultsOn && (this.options.faultsFor?.(request.agent) ?? true);
    this.noteRequest();
    if (under) this.noteUnderFaults(request.operation);
    // A request of an agent cut off draws nothing; one may begin a cut-off, and is then held with the rest.
    const fault = this.cutOffFor(request.agent) > 0 ? 'none' : this.faultOf(request, under);
    const cutOffMs = this.cutOffFor(request.agent);
    if (cutOffMs > 0) {
      this.faults.count('agentCutOffRequest', request.operation);
      await this.hold(res, cutOffMs);
      return;
    }
    if (fault !== 'none') this.faults.count(fault, request.operation);
    switch (fault) {
      case 'cutBeforeForward':
        req.socket.destroy();
        return;
      case 'unavailableBeforeDelivery':
        unavailable(res);
        return;
      case 'requestHung':
        await this.hold(res, this.heldMaxMs());
        return;
      case 'deliveredLate':
        await this.deliverLate(request, res);
        return;
      case 'delayed':
        await sleep(between(this.options.random, this.options.delayMs ?? { min: 50, max: 500 }));
        break;
      default:
    }
    if (fault === 'duplicated') void this.sendCopy(request);
    const answer = await this.forward(request, res);
    if (!answer) return;
    const lost = fault === 'answerLostCut' || fault === 'answerLost503';
    this.noteAnswer(request.operation, request.claimId, answer.status, answer.body.toString('utf8'), !lost);
    if (fault === 'answerLostCut') req.socket.destroy();
    else if (fault === 'answerLost503') unavailable(res);
    else respond(res, answer);
  }

  private async read(req: IncomingMessage): Promise<Proxied> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const prefixed = AGENT_PREFIX.exec(req.url ?? '/');
    const path = prefixed?.[2] ?? req.url ?? '/';
    const authorization = req.headers.authorization ?? '';
    const agent = prefixed?.[1] ?? AGENT_TOKEN.exec(authorization)?.[1] ?? 'unknown';
    const method = req.method ?? 'GET';
    const text = body.length > 0 ? body.toString('utf8') : undefined;
    const operation = operationOf(method, `${this.upstream.origin}${path}`, text);
    let claimId: string | undefined;
    try {
      claimId = claimIdOf(operation, text);
    } catch {
      // Not JSON: the server refuses it, and it carries no claim.
    }
    const headers = Object.fromEntries(
      Object.entries(req.headers).flatMap(([name, value]) =>
        typeof value === 'string' && !HOP_BY_HOP.has(name) ? [[name, value]] : [],
      ),
    );
    return { agent, method, path, headers, body, operation, claimId };
  }

  /** An injected fault first; else, under the faults, a cut-off drawn on a heartbeat, what the route owes, a draw. */
  private faultOf(request: Proxied, under: boolean): ProxyFault {
    const index = this.injected.findIndex(
      (i) =>
        (i.operation === undefined || i.operation === request.operation) &&
        (i.agent === undefined || i.agent === request.agent),
    );
    const [injected] = index >= 0 ? this.injected.splice(index, 1) : [];
    if (injected?.fault === 'agentCutOff') {
      this.cutOff(request.agent, this.options.cutOffMs, request.operation);
      return 'none';
    }
    if (injected) return injected.fault;
    if (!under) return 'none';
    const { random } = this.options;
    if (
      request.operation.startsWith('heartbeat') &&
      (this.owesCutOff(request.agent) || random() < this.shares.agentCutOff)
    ) {
      this.cutOff(request.agent, this.options.cutOffMs, request.operation);
      return 'none';
    }
    const owed = this.owedBy(request.operation);
    if (owed) return owed;
    const boost = RARE_ROUTES.has(request.operation) ? (this.options.rareRouteBoost ?? 5) : 1;
    let draw = random();
    for (const kind of DRAWN) {
      draw -= this.shares[kind] * boost;
      if (draw < 0) return kind;
    }
    return 'none';
  }

  /** Whether this heartbeat is the one at which `agent` owes its cut-off (`cutOffEachAgent`). */
  private owesCutOff(agent: string): boolean {
    if (!this.options.cutOffEachAgent) return false;
    const beats = (this.beatsOwing.get(agent) ?? 0) + 1;
    this.beatsOwing.set(agent, beats);
    return beats === CUT_OFF_OWED_AT;
  }

  /** The next fault of `OWED` this route has not had yet, marked as had. */
  private owedBy(operation: string): ProxyFault | undefined {
    if (this.options.owed === false) return undefined;
    const paid = this.paid.get(operation) ?? new Set<string>();
    this.paid.set(operation, paid);
    const next = OWED.find((kind) => !paid.has(kind));
    if (next) paid.add(next);
    return next;
  }

  /** How much longer `agent` is cut off (0: it is not). */
  private cutOffFor(agent: string): number {
    return Math.max(0, (this.cutOffUntil.get(agent) ?? 0) - Date.now());
  }

  private heldMaxMs(): number {
    return this.options.heldMaxMs ?? 30_000;
  }

  /** Leaves the request unanswered until its agent gives up or `ms` pass; then its connection is cut. */
  private async hold(res: ServerResponse, ms: number): Promise<void> {
    await Promise.race([closed(res), this.after(Math.min(ms, this.heldMaxMs()))]);
    res.socket?.destroy();
  }

  /** Held until its agent has given it up, then forwarded no sooner than its drawn delay; its answer reaches nobody. */
  private async deliverLate(request: Proxied, res: ServerResponse): Promise<void> {
    const due =
      Date.now() + between(this.options.random, this.options.lateDelayMs ?? { min: 500, max: 6_000 });
    await this.hold(res, this.heldMaxMs());
    await this.after(Math.max(0, due - Date.now()));
    const answer = await this.send(request).catch(() => undefined);
    if (answer)
      this.noteAnswer(request.operation, request.claimId, answer.status, answer.body.toString('utf8'), false);
  }

  /** The duplicate: the same request again, 0 to 20 ms after the first; its answer reaches nobody. */
  private async sendCopy(request: Proxied): Promise<void> {
    await sleep(this.options.random() * 20);
    const answer = await this.send(request).catch(() => undefined);
    if (answer)
      this.noteAnswer(request.operation, request.claimId, answer.status, answer.body.toString('utf8'), false);
  }

  /** Forwards the request for its agent; undefined, with the connection cut, when the server could not be reached. */
  private async forward(request: Proxied, res: ServerResponse): Promise<Answer | undefined> {
    const sentAt = Date.now();
    let gone = false;
    res.once('close', () => {
      gone = !res.writableFinished;
    });
    try {
      const answer = await this.send(request);
      this.noteAnswerTime(request.operation, Date.now() - sentAt);
      // Given up by the agent while the server had it: the server's work on it is thrown away.
      if (gone) this.noteAbandoned(request.operation);
      return answer;
    } catch {
      res.socket?.destroy();
      return undefined;
    }
  }

  /** One request to the server, on a kept-alive connection. */
  private send(request: Proxied): Promise<Answer> {
    if (this.closed) return Promise.reject(new Error('the proxy is closed'));
    return new Promise((resolve, reject) => {
      const upstream = httpRequest(
        {
          host: this.upstream.hostname,
          port: this.upstream.port,
          method: request.method,
          path: request.path,
          agent: this.keepAlive,
          headers: { ...request.headers, 'content-length': String(request.body.length) },
        },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () =>
            resolve({
              status: answer.statusCode ?? 502,
              headers: answer.headers,
              body: Buffer.concat(chunks),
            }),
          );
          answer.on('error', reject);
        },
      );
      upstream.on('error', reject);
      upstream.end(request.body);
    });
  }

  /** Resolves after `ms`, or at once when the proxy closes. */
  private after(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) return resolve();
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.add(timer);
    });
  }
}

function respond(res: ServerResponse, answer: Answer): void {
  if (res.destroyed || res.writableEnded) return;
  const headers = Object.fromEntries(
    Object.entries(answer.headers).filter(([name, value]) => value !== undefined && !HOP_BY_HOP.has(name)),
  ) as Record<string, string | string[]>;
  res.writeHead(answer.status, { ...headers, 'content-length': String(answer.body.length) });
  res.end(answer.body);
}

function unavailable(res: ServerResponse): void {
  const body = Buffer.from(JSON.stringify({ error: { code: 'ServiceUnavailable', message: 'injected' } }));
  respond(res, { status: 503, headers: { 'content-type': 'application/json' }, body });
}

/** Settles when the agent's connection closes (or the answer is done). */
const closed = (res: ServerResponse) =>
  new Promise<void>((resolve) => {
    if (res.destroyed || res.writableFinished) return resolve();
    res.once('close', () => resolve());
  });
