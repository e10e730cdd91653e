/**
 * A tiny in-memory agent API behind a `fetch`, for Worker tests: sessions, claims with fenced lease epochs,
 * heartbeats with notices, and complete / fail / release refused with `LeaseLost` to a stale owner. Bodies are
 * held to the server's own limits (size, nesting, result and checkpoint size), refused as it refuses them.
 */
import { jsonTextProblem } from '#domain/json-text';
import { LIMITS, MAX_JSON_DEPTH } from '#domain/task-spec';
import { MAX_BODY_BYTES } from '../../../functions/http/http-api';

export interface FakeTask {
  readonly taskId: string;
  readonly payload: unknown;
  status: 'queued' | 'leased' | 'succeeded' | 'queued-after-fail' | 'dead' | 'cancelled';
  leaseEpoch: number;
  sessionId?: string;
  /** Milliseconds from the claim to the lease deadline. */
  readonly leaseMs: number;
  checkpoint?: unknown;
}

export interface RecordedCall {
  readonly method: string;
  readonly path: string;
  readonly body: Record<string, unknown>;
  /** The body's size, UTF-8 bytes. */
  readonly bytes: number;
  readonly at: number;
}

interface Reply {
  readonly status: number;
  readonly body: unknown;
}

const ok = (body: unknown): Reply => ({ status: 200, body });
const refused = (status: number, code: string, message: string): Reply => ({
  status,
  body: { error: { code, message }, requestId: 'req-fake' },
});
/** Serialised JSON, UTF-8 bytes, as the server measures results and checkpoints. */
const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value ?? null), 'utf8');
const conflict = (code: string): Reply => ({
  status: 409,
  body: { error: { code, message: code }, requestId: 'req-fake' },
});

export class FakeScheduler {
  readonly calls: RecordedCall[] = [];
  readonly tasks = new Map<string, FakeTask>();
  heartbeatIntervalSeconds = 60;
  leaseTtlSeconds = 30;
  /** How far the server's clock runs ahead of the agent's: its absolute deadlines look that much later. */
  clockAheadMs = 0;
  /**
   * Serve push tickets, and answer an empty claim that says `listening` with this wait (the safety poll).
   * @default undefined: no push channel (tickets are refused 404 `PushUnavailable`, as by a deployment without one)
   */
  pushSafetyPollMs: number | undefined;
  pushTickets = 0;
  /** Replies to serve before the real behaviour of a path, one per call. */
  readonly scripted = new Map<string, Reply[]>();
  private sessionId: string | undefined;
  private sessions = 0;
  private ids = 0;
  private cancelled = new Set<string>();
  /** What each claim id granted, for retries of the same claim. */
  private readonly claims = new Map<string, FakeTask[]>();
  private lost = new Set<string>();

  add(payload: unknown, options: { leaseMs?: number } = {}): string {
    const taskId = `t_${String(++this.ids).padStart(3, '0')}`;
    this.tasks.set(taskId, {
      taskId,
      payload,
      status: 'queued',
      leaseEpoch: 0,
      leaseMs: options.leaseMs ?? 60_000,
    });
    return taskId;
  }

  /** An operator cancels a leased task: its holder hears of it at its next heartbeat. */
  cancel(taskId: string): void {
    const task = this.task(taskId);
    if (task.status === 'leased' && task.sessionId) this.cancelled.add(taskId);
    task.status = 'cancelled';
  }

  /** The server takes a lease back behind the holder's back (a reclaim). */
  reclaim(taskId: string): void {
    const task = this.task(taskId);
    task.status = 'queued';
    task.sessionId = undefined;
  }

  /** The task is taken back and granted to another agent, so its first holder's lease is stale. */
  steal(taskId: string): void {
    const task = this.task(taskId);
    task.leaseEpoch++;
    task.sessionId = 's_other';
  }

  /** The current session ends, as when its time to live passes. */
  expireSession(): void {
    this.sessionId = undefined;
  }

  task(taskId: string): FakeTask {
    const task = this.tasks.get(taskId);
    if (!task) throw new Error(`no task ${taskId}`);
    return task;
  }

  callsTo(suffix: string): RecordedCall[] {
    return this.calls.filter((call) => call.path.endsWith(suffix));
  }

  /** Every claim sent, on its own or carried by a completion (`claimNext`), as if each were a claim call. */
  claimsSent(): RecordedCall[] {
    return this.calls.flatMap((call) => {
      if (call.path.endsWith('/claim')) return [call];
      const carried = (call.body as { claimNext?: Record<string, unknown> } | undefined)?.claimNext;
      return carried ? [{ ...call, body: carried }] : [];
    });
  }

  private readonly holds: { suffix: string; until: Promise<unknown> }[] = [];

  /** Calls to paths ending with one of these never get an answer (packets dropped, not refused). */
  readonly hanging = new Set<string>();

  /** The next call to a path ending with `suffix` waits for `until` before it is handled. */
  holdFirst(suffix: string, until: Promise<unknown>): void {
    this.holds.push({ suffix, until });
  }

  readonly fetch: typeof fetch = async (input, init) => {
    const request = input instanceof Request ? input : new Request(input, init);
    const path = new URL(request.url).pathname;
    if ([...this.hanging].some((suffix) => path.endsWith(suffix))) await new Promise(() => undefined);
    const hold = this.holds.findIndex((h) => path.endsWith(h.suffix));
    if (hold >= 0) await this.holds.splice(hold, 1)[0]?.until;
    const text = await request.text();
    const body = (text === '' ? {} : JSON.parse(text)) as Record<string, unknown>;
    const bytes = Buffer.byteLength(text, 'utf8');
    this.calls.push({ method: request.method, path, body, bytes, at: Date.now() });
    const scripted = [...this.scripted.entries()].find(([suffix]) => path.endsWith(suffix));
    const reply =
      scripted?.[1].shift() ?? this.refusal(text, bytes) ?? this.route(request.method, path, body);
    if (scripted && scripted[1].length === 0) this.scripted.delete(scripted[0]);
    return new Response(JSON.stringify(reply.body), {
      status: reply.status,
      headers: { 'content-type': 'application/json' },
    });
  };

  /** What the server answers a body it refuses whole, before any route sees it. */
  private refusal(text: string, bytes: number): Reply | undefined {
    if (bytes > MAX_BODY_BYTES)
      return refused(413, 'PayloadTooLarge', `the request body is larger than ${MAX_BODY_BYTES} bytes`);
    const problem = jsonTextProblem(text, MAX_JSON_DEPTH);
    return problem ? refused(400, 'ValidationError', `body: ${problem}`) : undefined;
  }

  private route(method: string, path: string, body: Record<string, unknown>): Reply {
    if (method === 'POST' && path === '/v1/agent/session') return this.openSession();
    if (method === 'POST' && path === '/v1/agent/heartbeat') return this.heartbeat(body);
    if (method === 'GET' && path === '/v1/agent/session') return this.readSession();
    if (method === 'POST' && path === '/v1/agent/claim') return this.claim(body);
    if (method === 'POST' && path === '/v1/agent/push-ticket') return this.pushTicket();
    if (method === 'POST' && path === '/v1/agent/tasks/complete')
      return this.carrying(this.completeMany(body), body);
    const finish = /^\/v1\/agent\/tasks\/([^/]+)\/(complete|fail|release)$/.exec(path);
    if (method === 'POST' && finish?.[1] && finish[2])
      return this.carrying(this.finish(finish[1], finish[2], body), body);
    return { status: 404, body: { error: { code: 'RouteNotFound', message: path } } };
  }

  /** A completion that carried a claim (`claimNext`): the claim made after it, answered as `next` or `nextError`. */
  private carrying(reply: Reply, body: Record<string, unknown>): Reply {
    const claimNext = body.claimNext as Record<string, unknown> | undefined;
    if (reply.status !== 200 || claimNext === undefined) return reply;
    const claimed = this.claim(claimNext);
    const carried =
      claimed.status === 200
        ? { next: claimed.body }
        : { nextError: (claimed.body as { error: unknown }).error };
    return { ...reply, body: { ...(reply.body as object), ...carried } };
  }

  private openSession(): Reply {
    // The replaced session's tasks are taken back at once.
    for (const task of this.tasks.values()) {
      if (task.status === 'leased' && task.sessionId === this.sessionId) this.reclaim(task.taskId);
    }
    this.sessionId = `s_${++this.sessions}`;
    return ok({
      sessionId: this.sessionId,
      leaseTtlSeconds: this.leaseTtlSeconds,
      heartbeatIntervalSeconds: this.heartbeatIntervalSeconds,
    });
  }

  private heartbeat(body: Record<string, unknown>): Reply {
    if (body.sessionId !== this.sessionId) return conflict('SessionLost');
    const checkpoints = (body.checkpoints ?? []) as {
      taskId: string;
      leaseEpoch: number;
      checkpoint: unknown;
    }[];
    if (!Array.isArray(checkpoints))
      return { status: 400, body: { error: { code: 'ValidationError', message: '' } } };
    if (checkpoints.length > 100)
      return refused(400, 'ValidationError', 'at most 100 checkpoints per heartbeat');
    for (const { taskId, checkpoint } of checkpoints) {
      const bytes = jsonBytes(checkpoint);
      if (bytes > LIMITS.checkpointBytes)
        return refused(413, 'PayloadTooLarge', `checkpoint of ${taskId} is ${bytes} bytes`);
    }
    for (const { taskId, leaseEpoch, checkpoint } of checkpoints) {
      const task = this.tasks.get(taskId);
      if (task?.status === 'leased' && task.sessionId === body.sessionId && task.leaseEpoch === leaseEpoch)
        task.checkpoint = checkpoint;
      else this.lost.add(taskId);
    }
    const reply = ok({
      cancelled: [...this.cancelled],
      lost: [...this.lost],
      roles: { picked: [], lost: [] },
      held: this.heldIds(),
    });
    this.cancelled.clear();
    this.lost.clear();
    return reply;
  }

  private claim(body: Record<string, unknown>): Reply {
    if (body.sessionId !== this.sessionId) return conflict('SessionLost');
    const claimId = typeof body.claimId === 'string' ? body.claimId : undefined;
    const replayed = claimId === undefined ? undefined : this.claims.get(claimId);
    if (replayed) {
      const still = replayed.filter((task) => task.status === 'leased' && task.sessionId === this.sessionId);
      return ok({ tasks: still.map((task) => this.claimedView(task)) });
    }
    const max = typeof body.max === 'number' ? body.max : 1;
    const taken = [...this.tasks.values()].filter((task) => task.status === 'queued').slice(0, max);
    for (const task of taken) {
      task.status = 'leased';
      task.leaseEpoch++;
      task.sessionId = this.sessionId;
    }
    if (claimId !== undefined && taken.length > 0) this.claims.set(claimId, taken);
    const listening = taken.length === 0 && body.listening === true && this.pushSafetyPollMs !== undefined;
    return ok({
      tasks: taken.map((task) => this.claimedView(task)),
      ...(listening ? { retryAfterMs: this.pushSafetyPollMs } : {}),
    });
  }

  private pushTicket(): Reply {
    if (this.pushSafetyPollMs === undefined)
      return { status: 404, body: { error: { code: 'PushUnavailable', message: 'poll instead' } } };
    const ticket = `pt_${++this.pushTickets}`;
    return {
      status: 201,
      body: { ticket, url: `ws://fake/v1/push?ticket=${ticket}`, expiresAt: new Date().toISOString() },
    };
  }

  private claimedView(task: FakeTask) {
    return {
      taskId: task.taskId,
      queue: 'q',
      priority: 'normal',
      payload: task.payload,
      attempt: task.leaseEpoch,
      leaseEpoch: task.leaseEpoch,
      leaseDeadline: new Date(Date.now() + this.clockAheadMs + task.leaseMs).toISOString(),
      timeoutSeconds: task.leaseMs / 1_000,
      ...(task.checkpoint === undefined ? {} : { checkpoint: task.checkpoint }),
    };
  }

  /** Ids of the tasks leased to the current session. */
  heldIds(): string[] {
    return [...this.tasks.values()]
      .filter((task) => task.status === 'leased' && task.sessionId === this.sessionId)
      .map((task) => task.taskId);
  }

  private readSession(): Reply {
    if (!this.sessionId) return conflict('SessionLost');
    return ok({
      session: {
        sessionId: this.sessionId,
        expiresAt: new Date(Date.now() + this.leaseTtlSeconds * 1_000).toISOString(),
        tasks: [...this.tasks.values()]
          .filter((task) => task.status === 'leased' && task.sessionId === this.sessionId)
          .map((task) => ({
            taskId: task.taskId,
            queue: 'q',
            leaseEpoch: task.leaseEpoch,
            attempt: task.leaseEpoch,
            leaseDeadline: new Date(Date.now() + task.leaseMs).toISOString(),
          })),
        roles: [],
      },
    });
  }

  /** Each item as its own call would be, answered in order. */
  private completeMany(body: Record<string, unknown>): Reply {
    const items = body.tasks as { taskId: string; leaseEpoch: number }[];
    if (items.length > 10) return refused(400, 'ValidationError', 'tasks: at most 10');
    return ok({
      results: items.map((item) => {
        const reply = this.finish(item.taskId, 'complete', item);
        return reply.status === 200
          ? { ok: true, ...(reply.body as object) }
          : { ok: false, status: reply.status, ...(reply.body as object) };
      }),
    });
  }

  private finish(taskId: string, kind: string, body: Record<string, unknown>): Reply {
    if (kind === 'complete' && body.result !== undefined && jsonBytes(body.result) > LIMITS.resultBytes)
      return refused(413, 'PayloadTooLarge', `result is ${jsonBytes(body.result)} bytes`);
    const task = this.tasks.get(taskId);
    if (!task) return { status: 404, body: { error: { code: 'TaskNotFound', message: taskId } } };
    const holds =
      task.status === 'leased' && task.leaseEpoch === body.leaseEpoch && task.sessionId === this.sessionId;
    if (!holds) return conflict('LeaseLost');
    task.sessionId = undefined;
    if (kind === 'complete') task.status = 'succeeded';
    else if (kind === 'release') task.status = 'queued';
    else
      task.status =
        (body.error as { retryable?: boolean }).retryable === false ? 'dead' : 'queued-after-fail';
    return ok({ task: { taskId, status: task.status } });
  }
}

/** A promise with its resolve exposed, for handlers a test finishes by hand. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Resolves when the signal aborts. */
export const aborted = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
