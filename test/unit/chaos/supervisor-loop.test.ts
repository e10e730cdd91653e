/**
 * The chaos supervisor's doubled ticks: as at-least-once delivery duplicates a scheduled invocation, a share of the
 * ticks run their pass twice at once, however long a pass takes.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { superviseUnderChaos } from '../../../chaos/supervisor-loop';

describe('the chaos supervisor loop', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('passes slower than ten ticks never run three at once, and a tenth of the ticks are doubled', async () => {
    let running = 0;
    let most = 0;
    const loop = superviseUnderChaos({
      // A pass under load: a second, where a tick is 10 ms.
      pass: async () => {
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        running--;
      },
      tickMs: 10,
      doublingShare: 0.1,
      faultsOn: () => true,
    });
    await vi.advanceTimersByTimeAsync(60_000);
    const stopped = loop.stop();
    await vi.advanceTimersByTimeAsync(2_000);
    await stopped;
    const ticks = loop.passes - loop.doubled;
    expect(most).toBe(2);
    expect(ticks).toBeGreaterThanOrEqual(50);
    expect(loop.doubled).toBeGreaterThanOrEqual(Math.floor(ticks / 10));
    expect(loop.doubled).toBeLessThanOrEqual(Math.ceil(ticks / 10));
  });

  it('doubles the first tick of the faults, so a run of fewer than ten ticks has one', async () => {
    const loop = superviseUnderChaos({
      pass: () => new Promise((resolve) => setTimeout(resolve, 1_000)),
      tickMs: 250,
      doublingShare: 0.1,
      faultsOn: () => true,
    });
    await vi.advanceTimersByTimeAsync(3_000);
    const stopped = loop.stop();
    await vi.advanceTimersByTimeAsync(2_000);
    await stopped;
    expect(loop.passes - loop.doubled).toBeLessThan(10);
    expect(loop.doubled).toBe(1);
  });

  it('doubles no tick once the faults are off', async () => {
    let faultsOn = true;
    const loop = superviseUnderChaos({
      pass: async () => undefined,
      tickMs: 10,
      doublingShare: 0.5,
      faultsOn: () => faultsOn,
    });
    await vi.advanceTimersByTimeAsync(200);
    faultsOn = false;
    const doubledWhileOn = loop.doubled;
    await vi.advanceTimersByTimeAsync(500);
    const stopped = loop.stop();
    await vi.advanceTimersByTimeAsync(20);
    await stopped;
    expect(doubledWhileOn).toBeGreaterThan(0);
    expect(loop.doubled).toBe(doubledWhileOn);
  });
});
