/**
 * The history checker on hand-made histories: a lease is good while its session is the agent's latest, and a
 * session version takes effect when it lands, even when it was decided before the version it replaced.
 */
import { describe, expect, it } from 'vitest';
import { emptyHistory } from '../../../chaos/committed-writes';
import {
  checkHistory,
  type History,
  type SessionVersion,
  type TaskVersion,
  violationDetails,
} from '../../../chaos/history';

const ttl = 2_000;
const taskId = 't_one';

/** Task t_one granted to a (session s1) at 1,000, taken back at 1,300, granted to b at 1,400. */
function regranted(aSessions: readonly SessionVersion[]): History {
  const history = emptyHistory();
  const task = (at: number, fields: Partial<TaskVersion>): TaskVersion => ({
    at,
    taskId,
    status: 'queued',
    leaseEpoch: 0,
    ...fields,
  });
  history.tasks.push(
    task(0, {}),
    task(1_000, { status: 'leased', leaseEpoch: 1, owner: 'a', sessionId: 's1', leaseDeadline: 60_000 }),
    task(1_300, { leaseEpoch: 1, sessionId: 's1' }),
    task(1_400, { status: 'leased', leaseEpoch: 2, owner: 'b', sessionId: 'sb', leaseDeadline: 60_000 }),
  );
  history.sessions.push(
    { at: 900, agentId: 'b', sessionId: 'sb', expiresAt: 900 + ttl, held: 0, idle: true, ended: false },
    ...aSessions,
  );
  return history;
}

const session = (at: number, sessionId: string, held: number): SessionVersion => ({
  at,
  agentId: 'a',
  sessionId,
  expiresAt: at + ttl,
  held,
  idle: held === 0,
  ended: false,
});

describe('checkHistory: lease overlap', () => {
  it('finds a lease granted while the previous holder’s session was still its agent’s, unexpired', () => {
    const verdict = checkHistory(regranted([session(500, 's1', 0), session(1_000, 's1', 1)]));
    expect(verdict.overlapCount).toBe(1);
  });

  it('ends the previous lease when its agent’s new session lands, though the new one was decided earlier', () => {
    // s2's put was decided at 950, before the claim's update of s1 at 1,000, and was answered after it: s1's
    // leases ended when it landed, and the task was taken back and granted again after that.
    const verdict = checkHistory(
      regranted([session(500, 's1', 0), session(1_000, 's1', 1), session(950, 's2', 0)]),
    );
    expect(verdict.overlapCount).toBe(0);
  });
});

describe('checkHistory: a lease its holder ended', () => {
  /**
   * a releases the task (decided at 1,431); b's claim took its time at 1,394, before, and its grant landed after
   * the release (it was conditional on the task being queued): b's lease began when a's was over.
   */
  const releasedThenRegranted = (releaseBy: string) => {
    const history = emptyHistory();
    const finish = { agentId: releaseBy, leaseEpoch: 1, kind: 'release', status: 'queued' };
    history.tasks.push(
      { at: 900, taskId, status: 'queued', leaseEpoch: 0 },
      {
        at: 1_257,
        taskId,
        status: 'leased',
        leaseEpoch: 1,
        owner: 'a',
        sessionId: 's1',
        leaseDeadline: 60_000,
      },
      { at: 1_431, taskId, status: 'queued', leaseEpoch: 1, sessionId: 's1', lastFinish: finish },
      {
        at: 1_394,
        taskId,
        status: 'leased',
        leaseEpoch: 2,
        owner: 'b',
        sessionId: 'sb',
        leaseDeadline: 60_000,
      },
    );
    history.sessions.push(
      { at: 900, agentId: 'b', sessionId: 'sb', expiresAt: 900 + ttl, held: 0, idle: true, ended: false },
      session(1_257, 's1', 1),
    );
    return history;
  };

  it('does not count a grant decided before the holder’s finish, which it could only follow', () => {
    expect(checkHistory(releasedThenRegranted('a')).overlapCount).toBe(0);
  });

  it('still counts it when the lease was ended by another than its holder, while the holder’s session lived', () => {
    expect(checkHistory(releasedThenRegranted('someone else')).overlapCount).toBe(1);
  });
});

describe('checkHistory: grants no claim answer carried', () => {
  // a's session s1 stays live and unexpired throughout; the lease of epoch 1 is taken back at 1,300.
  const live = [session(500, 's1', 0), session(1_000, 's1', 1), session(1_350, 's1', 0)];

  it('ends a lease taken back before any answer carried it: its claim took it back, no agent held it', () => {
    const verdict = checkHistory({ ...regranted(live), answered: new Set([`${taskId}#2`]) });
    expect(verdict.overlapCount).toBe(0);
  });

  it('still finds the overlap when an answer carried the lease to its agent', () => {
    const verdict = checkHistory({ ...regranted(live), answered: new Set([`${taskId}#1`, `${taskId}#2`]) });
    expect(verdict.overlapCount).toBe(1);
  });

  it('names the function that took the overlapping lease back in the violation it explains', () => {
    const history = { ...regranted(live), answered: new Set([`${taskId}#1`, `${taskId}#2`]) };
    history.takenBackBy?.set(`${taskId}#1`, 'reclaimTask < reclaimExpiredLeases');
    violationDetails.length = 0;
    expect(checkHistory(history).overlapCount).toBe(1);
    expect(violationDetails).toHaveLength(1);
    expect(violationDetails[0]).toContain('"takenBackBy":"reclaimTask < reclaimExpiredLeases"');
  });
});

describe('checkHistory: expired sessions stay expired', () => {
  const revivals = (versions: readonly SessionVersion[]) => {
    const history = emptyHistory();
    history.sessions.push(...versions);
    return checkHistory(history).staleAcceptedCount;
  };

  it('finds a session extended by a write decided after it expired holding a task', () => {
    expect(revivals([session(1_000, 's1', 1), session(3_100, 's1', 1)])).toBe(1);
  });

  it('lets the claim that gives an idle agent work extend its expired session', () => {
    expect(revivals([session(1_000, 's1', 0), session(3_500, 's1', 1)])).toBe(0);
  });

  it('reads the writes that keep an expiry as a set: a release answered before the heartbeat it followed', () => {
    // The heartbeat (decided at 1,000, held 1) and the release after it (held 0, same expiry, dated by the
    // heartbeat it kept) came back swapped; the session then expired idle, and a claim at 3,460 extended it.
    const release = { ...session(1_000, 's1', 0) };
    expect(revivals([release, session(1_000, 's1', 1), session(3_460, 's1', 1)])).toBe(0);
  });

  it('finds a session extended after it was ended, whatever it held then', () => {
    const ended = { ...session(1_000, 's1', 0), idle: false, ended: true };
    expect(revivals([session(1_000, 's1', 1), ended, session(3_500, 's1', 1)])).toBe(1);
    // Extended by a write decided before its expiry, yet after the sweep ended it: still a revival.
    expect(revivals([session(1_000, 's1', 1), ended, { ...session(2_500, 's1', 1), ended: true }])).toBe(1);
  });

  it('reads the versions of one session in the order of their expiry, whatever order their answers came in', () => {
    // Decided at 1,000 (expires 3,000), 2,900 (4,900) and 3,050 (5,050); the last two answered swapped: the
    // write decided at 3,050 landed after the one that extended the session to 4,900, which was no revival.
    expect(
      revivals([
        session(1_000, 's1', 1),
        session(3_050, 's1', 2),
        { ...session(2_900, 's1', 1), expiresAt: 4_900 },
      ]),
    ).toBe(0);
  });
});

describe('checkHistory: a terminal status is left only by a redrive', () => {
  const lifecycle = (...versions: Partial<TaskVersion>[]) => {
    const history = emptyHistory();
    history.tasks.push(
      ...versions.map((fields, i) => ({ at: 1_000 * i, taskId, status: 'queued', leaseEpoch: 0, ...fields })),
    );
    return checkHistory(history);
  };
  const leased = { status: 'leased', leaseEpoch: 1, owner: 'a', sessionId: 's1', leaseDeadline: 60_000 };

  it('finds a task written dead at its epoch, then queued and granted again without a redrive', () => {
    const verdict = lifecycle(
      {},
      leased,
      { status: 'dead', leaseEpoch: 1 },
      { status: 'queued', leaseEpoch: 1 },
      { ...leased, leaseEpoch: 2 },
      { status: 'succeeded', leaseEpoch: 2 },
    );
    expect(verdict.terminalLeftCount).toBe(1);
  });

  it('finds it when both writes are dated alike, in the order they were answered', () => {
    const verdict = lifecycle(
      {},
      leased,
      { at: 1_500, status: 'dead', leaseEpoch: 1 },
      { at: 1_500, leaseEpoch: 1 },
    );
    expect(verdict.terminalLeftCount).toBe(1);
  });

  it('lets an operator’s redrive bring a dead task back, and counts a second death after it', () => {
    const verdict = lifecycle(
      {},
      leased,
      { status: 'dead', leaseEpoch: 1 },
      { status: 'queued', leaseEpoch: 1, redrives: 1 },
      { ...leased, leaseEpoch: 2, redrives: 1 },
      { status: 'dead', leaseEpoch: 2, redrives: 1 },
      { status: 'queued', leaseEpoch: 2, redrives: 1 },
    );
    expect(verdict.terminalLeftCount).toBe(1);
  });
});

describe('epochs', () => {
  const grant = (leaseEpoch: number, at: number, answeredAt: number, owner: string): TaskVersion => ({
    at,
    answeredAt,
    taskId,
    status: 'leased',
    leaseEpoch,
    owner,
    sessionId: `s_${owner}`,
    leaseDeadline: 60_000,
  });
  const history = (...tasks: TaskVersion[]): History => {
    const built = emptyHistory();
    built.tasks.push({ at: 0, taskId, status: 'queued', leaseEpoch: 0 }, ...tasks);
    return built;
  };

  it('lets a slow claim grant the next epoch of a task suspended and resumed since it was decided', () => {
    const slow = history(
      grant(1, 1_000, 1_010, 'a'),
      { at: 1_020, taskId, status: 'suspended', leaseEpoch: 1 },
      { at: 1_030, taskId, status: 'queued', leaseEpoch: 1 },
      // Decided at 990, before the first grant, written after the resume.
      grant(2, 990, 1_050, 'b'),
    );
    expect(checkHistory(slow).nonMonotonicEpochCount).toBe(0);
  });

  it('finds a later epoch whose write was answered before the earlier one was decided', () => {
    expect(
      checkHistory(history(grant(1, 1_000, 1_010, 'a'), grant(2, 900, 950, 'b'))).nonMonotonicEpochCount,
    ).toBe(1);
  });

  it('finds a lease of an epoch held by another than its grant', () => {
    const taken = history(grant(1, 1_000, 1_010, 'a'), { ...grant(1, 1_100, 1_110, 'b') });
    expect(checkHistory(taken).nonMonotonicEpochCount).toBeGreaterThan(0);
  });
});
