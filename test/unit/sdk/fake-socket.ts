/**
 * A WebSocket constructor for push channel tests: every socket it makes is kept, opens when the test says so (or
 * on the next tick), and lets the test play the server: frames in, a close from the far side.
 */
import type { PushSocket, PushSocketEvent, WebSocketConstructor } from '#sdk/push-channel';

type EventType = 'open' | 'message' | 'close' | 'error';

export class FakeSocket implements PushSocket {
  readyState = 0;
  readonly sent: string[] = [];
  closedByClient = false;
  private readonly listeners = new Map<EventType, ((event: PushSocketEvent) => void)[]>();

  constructor(readonly url: string) {}

  addEventListener(type: EventType, listener: (event: PushSocketEvent) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  send(data: string): void {
    if (this.readyState !== 1) throw new Error('not open');
    this.sent.push(data);
  }

  close(code = 1000): void {
    if (this.readyState === 3) return;
    this.closedByClient = true;
    this.readyState = 3;
    queueMicrotask(() => this.emit('close', { code }));
  }

  /** Sent frames, parsed. */
  frames(): Record<string, unknown>[] {
    return this.sent.map((text) => JSON.parse(text) as Record<string, unknown>);
  }

  // The server's side

  open(): void {
    this.readyState = 1;
    this.emit('open', {});
  }

  /** A frame from the server: an object is sent as JSON, anything else as it is. */
  receive(frame: unknown): void {
    this.emit('message', {
      data: typeof frame === 'string' || typeof frame !== 'object' ? frame : JSON.stringify(frame),
    });
  }

  /** The server (or the network) closes the socket. */
  drop(code = 1006): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.emit('close', { code });
  }

  /** The handshake fails: an error, then a close. */
  refuse(): void {
    this.readyState = 3;
    this.emit('error', {});
    this.emit('close', { code: 1006 });
  }

  private emit(type: EventType, event: PushSocketEvent): void {
    for (const listener of this.listeners.get(type) ?? []) listener(event);
  }
}

export interface FakeSockets {
  readonly WebSocket: WebSocketConstructor;
  readonly all: FakeSocket[];
  /** The socket made last. */
  last(): FakeSocket;
  /** Open sockets as they are made (on the next tick). @default true */
  autoOpen: boolean;
  /** Fail the handshake of sockets as they are made (on the next tick). @default false */
  autoRefuse: boolean;
}

export function fakeSockets(): FakeSockets {
  const sockets: FakeSockets = {
    all: [],
    autoOpen: true,
    autoRefuse: false,
    last: () => {
      const socket = sockets.all.at(-1);
      if (!socket) throw new Error('no socket was made');
      return socket;
    },
    WebSocket: class extends FakeSocket {
      constructor(url: string) {
        super(url);
        sockets.all.push(this);
        if (sockets.autoRefuse) queueMicrotask(() => this.readyState === 0 && this.refuse());
        else if (sockets.autoOpen) queueMicrotask(() => this.readyState === 0 && this.open());
      }
    },
  };
  return sockets;
}

/** A frame of the push protocol, version 1. */
export const pushFrame = (body: Record<string, unknown>) => ({ version: 1, ...body });
