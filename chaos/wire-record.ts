/**
 * What the agents' network saw pass, whichever network it is: the faulty fetch of the in-process agents
 * (`http-faults.ts`) or the fault-injecting proxy in front of agent processes (`fault-proxy.ts`). Every claim answer
 * the server gave (whether or not it reached its agent), the leases whose answers did, the requests by route while
 * the faults lasted, how long the server took to answer each route, the requests an agent gave up while the server
 * worked on them, and the owner writes the server refused as stale. The report of a run reads it (`http-report.ts`).
 */
import type { ClaimAnswer } from './history';

/**
 * A stale owner is refused with LeaseLost or SessionLost, or, once the task is another agent's, answered as if it
 * did not exist (TaskNotFound on an agent route). Counted whether or not the answer reaches its agent.
 */
const refusedAsStale = (status: number, text: string): boolean =>
  (status === 409 && /"code":"(LeaseLost|SessionLost)"/.test(text)) ||
  (status === 404 && /"code":"TaskNotFound"/.test(text));

/**
 * The claim id a request carries: a claim's own, or the next claim a completion carries (`claimNext`, the TypeScript
 * Worker's way of finishing a task and taking the next in one call).
 */
export function claimIdOf(operation: string, body: string | undefined): string | undefined {
  if (!body || !CLAIMING.has(operation)) return undefined;
  const parsed = JSON.parse(body) as { claimId?: string; claimNext?: { claimId?: string } };
  return operation === 'claimTasks' ? parsed.claimId : parsed.claimNext?.claimId;
}

/** The routes whose answers grant leases: claims, and completions carrying a claim. */
const CLAIMING = new Set(['claimTasks', 'completeTask', 'completeTasks']);

/** What a run's report reads of its agents' network. */
export interface NetworkRecord {
  readonly claimAnswers: readonly ClaimAnswer[];
  /** The leases (`taskId#leaseEpoch`) of the claim answers that reached their agent. */
  readonly heard: ReadonlySet<string>;
  readonly requests: number;
  /** Requests of each route while the faults lasted. */
  readonly requestsWhere: Readonly<Record<string, number>>;
  /** Requests of each route given up by their agent while the server worked on them. */
  readonly abandonedWhere: Readonly<Record<string, number>>;
  readonly staleRejectedCount: number;
  /** The median and 99th percentile of the server's answer times, by route. */
  answerMs(): Record<string, { p50: number; p99: number }>;
}

export class WireRecord implements NetworkRecord {
  readonly claimAnswers: ClaimAnswer[] = [];
  /**
   * The leases (`taskId#leaseEpoch`) of the claim answers that reached their agent: one held in the network or lost
   * on the way was never an agent's, and a grant its claim then took back ended there.
   */
  private readonly heardLeases = new Set<string>();
  /** Requests of each route while the faults last. */
  private readonly sent: Record<string, number> = {};
  /**
   * How long the server took to answer each route's requests (ms), and how many it was still working on when the
   * agent gave them up: a server slower than the agents' time budgets turns into lost work and lapsed sessions.
   */
  private readonly answerTimes: Record<string, number[]> = {};
  private readonly abandoned: Record<string, number> = {};
  private requestCount = 0;
  private staleRejected = 0;

  get heard(): ReadonlySet<string> {
    return this.heardLeases;
  }
  get requestsWhere(): Readonly<Record<string, number>> {
    return this.sent;
  }
  get abandonedWhere(): Readonly<Record<string, number>> {
    return this.abandoned;
  }
  get requests(): number {
    return this.requestCount;
  }
  get staleRejectedCount(): number {
    return this.staleRejected;
  }

  answerMs(): Record<string, { p50: number; p99: number }> {
    return Object.fromEntries(
      Object.entries(this.answerTimes).map(([operation, times]) => {
        const sorted = [...times].sort((a, b) => a - b);
        const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
        return [operation, { p50: at(0.5), p99: at(0.99) }];
      }),
    );
  }

  /** A request of an agent. */
  protected noteRequest(): void {
    this.requestCount++;
  }

  /** A request of this route while the faults last. */
  protected noteUnderFaults(operation: string): void {
    this.sent[operation] = (this.sent[operation] ?? 0) + 1;
  }

  /** The server answered a request of this route after `ms`. */
  protected noteAnswerTime(operation: string, ms: number): void {
    const times = this.answerTimes[operation] ?? [];
    times.push(ms);
    this.answerTimes[operation] = times;
  }

  /** The agent gave a request up while the server had it: the server's work on it is thrown away. */
  protected noteAbandoned(operation: string): void {
    this.abandoned[operation] = (this.abandoned[operation] ?? 0) + 1;
  }

  /** Notes what the server answered (a claim's grants, a stale write refused), before the answer can be lost. */
  protected noteAnswer(
    operation: string,
    claimId: string | undefined,
    status: number,
    text: string,
    delivered: boolean,
  ): void {
    if (refusedAsStale(status, text)) this.staleRejected++;
    if (!CLAIMING.has(operation) || status !== 200 || !claimId) return;
    type Grants = { tasks?: { taskId: string; leaseEpoch: number }[] };
    const answer = JSON.parse(text) as Grants & { next?: Grants };
    const tasks = operation === 'claimTasks' ? answer.tasks : answer.next?.tasks;
    if (!tasks) return;
    const granted = tasks.map((t) => `${t.taskId}#${t.leaseEpoch}`);
    this.claimAnswers.push({ claimId, granted });
    if (delivered) this.noteDelivered(granted);
  }

  /** These leases' claim answer reached its agent. */
  protected noteDelivered(granted: readonly string[]): void {
    for (const lease of granted) this.heardLeases.add(lease);
  }
}
