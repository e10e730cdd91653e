/**
 * Labels and requirements as values: what meets what, what a session may narrow, and the lanes a task's fields name
 * (a key's lane named as before labels, a set's lanes spread by task id, a key's and set's lane apart from both).
 */
import { describe, expect, it } from 'vitest';
import { addedTo, meets, normaliseLabels, requirementsKey } from '#domain/labels';
import { keyHashOf, laneOf, REQUIREMENT_LANES } from '#domain/lanes';

describe('labels', () => {
  const agent = normaliseLabels({ gpu: ['h100', 'a100', 'a100'], model: 'claude' });

  it('normalises: lists of distinct values, sorted, names sorted', () => {
    expect(agent).toEqual({ gpu: ['a100', 'h100'], model: ['claude'] });
    expect(Object.keys(normaliseLabels({ z: 'a', a: 'b' }))).toEqual(['a', 'z']);
  });

  it('an agent meets a set when it has a named value of each label, or any for *', () => {
    expect(meets(agent, undefined)).toBe(true);
    expect(meets(agent, {})).toBe(true);
    expect(meets(agent, { gpu: 'h100' })).toBe(true);
    expect(meets(agent, { gpu: '*', model: 'claude' })).toBe(true);
    expect(meets(agent, { gpu: 't4' })).toBe(false);
    expect(meets(agent, { region: '*' })).toBe(false);
    expect(meets(agent, { gpu: 'h100', model: 'gpt' })).toBe(false);
    expect(meets(undefined, { gpu: '*' })).toBe(false);
    expect(meets({ gpu: [] }, { gpu: '*' })).toBe(false);
  });

  it('a session narrows (fewer names, fewer values) but never adds', () => {
    expect(addedTo(agent, {})).toBeUndefined();
    expect(addedTo(agent, { gpu: ['a100'] })).toBeUndefined();
    expect(addedTo(agent, agent)).toBeUndefined();
    expect(addedTo(agent, { gpu: ['t4'] })).toBe('gpu=t4');
    expect(addedTo(agent, { region: ['eu'] })).toBe('region');
  });

  it('names a set by its canonical form', () => {
    expect(requirementsKey({ a: '1', b: '2' })).toBe(requirementsKey({ b: '2', a: '1' }));
    expect(requirementsKey({ a: '1' })).not.toBe(requirementsKey({ a: '2' }));
  });
});

describe('lanes of keys and requirement sets', () => {
  const base = { queue: 'work', priority: 'normal' as const };

  it('a key’s lane is named as before labels: by its key’s hash', () => {
    expect(laneOf({ ...base, taskId: 't_1', concurrencyKey: 'acme' })).toEqual({
      laneId: `work#normal#${keyHashOf('acme')}`,
      keyHash: keyHashOf('acme'),
      concurrencyKeyHash: keyHashOf('acme'),
    });
    expect(laneOf({ ...base, taskId: 't_1' })).toBeUndefined();
    expect(laneOf({ ...base, taskId: 't_1', require: {} })).toBeUndefined();
  });

  it('a set’s tasks without a key spread over its lanes by task id, the same lane for a task every time', () => {
    const lanes = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const lane = laneOf({ ...base, taskId: `t_${i}`, require: { gpu: '*' } });
      expect(lane?.require).toEqual({ gpu: '*' });
      expect(lane?.concurrencyKeyHash).toBeUndefined();
      lanes.add(lane?.laneId ?? '');
    }
    expect(lanes.size).toBe(REQUIREMENT_LANES);
    expect(laneOf({ ...base, taskId: 't_7', require: { gpu: '*' } })).toEqual(
      laneOf({ ...base, taskId: 't_7', require: { gpu: '*' } }),
    );
  });

  it('a key’s and set’s lane is one for the key and set, apart from the key’s own and the set’s', () => {
    const lanes = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const lane = laneOf({ ...base, taskId: `t_${i}`, concurrencyKey: 'acme', require: { gpu: '*' } });
      expect(lane?.concurrencyKeyHash).toBe(keyHashOf('acme'));
      lanes.add(lane?.laneId ?? '');
    }
    expect(lanes.size).toBe(1);
    const [only] = lanes;
    expect(only).not.toBe(laneOf({ ...base, taskId: 't_0', concurrencyKey: 'acme' })?.laneId);
    expect(only).not.toBe(
      laneOf({ ...base, taskId: 't_0', concurrencyKey: 'acme', require: { gpu: 'h100' } })?.laneId,
    );
  });
});
