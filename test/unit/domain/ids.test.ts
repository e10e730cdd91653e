import { describe, expect, it } from 'vitest';
import {
  ID_PATTERN,
  newAgentId,
  newSessionId,
  newTaskId,
  shardOf,
  TASK_ID_PATTERN,
  taskIdForIdempotencyKey,
} from '#domain/ids';

describe('ids', () => {
  it('random ids have the documented shape and differ', () => {
    const ids = new Set(Array.from({ length: 1_000 }, newTaskId));
    expect(ids.size).toBe(1_000);
    for (const id of ids) expect(id).toMatch(TASK_ID_PATTERN);
    expect(newAgentId()).toMatch(/^a_[a-z2-7]{26}$/);
    expect(newSessionId()).toMatch(ID_PATTERN);
  });

  it('an idempotency key always names the same task, and different keys different tasks', () => {
    expect(taskIdForIdempotencyKey('order-42')).toBe(taskIdForIdempotencyKey('order-42'));
    expect(taskIdForIdempotencyKey('order-42')).not.toBe(taskIdForIdempotencyKey('order-43'));
    expect(taskIdForIdempotencyKey('order-42')).toMatch(TASK_ID_PATTERN);
  });

  it('spreads keys evenly over shards', () => {
    const counts = new Array<number>(16).fill(0);
    for (let i = 0; i < 16_000; i++) {
      const shard = shardOf(newTaskId(), 16);
      counts[shard] = (counts[shard] ?? 0) + 1;
    }
    for (const n of counts) {
      expect(n).toBeGreaterThan(800);
      expect(n).toBeLessThan(1_200);
    }
  });
});
