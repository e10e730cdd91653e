import { describe, expect, it } from 'vitest';
import { InvalidTransitionError } from '#domain/errors';
import {
  assertTransition,
  canTransition,
  isTerminal,
  statusesFrom,
  TASK_STATUSES,
  type TaskEvent,
  type TaskStatus,
} from '#domain/task-status';

const EVENTS: TaskEvent[] = [
  'claim',
  'complete',
  'fail',
  'release',
  'reclaim',
  'cancel',
  'redrive',
  'expire',
  'unblock',
  'wait',
  'resume',
  'timeOut',
];

/** The whole machine, spelled out: every (status, event) pair and where it may lead; absent means refused. */
const EXPECTED: Record<TaskStatus, Partial<Record<TaskEvent, TaskStatus[]>>> = {
  waiting: { unblock: ['queued'], cancel: ['cancelled'], expire: ['expired'] },
  queued: { claim: ['leased'], cancel: ['cancelled'], expire: ['expired'] },
  leased: {
    complete: ['succeeded'],
    fail: ['queued', 'dead'],
    release: ['queued'],
    reclaim: ['queued', 'dead'],
    cancel: ['cancelled'],
    wait: ['suspended'],
  },
  suspended: { resume: ['queued'], timeOut: ['dead'], cancel: ['cancelled'], expire: ['expired'] },
  dead: { redrive: ['queued'] },
  succeeded: {},
  cancelled: {},
  expired: {},
};

const pairs = TASK_STATUSES.flatMap((from) => EVENTS.map((event) => ({ from, event })));

describe('task state machine', () => {
  it.each(pairs)('$from --$event--> follows the table', ({ from, event }) => {
    // Prepare
    const allowed = EXPECTED[from][event];
    // Act + Assess
    expect(canTransition(from, event)).toBe(allowed !== undefined);
    for (const to of TASK_STATUSES) {
      expect(canTransition(from, event, to)).toBe(allowed?.includes(to) ?? false);
    }
  });

  it.each(pairs.filter(({ from, event }) => EXPECTED[from][event] === undefined))(
    'assertTransition refuses $event from $from with InvalidTransitionError',
    ({ from, event }) => {
      expect(() => assertTransition('t_x', from, event)).toThrow(InvalidTransitionError);
    },
  );

  it('terminal statuses accept nothing but redrive from dead', () => {
    expect(TASK_STATUSES.filter(isTerminal)).toEqual(['succeeded', 'dead', 'cancelled', 'expired']);
    for (const status of TASK_STATUSES.filter(isTerminal)) {
      const accepted = EVENTS.filter((event) => canTransition(status, event));
      expect(accepted).toEqual(status === 'dead' ? ['redrive'] : []);
    }
  });

  it('names, for each event and destination, the statuses a write may start from', () => {
    expect(statusesFrom('cancel', 'cancelled')).toEqual(['waiting', 'queued', 'leased', 'suspended']);
    expect(statusesFrom('expire', 'expired')).toEqual(['waiting', 'queued', 'suspended']);
    expect(statusesFrom('wait', 'suspended')).toEqual(['leased']);
    expect(statusesFrom('resume', 'queued')).toEqual(['suspended']);
    expect(statusesFrom('timeOut', 'dead')).toEqual(['suspended']);
    expect(statusesFrom('unblock', 'queued')).toEqual(['waiting']);
    expect(statusesFrom('claim', 'leased')).toEqual(['queued']);
    expect(statusesFrom('reclaim', 'dead')).toEqual(['leased']);
    expect(statusesFrom('redrive', 'queued')).toEqual(['dead']);
    expect(statusesFrom('complete', 'queued')).toEqual([]);
  });
});
