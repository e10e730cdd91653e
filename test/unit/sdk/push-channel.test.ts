import { afterEach, describe, expect, it, vi } from 'vitest';
import { AgentSchedulerError } from '#sdk/errors';
import { findWebSocket, PushChannel, type PushFrame, parseFrame } from '#sdk/push-channel';
import { fakeSockets, pushFrame } from './fake-socket';

const channels: PushChannel[] = [];

function setup(options: { random?: () => number; ticket?: () => Promise<{ url: string }> } = {}) {
  const sockets = fakeSockets();
  let tickets = 0;
  const channel = new PushChannel({
    WebSocket: sockets.WebSocket,
    random: options.random ?? (() => 1),
    ticket:
      options.ticket ??
      (async () => {
        tickets++;
        return { url: `ws://push.test/v1/push?ticket=pt_${tickets}` };
      }),
  });
  channels.push(channel);
  const events: string[] = [];
  const frames: PushFrame[] = [];
  channel.on('connected', () => events.push('connected'));
  channel.on('disconnected', () => events.push('disconnected'));
  channel.on('unavailable', () => events.push('unavailable'));
  channel.on('frame', (frame) => frames.push(frame));
  return { channel, sockets, events, frames, tickets: () => tickets };
}

afterEach(() => {
  for (const channel of channels.splice(0)) channel.close();
  vi.useRealTimers();
});

describe('PushChannel', () => {
  it('opens the URL of a fresh ticket on every connect', async () => {
    const { channel, sockets, events, tickets } = setup({ random: () => 0 });
    channel.start();
    await vi.waitFor(() => expect(channel.connected).toBe(true));
    sockets.last().drop();
    expect(channel.connected).toBe(false);
    await vi.waitFor(() => expect(sockets.all).toHaveLength(2));
    await vi.waitFor(() => expect(channel.connected).toBe(true));

    expect(sockets.all.map((s) => s.url)).toEqual([
      'ws://push.test/v1/push?ticket=pt_1',
      'ws://push.test/v1/push?ticket=pt_2',
    ]);
    expect(tickets()).toBe(2);
    expect(events).toEqual(['connected', 'disconnected', 'connected']);
  });

  it('sends {"type":"ping"} on connect and every nine minutes while open (API Gateway closes idle sockets at ten), and nothing else', async () => {
    vi.useFakeTimers();
    const { channel, sockets } = setup();
    channel.start();
    await vi.advanceTimersByTimeAsync(0);
    const socket = sockets.last();
    expect(channel.connected).toBe(true);
    expect(socket.sent).toEqual(['{"type":"ping"}']);
    await vi.advanceTimersByTimeAsync(9 * 60_000 - 1);
    expect(socket.sent).toEqual(['{"type":"ping"}']);
    await vi.advanceTimersByTimeAsync(1);
    expect(socket.sent).toEqual(['{"type":"ping"}', '{"type":"ping"}']);
    await vi.advanceTimersByTimeAsync(18 * 60_000);
    expect(socket.sent).toHaveLength(4);
    expect(new Set(socket.sent)).toEqual(new Set(['{"type":"ping"}']));
  });

  it('a socket that stops answering pings is dropped as dead and replaced, though no close reached it', async () => {
    vi.useFakeTimers();
    const { channel, sockets, events, frames } = setup();
    channel.start();
    await vi.advanceTimersByTimeAsync(0);
    const socket = sockets.last();
    // The deployment answers the ping on connect: it is one that answers pings.
    socket.receive({ type: 'pong', version: 1 });
    expect(frames).toEqual([]);
    // Then the socket dies silently: no close, no answer.
    await vi.advanceTimersByTimeAsync(9 * 60_000);
    expect(socket.sent).toHaveLength(2);
    expect(events).toEqual(['connected']);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(events).toEqual(['connected', 'disconnected']);
    expect(socket.closedByClient).toBe(true);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sockets.all).toHaveLength(2);
    expect(channel.connected).toBe(true);
    expect(events).toEqual(['connected', 'disconnected', 'connected']);
  });

  it('a socket whose pings are answered stays; a deployment that answers none (from before pongs) keeps its socket', async () => {
    vi.useFakeTimers();
    const answered = setup();
    answered.channel.start();
    await vi.advanceTimersByTimeAsync(0);
    const socket = answered.sockets.last();
    for (let minute = 0; minute < 60; minute += 9) {
      socket.receive({ type: 'pong', version: 1 });
      await vi.advanceTimersByTimeAsync(9 * 60_000);
    }
    expect(answered.events).toEqual(['connected']);

    const old = setup();
    old.channel.start();
    await vi.advanceTimersByTimeAsync(60 * 60_000);
    expect(old.sockets.all).toHaveLength(1);
    expect(old.events).toEqual(['connected']);
  });

  it('connects again after a close with jittered backoff, 0.5 s doubling to 30 s, and from 0.5 s once open', async () => {
    vi.useFakeTimers();
    const { channel, sockets } = setup({ random: () => 1 });
    sockets.autoOpen = false;
    channel.start();
    await vi.advanceTimersByTimeAsync(0);
    const madeAt: number[] = [Date.now()];
    // Every handshake fails: the waits double.
    for (let i = 0; i < 8; i++) {
      const count = sockets.all.length;
      sockets.last().refuse();
      await vi.waitUntil(
        async () => {
          await vi.advanceTimersByTimeAsync(50);
          return sockets.all.length > count;
        },
        { timeout: 100_000, interval: 0 },
      );
      madeAt.push(Date.now());
    }
    const gaps = madeAt.slice(1).map((at, i) => at - (madeAt[i] ?? 0));
    // Within a 50 ms step of 500, 1000, 2000, ... 30000.
    expect(gaps.map((gap) => Math.ceil(gap / 50) * 50)).toEqual([
      500, 1000, 2000, 4000, 8000, 16000, 30000, 30000,
    ]);

    // Once a socket opens, the next close waits the minimum again.
    sockets.last().open();
    expect(channel.connected).toBe(true);
    const droppedAt = Date.now();
    sockets.last().drop();
    await vi.waitUntil(
      async () => {
        await vi.advanceTimersByTimeAsync(50);
        return sockets.all.length === 10;
      },
      { timeout: 100_000, interval: 0 },
    );
    expect(Date.now() - droppedAt).toBeLessThanOrEqual(550);
  });

  it('draws its waits between half and all of the backoff', async () => {
    vi.useFakeTimers();
    const { channel, sockets } = setup({ random: () => 0 });
    channel.start();
    await vi.advanceTimersByTimeAsync(0);
    sockets.last().drop();
    await vi.advanceTimersByTimeAsync(249);
    expect(sockets.all).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(sockets.all).toHaveLength(2);
  });

  it('opens a new socket before 2 hours and closes the old one only once the new one is open', async () => {
    vi.useFakeTimers();
    const { channel, sockets, events, frames } = setup();
    channel.start();
    await vi.advanceTimersByTimeAsync(0);
    const old = sockets.last();
    sockets.autoOpen = false;
    await vi.advanceTimersByTimeAsync(110 * 60_000);
    expect(sockets.all).toHaveLength(2);
    const replacement = sockets.last();
    // Still connected on the old socket, which still delivers.
    expect(channel.connected).toBe(true);
    expect(old.closedByClient).toBe(false);
    old.receive(pushFrame({ type: 'wake', queue: 'q', reason: 'submitted' }));

    replacement.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(old.closedByClient).toBe(true);
    expect(channel.connected).toBe(true);
    replacement.receive(pushFrame({ type: 'wake', queue: 'q', reason: 'retry' }));
    expect(frames.map((f) => (f as { reason: string }).reason)).toEqual(['submitted', 'retry']);
    // Never down: two connections, no disconnection.
    expect(events).toEqual(['connected', 'connected']);
    // Frames go on the new socket (after the ping it sent on connect).
    channel.send({ type: 'ping' });
    expect(replacement.sent).toEqual(['{"type":"ping"}', '{"type":"ping"}']);
  });

  it('emits the frames it understands and ignores the rest', async () => {
    const { channel, sockets, frames } = setup();
    channel.start();
    await vi.waitFor(() => expect(channel.connected).toBe(true));
    const socket = sockets.last();
    const good = [
      pushFrame({ type: 'wake', queue: 'q', reason: 'submitted' }),
      pushFrame({ type: 'role', role: 'leader', event: 'granted', leaseEpoch: 3 }),
      pushFrame({ type: 'cancel', taskId: 't_1', leaseEpoch: 2 }),
      pushFrame({ type: 'task', taskId: 't_1', status: 'succeeded', result: { a: 1 } }),
      pushFrame({ type: 'subscribed', id: 'w1', tasks: [{ taskId: 't_1', status: null }] }),
      pushFrame({ type: 'error', code: 'BadFrame', message: 'no', id: 'w2' }),
    ];
    const bad = [
      'not json',
      '[1,2]',
      'null',
      JSON.stringify({ type: 'wake', queue: 'q', reason: 'submitted' }),
      JSON.stringify({ type: 'wake', version: 2, queue: 'q', reason: 'submitted' }),
      JSON.stringify(pushFrame({ type: 'hello' })),
      JSON.stringify(pushFrame({ type: 'wake', reason: 'submitted' })),
      JSON.stringify(pushFrame({ type: 'role', role: 'r', event: 'revoked', leaseEpoch: 1 })),
      JSON.stringify(pushFrame({ type: 'task', taskId: 't_1', status: 'leased' })),
      JSON.stringify(pushFrame({ type: 'cancel', taskId: 't_1' })),
      JSON.stringify(pushFrame({ type: 'cancel', taskId: 7, leaseEpoch: 2 })),
      JSON.stringify(pushFrame({ type: 'subscribed', id: 'w1', tasks: [{ status: 'queued' }] })),
      new Uint8Array([123, 125]),
      42,
    ];
    for (const frame of bad) socket.receive(frame);
    for (const frame of good) socket.receive(frame);
    expect(frames).toEqual(good);
    expect(parseFrame('{"type":"wake","version":1,"queue":"q","reason":"new-reason"}')).toMatchObject({
      queue: 'q',
    });
  });

  it('gives up for good when the deployment has no push channel, and does not retry', async () => {
    vi.useFakeTimers();
    let asked = 0;
    const { channel, sockets, events } = setup({
      ticket: async () => {
        asked++;
        throw new AgentSchedulerError({ status: 404, code: 'PushUnavailable', message: 'poll instead' });
      },
    });
    channel.start();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(channel.state).toBe('unavailable');
    expect(events).toEqual(['unavailable']);
    expect(asked).toBe(1);
    expect(sockets.all).toEqual([]);
  });

  it('tries again after a ticket that failed on the way (network, 5xx)', async () => {
    vi.useFakeTimers();
    let asked = 0;
    const { channel, sockets } = setup({
      ticket: async () => {
        asked++;
        if (asked < 3)
          throw new AgentSchedulerError({ status: 503, code: 'ServiceUnavailable', message: 'busy' });
        return { url: 'ws://push.test/v1/push?ticket=pt_x' };
      },
    });
    channel.start();
    await vi.advanceTimersByTimeAsync(1_600);
    expect(asked).toBe(3);
    expect(sockets.all).toHaveLength(1);
    expect(channel.connected).toBe(true);
  });

  it('close() closes the socket and connects no more', async () => {
    vi.useFakeTimers();
    const { channel, sockets, events } = setup();
    channel.start();
    await vi.advanceTimersByTimeAsync(0);
    channel.close();
    await vi.advanceTimersByTimeAsync(120 * 60_000);
    expect(sockets.all).toHaveLength(1);
    expect(sockets.last().closedByClient).toBe(true);
    expect(channel.state).toBe('closed');
    expect(channel.send({ type: 'ping' })).toBe(false);
    expect(events).toEqual(['connected', 'disconnected']);
  });

  it('finds the WebSocket given, else the global one, else `ws`', async () => {
    const { WebSocket } = fakeSockets();
    expect(await findWebSocket(WebSocket)).toBe(WebSocket);
    // Node.js 20 has no global WebSocket; `ws` is installed here as a dev dependency.
    const found = await findWebSocket();
    const global = (globalThis as { WebSocket?: unknown }).WebSocket;
    if (global) expect(found).toBe(global);
    else expect(found).toBe((await import('ws')).WebSocket);
  });
});
