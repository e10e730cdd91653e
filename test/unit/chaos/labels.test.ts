/**
 * The labelled tasks' part of the chaos run: the fleet's profiles serve every requirement set from three agents on
 * (a narrowed session only what it kept), and the check counts a lease whose session's labels do not meet its task's
 * requirements, once per lease however many versions it has, and a lease whose session no write shows apart.
 */
import { describe, expect, it } from 'vitest';
import { meets } from '#domain/labels';
import type { SessionVersion, TaskVersion } from '../../../chaos/history';
import {
  checkLabelledGrants,
  labelViolations,
  REQUIREMENT_SETS,
  sessionLabelsOf,
  unservedSets,
} from '../../../chaos/labels';

const session = (sessionId: string, labels?: SessionVersion['labels']): SessionVersion => ({
  at: 1,
  agentId: `a_${sessionId}`,
  sessionId,
  expiresAt: 10,
  held: 0,
  idle: true,
  ended: false,
  ...(labels ? { labels } : {}),
});

const leased = (
  taskId: string,
  sessionId: string,
  require: TaskVersion['require'],
  leaseEpoch = 1,
): TaskVersion => ({
  at: 2,
  taskId,
  status: 'leased',
  leaseEpoch,
  owner: `a_${sessionId}`,
  sessionId,
  ...(require ? { require } : {}),
});

describe('the chaos run’s labels', () => {
  it('serves every requirement set from three agents on, and a narrowed session only what it kept', () => {
    expect(unservedSets(3)).toEqual([]);
    expect(unservedSets(2)).toEqual(['gpu=t4']);
    // Agent 1 was given the a100 and claude, and narrowed its sessions to the h100 and gpt.
    expect(sessionLabelsOf(1)).toEqual({ gpu: ['h100'], model: ['gpt'] });
    const servedBy = (i: number) =>
      REQUIREMENT_SETS.filter((s) => meets(sessionLabelsOf(i), s.require)).map((s) => s.name);
    expect(servedBy(1)).toEqual(['gpu=*', 'model=gpt+key', 'model=*']);
    expect(servedBy(3)).toEqual([]);
    expect(servedBy(4)).toEqual(['gpu=*', 'gpu=t4']);
  });

  it('counts each lease whose session does not meet its task’s requirements once, and one of an unknown session apart', () => {
    const verdict = checkLabelledGrants({
      sessions: [session('s_gpu', { gpu: ['a100'] }), session('s_none'), session('s_gpu', { gpu: ['a100'] })],
      tasks: [
        leased('t_met', 's_gpu', { gpu: '*' }),
        // The same lease again (a heartbeat's version): one lease.
        leased('t_met', 's_gpu', { gpu: '*' }),
        leased('t_wrong', 's_gpu', { gpu: 't4' }),
        leased('t_wrong', 's_none', { gpu: 't4' }, 2),
        leased('t_unknown', 's_gone', { gpu: 'a100' }),
        // A task that requires nothing is not looked at.
        leased('t_plain', 's_none', undefined),
        { ...leased('t_queued', 's_none', { gpu: 'a100' }), status: 'queued' },
      ],
    });
    expect(verdict).toEqual({
      grants: 4,
      grantsBySet: { 'gpu=*': 1, 'gpu=t4': 2, 'gpu=a100': 1 },
      sessions: 1,
      mismatchedGrantCount: 2,
      unknownSessionCount: 1,
    });
    expect(labelViolations(verdict)).toBe(3);
  });
});
