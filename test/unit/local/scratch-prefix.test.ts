/**
 * Scratch stacks on shared emulators never meet: each has names of its own, even when several start in one
 * millisecond (the chaos suite starts its mutants' runs side by side, and a table is created if absent, so two runs
 * named alike would share their tables until the first deleted them under the other).
 */
import { describe, expect, it } from 'vitest';
import { scratchPrefix } from '#local/scratch-stack';

describe('the names of a scratch stack', () => {
  it('differ between stacks started in one millisecond', () => {
    const prefixes = Array.from({ length: 20 }, () => scratchPrefix({ name: 'chaos' }));
    expect(new Set(prefixes).size).toBe(20);
    for (const prefix of prefixes) expect(prefix).toMatch(/^chaos[a-z0-9]+$/);
  });

  it('are the name itself when asked for exactly', () => {
    expect(scratchPrefix({ name: 'local', exactNames: true })).toBe('local');
  });
});
