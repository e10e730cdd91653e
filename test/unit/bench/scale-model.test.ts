import { describe, expect, it } from 'vitest';
import { DUE_SHARDS, LISTED_SHARDS } from '#adapters/tables';
import { ceilings, lowestCeiling, quotas } from '../../../bench/scale-model';

const model = (batch: number, leasesHeld = 25, listeners = 50, listenerShards = 4) =>
  ceilings({ batch, leasesHeld, listeners, listenerShards });

describe('the scale model', () => {
  it('spreads a queue’s list writes over its partitions: each one’s 1,000 write units a second, times the partitions', () => {
    const listed = model(10).find((c) => c.key.startsWith('list partition'));
    expect(listed?.shards).toBe(LISTED_SHARDS);
    expect(listed?.tasksPerSecond).toBe(LISTED_SHARDS * 1_000);
    const due = model(10).find((c) => c.key.startsWith('due index'));
    expect(due?.tasksPerSecond).toBe((DUE_SHARDS * 1_000) / 2);
  });

  it('puts a queue without limits or push above 5,000 tasks a second, and a concurrency key above 250', () => {
    const all = model(10);
    expect(lowestCeiling(all, 'queue', (c) => c.when === 'every task')).toBeGreaterThanOrEqual(5_000);
    expect(
      lowestCeiling(all, 'concurrency key', (c) => c.when === 'a task with a concurrencyKey'),
    ).toBeGreaterThanOrEqual(250);
  });

  it('spreads a limited queue’s slots over items: its ceiling does not fall as its limit grows', () => {
    const limited = (held: number, batch = 10) =>
      lowestCeiling(model(batch, held), 'queue', (c) => c.when === 'a queue with maxConcurrency');
    // 25 slots in two items; each claim of ten reserves in one write, each end frees in one.
    expect(limited(25)).toBe(Math.floor((2 * 1_000) / 1.1));
    expect(limited(25, 1)).toBe(1_000);
    expect(limited(1_000)).toBeGreaterThan(limited(25));
    expect(limited(5_000)).toBeGreaterThan(limited(25));
  });

  it('spreads push wakes over the listener partitions, and an agent woken stands for the tasks its claims take', () => {
    const push = (batch: number, shards: number) =>
      lowestCeiling(model(batch, 25, 50, shards), 'queue', (c) => c.when.startsWith('push'));
    // One partition written three times a task: an idle mark, a wake and a busy mark.
    expect(push(1, 1)).toBe(333);
    expect(push(1, 4)).toBe(1_333);
    // Claims of ten: one wake, one idle mark a ten tasks.
    expect(push(10, 4)).toBeGreaterThanOrEqual(5_000);
  });

  it('names the quotas that bind first: the agent routes’ throttle caps claims near 1,000 tasks a second in tens', () => {
    const agentRoutes = quotas(10).find((q) => q.quota.startsWith('agentRouteThrottle'));
    expect(agentRoutes?.tasksPerSecond).toBe(1_000);
    expect(quotas(1).find((q) => q.quota.startsWith('agentRouteThrottle'))?.tasksPerSecond).toBe(100);
  });
});
