/**
 * The push channel's client: one WebSocket to the deployment, opened with a fresh single-use ticket each time,
 * kept alive with a `ping` frame on connect and every nine minutes, dropped as dead when a ping goes unanswered
 * (once the deployment has answered one: a deployment from before pongs answers none), replaced before API
 * Gateway's two-hour limit (the new socket
 * opens before the old one closes, so no frame falls between them), and opened again with jittered exponential
 * backoff whenever it closes.
 *
 * Pushes are hints: a wake says work may be waiting, a role frame that a grant committed, a task frame that a
 * watched task ended. The HTTP API stays the truth, and whoever uses the channel polls as it would without one
 * while it is down. Without a WebSocket (Node.js 20 has no global one; the optional peer `ws` gives one) the
 * channel is `unavailable` from the start.
 */
import { EventEmitter } from 'node:events';
import { isRefusal } from './errors.js';
import { PollBackoff } from './poll-backoff.js';
import type { PushTicket, TaskProgress } from './types.js';

/** The version of the frames this client reads and writes; frames of any other version are ignored. */
export const PUSH_VERSION = 1;
/** API Gateway closes a WebSocket idle for 10 minutes: a `ping` goes out this often. */
export const KEEP_ALIVE_MS = 9 * 60 * 1_000;
/** API Gateway closes any WebSocket after 2 hours: a new one is opened this long after each connect. */
export const RECONNECT_AFTER_MS = 110 * 60 * 1_000;
/**
 * A `ping` unanswered this long means the socket is dead, though no close reached us (a NAT that forgot it, a
 * half-open TCP connection): API Gateway's mock route answers in milliseconds.
 */
export const PONG_TIMEOUT_MS = 10_000;
/** A connect (ticket and handshake) that takes longer than this is abandoned and tried again. */
const CONNECT_TIMEOUT_MS = 15_000;

/** What a socket event may carry: `data` for a message, `code` and `reason` for a close. */
export interface PushSocketEvent {
  readonly type?: string;
  readonly data?: unknown;
  readonly code?: number;
  readonly reason?: string;
}

/** The part of the standard `WebSocket` the channel uses: the global one of Node.js 22 and browsers, or `ws`'s. */
export interface PushSocket {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(
    type: 'open' | 'message' | 'close' | 'error',
    listener: (event: PushSocketEvent) => void,
  ): void;
}

export type WebSocketConstructor = new (url: string) => PushSocket;

/** How the push channel is opened and kept. */
export interface PushOptions {
  /** @default the global `WebSocket`, else the optional peer dependency `ws` if installed, else none (polling) */
  readonly WebSocket?: WebSocketConstructor;
  /** How often a `ping` frame keeps the socket open. @default 540000 (9 minutes) */
  readonly keepAliveMs?: number;
  /** How long a `ping` may go unanswered before the socket counts as dead. @default 10000 */
  readonly pongTimeoutMs?: number;
  /** How long after connecting a new socket replaces the old one. @default 6600000 (110 minutes) */
  readonly reconnectAfterMs?: number;
  /** Wait before connecting again after a close or a failed connect: doubling, jittered. @default 500 to 30000 */
  readonly reconnectDelayMs?: { readonly min?: number; readonly max?: number };
}

/** Why an agent was woken. */
export type WakeReason =
  | 'submitted'
  | 'released'
  | 'retry'
  | 'reclaimed'
  | 'redriven'
  | 'resumed'
  | 'due'
  | 'resent'
  | 'starving';

/** Work may be waiting in `queue`: claim over HTTP. */
export interface WakeFrame {
  readonly type: 'wake';
  readonly version: typeof PUSH_VERSION;
  readonly queue: string;
  readonly reason: WakeReason | (string & {});
}

/** A role was granted to this agent; its lease epoch names the grant. */
export interface RoleFrame {
  readonly type: 'role';
  readonly version: typeof PUSH_VERSION;
  readonly role: string;
  readonly event: 'granted';
  readonly leaseEpoch: number;
}

/**
 * A task this agent holds under `leaseEpoch` was cancelled: its handler is aborted now, not at the next heartbeat
 * (whose answer says the same, for an agent that missed this).
 */
export interface CancelFrame {
  readonly type: 'cancel';
  readonly version: typeof PUSH_VERSION;
  readonly taskId: string;
  readonly leaseEpoch: number;
}

/** A task this connection watches reported progress: its last report, as `getTask` shows it. */
export interface ProgressFrame {
  readonly type: 'progress';
  readonly version: typeof PUSH_VERSION;
  readonly taskId: string;
  readonly progress: TaskProgress;
}

/** A task this connection watches ended. `result` is left out (`resultOmitted`) when it would not fit a frame. */
export interface TaskFrame {
  readonly type: 'task';
  readonly version: typeof PUSH_VERSION;
  readonly taskId: string;
  readonly status: 'succeeded' | 'dead' | 'cancelled' | 'expired';
  readonly result?: unknown;
  readonly resultOmitted?: true;
  readonly error?: { readonly message: string };
}

/** The answer to a `subscribe` frame: each task's status, read after its watch was recorded (null: no such task). */
export interface SubscribedFrame {
  readonly type: 'subscribed';
  readonly version: typeof PUSH_VERSION;
  readonly id: string;
  readonly tasks: readonly { readonly taskId: string; readonly status: string | null }[];
}

/** A frame the server refused; `id` names it when it had one. */
export interface PushErrorFrame {
  readonly type: 'error';
  readonly version: typeof PUSH_VERSION;
  readonly code: string;
  readonly message: string;
  readonly id?: string;
}

export type PushFrame =
  | WakeFrame
  | RoleFrame
  | CancelFrame
  | ProgressFrame
  | TaskFrame
  | SubscribedFrame
  | PushErrorFrame;

/** Frames a client sends: `ping` keeps the socket open; `subscribe` (operators only) watches up to 25 tasks. */
export type ClientFrame =
  | { readonly type: 'ping' }
  | {
      readonly type: 'subscribe';
      readonly version: typeof PUSH_VERSION;
      readonly id: string;
      readonly taskIds: readonly string[];
    };

export type PushChannelState =
  /** Not started yet. */
  | 'idle'
  /** Getting a ticket and opening a socket (the first time, or again after a close). */
  | 'connecting'
  | 'open'
  /** Closed, waiting to connect again. */
  | 'waiting'
  /** No WebSocket here, or the deployment offers no push channel (or refuses this caller one): poll. */
  | 'unavailable'
  /** `close()` was called. */
  | 'closed';

export interface PushChannelEvents {
  /** A frame arrived (on any open socket: during a replacement, on the old one too). */
  frame: [frame: PushFrame];
  /**
   * A new socket is open. Fires for every socket, the proactive replacements included: what the server knew of the
   * previous connection (watches, an agent's idleness) is not carried over, so say it again.
   */
  connected: [];
  /** No socket is open any more; the channel connects again after a backoff. Poll meanwhile. */
  disconnected: [];
  /** The channel gave up for good (no WebSocket, no push channel, or refused): poll. */
  unavailable: [reason: unknown];
  /** A connect attempt failed; the channel tries again after a backoff. */
  failure: [error: unknown];
}

export interface PushChannelOptions extends PushOptions {
  /** A fresh ticket for each connect: its `url` is opened. */
  readonly ticket: () => Promise<Pick<PushTicket, 'url'>>;
  /** @default Math.random */
  readonly random?: () => number;
}

/** The optional peer dependency, named through a variable so bundlers and import checkers leave it alone. */
const OPTIONAL_PEER = 'ws';
let imported: Promise<WebSocketConstructor | undefined> | undefined;

/**
 * The WebSocket constructor to use: the one given, else the global `WebSocket`, else the `ws` package if it is
 * installed; undefined when there is none.
 */
export function findWebSocket(given?: WebSocketConstructor): Promise<WebSocketConstructor | undefined> {
  if (given) return Promise.resolve(given);
  const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (typeof global === 'function') return Promise.resolve(global);
  imported ??= import(OPTIONAL_PEER).then(
    (module: { WebSocket?: unknown; default?: unknown }) => {
      const found = module.WebSocket ?? module.default;
      return typeof found === 'function' ? (found as WebSocketConstructor) : undefined;
    },
    () => undefined,
  );
  return imported;
}

/** The state of one socket, as its events see it. */
interface Connection {
  readonly socket: PushSocket;
  phase: 'opening' | 'open' | 'retired' | 'closed';
  keepAlive?: ReturnType<typeof setInterval>;
  replaceTimer?: ReturnType<typeof setTimeout>;
  /** Running while a `ping` waits for its pong. */
  pongTimer?: ReturnType<typeof setTimeout>;
}

/** A socket closed before it opened, or a handshake that never finished. */
class ConnectFailed extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ConnectFailed';
  }
}

const unref = (timer: unknown): void => {
  (timer as { unref?: () => void }).unref?.();
};

export class PushChannel extends EventEmitter<PushChannelEvents> {
  private readonly options: PushChannelOptions;
  private readonly random: () => number;
  private readonly backoff: PollBackoff;
  private stateNow: PushChannelState = 'idle';
  /** The socket frames are sent on; during a replacement the old one is still open (and `retired`). */
  private current: Connection | undefined;
  private readonly connections = new Set<Connection>();
  /** A connect loop is running (only one at a time). */
  private connecting = false;
  private readonly closedSignal = new AbortController();
  /** The deployment answers pings: an unanswered one then means a dead socket. */
  private pongsAnswered = false;

  constructor(options: PushChannelOptions) {
    super();
    this.options = options;
    this.random = options.random ?? Math.random;
    this.backoff = new PollBackoff({
      min: options.reconnectDelayMs?.min ?? 500,
      max: options.reconnectDelayMs?.max ?? 30_000,
    });
  }

  get state(): PushChannelState {
    return this.stateNow;
  }

  /** Whether a socket is open now: frames can be sent and pushes heard. */
  get connected(): boolean {
    return this.current?.phase === 'open';
  }

  /** Starts connecting (once); reconnects until `close()`. */
  start(): this {
    if (this.stateNow !== 'idle') return this;
    this.stateNow = 'connecting';
    void this.connectLoop();
    return this;
  }

  /** Sends a frame on the open socket; false if none is open (or the send failed). */
  send(frame: ClientFrame): boolean {
    const connection = this.current;
    if (connection?.phase !== 'open') return false;
    try {
      connection.socket.send(JSON.stringify(frame));
      return true;
    } catch {
      return false;
    }
  }

  /** Closes every socket and stops reconnecting. */
  close(): void {
    if (this.stateNow === 'closed') return;
    const wasConnected = this.connected;
    this.stateNow = 'closed';
    this.closedSignal.abort();
    this.current = undefined;
    for (const connection of [...this.connections]) this.retire(connection);
    if (wasConnected) this.emitSafe('disconnected');
  }

  private get closed(): boolean {
    return this.stateNow === 'closed';
  }

  /** Connects until a socket is open, with backoff between attempts; gives up only when refused for good. */
  private async connectLoop(): Promise<void> {
    if (this.connecting) return;
    this.connecting = true;
    try {
      const WebSocket = await findWebSocket(this.options.WebSocket);
      if (!WebSocket) {
        this.giveUp(
          new Error('no WebSocket: Node.js 20 needs the `ws` package installed for the push channel'),
        );
        return;
      }
      while (!this.closed) {
        try {
          await this.connectOnce(WebSocket);
          return;
        } catch (error) {
          if (this.closed) return;
          // Refused for good: no push channel here (404), or none for this caller.
          if (isRefusal(error)) {
            this.giveUp(error);
            return;
          }
          this.emitSafe('failure', error);
          if (!this.current) this.stateNow = 'waiting';
          await this.pause(this.jittered(this.backoff.next()));
          if (!this.current && !this.closed) this.stateNow = 'connecting';
        }
      }
    } finally {
      this.connecting = false;
    }
  }

  /** One ticket, one socket: resolves once it is open (and adopted), rejects if it closes or fails first. */
  private async connectOnce(WebSocket: WebSocketConstructor): Promise<void> {
    const { url } = await this.options.ticket();
    if (this.closed) return;
    const socket = new WebSocket(url);
    const connection: Connection = { socket, phase: 'opening' };
    this.connections.add(connection);
    await new Promise<void>((resolve, reject) => {
      let settled = false;
      const fail = (error: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.retire(connection);
        reject(error);
      };
      const timer = setTimeout(() => {
        fail(new ConnectFailed(`the WebSocket did not open within ${CONNECT_TIMEOUT_MS} ms`));
      }, CONNECT_TIMEOUT_MS);
      unref(timer);
      socket.addEventListener('open', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        // Closed meanwhile: the socket goes at once.
        if (connection.phase !== 'opening' || this.closed) this.retire(connection);
        else this.adopt(connection);
        resolve();
      });
      socket.addEventListener('message', (event) => this.received(connection, event.data));
      socket.addEventListener('error', (event) => {
        fail(new ConnectFailed('the WebSocket failed to open', { cause: event }));
      });
      socket.addEventListener('close', (event) => {
        if (!settled)
          fail(new ConnectFailed(`the WebSocket closed before it opened (code ${event.code ?? 'none'})`));
        else this.closedUnder(connection);
      });
    });
  }

  /** A socket opened: it becomes the one frames go on, and the one it replaces (if any) is closed. */
  private adopt(connection: Connection): void {
    connection.phase = 'open';
    this.backoff.reset();
    const previous = this.current;
    this.current = connection;
    this.stateNow = 'open';
    // At once, so that a deployment that answers pings is known to, and the new socket is seen to work.
    this.ping(connection);
    connection.keepAlive = setInterval(
      () => this.ping(connection),
      this.options.keepAliveMs ?? KEEP_ALIVE_MS,
    );
    unref(connection.keepAlive);
    connection.replaceTimer = setTimeout(() => {
      // Before the server's limit: a new socket first, then this one goes.
      if (this.current === connection && !this.closed) void this.connectLoop();
    }, this.options.reconnectAfterMs ?? RECONNECT_AFTER_MS);
    unref(connection.replaceTimer);
    if (previous) this.retire(previous);
    this.emitSafe('connected');
  }

  /** Sends a keep-alive, and drops the socket as dead if the deployment, which answers pings, leaves it unanswered. */
  private ping(connection: Connection): void {
    if (connection.phase !== 'open') return;
    try {
      connection.socket.send(JSON.stringify({ type: 'ping' }));
    } catch {
      // A socket that cannot send is closing: its close event follows.
      return;
    }
    if (connection.pongTimer !== undefined) return;
    connection.pongTimer = setTimeout(() => {
      connection.pongTimer = undefined;
      if (!this.pongsAnswered || connection.phase !== 'open') return;
      try {
        connection.socket.close(4000, 'no pong');
      } catch {
        // Closing a dead socket may throw; it is given up either way.
      }
      this.closedUnder(connection);
    }, this.options.pongTimeoutMs ?? PONG_TIMEOUT_MS);
    unref(connection.pongTimer);
  }

  /** Stops using a socket and closes it; its close event then changes nothing. */
  private retire(connection: Connection): void {
    if (connection.phase === 'retired' || connection.phase === 'closed') return;
    connection.phase = 'retired';
    this.stopTimers(connection);
    this.connections.delete(connection);
    if (this.current === connection) this.current = undefined;
    try {
      connection.socket.close(1000, 'replaced');
    } catch {
      // Closing a socket that never opened may throw; it is gone either way.
    }
  }

  /** The socket in use closed (the server, the network): poll meanwhile, and connect again after a backoff. */
  private closedUnder(connection: Connection): void {
    const wasCurrent = this.current === connection && connection.phase === 'open';
    connection.phase = 'closed';
    this.stopTimers(connection);
    this.connections.delete(connection);
    if (!wasCurrent || this.closed) return;
    this.current = undefined;
    this.stateNow = 'waiting';
    this.emitSafe('disconnected');
    void (async () => {
      await this.pause(this.jittered(this.backoff.next()));
      if (this.closed || this.current) return;
      this.stateNow = 'connecting';
      await this.connectLoop();
    })();
  }

  private stopTimers(connection: Connection): void {
    clearInterval(connection.keepAlive);
    clearTimeout(connection.replaceTimer);
    clearTimeout(connection.pongTimer);
  }

  private received(connection: Connection, data: unknown): void {
    if (connection.phase !== 'open' && connection.phase !== 'retired') return;
    if (this.closed) return;
    if (isPong(data)) {
      this.pongsAnswered = true;
      clearTimeout(connection.pongTimer);
      connection.pongTimer = undefined;
      return;
    }
    const frame = parseFrame(data);
    if (frame) this.emitSafe('frame', frame);
  }

  private giveUp(reason: unknown): void {
    if (this.closed) return;
    this.stateNow = 'unavailable';
    this.emitSafe('unavailable', reason);
  }

  /** Half to all of `ms`: clients dropped together do not all come back at once. */
  private jittered(ms: number): number {
    return Math.round(ms / 2 + (this.random() * ms) / 2);
  }

  private pause(ms: number): Promise<void> {
    const signal = this.closedSignal.signal;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      unref(timer);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  private emitSafe<K extends keyof PushChannelEvents>(event: K, ...args: PushChannelEvents[K]): void {
    try {
      EventEmitter.prototype.emit.call(this, event, ...args);
    } catch {
      // A throwing listener must not break the connection's bookkeeping.
    }
  }
}

const TASK_END = new Set(['succeeded', 'dead', 'cancelled', 'expired']);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The answer to a `ping`: `{"type":"pong","version":1}`. */
function isPong(data: unknown): boolean {
  if (typeof data !== 'string' || !data.includes('pong')) return false;
  try {
    const value: unknown = JSON.parse(data);
    return isRecord(value) && value.type === 'pong' && value.version === PUSH_VERSION;
  } catch {
    return false;
  }
}

/** A frame this client understands, or undefined: not JSON, of another version, of an unknown type, malformed. */
export function parseFrame(data: unknown): PushFrame | undefined {
  if (typeof data !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (!isRecord(value) || value.version !== PUSH_VERSION) return undefined;
  switch (value.type) {
    case 'wake':
      return typeof value.queue === 'string' && typeof value.reason === 'string'
        ? (value as unknown as WakeFrame)
        : undefined;
    case 'role':
      return typeof value.role === 'string' &&
        value.event === 'granted' &&
        typeof value.leaseEpoch === 'number'
        ? (value as unknown as RoleFrame)
        : undefined;
    case 'cancel':
      return typeof value.taskId === 'string' && typeof value.leaseEpoch === 'number'
        ? (value as unknown as CancelFrame)
        : undefined;
    case 'progress':
      return typeof value.taskId === 'string' &&
        isRecord(value.progress) &&
        typeof value.progress.at === 'string' &&
        typeof value.progress.attempt === 'number'
        ? (value as unknown as ProgressFrame)
        : undefined;
    case 'task':
      return typeof value.taskId === 'string' &&
        typeof value.status === 'string' &&
        TASK_END.has(value.status)
        ? (value as unknown as TaskFrame)
        : undefined;
    case 'subscribed':
      return typeof value.id === 'string' &&
        Array.isArray(value.tasks) &&
        value.tasks.every(
          (t) =>
            isRecord(t) &&
            typeof t.taskId === 'string' &&
            (t.status === null || typeof t.status === 'string'),
        )
        ? (value as unknown as SubscribedFrame)
        : undefined;
    case 'error':
      return typeof value.code === 'string' && typeof value.message === 'string'
        ? (value as unknown as PushErrorFrame)
        : undefined;
    default:
      return undefined;
  }
}
